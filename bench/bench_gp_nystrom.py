"""OVKGaussianProcess(method='nystrom') at scale (issue 31.3): the fit against OVKRidge(solver='nystrom') at the same n and
m, one LML + gradient against its BLAS-3 floor, the peak memory at n = 1e6, and the fit on a Dask LocalCluster against
one machine. Each case in a fresh subprocess, one BLAS thread per process (BENCH_GP_THREADS), load and threads recorded.

  python bench/bench_gp_nystrom.py fit 100000:500            # ours vs OVKRidge nystrom (wall and CPU, passes)
  python bench/bench_gp_nystrom.py eval 20000:500            # one LML + gradient vs one SYRK and its own BLAS-3 calls
  python bench/bench_gp_nystrom.py memory 1000000:500        # peak RSS of a fit at n = 1e6 (fresh process)
  python bench/bench_gp_nystrom.py dask 1000000:500          # LocalCluster (2 workers x 1 thread) vs one machine
  python bench/bench_gp_nystrom.py all [--quick]             # the four above (--quick: n = 1e5 for memory and dask)
  python bench/bench_gp_nystrom.py report                    # bench/results/gp_nystrom_scale.md from the csv
  python bench/bench_gp_nystrom.py fit4 [--quick] [--repeats K]   # issue 31.3 round 4: n = 1e5 (--quick 2e4), m = 500:
                                                             # fit wall/CPU, gradient/value/subsample passes, LML, OVKRidge
                                                             # before and after -> bench/results/gp_nystrom_fit4.csv/.md

Rows go to bench/results/gp_nystrom_scale.csv (one row per run, kept); the report lists them all.
"""
import json
import os
import resource
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_gp import (RES, THREADS, md_table, _count_passes, _read, _sub, _write, icm_data, nystrom_eval_case,  # noqa: E402
                      nystrom_memory_case)

CSV = RES / "gp_nystrom_scale.csv"


def _tm(f):
    w, c = time.perf_counter(), time.process_time()
    r = f()
    return time.perf_counter() - w, time.process_time() - c, r


def _ridge(X, Y, m):
    from ovk_nb.ridge import OVKRidge
    return _tm(lambda: OVKRidge(solver="nystrom", n_components=m, random_state=0).fit(X, Y))[:2]


def fit_case(n, m):
    """Our fit (default kernel, method='nystrom', m landmarks, random_state=0) between two OVKRidge(solver='nystrom') fits
    on the same data: wall and CPU seconds, the ratio to their mean, the passes over X (rows read / n)."""
    from ovk_nb.gp import OVKGaussianProcess
    X, Y, _, _ = icm_data(n, n_test=1)
    l0 = os.getloadavg()[0]
    r1 = _ridge(X, Y, m)
    seen = _count_passes()
    w, c, gp = _tm(lambda: OVKGaussianProcess(method="nystrom", n_components=m, random_state=0).fit(X, Y))
    passes = seen["rows"] / n
    r2 = _ridge(X, Y, m)
    rw, rc = (r1[0] + r2[0]) / 2, (r1[1] + r2[1]) / 2
    return {"case": "fit", "n": n, "m": m, "threads": THREADS, "load": f"{l0:.1f}-{os.getloadavg()[0]:.1f}",
            "gp_wall_s": round(w, 2), "gp_cpu_s": round(c, 2), "ridge_wall_s": f"{r1[0]:.2f} / {r2[0]:.2f}",
            "ridge_cpu_s": f"{r1[1]:.2f} / {r2[1]:.2f}", "ratio_wall": round(w / rw, 2), "ratio_cpu": round(c / rc, 2),
            "passes": round(passes, 3), "lml": round(gp.log_marginal_likelihood_value_, 4)}


def eval_case(n, m):
    r = nystrom_eval_case(n, m)
    return {"case": "eval", "n": n, "m": m, "threads": r["threads"], "load": r["load"], "eval_s": r["eval_s"],
            "floor_syrk_s": r["floor_syrk_s"], "floor_blas_s": r["floor_blas_s"], "eval_over_syrk": r["eval_over_syrk"],
            "eval_over_blas": r["eval_over_blas"]}


def memory_case(n, m):
    r = nystrom_memory_case(n, m)
    return {"case": "memory", "n": n, "m": m, "threads": r["threads"], "load": r["load"], "gp_wall_s": r["fit_s"],
            "passes": r["passes"], "lml": r["lml"], "peak_rss_gb": r["peak_rss_gb"], "data_rss_gb": r["data_rss_gb"]}


def dask_case(n, m, workers=2):
    """The same fit on one machine and on a LocalCluster (`workers` processes x 1 thread; X and Y persisted on the workers
    in 8 row blocks): both from the same explicit kernel (the default kernel resolved by NumPy on all rows), so that they
    differ only by the order of the blocks' sums; one LML + gradient at a fixed theta on both; wall seconds."""
    import dask.array as da
    from dask.distributed import Client, LocalCluster
    from ovk_nb.gp import NystromLikelihood, OVKGaussianProcess, _default_kernel, nystrom_landmarks
    from ovk_nb.kernels import resolve_kernel
    X, Y, _, _ = icm_data(n, n_test=1)
    Yn = (Y - Y.mean(0)) / Y.std(0)
    K = resolve_kernel(None, X, Yn, default=_default_kernel)
    kw = dict(kernel=K, method="nystrom", n_components=m, random_state=0)
    l0 = os.getloadavg()[0]
    cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None, silence_logs=40,
                           env={"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"})
    client = Client(cluster)
    try:
        c = -(-n // 8)
        Xd, Yd = da.from_array(X, chunks=(c, X.shape[1])).persist(), da.from_array(Y, chunks=(c, Y.shape[1])).persist()
        Z = X[nystrom_landmarks(X, m, 0)]
        theta = np.r_[K.theta, np.log(np.full(Y.shape[1], 0.05))]
        w1, _, (f1, g1) = _tm(lambda: NystromLikelihood(K, X, Yn, Z)(theta))
        lik = NystromLikelihood(K, Xd, (Yd - Y.mean(0)) / Y.std(0), Z)
        lik(theta)                                       # the workers' first task imports ovk_nb: not timed
        lik._key = None
        w2, _, (f2, g2) = _tm(lambda: lik(theta))
        wa, ca, a = _tm(lambda: OVKGaussianProcess(**kw).fit(X, Y))
        wb, cb, b = _tm(lambda: OVKGaussianProcess(**kw).fit(Xd, Yd))
    finally:
        client.close()
        cluster.close()
    la, lb = a.log_marginal_likelihood_value_, b.log_marginal_likelihood_value_
    return {"case": "dask", "n": n, "m": m, "threads": f"1 (driver), {workers} workers x 1", "load": f"{l0:.1f}-{os.getloadavg()[0]:.1f}",
            "gp_wall_s": round(wa, 1), "gp_cpu_s": round(ca, 1), "dask_wall_s": round(wb, 1), "eval_s": round(w1, 2),
            "dask_eval_s": round(w2, 2), "eval_lml_rel_diff": f"{abs(f1 - f2) / abs(f1):.1e}",
            "eval_grad_rel_diff": f"{np.abs(g1 - g2).max() / np.abs(g1).max():.1e}", "lml": round(la, 4),
            "dask_lml": round(lb, 4), "fit_lml_rel_diff": f"{abs(la - lb) / abs(la):.1e}",
            "gamma_diff": f"{abs(a._theta[0] - b._theta[0]):.1e}"}


CSV4 = RES / "gp_nystrom_fit4.csv"


def fit4_case(n, m):
    """Issue 31.3, this round: our fit (default kernel, method='nystrom', m landmarks, random_state=0) between two
    OVKRidge(solver='nystrom') fits on the same data, one BLAS thread: wall and CPU seconds (`time.process_time`, the
    load-robust clock), the passes over X split into gradient passes on all rows, value-only passes on all rows and
    the subsample's rows (rows read / n), the LML, the ratios to the OVKRidge fits' mean."""
    from ovk_nb.gp import NystromLikelihood, OVKGaussianProcess
    X, Y, _, _ = icm_data(n, n_test=1)
    seen, orig = {"grad": 0, "value": 0, "sub": 0}, NystromLikelihood._features

    def counted(self, sk, L):
        r = orig(self, sk, L)
        k = "sub" if self.X.shape[0] < n else ("grad" if r[2] is not None else "value")
        seen[k] += self.X.shape[0] / n
        return r
    l0 = os.getloadavg()[0]
    r1 = _ridge(X, Y, m)
    NystromLikelihood._features = counted
    try:
        w, c, gp = _tm(lambda: OVKGaussianProcess(method="nystrom", n_components=m, random_state=0).fit(X, Y))
    finally:
        NystromLikelihood._features = orig
    r2 = _ridge(X, Y, m)
    rw, rc = (r1[0] + r2[0]) / 2, (r1[1] + r2[1]) / 2
    return {"n": n, "m": m, "threads": THREADS, "load": f"{l0:.1f}-{os.getloadavg()[0]:.1f}", "gp_wall_s": round(w, 2),
            "gp_cpu_s": round(c, 2), "ridge_wall_s": f"{r1[0]:.2f} / {r2[0]:.2f}", "ridge_cpu_s": f"{r1[1]:.2f} / {r2[1]:.2f}",
            "ratio_wall": round(w / rw, 2), "ratio_cpu": round(c / rc, 2),
            "passes": round(seen["grad"] + seen["value"] + seen["sub"], 3), "grad_passes": round(seen["grad"], 3),
            "value_passes": round(seen["value"], 3), "sub_passes": round(seen["sub"], 3),
            "lml": round(gp.log_marginal_likelihood_value_, 5), "log_gamma": round(float(gp._theta[0]), 6)}


def run4(n, m=500, repeats=1):
    rows = _read(CSV4)
    for _ in range(repeats):
        r = _sub([__file__, "--case", "fit4", str(n), str(m)])
        if r:
            r["commit"] = _commit()
            rows.append(r)
            _write(CSV4, rows)
        print(r, flush=True)
    report4()


def report4():
    rows = _read(CSV4)
    cols = ["n", "m", "threads", "load", "gp_wall_s", "gp_cpu_s", "ridge_wall_s", "ridge_cpu_s", "ratio_wall", "ratio_cpu",
            "passes", "grad_passes", "value_passes", "sub_passes", "lml", "log_gamma", "commit"]
    L = ["# OVKGaussianProcess(method='nystrom') fit against OVKRidge(solver='nystrom') (issue 31.3, round 4)", "",
         "Written by `python bench/bench_gp_nystrom.py fit4 [--quick]` from `gp_nystrom_fit4.csv` (every run kept, oldest",
         "first). `icm_data(n, n_test=1)` of `bench_gp.py` (d = 4 outputs), m = 500 landmarks, each run in a fresh process",
         "at one BLAS thread (`threads`); `load` is the 1-minute load average before-after. Ours is timed between two",
         "`OVKRidge(solver='nystrom', n_components=m)` fits on the same data (ratios to their mean). CPU seconds",
         "(`time.process_time`) are the load-robust clock. `passes` = rows of X read / n, split into gradient passes and",
         "value-only passes on all rows and the subsample's rows. Targets: ratio <= 9, CPU <= 10 s at n = 1e5.", ""]
    L += [md_table(rows, cols)]
    (RES / "gp_nystrom_fit4.md").write_text("\n".join(L) + "\n")


CASES = {"fit": fit_case, "eval": eval_case, "memory": memory_case, "dask": dask_case, "fit4": fit4_case}


def _commit():
    import subprocess
    r = subprocess.run(["git", "-C", str(HERE), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return r.stdout.strip() + ("+" if subprocess.run(["git", "-C", str(HERE), "diff", "--quiet", "HEAD", "--", "../ovk_nb"]).returncode else "")


def run(kind, cases):
    rows = _read(CSV)
    for n, m in cases:
        r = _sub([__file__, "--case", kind, str(n), str(m)])
        if r:
            r["commit"] = _commit()
        print(r, flush=True)
        if r:
            rows.append(r)
            _write(CSV, rows)
    report()


def report():
    rows = _read(CSV)
    cols = ["case", "n", "m", "threads", "load", "gp_wall_s", "gp_cpu_s", "ridge_wall_s", "ridge_cpu_s", "ratio_wall",
            "ratio_cpu", "passes", "eval_s", "floor_syrk_s", "floor_blas_s", "eval_over_syrk", "eval_over_blas",
            "peak_rss_gb", "data_rss_gb", "dask_wall_s", "dask_eval_s", "eval_lml_rel_diff", "eval_grad_rel_diff", "lml",
            "dask_lml", "fit_lml_rel_diff", "gamma_diff", "commit"]
    L = ["# OVKGaussianProcess(method='nystrom') at scale (issue 31.3)", "",
         "Written by `python bench/bench_gp_nystrom.py report` from `gp_nystrom_scale.csv` (every run kept, oldest first).",
         "Each case in a fresh process, one BLAS thread (`threads`); `load` is the 1-minute load average before-after: on",
         "the shared 2-core development machine (load 8-11) wall times are upper bounds, CPU seconds and ratios within a",
         "row are what to read. `fit`: ours between two `OVKRidge(solver='nystrom')` fits on the same data (ratio to their",
         "mean), `passes` = rows of X read / n. `eval`: one LML + gradient at a new bandwidth against one SYRK of an n x m",
         "matrix (n m^2 flops: the floor) and against the BLAS-3 calls it makes (solve, SYRK, gradient GEMM: 4 n m^2).",
         "`memory`: peak RSS of a fit alone. `dask`: the same fit on one machine and on a LocalCluster (2 worker",
         "processes x 1 thread), same explicit kernel; one LML + gradient at a fixed theta on both (relative differences).", ""]
    used = [c for c in cols if any(r.get(c) for r in rows)]
    L += [md_table(rows, used)]
    (RES / "gp_nystrom_scale.md").write_text("\n".join(L) + "\n")


if __name__ == "__main__":
    a = sys.argv[1:]
    if a[:1] == ["--case"]:
        print(json.dumps(CASES[a[1]](int(a[2]), int(a[3]))))
    elif a[:1] == ["report"]:
        report()
    elif a[:1] == ["fit4"]:            # fit4 [--quick] [--repeats K]: n = 1e5 (--quick: 2e4), m = 500
        run4(20000 if "--quick" in a else 100000, 500, int(a[a.index("--repeats") + 1]) if "--repeats" in a else 1)
    elif a[:1] == ["all"]:
        big = 100000 if "--quick" in a else 1000000
        run("fit", [(100000, 500)])
        run("eval", [(20000, 500)])
        run("memory", [(big, 500)])
        run("dask", [(big, 500)])
    elif a[:1] and a[0] in CASES:
        run(a[0], [(int(c.split(":")[0]), int(c.split(":")[1])) for c in a[1:]] or [(100000, 500)])
    else:
        print(__doc__)
