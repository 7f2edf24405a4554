"""Issue 34's two headline targets for OVKRidge, as installed, on this machine.

(a) Exact separable ridge, Gaussian x J (`ovk_nb.kernels.gaussian_times_J`), n = 5000, d = 4: fit time <= 1.0x
    scikit-learn's `KernelRidge(kernel='rbf')` on the same data, same gamma and lam. What each one solves:
    KernelRidge: (G + lam I) C = Y, one n x n Gram G (sklearn's `pairwise_kernels`), one Cholesky
    (`scipy.linalg.solve(assume_a='pos')`), the d outputs independent (T = I). Ours: (G (x) J + lam I) vec(C) = vec(Y),
    J = 0.9 I + 0.1 1 1^T (two distinct eigenvalues: two shifted n x n systems), solver 'auto' -> grouped Cholesky: one
    Cholesky, the other shift by CG preconditioned with that factor (`linalg._one_gram_shifts`), plus the condition
    estimate (pocon) behind the ill-conditioning warning. Both at a fixed lam; the default lam='auto' (an eigh and the
    leave-one-out choice over 19 lams) is timed once beside them, as installed.
    Two data sets: paper 000's synthetic set (20 inputs, gamma = 0.1, lam = 1e-3, as `bench_ridge.py --shift`) and
    `bench_threads.regression` (10 inputs, gamma = 1, lam = 0.1, as `bench_threads.py`'s headline).
(b) `OVKRidge(solver="nystrom")` at n = 1e6, p = 1000 landmarks, 10 inputs, d = 5 (`bench_threads.regression`):
    <= 60 s wall and <= 1 GB peak RSS, as installed, in a fresh process (plus one-thread for reference).

    python bench/bench_ridge_headline.py            # the issue's sizes: about 3 min on a quiet 2-core machine
    python bench/bench_ridge_headline.py --quick    # n = 2000 / Nystrom n = 1e5: about 30 s

Writes bench/results/ridge_headline.md and .csv (`_quick` suffix with --quick). Every row has the 1-minute load
average at its end, the idle cores the thread policy saw at the start of the section (`linalg.idle_cores`, other
processes only) and wall / CPU seconds (CPU / wall ~ the threads used). Targets are judged on a quiet machine: under
load, wall times measure the other processes.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).parent))
from bench_threads import regression  # noqa: E402

import ovk_nb.linalg as la  # noqa: E402
from ovk_nb.datasets import make_paper000_synthetic  # noqa: E402
from ovk_nb.experiments.core import rows_to_csv, rows_to_markdown  # noqa: E402
from ovk_nb.kernels import gaussian_times_J  # noqa: E402
from ovk_nb.ridge import OVKRidge  # noqa: E402

OUT = Path(__file__).resolve().parent / "results"
MODES = (("as installed", None), ("one thread", 1))


def data_sets(n, d):
    "(name, X, Y, gamma, lam) of the exact comparison."
    Xp, Yp = make_paper000_synthetic(n, d, random_state=0, return_X_y=True)
    Xr, Yr = regression(n, d=d)
    return [("paper 000 synthetic (20 inputs)", Xp, Yp, 0.1, 1e-3), ("bench_threads.regression (10 inputs)", Xr, Yr, 1.0, 0.1)]


def exact_rows(n, d, repeat, with_auto=True):
    "(a): KernelRidge and ours interleaved within each repeat, both modes; best wall and best CPU of the repeats."
    from sklearn.kernel_ridge import KernelRidge
    rows = []
    for name, X, Y, gamma, lam in data_sets(n, d):
        idle = la.idle_cores()
        methods = {"KernelRidge(kernel='rbf')": lambda: KernelRidge(alpha=lam, kernel="rbf", gamma=gamma).fit(X, Y),
                   "OVKRidge Gaussian x J, lam fixed (auto -> cholesky)":
                       lambda: OVKRidge(gaussian_times_J(d, gamma), lam=lam, center_y=False).fit(X, Y)}
        rec = {(k, m): [] for k in methods for m, _ in MODES}
        for _ in range(repeat):
            for k, f in methods.items():
                for m, limit in MODES:
                    with threadpool_limits(limit):
                        t0, c0 = time.perf_counter(), time.process_time()
                        f()
                        rec[k, m].append((time.perf_counter() - t0, time.process_time() - c0))
        kr = list(methods)[0]
        for k in methods:
            for m, _ in MODES:
                w, c = min(t for t, _ in rec[k, m]), min(t for _, t in rec[k, m])
                rows.append({"target": "(a) exact", "data": name, "n": n, "d": d, "method": k, "mode": m, "wall s": w,
                             "cpu s": c, "wall / KernelRidge": w / min(t for t, _ in rec[kr, m]),
                             "all walls s": " ".join(f"{t:.2f}" for t, _ in rec[k, m]), "load": os.getloadavg()[0],
                             "idle cores": idle})
        if with_auto:
            t0, c0 = time.perf_counter(), time.process_time()
            mdl = OVKRidge(gaussian_times_J(d, gamma), center_y=False).fit(X, Y)
            w, c = time.perf_counter() - t0, time.process_time() - c0
            rows.append({"target": "(a) exact", "data": name, "n": n, "d": d,
                         "method": f"OVKRidge Gaussian x J, lam='auto' (default: eigh + LOO, chose {mdl.lam_:.3g})",
                         "mode": "as installed", "wall s": w, "cpu s": c,
                         "wall / KernelRidge": w / min(t for t, _ in rec[kr, "as installed"]), "all walls s": f"{w:.2f}",
                         "load": os.getloadavg()[0], "idle cores": idle})
    return rows


NYSTROM = """
import os, resource, sys, time
sys.path.insert(0, {bench!r})
from threadpoolctl import threadpool_limits
from bench_threads import regression
from ovk_nb.kernels import gaussian_times_J
from ovk_nb.ridge import OVKRidge
import ovk_nb.linalg as la
X, Y = regression({n}, d=5)
def status(key):   # MiB from /proc/self/status (VmHWM: peak RSS of this process, reset by exec; ru_maxrss is not)
    v = [l for l in open("/proc/self/status") if l.startswith(key)]
    return int(v[0].split()[1]) / 1024 if v else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
rss0 = status("VmRSS")
idle = la.idle_cores()
with threadpool_limits({limit}):
    t, c = time.perf_counter(), time.process_time()
    m = OVKRidge(gaussian_times_J(5, gamma=1.0), lam=0.1, solver="nystrom", n_components={p}, random_state=0,
                 center_y=False).fit(X, Y)
    w, c = time.perf_counter() - t, time.process_time() - c
print(w, c, status("VmHWM"), rss0, os.getloadavg()[0], idle, m.n_components_[0])
"""


def nystrom_rows(n, p, modes):
    "(b): one fresh process per mode (peak RSS of that process: VmHWM)."
    rows = []
    for m, limit in modes:
        code = NYSTROM.format(bench=str(Path(__file__).parent), n=n, p=p, limit=limit)
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
        w, c, peak, rss0, load, idle, rank = map(float, out[-7:])
        rows.append({"target": "(b) Nystrom", "data": "bench_threads.regression (10 inputs)", "n": n, "d": 5,
                     "method": f"OVKRidge nystrom, p = {p} (rank kept {int(rank)})", "mode": m, "wall s": w, "cpu s": c,
                     "peak RSS MiB": peak, "RSS before fit MiB": rss0, "load": load, "idle cores": idle})
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="n = 2000 exact, n = 1e5 Nystrom (about 30 s)")
    ap.add_argument("--repeat", type=int, default=3, help="repeats of the exact fits (best of them)")
    ap.add_argument("--only", choices=("exact", "nystrom"), help="run one target only")
    a = ap.parse_args()
    t_start, load0 = time.perf_counter(), os.getloadavg()
    n_exact, n_ny = (2000, 10 ** 5) if a.quick else (5000, 10 ** 6)
    rows = []
    if a.only != "nystrom":
        rows += exact_rows(n_exact, 4, a.repeat)
        print(rows_to_markdown(rows), flush=True)
    if a.only != "exact":
        rows += nystrom_rows(n_ny, 1000, MODES)
        print(rows_to_markdown(rows[-2:]), flush=True)
    load = os.getloadavg()
    sfx = "_quick" if a.quick else ""
    cmd = "python bench/bench_ridge_headline.py" + (" --quick" if a.quick else "") + (f" --only {a.only}" if a.only else "")
    head = (f"# OVKRidge: issue 34's headline targets\n\n`{cmd}`: {la._n_cpus()} CPUs, BLAS as installed with "
            f"{la.blas_ceiling()} threads; load average (1 / 5 / 15 min) {load0[0]:.1f} / {load0[1]:.1f} / {load0[2]:.1f} at "
            f"the start, {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} at the end; {time.perf_counter() - t_start:.0f} s "
            "in all. 'one thread': `threadpool_limits(1)`; 'as installed': no limit (OVKRidge's thread policy decides). "
            "Targets: (a) ours <= 1.0x KernelRidge's wall, as installed; (b) <= 60 s wall and <= 1 GB peak RSS, as "
            "installed. See the module docstring for what each fit solves.\n\n")
    OUT.mkdir(exist_ok=True)
    (OUT / f"ridge_headline{sfx}.md").write_text(head + rows_to_markdown(rows) + "\n")
    (OUT / f"ridge_headline{sfx}.csv").write_text(rows_to_csv(rows))
    print(f"wrote {OUT / f'ridge_headline{sfx}.md'}")


if __name__ == "__main__":
    main()
