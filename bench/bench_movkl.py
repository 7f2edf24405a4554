"""Benchmark of MovKL (paper 001): the alpha-step solvers (PCG on the structured matvec against the paper's block
Gauss-Seidel, Algorithm 2, at the same residual; the dense (n m) x (n m) solve where it fits in memory) and a full
MovKL fit at n = 1000, m = 100 with 9 kernels.

Writes bench/results/movkl.md, bench/results/movkl_solvers.csv and bench/results/movkl_fit.csv.
No peer library implements multiple operator-valued kernel learning (operalib has ONORMA and OVK ridge only), so the
references are the paper's own solver (Gauss-Seidel) and the dense solve.

`--threads-compare` times FunctionalKRR and MovKL fits (and a predict) as installed and with one BLAS thread side by side,
each in fresh processes, the two modes alternating: as installed = no thread variable set (OpenBLAS's default threads,
the library's own limits in force), one thread = OPENBLAS_NUM_THREADS=1. Writes bench/results/movkl_threads.{md,csv}.
`--before-src DIR` adds the as-installed time of another ovk_nb source tree (e.g. the commit before the limits).

`--loco REF` times MovKL's leave-one-curve-out lam choice at the paper-001 experiment's full size (movkl_finger: 317 training
curves, m = 200, 24 kernels, 5 lams, tol 1e-3, max_iter 20) with today's `movkl_loco(prune=True)` against the route of
commit REF (`git show REF:ovk_nb/movkl.py`): per task and r, the old route on its first `--loco-curves` curves per lam
(extrapolated to n) and the new route complete; for the state task at r = 2 also the old route complete, to check the
pick and the complete sums at full size. Writes bench/results/movkl_loco.{md,csv}.

    python bench/bench_movkl.py [--quick] [--threads 1]
    python bench/bench_movkl.py --threads-compare [--repeat 2] [--before-src DIR]      # about 2 minutes
    python bench/bench_movkl.py --loco REF [--loco-curves 10]                          # about 15 minutes
"""
import argparse
import csv
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from ovk_nb.experiments.core import rows_to_markdown
from threadpoolctl import threadpool_limits

from ovk_nb.kernels import RBF, IdentityOperator, IntegralOperator, MultiplicationOperator, Polynomial, ScaledKernel
from ovk_nb.linalg import symmetric_operator
from ovk_nb.movkl import FunctionalKRR, KronPreconditioner, MovKL, relative_residual, solve_gauss_seidel, solve_pcg

OUT = Path(__file__).resolve().parent / "results"
LAM = 0.1


def data(n, m, seed=0):
    rng = np.random.default_rng(seed)
    t = np.linspace(0, 1, m)
    X = rng.uniform(-1, 1, size=(n, 5))
    Y = np.sin(3 * X[:, :1] + 4 * t) * X[:, 1:2] + np.cos(2 * np.pi * t) * X[:, 2:3] ** 2 + 0.1 * rng.normal(size=(n, m))
    return X, Y, t


def nine_kernels(X, t):
    "3 scalar kernels (2 Gaussians, a normalised quadratic) x the paper's 3 operators."
    P = Polynomial(2, coef0=1.0, gamma=1.0 / 5)
    Gs = [RBF(0.1), RBF(1.0), ScaledKernel(P, 1.0 / float(P.diag(X).mean()))]
    ops = [IdentityOperator(t), MultiplicationOperator(t), IntegralOperator(t)]
    return [(G, op) for op in ops for G in Gs], Gs, ops


def system(n, m, seed=0):
    "The alpha-step system (**) for 9 kernels with random weights: A_g, T^s_g, Y S, and the weights."
    X, Y, t = data(n, m, seed)
    _, Gs, ops = nine_kernels(X, t)
    d = np.random.default_rng(seed + 1).dirichlet(np.ones(9))
    grams = [G(X) for G in Gs]
    As = [sum(d[3 * g + j] * grams[j] for j in range(3)) for g in range(3)]
    w = ops[0].weights
    Ts = [symmetric_operator(o.matrix, w) for o in ops]
    return As, Ts, Y * np.sqrt(w), [o.matrix for o in ops], np.sqrt(w)


def bench_solvers(sizes, gs_budget, rows):
    for n, m in sizes:
        As, Ts, Ys, Tm, s = system(n, m)
        t0 = time.perf_counter()
        Zg, ig = solve_gauss_seidel(As, Ts, Ys, LAM, tol=1e-6, time_budget=gs_budget(n))
        t_gs = time.perf_counter() - t0
        r_gs = ig["residual"]
        t0 = time.perf_counter()
        Zp, ip = solve_pcg(As, Ts, Ys, LAM, tol=r_gs)                 # preconditioner build included
        t_pcg = time.perf_counter() - t0
        t0 = time.perf_counter()
        Zt, it = solve_pcg(As, Ts, Ys, LAM, tol=1e-10)
        t_tight = time.perf_counter() - t0
        dense_err = ""
        t_dense = ""
        if n * m <= 5000:                                              # dense reference: (n m)^2 doubles
            t0 = time.perf_counter()
            K = sum(np.kron(A, T) for A, T in zip(As, Tm)) + LAM * np.eye(n * m)
            C = np.linalg.solve(K, (Ys / s).ravel()).reshape(n, m)
            t_dense = time.perf_counter() - t0
            dense_err = float(np.linalg.norm(Zt / s - C) / np.linalg.norm(C))
        row = {"n": n, "m": m, "kernels": 9, "lam": LAM,
               "GS sweeps": ig["iterations"], "GS seconds": t_gs, "GS residual": r_gs,
               "GS reached 1e-6": r_gs <= 1e-6,
               "PCG iterations (same residual)": ip["iterations"], "PCG seconds (same residual)": t_pcg,
               "PCG residual": ip["residual"],
               "speed-up PCG vs GS": t_gs / t_pcg,
               "rel. diff PCG vs GS": float(np.linalg.norm(Zp - Zg) / np.linalg.norm(Zg)),
               "PCG seconds to 1e-10": t_tight, "PCG iterations to 1e-10": it["iterations"],
               "dense seconds": t_dense, "rel. error PCG(1e-10) vs dense": dense_err,
               "low-rank preconditioner": n > 1500}
        rows.append(row)
        print({k: (f"{v:.3g}" if isinstance(v, float) else v) for k, v in row.items()}, flush=True)


def bench_fit(n, m, rows):
    X, Y, t = data(n, m, seed=5)
    pairs, _, _ = nine_kernels(X, t)
    t0, c0 = time.perf_counter(), time.process_time()
    est = MovKL(pairs, lam=LAM, r=2.0).fit(X, Y)
    t_fit, c_fit = time.perf_counter() - t0, time.process_time() - c0
    obj = np.array(est.objective_)
    # residual of the final alpha system with the learned weights, through the structured matvec
    w = IdentityOperator(t).weights; s = np.sqrt(w)
    grams = {id(G): G(X) for G, _ in pairs}
    As = [sum(est.weights_[k] * grams[id(pairs[k][0])] for k in mb) for _, mb in est.groups_]
    Ts = [symmetric_operator(T, w) for T, _ in est.groups_]
    res = relative_residual(As, Ts, Y * s, est.coef_ * s, LAM)
    row = {"n": n, "m": m, "kernels": 9, "r": 2.0, "lam": LAM, "solver": est.solver_, "fit seconds": t_fit, "fit CPU seconds": c_fit,
           "outer iterations": est.n_iter_, "PCG iterations (total)": int(np.sum(est.solver_iterations_)),
           "objective first": obj[0], "objective last": obj[-1],
           "objective monotone": bool((np.diff(obj) <= 1e-9 * obj[:-1]).all()),
           "final alpha residual": res, "train R2": est.score(X, Y)}
    rows.append(row)
    print({k: (f"{v:.3g}" if isinstance(v, float) else v) for k, v in row.items()}, flush=True)


# ---------------------------------------------------------------- as installed vs one BLAS thread
THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS", "VECLIB_MAXIMUM_THREADS")


def _movkl9(n, m):
    X, Y, t = data(n, m, seed=5)
    return lambda: MovKL(nine_kernels(X, t)[0], lam=LAM, r=2.0).fit(X, Y)


def _default(make, n, m):
    X, Y, _ = data(n, m, seed=5)
    return lambda: make().fit(X, Y)


def _predict(make, n, m, n_test):
    X, Y, _ = data(n + n_test, m, seed=5)
    est = make().fit(X[:n], Y[:n])
    return lambda: est.predict(X[n:])


# name -> a function building the timed call: the sizes a busy 2-core machine times in minutes, all below the thresholds
# of ovk_nb.movkl (so both modes run one thread: the table checks that nothing escapes the limits)
THREAD_CASES = {
    "MovKL 9 kernels (pcg), n=300, m=20 [issue 19: 13.0 s vs 0.28 s]": lambda: _movkl9(300, 20),
    "MovKL 9 kernels (pcg), n=600, m=20": lambda: _movkl9(600, 20),
    "MovKL() defaults (eig), n=400, m=20": lambda: _default(MovKL, 400, 20),
    "FunctionalKRR() fit, n=2000, m=50": lambda: _default(FunctionalKRR, 2000, 50),
    "FunctionalKRR() predict 5000 curves, n=1000, m=200": lambda: _predict(FunctionalKRR, 1000, 200, 5000),
}


def run_case(name, cases=None):
    """Child process: build the case (imports and data outside the time) and time calls of it: the best of up to 5 calls,
    stopping after 4 s (the least disturbed by the machine's other jobs). As installed, the same calls alternate with calls
    under threadpoolctl's limit of one thread in this process ("one thread, in process"): the limits' effect without the
    difference between two processes."""
    from threadpoolctl import threadpool_limits
    call = (cases or THREAD_CASES)[name]()
    in_process = not any(v in os.environ for v in THREAD_VARS)
    best, best1, spent, k = float("inf"), float("inf"), 0.0, 0
    while k < 5 and (k == 0 or spent < 4.0):
        t0 = time.perf_counter(); call(); sec = time.perf_counter() - t0
        best, spent, k = min(best, sec), spent + sec, k + 1
        if in_process:
            with threadpool_limits(1):
                t0 = time.perf_counter(); call(); best1 = min(best1, time.perf_counter() - t0)
    print(json.dumps({"seconds": best, **({"one thread in process": best1} if in_process else {})}))


def time_in_both_modes(script, cases, repeat, before_src=None, log=print):
    """Best wall time of each case in fresh processes `script --case NAME`: as installed (no thread variable set), one
    thread (OPENBLAS_NUM_THREADS=1) and, with `before_src`, as installed with that ovk_nb source tree first on the path;
    the modes alternate within each repeat. Returns rows."""
    env0 = {k: v for k, v in os.environ.items() if k not in THREAD_VARS}
    modes = {"as installed s": env0, "one thread s": {**env0, "OPENBLAS_NUM_THREADS": "1"}}
    if before_src:
        modes["before, as installed s"] = {**env0, "PYTHONPATH": os.pathsep.join(filter(None, [before_src, env0.get("PYTHONPATH")]))}
    rows = []
    for name in cases:
        best = {m: float("inf") for m in modes}
        best1 = float("inf")
        for _ in range(repeat):
            for mode, env in modes.items():
                out = subprocess.run([sys.executable, script, "--case", name], env=env, capture_output=True, text=True)
                if out.returncode == 0:
                    res = json.loads(out.stdout.strip().splitlines()[-1])
                    best[mode] = min(best[mode], res["seconds"])
                    if mode == "as installed s":
                        best1 = min(best1, res["one thread in process"])
                else:
                    best[mode] = "fails: " + (out.stderr.strip().splitlines() or ["?"])[-1][:80]
        row = {"case": name, **best}
        a, b = best["as installed s"], best["one thread s"]
        row["as installed / one thread"] = a / b if isinstance(a, float) and isinstance(b, float) else ""
        row["in process: as installed / one thread"] = a / best1 if isinstance(a, float) else ""
        rows.append(row)
        log({k: (f"{v:.3g}" if isinstance(v, float) else v) for k, v in row.items()})
    return rows


def threads_compare(args):
    load0, t0 = os.getloadavg(), time.time()
    rows = time_in_both_modes(__file__, THREAD_CASES, args.repeat, args.before_src)
    load1 = os.getloadavg()
    md = write(rows, "movkl_threads")
    worst = max(r["as installed / one thread"] for r in rows if r["as installed / one thread"] != "")
    worst_in = max(r["in process: as installed / one thread"] for r in rows if r["in process: as installed / one thread"] != "")
    from ovk_nb.movkl import MOVKL_EIGH_THREADS_MIN_N, MOVKL_PREDICT_THREADS_MIN_WORK
    text = f"""# MovKL / FunctionalKRR: as installed vs one BLAS thread

`python bench/bench_movkl.py --threads-compare --repeat {args.repeat}` on {platform.machine()}, {os.cpu_count()} cores,
Python {platform.python_version()}, numpy {np.__version__}; {time.time() - t0:.0f} s in all. Load average (1, 5, 15 min)
{load0[0]:.1f} / {load0[1]:.1f} / {load0[2]:.1f} at the start, {load1[0]:.1f} / {load1[1]:.1f} / {load1[2]:.1f} at the end: the
machine is shared with other jobs, so every time is the best over {args.repeat} fresh processes per mode (modes alternating), each the best of up to 5 calls
(at most 4 s of calls), and the load says how busy the cores were.

*As installed*: no thread variable set (OpenBLAS's default threads), so the library's own limits decide
(`ovk_nb.movkl`: a fit on one thread below n = {MOVKL_EIGH_THREADS_MIN_N} curves, PCG's and Gauss-Seidel's iterations
always; predict's product on one thread below {MOVKL_PREDICT_THREADS_MIN_WORK:.0e} multiply-adds). *One thread*:
OPENBLAS_NUM_THREADS=1 in the process.{" *Before*: the same as installed, with the ovk_nb tree of `" + args.before_src + "` (no limits)." if args.before_src else ""}

{md}

Largest ratio as installed / one thread: **{worst:.2f}** between processes, **{worst_in:.2f}** within one process (the bar:
at most 1.10). The last column alternates the same calls as installed and under threadpoolctl's limit of one thread in
the as-installed process: it isolates what the library's calls do, while the ratio between two processes also carries
the load's changes between them and the idle OpenBLAS worker of the as-installed process.
"""
    (OUT / "movkl_threads.md").write_text(text)
    print(text)


def write(rows, name):
    cols = list(dict.fromkeys(k for r in rows for k in r))
    with open(OUT / f"{name}.csv", "w", newline="") as f:
        wr = csv.DictWriter(f, fieldnames=cols); wr.writeheader(); wr.writerows(rows)
    fmt = lambda v: f"{v:.3g}" if isinstance(v, float) else str(v)
    return rows_to_markdown([{c: fmt(r.get(c, "")) for c in cols} for r in rows])


def _old_movkl(ref):
    "ovk_nb.movkl as of git commit `ref`, imported as ovk_nb._movkl_before (its relative imports resolve in ovk_nb)."
    import importlib.util
    src = subprocess.run(["git", "show", f"{ref}:ovk_nb/movkl.py"], capture_output=True, text=True, check=True).stdout
    path = Path("/tmp") / f"ovk_nb_movkl_{ref}.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location("ovk_nb._movkl_before", path)
    mod = importlib.util.module_from_spec(spec); mod.__package__ = "ovk_nb"; spec.loader.exec_module(mod)
    return mod


def _finger_full_size():
    """movkl_finger's full-size data (paper 001: n = 487 curves of m = 200 points, the first window, the same split and
    standardisation) and its kernels: (data, training rows, standardised training inputs, kernels). Warnings silenced."""
    import warnings
    from ovk_nb.datasets import finger_window, make_finger_movement
    from ovk_nb.experiments.paper001 import _split, _standardize, paper001_kernels
    warnings.simplefilter("ignore")
    n, m = 487, 200
    dat = make_finger_movement(n, m, random_state=0)
    X, t = dat.data[:, finger_window(dat, 0)], dat["t"]
    tr, te = _split(n, np.random.default_rng(1))
    Xtr, _ = _standardize(X[tr], X[te])
    return dat, tr, Xtr, paper001_kernels(Xtr, t, None)[0]


def bench_loco(ref, k_curves=10, tasks=("state", "amplitude"), check_complete=True):
    """movkl_loco at movkl_finger's full size: today's pruned route complete, the route of `ref` on k curves per lam."""
    from ovk_nb.movkl import movkl_loco
    old = _old_movkl(ref)
    dat, tr, Xtr, kernels = _finger_full_size()
    M, base, rows = len(kernels), np.logspace(-3, 1, 5), []
    for task in tasks:
        Yc = dat[task][tr] - dat[task][tr].mean(0)
        for label, r, scale in (("l_inf", np.inf, M), ("l_1", 1.0, 1.0), ("l_2", 2.0, np.sqrt(M))):
            lams = base * scale
            c0 = time.process_time(); w0 = time.perf_counter()
            errs, info = movkl_loco(kernels, Xtr, Yc, lams, r=r, tol=1e-3, max_iter=20, prune=True)
            new_wall, new_cpu = time.perf_counter() - w0, time.process_time() - c0
            row = {"task": task, "r": label, "n": len(Xtr), "lams": len(lams), "picked lam": float(lams[np.argmin(errs)]),
                   "curves summed (of n x lams)": f"{int(info['curves'].sum())} / {len(Xtr) * len(lams)}",
                   "new wall s": new_wall, "new CPU s": new_cpu}
            est = _old_refit_seconds(old, kernels, Xtr, Yc, lams, r, k_curves)
            row.update(est)
            row["speed-up (CPU)"] = row["old CPU s (est.)"] / new_cpu
            if check_complete and task == "state" and label == "l_2":
                c0 = time.process_time()
                oe, _ = old.movkl_loco(kernels, Xtr, Yc, lams, r=r, tol=1e-3, max_iter=20)
                row["old CPU s (complete)"] = time.process_time() - c0
                done = info["curves"] == len(Xtr)
                row["same pick"] = bool(np.argmin(oe) == np.argmin(errs))
                row["complete sums, max rel. diff"] = float(np.max(np.abs(oe[done] - errs[done]) / oe[done]))
            rows.append(row)
            print(row, flush=True)
    return rows


def bench_loco_per_refit(ref, k_curves=5):
    """The same k held-out refits per lam (no pruning, one thread) with the route of `ref` and today's, at movkl_finger's
    full size (state task, r = inf, 1, 2): CPU seconds per refit and the held-out errors' largest relative difference."""
    from ovk_nb import movkl as new
    old = _old_movkl(ref)
    dat, tr, Xtr, kernels = _finger_full_size()
    Yc = dat["state"][tr] - dat["state"][tr].mean(0)
    M, rows = len(kernels), []
    for label, r, scale in (("l_inf", np.inf, M), ("l_1", 1.0, 1.0), ("l_2", 2.0, np.sqrt(M))):
        row = {"task": "state", "r": label, "refits timed": 0}
        errs = {}
        for name, mk in (("old", old), ("new", new)):
            kern = mk._fit_kernels(kernels, Xtr, Yc); pairs, w = mk.kernel_pairs(kern); groups = mk.group_operators(pairs)
            Ts = [mk.symmetric_operator(T, w) for T, _ in groups]
            cpu, e_all, iters = 0.0, [], []
            with mk.blas_threads(1):
                Grams, Ys = mk._kernel_grams(pairs, w, Xtr, Xtr), Yc * np.sqrt(w)
                for lam in np.logspace(-3, 1, 5) * scale:
                    est = mk.MovKL(kernels, lam=float(lam), r=r, tol=1e-3, max_iter=20)
                    mk._start_solver(est, groups, Ts)
                    d, Z, _ = mk._algorithm1(est, Grams, groups, Ts, Ys)
                    for i in range(k_curves):
                        keep = np.arange(len(Ys)) != i
                        c0 = time.process_time()
                        mk._fresh_preconditioner(est)
                        di, Zi, _ = mk._algorithm1(est, [G[np.ix_(keep, keep)] for G in Grams], groups, Ts, Ys[keep], d, Z[keep])
                        yhat = sum((sum(di[k] * Grams[k][i, keep] for k in mb if di[k] > 0) @ Zi) @ Tg
                                   for (_, mb), Tg in zip(groups, Ts))
                        cpu += time.process_time() - c0
                        e_all.append(float(((Ys[i] - yhat) ** 2).sum())); iters.append(est.n_iter_)
            row[f"{name} CPU s per refit"] = cpu / len(e_all)
            row[f"{name} outer iterations per refit"] = float(np.mean(iters))
            row["refits timed"] = len(e_all)
            errs[name] = np.array(e_all)
        row["speed-up per refit"] = row["old CPU s per refit"] / row["new CPU s per refit"]
        row["held-out errors, max rel. diff"] = float(np.max(np.abs(errs["old"] - errs["new"]) / errs["old"]))
        rows.append(row)
        print(row, flush=True)
    return rows


def _old_refit_seconds(old, kernels, Xtr, Yc, lams, r, k):
    """The old route's CPU time, estimated: each lam's full fit plus n refits, from the old code's own loop over the first
    k held-out curves (its full fit timed separately and subtracted)."""
    n, tot_full, tot_refit = len(Xtr), 0.0, 0.0
    mk = old
    kern = mk._fit_kernels(kernels, Xtr, Yc); pairs, w = mk.kernel_pairs(kern); groups = mk.group_operators(pairs)
    s = np.sqrt(w); Ts = [mk.symmetric_operator(T, w) for T, _ in groups]
    with mk.blas_threads(1):
        Grams, Ys = mk._kernel_grams(pairs, w, Xtr, Xtr), Yc * s
        for lam in lams:
            est = mk.MovKL(kernels, lam=float(lam), r=r, tol=1e-3, max_iter=20)
            mk._start_solver(est, groups, Ts)
            c0 = time.process_time()
            d, Z, _ = mk._algorithm1(est, Grams, groups, Ts, Ys)
            tot_full += time.process_time() - c0
            c0 = time.process_time()
            for i in range(k):
                keep = np.arange(n) != i
                mk._fresh_preconditioner(est)
                mk._algorithm1(est, [G[np.ix_(keep, keep)] for G in Grams], groups, Ts, Ys[keep], d, Z[keep])
            tot_refit += (time.process_time() - c0) / k * n
    return {"old CPU s per refit": tot_refit / (n * len(lams)), "old CPU s (est.)": tot_full + tot_refit}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--threads", type=int, default=1, help="BLAS threads (default 1: stable timings on a shared machine)")
    ap.add_argument("--threads-compare", action="store_true", help="as installed vs one thread -> movkl_threads.{md,csv}")
    ap.add_argument("--repeat", type=int, default=2, help="runs per mode in --threads-compare (the best is kept)")
    ap.add_argument("--before-src", help="--threads-compare: also time the ovk_nb source tree in this directory")
    ap.add_argument("--case", help=argparse.SUPPRESS)         # child process of --threads-compare
    ap.add_argument("--loco", metavar="REF", help="time movkl_loco at full size against commit REF's -> movkl_loco.{md,csv}")
    ap.add_argument("--loco-curves", type=int, default=10, help="--loco: held-out curves per lam timed on the old route")
    ap.add_argument("--loco-tasks", nargs="+", default=["state", "amplitude"], help="--loco: the finger tasks timed")
    ap.add_argument("--loco-no-complete", action="store_true", help="--loco: skip the old route's complete run (state, l_2)")
    ap.add_argument("--loco-per-refit", action="store_true",
                    help="--loco: only the same k refits per lam by both routes (no pruning) -> movkl_loco_refits.{md,csv}")
    args = ap.parse_args()
    if args.case:
        return run_case(args.case)
    OUT.mkdir(parents=True, exist_ok=True)
    if args.loco and args.loco_per_refit:
        t0 = time.time()
        rows = bench_loco_per_refit(args.loco, args.loco_curves)
        load = os.getloadavg()
        md = write(rows, "movkl_loco_refits")
        text = f"""# MovKL leave-one-curve-out refits at full size: the route of `{args.loco}` against today's

movkl_finger's state task (317 training curves, m = 200, the paper's 24 kernels in 3 operator groups, PCG), 5 lams per r,
tol 1e-3, max_iter 20, one BLAS thread: the same {args.loco_curves} held-out refits per lam (warm-started at the lam's full fit,
no pruning) by both routes; CPU seconds per refit (this process), and the largest relative difference of the held-out
errors (round-off: the norms are summed in another order). Load average at the end {load[0]:.1f} / {load[1]:.1f} /
{load[2]:.1f}; total {time.time() - t0:.0f} s. Pruning comes on top (fewer refits, the same pick): see movkl_loco.md.

{md}
"""
        (OUT / "movkl_loco_refits.md").write_text(text)
        print(text)
        return
    if args.loco:
        t0 = time.time()
        rows = bench_loco(args.loco, args.loco_curves, args.loco_tasks, not args.loco_no_complete)
        load = os.getloadavg()
        md = write(rows, "movkl_loco")
        old, new = sum(r["old CPU s (est.)"] for r in rows), sum(r["new CPU s"] for r in rows)
        text = f"""# MovKL leave-one-curve-out lam choice at full size (issue 22, section 4)

movkl_finger's full size: 317 training curves, m = 200, the paper's 24 kernels (3 operator groups, PCG), 5 lams, tol 1e-3,
max_iter 20, one BLAS thread. New: `movkl_loco(prune=True)` of today's code, complete. Old: the route of commit
`{args.loco}` (no pruning, kernel-by-kernel norms), its full fits timed and its refits timed on the first
{args.loco_curves} held-out curves per lam, extrapolated to n. CPU seconds of this process (the machine is shared: load
average {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} at the end). Total {time.time() - t0:.0f} s.

The configurations timed (of the 2 tasks x 3 r of one movkl_finger run): old {old:.0f} CPU s (estimated), new {new:.0f} CPU s,
**{old / new:.1f}x**.

{md}
"""
        (OUT / "movkl_loco.md").write_text(text)
        print(text)
        return
    if args.threads_compare:
        return threads_compare(args)
    if args.quick:
        sizes, budget = [(100, 50), (200, 50), (200, 200), (1000, 50)], (lambda n: 20.0)
    else:
        sizes = [(100, 50), (200, 50), (200, 200), (1000, 50), (1000, 200), (3000, 50), (3000, 200)]
        budget = lambda n: {100: 120.0, 200: 120.0, 1000: 150.0}.get(n, 300.0)
    solver_rows, fit_rows = [], []
    t0 = time.time()
    with threadpool_limits(args.threads):
        bench_solvers(sizes, budget, solver_rows)
        bench_fit(1000, 100, fit_rows)
    md_s = write(solver_rows, "movkl_solvers")
    md_f = write(fit_rows, "movkl_fit")
    worst = min(r["speed-up PCG vs GS"] for r in solver_rows if r["n"] >= 200)
    text = f"""# MovKL benchmark

Machine: {platform.machine()}, {platform.system()}, Python {platform.python_version()}, BLAS threads: {args.threads}.
Total time {time.time() - t0:.0f} s{' (quick)' if args.quick else ''}.

## Alpha-step solvers, 9 kernels (3 scalar kernels x identity, multiplication, integral operators), lam = {LAM}

Gauss-Seidel (the paper's Algorithm 2, each block's system (19) solved exactly) runs from zero until its relative
residual reaches 1e-6 or its time budget ends; PCG (nearest-Kronecker preconditioner, its construction included in
the time) then runs to the residual Gauss-Seidel reached: the speed-up is measured at the same residual. Where
Gauss-Seidel stopped on its budget ("GS reached 1e-6" false) the speed-up to 1e-6 is larger than shown. PCG's time
to 1e-10 is given too; the dense (n m) x (n m) solve only where it fits in memory (n m <= 5000).
Smallest speed-up at n >= 200: **{worst:.1f}x**.

{md_s}

## Full MovKL fit (r = 2, default tol = 1e-6, max_iter = 100), n = 1000, m = 100, 9 kernels

Wall time and CPU time of this process (the machine is shared: wall time above CPU time is time spent waiting).

{md_f}
"""
    (OUT / "movkl.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
