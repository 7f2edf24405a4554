"""Scaling curves, one BLAS thread and as installed (BLAS with its default threads, the thread policy deciding): time and
peak memory of each estimator against n, with the exponent fitted on log-log axes (time ~ n^a, memory ~ n^b over the
measured sizes), for each mode.

    python bench/bench_scaling.py            # writes bench/results/scaling.{md,csv,png}; about 3-4 minutes on 2 quiet cores
    python bench/bench_scaling.py --quick    # the three smallest sizes of each: about 1 minute on 2 quiet cores
    python bench/bench_scaling.py --replot   # redraw scaling.png from scaling.csv

Peak memory is the peak of Python-traced allocations (tracemalloc: numpy's arrays included) during one fit (+ predict
where said), measured in a separate run from the time (tracing slows the run down), as installed: the threads change
the order of work, not the arrays allocated (OpenBLAS's per-thread buffers are not traced).
"""
from __future__ import annotations

import os
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from bench_movkl import data as movkl_data, nine_kernels  # noqa: E402

from ovk_nb.decoding import Hamming  # noqa: E402
from ovk_nb.experiments.core import rows_to_csv, rows_to_markdown  # noqa: E402
from ovk_nb.kde import OVKDE  # noqa: E402
from ovk_nb.kernels import RBF, gaussian_times_J  # noqa: E402
from ovk_nb.movkl import MovKL  # noqa: E402
from ovk_nb.mvml import MVML  # noqa: E402
from ovk_nb.onorma import ONORMA  # noqa: E402
from ovk_nb.oskaar import OSKAAR  # noqa: E402
from ovk_nb.ridge import OVKRidge  # noqa: E402
from ovk_nb.salami import SALAMI  # noqa: E402

OUT = Path(__file__).resolve().parent / "results"


def regression(n, p=10, d=5, seed=0):
    r = np.random.default_rng(seed)
    X = r.random((n, p)) / np.sqrt(p)
    return X, np.sin(3 * X[:, :d]) + 0.1 * r.normal(size=(n, d))


def labels(n, seed=0):
    r = np.random.default_rng(seed)
    X = r.normal(size=(n, 100)) / 10
    return X, (X[:, :14] + 0.05 * r.normal(size=(n, 14)) > 0).astype(int)


def ridge(solver):
    def run(n):
        X, Y = regression(n)
        OVKRidge(gaussian_times_J(5, gamma=1.0), lam=0.1, solver=solver, n_components=300, random_state=0, center_y=False).fit(X, Y).predict(X[:200])
    return run


def gp(n):
    "OVKGaussianProcess at fixed hyper-parameters (optimizer=None): one likelihood evaluation (an eigh of the n x n Gram) + posterior."
    from ovk_nb.gp import OVKGaussianProcess
    X, Y = regression(n, p=5, d=3)
    OVKGaussianProcess(optimizer=None, random_state=0).fit(X, Y).predict(X[:200])


def gp_default(n):
    "OVKGaussianProcess() as a user types it: the bandwidth, T and noise learned (the exact route), + predict 200."
    from ovk_nb.gp import OVKGaussianProcess
    X, Y = regression(n, p=5, d=3)
    OVKGaussianProcess(random_state=0).fit(X, Y).predict(X[:200])


def gp_nystrom(n):
    "OVKGaussianProcess(method='nystrom'): the collapsed Nystrom bound, its default landmarks, learned, + predict 200."
    from ovk_nb.gp import OVKGaussianProcess
    X, Y = regression(n, p=5, d=3)
    OVKGaussianProcess(method="nystrom", random_state=0).fit(X, Y).predict(X[:200])


def ridge_cv(n):
    "OVKRidgeCV() with its defaults (its lam path on one eigenbasis), + predict 200."
    from ovk_nb.ridge import OVKRidgeCV
    X, Y = regression(n)
    OVKRidgeCV(random_state=0).fit(X, Y).predict(X[:200])


def monorma(n):
    "MONORMA() with its defaults (online multiple kernels), one pass."
    from ovk_nb.monorma import MONORMA
    X, Y = regression(n)
    MONORMA().fit(X, Y)


def functional_krr(n):
    "FunctionalKRR() with its defaults on curves of 20 points, + predict 200."
    from ovk_nb.movkl import FunctionalKRR
    r = np.random.default_rng(0)
    X, t = r.uniform(-1, 1, size=(n, 2)), np.linspace(0, 1, 20)
    Y = np.sin(2 * X[:, :1] + 3 * t) * X[:, 1:] + 0.05 * r.normal(size=(n, 20))
    FunctionalKRR().fit(X, Y).predict(X[:200])


def quantile(n):
    "JointQuantileRegressor(probs=(0.1, 0.5, 0.9)) on heteroscedastic_sine (its QP by Clarabel)."
    from ovk_nb.quantile import JointQuantileRegressor, heteroscedastic_sine
    X, y = heteroscedastic_sine(n, random_state=0)
    JointQuantileRegressor(probs=(0.1, 0.5, 0.9)).fit(X, y)


def onorma(tr):
    def run(n):
        X, Y = regression(n)
        ONORMA(gaussian_times_J(5, gamma=1.0), lam=0.01, eta=1.0, truncation=tr).fit(X, Y)
    return run


def movkl(n):
    X, Y, t = movkl_data(n, 20, seed=5)
    MovKL(nine_kernels(X, t)[0], lam=0.1, r=2.0).fit(X, Y)


def ovkde(n):
    X, Y = regression(n)
    OVKDE(RBF(1.0), RBF(1.0), "conditional_covariance", lam=0.1).fit(X, Y).decision_scores(X[:100])


def mvml(n):
    X, Y = regression(n, p=12, d=1)
    MVML(views=[range(0, 4), range(4, 8), range(8, 12)], kernel=RBF(1.0), lam=0.1, eta=1.0, metric="learned",
         n_components=200, random_state=0).fit(X, Y[:, 0]).predict(X[:200])


def oskaar(n):
    X, Y = labels(n)
    OSKAAR(RBF(0.5), lam=0.5, decoder=Hamming()).fit(X, Y)


def salami(n):
    X, Y = labels(n)
    SALAMI(RBF(0.5), lam=0.5, decoder=Hamming()).fit(X, Y)


CASES = [  # (name, run(n), sizes): the whole run in about 3-4 minutes on a quiet 2-core machine
    ("OVKRidge auto (grouped Cholesky), fit + predict 200", ridge("auto"), [500, 1000, 2000, 4000]),
    ("OVKRidge eigen, fit + predict 200", ridge("eigen"), [500, 1000, 2000, 3000]),
    ("OVKRidge cg, fit + predict 200", ridge("cg"), [250, 500, 1000, 2000]),
    ("OVKRidge nystrom (p = 300), fit + predict 200", ridge("nystrom"), [5000, 10000, 20000, 40000]),
    ("OVKGaussianProcess, fixed hyper-parameters, fit + predict 200", gp, [500, 1000, 2000, 3000]),
    ("OVKGaussianProcess(), defaults (learned), fit + predict 200", gp_default, [500, 1000, 1500, 2000]),
    ("OVKGaussianProcess(method='nystrom'), learned, fit + predict 200", gp_nystrom, [5000, 10000, 20000, 40000]),
    ("OVKRidgeCV(), defaults, fit + predict 200", ridge_cv, [500, 1000, 2000, 3000]),
    ("ONORMA, no truncation", onorma(None), [500, 1000, 2000, 4000]),
    ("ONORMA, truncation 1000", onorma(1000), [5000, 10000, 20000, 40000]),
    ("MONORMA(), defaults", monorma, [500, 1000, 2000, 4000]),
    ("MovKL, 9 kernels, 20 outputs", movkl, [100, 200, 300, 400]),
    ("FunctionalKRR(), defaults, curves of 20 points, fit + predict 200", functional_krr, [250, 500, 1000, 2000]),
    ("JointQuantileRegressor, 3 levels", quantile, [100, 200, 400, 800]),
    ("OVKDE conditional covariance, fit + score 100", ovkde, [200, 400, 800, 1600]),
    ("MVML, 3 views, block Nystrom 200 landmarks, learned metric, fit + predict 200", mvml, [5000, 10000, 20000, 40000]),
    ("OSKAAR, 14 labels", oskaar, [250, 500, 1000, 2000]),
    ("SALAMI, 14 labels", salami, [250, 500, 1000, 2000]),
]


MODES = (("one thread", 1), ("as installed", None))


def measure(run, n):
    """Seconds in each mode (one thread, then as installed right after it), the load average and the idle cores the
    policy saw before the as-installed run, and the peak traced MiB (one run, as installed)."""
    import ovk_nb.linalg as la
    from threadpoolctl import threadpool_limits
    run(min(n, 200))                                    # warm-up: imports, first-call caches
    secs = {}
    for mode, limit in MODES:
        idle, load = la.idle_cores(), os.getloadavg()[0]
        with threadpool_limits(limit):
            t0 = time.perf_counter(); run(n); secs[mode] = time.perf_counter() - t0
    tracemalloc.start(); run(n); peak = tracemalloc.get_traced_memory()[1]; tracemalloc.stop()
    return secs, peak / 2 ** 20, idle, load


def plot(curves):
    """scaling.png: time (solid as installed, dashed one thread) and peak memory against n, one colour and marker per
    estimator, the fitted exponents in the legend below."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 2, figsize=(15, 8.5))
    colors, marks = plt.get_cmap("tab20").colors, "osD^v<>pPhX*"
    for i, (name, sizes, secs, mems, a, b) in enumerate(curves):
        c, m = colors[(2 * i) % 20 if i < 10 else (2 * i + 1) % 20], marks[i % len(marks)]
        axes[0].loglog(sizes, secs["as installed"], m + "-", color=c,
                       label=f"{name}: time n^{a['as installed']:.2f} as installed, n^{a['one thread']:.2f} one thread; "
                             f"memory n^{b:.2f}")
        axes[0].loglog(sizes, secs["one thread"], m + "--", color=c, alpha=0.5, mfc="none")
        axes[1].loglog(sizes, mems, m + "-", color=c)
    axes[0].set(xlabel="n", ylabel="seconds (solid: as installed, dashed: one thread)", title="time")
    axes[1].set(xlabel="n", ylabel="peak traced MiB", title="peak memory (as installed)")
    fig.legend(*axes[0].get_legend_handles_labels(), loc="lower center", ncol=2, fontsize=7.5, frameon=False)
    fig.tight_layout(rect=(0, 0.2, 1, 1)); fig.savefig(OUT / "scaling.png", dpi=110)
    plt.close(fig)


def curves_from_csv():
    "The curves of scaling.csv (for --replot: redraw the figure without measuring)."
    import csv
    by = {}
    for r in csv.DictReader((OUT / "scaling.csv").open()):
        by.setdefault(r["estimator"], []).append(r)
    curves = []
    for name, rs in by.items():
        sizes = [int(r["n"]) for r in rs]
        secs = {m: [float(r[f"seconds, {m}"]) for r in rs] for m, _ in MODES}
        mems = [float(r["peak MiB"]) for r in rs]
        a = {m: np.polyfit(np.log(sizes), np.log(v), 1)[0] for m, v in secs.items()}
        curves.append((name, sizes, secs, mems, a, np.polyfit(np.log(sizes), np.log(mems), 1)[0]))
    return curves


def main(quick=False):
    OUT.mkdir(exist_ok=True)
    load0, t_start = os.getloadavg(), time.perf_counter()
    rows, curves = [], []
    for name, run, sizes in CASES:
        t_case = time.perf_counter()
        sizes = sizes[:3] if quick else sizes
        secs, mems = {m: [] for m, _ in MODES}, []
        for n in sizes:
            s, m, idle, load = measure(run, n)
            mems.append(m)
            for mode in s:
                secs[mode].append(s[mode])
            rows.append({"estimator": name, "n": n, **{f"seconds, {k}": v for k, v in s.items()},
                         "as installed / one thread": s["as installed"] / s["one thread"], "peak MiB": m,
                         "idle cores seen": idle, "load": load})
            print(rows[-1], flush=True)
        print(f"{name}: {time.perf_counter() - t_case:.0f} s with warm-ups and traced runs", flush=True)
        a = {mode: np.polyfit(np.log(sizes), np.log(v), 1)[0] for mode, v in secs.items()}
        b = np.polyfit(np.log(sizes), np.log(mems), 1)[0]
        curves.append((name, sizes, secs, mems, a, b))
    plot(curves)
    load = os.getloadavg()
    head = (f"# Scaling curves\n\n`python bench/bench_scaling.py{' --quick' if quick else ''}`. Each size once in each mode "
            f"after a warm-up: one BLAS thread (`threadpool_limits(1)`), then as installed right after it (BLAS default "
            f"threads, the thread policy of `ovk_nb.linalg.factor_threads` deciding; 'idle cores seen' is what it saw); "
            f"exponents fitted on log-log axes for each mode; peak memory of one traced run as installed. Machine: "
            f"{os.cpu_count()} cores, load average (1 / 5 / 15 min) {load0[0]:.1f} / {load0[1]:.1f} / {load0[2]:.1f} at the "
            f"start and {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} at the end (above about 1, other processes shared the "
            f"cores: times noisy, exponents approximate). Whole run: {time.perf_counter() - t_start:.0f} s. "
            "Plot: `scaling.png`.\n\n")
    summary = [{"estimator": c[0], "sizes": ", ".join(map(str, c[1])), "time exponent, one thread": c[4]["one thread"],
                "time exponent, as installed": c[4]["as installed"], "memory exponent": c[5],
                "largest n, one thread (s)": c[2]["one thread"][-1], "largest n, as installed (s)": c[2]["as installed"][-1],
                "largest n, as installed / one thread": c[2]["as installed"][-1] / c[2]["one thread"][-1],
                "largest n peak MiB": c[3][-1]} for c in curves]
    (OUT / "scaling.md").write_text(head + rows_to_markdown(summary) + "\n\n## All sizes\n\n" + rows_to_markdown(rows) + "\n")
    (OUT / "scaling.csv").write_text(rows_to_csv(rows))
    print(head + rows_to_markdown(summary))


if __name__ == "__main__":
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="the three smallest sizes of each estimator (about 1 minute quiet)")
    ap.add_argument("--replot", action="store_true", help="redraw scaling.png from scaling.csv, measuring nothing")
    args = ap.parse_args()
    sys.exit(plot(curves_from_csv()) if args.replot else main(quick=args.quick))
