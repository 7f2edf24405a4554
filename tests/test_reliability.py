"""Reliability guarantees built into the shared floors: compute-then-commit, bounded memory on budgeted streams,
hyper-parameters re-validated after set_params, and non-finite results refused with a message that says what to do."""
import pickle

import numpy as np
import pytest

from ovk_nb.kde import OVKDE
from ovk_nb.kernels import RBF, Linear, Separable, gaussian_times_J, linear_quadratic
from ovk_nb.monorma import MONORMA
from ovk_nb.movkl import FunctionalKRR
from ovk_nb.kernels import IntegralOperator
from ovk_nb.onorma import ONORMA
from ovk_nb.ridge import OVKRidge


def stream(n=400, p=3, d=2, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p)) / 2
    return X, np.column_stack([np.sin(X[:, 0]), X[:, 1] * X[:, 2]])[:, :d]


@pytest.mark.parametrize("make", [lambda: ONORMA(gaussian_times_J(2, 0.5), truncation=50),
                                  lambda: ONORMA(linear_quadratic(2, 0.3), truncation=(20, 0.1)),
                                  lambda: MONORMA([gaussian_times_J(2, 0.5), gaussian_times_J(2, 2.0)], truncation=50)],
                         ids=["onorma", "onorma-t0eps", "monorma"])
def test_truncated_buffers_stay_bounded_one_row_at_a_time(make):
    X, Y = stream(3000)
    est = make()
    caps = []
    for i in range(len(X)):
        est.partial_fit(X[i:i + 1], Y[i:i + 1])
        caps.append(len(est._X))
    live = len(est.coef_)
    assert max(caps) <= 4 * (max(live, 50) + 1), (max(caps), live)
    # and the same learner fed in one batch gives the same function
    ref = make().fit(X, Y)
    np.testing.assert_allclose(est.predict(X[:20]), ref.predict(X[:20]), rtol=1e-9, atol=1e-12)


def test_a_failed_first_batch_leaves_the_learner_unfitted():
    X, Y = stream(50)
    est = ONORMA(gaussian_times_J(2, 0.5))
    with pytest.raises(ValueError, match="Y"):
        est.partial_fit(X, Y[:, :1] * np.nan)
    assert not hasattr(est, "n_seen_") and not hasattr(est, "coef_")
    est.partial_fit(X, Y)                      # a correct call afterwards works
    assert est.n_seen_ == 50


@pytest.mark.parametrize("bad", [{"lam": -1.0}, {"lam": float("nan")}, {"eta": 0.0}, {"truncation": 10}])
def test_mid_stream_changes_are_validated_and_refused_without_harm(bad):
    X, Y = stream(120)
    est = ONORMA(gaussian_times_J(2, 0.5), lam=0.01).partial_fit(X[:60], Y[:60])
    state = pickle.dumps(est)
    with pytest.raises(ValueError, match=list(bad)[0]):
        est.set_params(**bad).partial_fit(X[60:], Y[60:])
    good = {k: v for k, v in ONORMA(gaussian_times_J(2, 0.5), lam=0.01).get_params().items() if k in bad}
    est.set_params(**good)
    assert pickle.dumps(est) == state


def test_failed_refit_keeps_the_old_model_ridge():
    X, Y = stream(40)
    m = OVKRidge(Separable(Linear(), np.eye(2)), lam=0.1).fit(X, Y)
    before = m.predict(X[:5])
    with pytest.raises(ValueError, match="scale the inputs"):
        m.fit(X * 1e160, Y)                    # the linear Gram overflows: refused, not NaN
    np.testing.assert_array_equal(m.predict(X[:5]), before)
    assert m.X_fit_.max() < 1e3


def test_failed_refit_keeps_the_old_model_functional_and_kde():
    X, Y = stream(30, d=2)
    t = np.linspace(0, 1, 2)
    f = FunctionalKRR(RBF(0.5), IntegralOperator(t), lam=0.1).fit(X, Y)
    k = OVKDE(RBF(0.5), RBF(0.5), lam=0.1).fit(X, Y)
    pf, pk = f.predict(X[:4]), k.decision_scores(X[:4])
    for est, bad in ((f, (X, Y[:, :1])), (k, (X, Y[:-1]))):
        with pytest.raises(ValueError):
            est.fit(*bad)
    np.testing.assert_array_equal(f.predict(X[:4]), pf)
    np.testing.assert_array_equal(k.decision_scores(X[:4]), pk)


def test_huge_inputs_never_give_silent_nan():
    X, Y = stream(30)
    for scale in (1e154, 1e200):
        m = OVKRidge(gaussian_times_J(2, 0.5), lam=0.1).fit(X * scale, Y)   # RBF: distances overflow to inf, k = 0
        assert np.isfinite(m.coef_).all() and np.isfinite(m.predict(X * scale)).all()


def test_user_callables_and_kernels_fail_by_name():
    "A user's schedule, block function or kernel that misbehaves gets a ValueError naming it, not a bare exception."
    from ovk_nb.kernels import BlockKernel
    X, Y = stream(20)
    with pytest.raises(ValueError, match="schedule"):
        ONORMA(gaussian_times_J(2, 0.5), schedule=lambda t: 1 / 0).fit(X, Y)
    with pytest.raises(ValueError, match="BlockKernel's func must return a \\(2, 2\\) block"):
        OVKRidge(BlockKernel(lambda x, y: np.eye(3), 2), solver="cg").fit(X, Y)
    with pytest.raises(ValueError, match="input_kernel is not positive semi-definite"):
        OVKDE(lambda A, B: -np.ones((len(A), len(B))) - np.eye(len(A), len(B)), RBF(0.5)).fit(X, Y)


# issue 30: PyTorch inputs follow one rule (backend notebook): X, Y and queries of one library, device and dtype,
# float32 or float64; anything else a ValueError naming the argument, never the library's raw error
@pytest.mark.parametrize("case", ["half", "bfloat16", "numpy_Y", "float32_query", "numpy_query", "int"])
@pytest.mark.parametrize("est", ["ridge", "gp"])
def test_torch_inputs_one_rule(case, est):
    torch = pytest.importorskip("torch")
    pytest.importorskip("array_api_compat")
    from ovk_nb.gp import OVKGaussianProcess
    X, Y = stream(40)
    tX, tY = torch.asarray(X), torch.asarray(Y)
    make = OVKRidge if est == "ridge" else OVKGaussianProcess
    fitted = make().fit(tX, tY)
    before = fitted.predict(tX[:5]).clone()
    call, match = {
        "half": (lambda: fitted.fit(tX.half(), tY.half()), "X must hold float32 or float64.*float16"),
        "bfloat16": (lambda: fitted.fit(tX.bfloat16(), tY.bfloat16()), "X must hold float32 or float64.*bfloat16"),
        "int": (lambda: fitted.fit(tX.int(), tY), "X must hold float32 or float64"),
        "numpy_Y": (lambda: fitted.fit(tX, Y), r"Y must be an array of X's library \(torch\)"),
        "float32_query": (lambda: fitted.predict(tX.float()), "X must have the training inputs' dtype torch.float64"),
        "numpy_query": (lambda: fitted.predict(X), "X must be an array of the library"),
    }[case]
    with pytest.raises(ValueError, match=match):
        call()
    assert torch.equal(fitted.predict(tX[:5]), before)         # a failed call leaves the model as it was


def _collinear_movkl_problem():
    t = np.linspace(0, 1, 6)
    X = np.random.default_rng(0).uniform(-1, 1, (20, 2))
    Y = np.sin(2 * X[:, :1] + 3 * t) * X[:, 1:]
    Ts = [np.exp(-w * (t[:, None] - t[None]) ** 2) for w in (5.0, 5.001)]
    return X, Y, Ts


def test_gauss_seidel_stops_when_its_rate_cannot_reach_tol():
    # issue 30: MovKL(solver='gauss_seidel') with nearly collinear kernels ran past 150 s (100000 sweeps an alpha-step)
    from ovk_nb.movkl import solve_gauss_seidel
    X, Y, Ts = _collinear_movkl_problem()
    As = [0.5 * RBF(1.0)(X), 0.5 * RBF(1.0 + 1e-7)(X)]
    _, info = solve_gauss_seidel(As, Ts, Y, 1e-3, tol=1e-10, max_sweeps=1000)
    assert info["stalled"] and not info["converged"] and info["iterations"] < 1000
    assert info["residual"] > 1e-10


def test_movkl_gauss_seidel_on_collinear_kernels_is_bounded_and_warns():
    from sklearn.exceptions import ConvergenceWarning
    from ovk_nb.movkl import GS_MAX_SWEEPS, MovKL
    X, Y, Ts = _collinear_movkl_problem()
    with pytest.warns(ConvergenceWarning, match="Gauss-Seidel.*solver='pcg'"):
        est = MovKL([(RBF(1.0), Ts[0]), (RBF(1.0 + 1e-7), Ts[1])], lam=1e-3, solver="gauss_seidel").fit(X, Y)
    assert sum(est.solver_iterations_) <= GS_MAX_SWEEPS
    assert np.isfinite(est.predict(X)).all() and len(est.weights_history_) == est.n_iter_
