"""Threads where they pay (issue 34): each big fit on one BLAS thread and as installed (the thread policy,
`ovk_nb.linalg.factor_threads`), back to back in one process (the as-installed fit starts right after the one-thread fit,
so a policy that counted our own work as load would fall back to one core), then the same under load (one busy process
per core beside us). Each row has the load average, the idle cores the policy saw (`idle_cores`: other processes only)
and CPU / wall of the fit (about the threads it used). Also the building blocks (Cholesky, eigh, GEMM by order, and eigh's
LAPACK drivers), from which `ovk_nb.linalg`'s thresholds are read.

    python bench/bench_threads.py --quick    # every estimator of the issue at its big-fit size, one run each: about
                                             # 3-4 min on a quiet 2-core machine (--no-load: about 2 min)
    python bench/bench_threads.py            # larger sizes (CG 4000, eigen and GP 3000, the optimized GP 1000), best of 2:
                                             # about 7-8 min on a quiet 2-core machine
    python bench/bench_threads.py --headline # adds Nystrom n = 1e6, p = 1000 in a fresh process and exact ridge against
                                             # KernelRidge at n = 5000 (about 2 more minutes)

Writes bench/results/threads.md (this run on top, earlier runs kept below it under 'Earlier runs') and threads.csv
(`--out NAME`: NAME.md and NAME.csv instead, e.g. `--no-blocks --only OVKDE --only MVML --out threads_kde_mvml`: OVKDE
and MVML's rows alone, about 2 min on a quiet 2-core machine).
Targets (quiet machine): as installed <= 0.65x one thread; under load <= 1.1x; Nystrom ridge n = 1e6, p = 1000 <= 60 s
and <= 1 GB; exact separable ridge Gaussian x J, n = 5000, d = 4 <= 1.0x scikit-learn KernelRidge, both as installed.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).parent))
from bench_movkl import data as movkl_data, nine_kernels  # noqa: E402

import ovk_nb.linalg as la  # noqa: E402
from ovk_nb.experiments.core import rows_to_csv, rows_to_markdown  # noqa: E402

OUT = Path(__file__).resolve().parent / "results"


def regression(n, p=10, d=5, seed=0):
    r = np.random.default_rng(seed)
    X = r.random((n, p)) / np.sqrt(p)
    return X, np.sin(3 * X[:, :d]) + 0.1 * r.normal(size=(n, d))


def ridge(solver, d=5, **kw):
    from ovk_nb.kernels import gaussian_times_J
    from ovk_nb.ridge import OVKRidge

    def run(n):
        X, Y = regression(n, d=d)
        return lambda: OVKRidge(gaussian_times_J(d, gamma=1.0), lam=0.1, solver=solver, random_state=0, center_y=False,
                                **kw).fit(X, Y)
    return run


def gp(n, optimize=True):
    "OVKGaussianProcess on 3 outputs: the optimized fit (an eigh of the n x n Gram per bandwidth tried), or one evaluation."
    from ovk_nb.gp import OVKGaussianProcess
    X, Y = regression(n, p=5, d=3)
    return lambda: OVKGaussianProcess(random_state=0, optimizer="fmin_l_bfgs_b" if optimize else None).fit(X, Y)


def movkl(n):
    from ovk_nb.movkl import MovKL
    X, Y, t = movkl_data(n, 20, seed=5)
    return lambda: MovKL(nine_kernels(X, t)[0], lam=0.1, r=2.0).fit(X, Y)


def ovkde(n):
    from ovk_nb.kde import OVKDE
    from ovk_nb.kernels import RBF
    X, Y = regression(n)
    return lambda: OVKDE(RBF(1.0), RBF(1.0), "conditional_covariance", lam=0.1).fit(X, Y).decision_scores(X[:100])


def mvml(n, landmarks=400):
    from ovk_nb.kernels import RBF
    from ovk_nb.mvml import MVML
    X, Y = regression(n, p=12, d=1)
    return lambda: MVML(views=[range(0, 4), range(4, 8), range(8, 12)], kernel=RBF(1.0), lam=0.1, eta=1.0,
                        metric="learned", n_components=min(landmarks, n), random_state=0).fit(X, Y[:, 0])


CASES = [  # (name, make(n) -> fit, quick n, full n): sizes where a fit takes >= ~1 s on one thread of a quiet machine
    ("OVKRidge nystrom, p = 1000", ridge("nystrom", n_components=1000), 100000, 100000),
    ("OVKRidge eigen", ridge("eigen"), 2000, 3000),
    ("OVKRidge auto (grouped Cholesky), d = 4", ridge("auto", d=4), 5000, 5000),
    ("OVKRidge cg", ridge("cg"), 2000, 4000),
    ("OVKGaussianProcess, fixed hyper-parameters (one evaluation + posterior)", lambda n: gp(n, optimize=False), 2000, 3000),
    ("OVKGaussianProcess, optimized", gp, None, 2000),             # the exact GP size (n >= 2000)
    ("MovKL, 9 kernels, 20 outputs", movkl, 2000, 2000),          # the alternation threads from 2000
    ("OVKDE conditional covariance, fit + score 100", ovkde, 2000, 2000),
    ("MVML, 3 views x 400 landmarks (r = 1200)", mvml, 40000, 40000),
    # n = 40000 is 0.78 s on one thread of a quiet machine, too short for a 'big fit': the same model at n = 1e5 (~2-3 s)
    ("MVML, 3 views x 400 landmarks (r = 1200)", mvml, None, 100000),
]


def timed(fit, limit):
    "Wall and CPU seconds of one fit under threadpool_limits(limit) (None: as installed), with what the policy saw."
    idle = la.idle_cores()                              # what the fit's own call will see (cached for 1 s): no reset,
    # so right after the one-thread fit the window spans that fit, and our own work must not count
    load = os.getloadavg()[0]
    with threadpool_limits(limit):
        t0, c0 = time.perf_counter(), time.process_time()
        fit()
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return {"wall s": wall, "cpu s": cpu, "cpu / wall": cpu / wall, "load": load, "idle cores": idle}


def pair(fit, repeat):
    "One thread, then as installed right after it, `repeat` times alternating; the best of each."
    one = inst = None
    for _ in range(repeat):
        a = timed(fit, 1)
        b = timed(fit, None)
        one = a if one is None or a["wall s"] < one["wall s"] else one
        inst = b if inst is None or b["wall s"] < inst["wall s"] else inst
    return one, inst


class Busy:
    "One busy process per CPU beside us (the 'under load' condition); stopped by their own pids."
    def __enter__(self):
        self.procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(la._n_cpus())]
        time.sleep(1.0)
        return self

    def __exit__(self, *exc):
        for p in self.procs:
            p.kill()
            p.wait()


def crossover(orders, repeat):
    """The building blocks (Cholesky, eigh, GEMM) by order: one thread, all BLAS threads (no limit) and under the policy
    (`blas_threads(factor_threads(order, 1))`), back to back."""
    import scipy.linalg as sl
    rows, rng = [], np.random.default_rng(0)
    for m in orders:
        A = rng.normal(size=(m, m))
        A = A @ A.T + m * np.eye(m)
        for name, f in (("cholesky", lambda: sl.cho_factor(A)), ("eigh", lambda: sl.eigh(A)), ("gemm", lambda: A @ A)):
            if name == "eigh" and m > 2000:
                continue
            policy = lambda: la.blas_threads(la.factor_threads(m, 1))
            one, allt = pair(f, repeat)
            pol = min((timed(lambda: _within(policy, f), None) for _ in range(repeat)), key=lambda r: r["wall s"])
            rows.append({"routine": name, "order": m, "one thread s": one["wall s"],
                         f"{la.blas_ceiling()} threads s": allt["wall s"], "ratio": allt["wall s"] / one["wall s"],
                         "policy s": pol["wall s"], "policy ratio": pol["wall s"] / one["wall s"],
                         "idle cores": pol["idle cores"], "load": pol["load"]})
            print(rows[-1], flush=True)
    return rows


def _within(ctx, f):
    with ctx():
        return f()


def eigh_drivers(m, repeat):
    "eigh of order m by scipy's 'evd' (what eigh_psd uses) and 'evr' and by NumPy, on one thread and on all BLAS threads."
    import scipy.linalg as sl
    rng = np.random.default_rng(1)
    A = rng.normal(size=(m, m))
    A = A @ A.T + m * np.eye(m)
    rows = []
    for name, f in (("scipy evd", lambda: sl.eigh(A, driver="evd", check_finite=False)),
                    ("scipy evr", lambda: sl.eigh(A, driver="evr", check_finite=False)),
                    ("numpy", lambda: np.linalg.eigh(A))):
        one, allt = pair(f, repeat)
        rows.append({"eigh": name, "order": m, "one thread s": one["wall s"], f"{la.blas_ceiling()} threads s": allt["wall s"],
                     "ratio": allt["wall s"] / one["wall s"], "idle cores": allt["idle cores"], "load": allt["load"]})
        print(rows[-1], flush=True)
    return rows


def side_by_side(m, repeat):
    """Two independent factorisations of order m (the grouped Cholesky's groups, per-output pieces): one after the other
    on one thread, one after the other on all BLAS threads, and side by side (a ThreadPoolExecutor of 2, each on one BLAS
    thread: numpy and LAPACK release the GIL). Best of `repeat`."""
    from concurrent.futures import ThreadPoolExecutor
    import scipy.linalg as sl
    rng = np.random.default_rng(2)
    mats = []
    for _ in range(2):
        A = rng.normal(size=(m, m))
        mats.append(A @ A.T + m * np.eye(m))
    rows = []
    for name, f in (("eigh", lambda A: sl.eigh(A, driver="evd", check_finite=False)),
                    ("cholesky", lambda A: sl.cho_factor(A, check_finite=False))):
        seq = lambda: [f(A) for A in mats]

        def par():
            with ThreadPoolExecutor(2) as ex:
                return list(ex.map(f, mats))
        one, allt = pair(seq, repeat)
        side = min((timed(par, 1) for _ in range(repeat)), key=lambda r: r["wall s"])
        rows.append({"two independent": name, "order": m, "in turn, one thread s": one["wall s"],
                     f"in turn, {la.blas_ceiling()} threads s": allt["wall s"], "side by side s": side["wall s"],
                     "threads / one": allt["wall s"] / one["wall s"], "side by side / one": side["wall s"] / one["wall s"],
                     "idle cores": allt["idle cores"], "load": side["load"]})
        print(rows[-1], flush=True)
    return rows


def fits(quick, repeat, loaded):
    rows = []
    for name, make, nq, nf in CASES:
        n = nq if quick else nf
        if n is None:
            continue
        t_case = time.perf_counter()
        fit = make(n)
        make(min(n, 200))()                            # warm-up: imports, first-call caches
        one, inst = pair(fit, repeat)
        rows.append({"fit": name, "n": n, "condition": "under load" if loaded else "as found",
                     "one thread s": one["wall s"], "as installed s": inst["wall s"], "ratio": inst["wall s"] / one["wall s"],
                     "cpu / wall": inst["cpu / wall"], "cpu ratio": inst["cpu s"] / one["cpu s"],
                     "idle cores seen": inst["idle cores"], "load": inst["load"]})
        print(rows[-1], f"({time.perf_counter() - t_case:.0f} s with the warm-up)", flush=True)
    return rows


def headline_nystrom(n=10 ** 6, p=1000):
    """Nystrom ridge at n, p landmarks, 10 inputs, as installed, in a fresh process: wall, CPU and peak RSS. The peak is
    the process's own VmHWM (/proc/self/status): Linux carries ru_maxrss over fork + exec, so a child of this (large)
    benchmark process read the parent's peak (978 MiB 'before the fit' in one run)."""
    hwm = "int([l for l in open('/proc/self/status') if l.startswith('VmHWM')][0].split()[1])"
    code = (f"import resource, time, os, sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); import numpy as np; "
            f"from bench_threads import regression, ridge; fit = ridge('nystrom', n_components={p})({n}); "
            f"r0 = {hwm}; t, c = time.perf_counter(), time.process_time(); fit(); "
            f"print(time.perf_counter() - t, time.process_time() - c, {hwm} / 1024, "
            "r0 / 1024, os.getloadavg()[0])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    wall, cpu, rss, rss0, load = map(float, out[-5:])
    return {"target": f"Nystrom ridge n = {n}, p = {p}: <= 60 s, <= 1 GB", "wall s": wall, "cpu s": cpu,
            "peak RSS MiB": rss, "RSS before fit MiB": rss0, "load": load}


def headline_kernel_ridge(n=5000, d=4, repeat=2):
    "Exact separable ridge Gaussian x J against scikit-learn's KernelRidge (one Cholesky), both as installed."
    from sklearn.kernel_ridge import KernelRidge
    X, Y = regression(n, d=d)
    ours = ridge("auto", d=d)(n)
    kr = lambda: KernelRidge(alpha=0.1, kernel="rbf", gamma=1.0).fit(X, Y)
    t_ours = min(timed(ours, None)["wall s"] for _ in range(repeat))
    t_kr = min(timed(kr, None)["wall s"] for _ in range(repeat))
    return {"target": f"exact ridge Gaussian x J, n = {n}, d = {d}: <= 1.0x KernelRidge", "ours s": t_ours,
            "KernelRidge s": t_kr, "ratio": t_ours / t_kr, "load": os.getloadavg()[0], "idle cores": la.idle_cores()}


HISTORY = "## Earlier runs (history, newest first; each as it was written)"


def _with_history(text, name="threads"):
    """This run's text, then the earlier runs of NAME.md below it: the previous run (its title made a '### Run:' line,
    its sections '####') and the older history as it was."""
    path = OUT / f"{name}.md"
    if not path.exists():
        return text
    old = path.read_text()
    prev, _, hist = old.partition(HISTORY)
    lines = []
    for line in prev.strip().splitlines():
        if line.startswith("# "):
            line = "### Run: " + line[2:]
        elif line.startswith("## "):
            line = "#### " + line[3:]
        lines.append(line)
    return text + "\n" + HISTORY + "\n\n" + "\n".join(lines) + "\n\n" + hist.strip() + "\n"


def main(quick=False, headline=False, load=True, only=None, blocks=True, out="threads"):
    OUT.mkdir(exist_ok=True)
    t_start, load0 = time.perf_counter(), os.getloadavg()
    repeat = 1 if quick else 2
    global CASES
    if only:
        CASES = [c for c in CASES if any(o.lower() in c[0].lower() for o in only)]
    cross = crossover([500, 1000, 2000] if quick else [500, 1000, 2000, 4000], repeat) if blocks else []
    drivers = eigh_drivers(1500 if quick else 2000, repeat) if blocks else []
    sides = side_by_side(1500 if quick else 2000, repeat) if blocks else []
    rows = fits(quick, repeat, loaded=False)
    if load:
        with Busy():
            rows += fits(quick, repeat, loaded=True)   # best of each: one run read the load's own swing (0.89-1.13x)
    heads = []
    if headline:
        heads = [headline_kernel_ridge(5000), headline_nystrom()]
    end = os.getloadavg()
    flags = ((" --quick" if quick else "") + (" --headline" if headline else "") + ("" if load else " --no-load")
             + ("" if blocks else " --no-blocks") + "".join(f" --only '{o}'" for o in only or [])
             + ("" if out == "threads" else f" --out {out}"))
    head = (f"# Threads where they pay (issue 34)\n\n`python bench/bench_threads.py{flags}`. "
            f"{la._n_cpus()} CPUs, BLAS as installed with {la.blas_ceiling()} threads. Load average (1 / 5 / 15 min) "
            f"{load0[0]:.1f} / {load0[1]:.1f} / {load0[2]:.1f} at the start, {end[0]:.1f} / {end[1]:.1f} / {end[2]:.1f} "
            f"at the end; whole run {time.perf_counter() - t_start:.0f} s. 'one thread': `threadpool_limits(1)`; "
            "'as installed': no limit, the thread policy decides, started right after the one-thread fit in the same "
            f"process; best of {repeat}, alternating, under load too. 'idle cores seen': `idle_cores()` just before the "
            "as-installed fit (the cores other processes leave idle); 'cpu / wall' of the as-installed fit is about the "
            "threads it used (times the share of a core the machine gave us), 'cpu ratio' its CPU seconds over the "
            "one-thread fit's. 'under load': one busy process per CPU beside us. Targets: 'as found' ratio <= 0.65 on a "
            "quiet machine, 'under load' <= 1.1. The thresholds of `ovk_nb.linalg` (EIGH_THREADS_MIN_N, "
            "CHOLESKY_THREADS_MIN_N, GEMM_THREADS_MIN_WORK) are read off the building blocks.\n\n")
    text = head + "## Fits\n\n" + rows_to_markdown(rows) + "\n\n"
    if heads:
        text += "## Headline targets (as installed)\n\n" + "\n\n".join(rows_to_markdown([h]) for h in heads) + "\n\n"
    if blocks:
        text += ("## Building blocks by order: one thread, all BLAS threads, the policy\n\n" + rows_to_markdown(cross)
                 + "\n\n## eigh's LAPACK drivers: one thread and all BLAS threads\n\n" + rows_to_markdown(drivers)
                 + "\n\n## Two independent factorisations: in turn or side by side\n\n" + rows_to_markdown(sides) + "\n")
    (OUT / f"{out}.md").write_text(_with_history(text, out))
    (OUT / f"{out}.csv").write_text(rows_to_csv(rows))
    print(text)


if __name__ == "__main__":
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="the issue's sizes, one run each (about 3-4 min quiet)")
    ap.add_argument("--headline", action="store_true", help="also Nystrom n = 1e6 and exact ridge vs KernelRidge n = 5000")
    ap.add_argument("--no-load", action="store_true", help="skip the under-load section")
    ap.add_argument("--no-blocks", action="store_true", help="skip the building blocks (Cholesky / eigh / GEMM, drivers)")
    ap.add_argument("--only", action="append", help="only the fits whose name contains this (repeatable), e.g. MovKL")
    ap.add_argument("--out", default="threads", help="results file bench/results/OUT.md (and .csv); default threads")
    a = ap.parse_args()
    sys.exit(main(quick=a.quick, headline=a.headline, load=not a.no_load, only=a.only, blocks=not a.no_blocks, out=a.out))
