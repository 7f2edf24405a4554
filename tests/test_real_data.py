"""Issue 29: the real-data targets pinned on two data sets that ship with scikit-learn (diabetes: n = 442, one output;
linnerud: n = 20, three outputs on different scales), the protocol of bench/bench_real.py (5-fold held-out, raw X and X
standardized on the training folds, R^2 of the pooled out-of-fold predictions; NLPD of y for the GPs):

- OVKRidge(), OVKRidgeCV(), MovKL(), MVML() >= KernelRidge(kernel='rbf') - 0.02 in R^2;
- OVKGaussianProcess() >= the better of GaussianProcessRegressor() and GaussianProcessRegressor(normalize_y=True) - 0.02
  in R^2, and its NLPD no worse than the better default's.

The benchmark (bench/results/real_data.md) is the evidence on 14 data sets; these tests keep two of them from regressing.
Targets the branch missed when this file was written are xfail(strict=False), each with the measured figures."""
import functools
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
import bench_real  # noqa: E402

TOL = bench_real.TOL
DATA = {"diabetes": bench_real.d_diabetes, "linnerud": bench_real.d_linnerud}
NO_BUDGET = 1e9

# (data set, scaling, estimator, what): measured on the branch `bench` at 1fbcd0f + tests (bench/results/real_data.md)
MISSES = {}   # every target the branch missed is met since the issue-29 fixes merged (diabetes and linnerud, raw and standardized)


@functools.lru_cache(maxsize=None)
def cell(name, scaling, est):
    "bench_real.run_cell for one (data set, scaling, estimator), one BLAS thread (as the benchmark), no time budget."
    import threadpoolctl
    X, Y = DATA[name]()
    X, Y = np.asarray(X, dtype=float), np.asarray(Y, dtype=float)
    make, family = bench_real.regressors()[est]
    with threadpoolctl.threadpool_limits(1):
        r = bench_real.run_cell(make, family, X, Y, "regression", scaling == "standardized", NO_BUDGET)
    return r


def case(name, scaling, est, what):
    marks = [pytest.mark.xfail(reason=MISSES[(name, scaling, est, what)], strict=False)] \
        if (name, scaling, est, what) in MISSES else []
    return pytest.param(name, scaling, est, id=f"{name}-{scaling}-{est}", marks=marks)


@pytest.mark.parametrize("name, scaling, est", [case(n, s, e, "r2") for n in DATA for s in ("raw", "standardized")
                                                for e in ("OVKRidge", "OVKRidgeCV", "MovKL", "MVML")])
def test_ridge_family_vs_kernel_ridge(name, scaling, est):
    ours, ref = cell(name, scaling, est), cell(name, scaling, "KernelRidge(rbf)")
    assert not ours["error"], ours["error"]
    assert ours["score"] >= ref["score"] - TOL, (ours["score"], ref["score"])


def _best_gpr(name, scaling):
    refs = [cell(name, scaling, k) for k in ("GPR", "GPR(normalize_y)")]
    assert all(not r["error"] for r in refs), [r["error"] for r in refs]
    return max(r["score"] for r in refs), min(r["nlpd"] for r in refs)


@pytest.mark.parametrize("name, scaling, est", [case(n, s, "OVKGaussianProcess", "r2") for n in DATA
                                                for s in ("raw", "standardized")])
def test_gp_r2_vs_best_gpr_default(name, scaling, est):
    ours = cell(name, scaling, est)
    assert not ours["error"], ours["error"]
    assert ours["score"] >= _best_gpr(name, scaling)[0] - TOL


@pytest.mark.parametrize("name, scaling, est", [case(n, s, "OVKGaussianProcess", "nlpd") for n in DATA
                                                for s in ("raw", "standardized")])
def test_gp_nlpd_vs_best_gpr_default(name, scaling, est):
    ours = cell(name, scaling, est)
    assert not ours["error"], ours["error"]
    # "no worse" as the benchmark tests it: within bench_real.NLPD_SE standard errors of the paired per-entry difference
    # (where both models end at the mean predictor, linnerud, their NLPDs differ by the fitted variances' last digits)
    refs = [cell(name, scaling, k) for k in ("GPR", "GPR(normalize_y)")]
    best = min(refs, key=lambda r: r["nlpd"])
    tol = bench_real.nlpd_tolerance(ours["nlpd_points"], best["nlpd_points"])
    assert np.isfinite(ours["nlpd"]) and ours["nlpd"] <= best["nlpd"] + tol, (ours["nlpd"], best["nlpd"], tol)
