"""OVKRidge on a Dask LocalCluster (2 worker processes, 1 thread each) against the same fit on one machine.

1. Nystrom: n = 1e6 (paper 000's synthetic set: 20 features, d = 10 outputs, Gaussian x J), p = 1000 landmarks. The data are
   generated in row blocks (block b from seed b), on the workers for the Dask fit (never on the driver) and all in one
   process for the single-machine fit: the same rows. Each fit runs in a fresh process; reported: fit time, peak RSS of the
   single-machine process, of the Dask driver and of each worker (VmHWM of the worker processes, reset before the fit
   through /proc/self/clear_refs), and the largest difference between the two models' predictions on 5000 test points.
2. Exact CG (`OVKRidge(solver="cg")` on a Dask X: the Gram rows on the workers, the one PCG on the driver) at a smaller n,
   against the single-machine CG with the same (Jacobi) preconditioner.
3. MVML (learned metric, 3 views of the 20 features, 200 landmarks per view, the first output as target): the block-Nystrom
   normal equations summed on the workers, the alternation on the driver, against the same fit on one machine.

    python bench/bench_dask.py [--n 1000000] [--p 1000] [--chunk 50000] [--cg-n 8000] [--mvml-n 200000] [--quick]

Writes bench/results/dask.csv and bench/results/dask.md. The machine has 2 cores shared with other processes: the load
average is recorded at the start and the end.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from ovk_nb.experiments.core import rows_to_csv, rows_to_markdown

OUT = Path(__file__).resolve().parent / "results"
GAMMA, LAM, D = 0.1, 1e-3, 10

CHILD = r"""
import json, sys, time
import numpy as np
from ovk_nb.datasets import make_paper000_synthetic, paper000_features
from ovk_nb.kernels import gaussian_times_J
from ovk_nb.mvml import MVML
from ovk_nb.ridge import OVKRidge

def hwm():
    "peak RSS of this process (MB)"
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024

def reset_hwm():
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False

def block(b, m, d):
    "rows of block b: X uniform from seed b + 1, Y = phi(X) W^T with paper 000's task weights W of seed 0 (one function)"
    W = make_paper000_synthetic(1, d, random_state=0).coef
    X = np.random.default_rng(int(b) + 1).uniform(0.0, 1.0, size=(m, 20))
    return X, paper000_features(X) @ W.T

a = json.loads(sys.argv[1])
n, chunk, d, p, mode, solver = a["n"], a["chunk"], a["d"], a["p"], a["mode"], a["solver"]
sizes = [min(chunk, n - s) for s in range(0, n, chunk)]
Xte, Yte = block(10 ** 6, 5000, d)
K = gaussian_times_J(d, a["gamma"])
if solver == "mvml":                                   # one target, three views of the 20 features
    est = MVML(views=[list(range(0, 7)), list(range(7, 14)), list(range(14, 20))], lam=a["lam"], n_components=p,
               random_state=0)
    Yte = Yte[:, 0]
else:
    est = OVKRidge(K, lam=a["lam"], solver=solver, n_components=p, random_state=0, tol=a["tol"],
                   preconditioner="jacobi" if solver == "cg" else "auto", center_y=False)
out = {}
if mode == "single":
    blocks = [block(b, m, d) for b, m in enumerate(sizes)]
    X, Y = np.concatenate([x for x, _ in blocks]), np.concatenate([y for _, y in blocks])
    del blocks
    Y = Y[:, 0] if solver == "mvml" else Y
    out["data_MB"] = hwm()
    t = time.perf_counter(); est.fit(X, Y); out["fit"] = time.perf_counter() - t
    out["peak_MB"] = hwm()
else:
    import dask
    import dask.array as da
    from distributed import Client, LocalCluster
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None, silence_logs=40)
    client = Client(cluster)
    parts = [dask.delayed(block, pure=True)(b, m, d) for b, m in enumerate(sizes)]
    X = da.concatenate([da.from_delayed(q[0], (m, 20), dtype=float) for q, m in zip(parts, sizes)])
    Y = da.concatenate([da.from_delayed(q[1], (m, d), dtype=float) for q, m in zip(parts, sizes)])
    Y = Y[:, 0] if solver == "mvml" else Y
    if solver == "cg":                                 # the Gram rows are built from data already on the workers
        X, Y = dask.persist(X, Y)
    out["workers_reset"] = all(client.run(reset_hwm).values())
    out["workers_base_MB"] = sorted(client.run(hwm).values())          # their RSS when the peak was reset
    out["driver_before_MB"] = hwm()
    t = time.perf_counter(); est.fit(X, Y); out["fit"] = time.perf_counter() - t
    out["workers_peak_MB"] = sorted(client.run(hwm).values())
    out["driver_peak_MB"] = hwm()
    t = time.perf_counter(); F = est.predict(da.from_array(Xte, chunks=2500)).compute(); out["predict_dask"] = time.perf_counter() - t
    client.close(); cluster.close()
P = est.predict(Xte)
out["iterations"] = int(est.n_iter_)
out["test_mse"] = float(((P - Yte) ** 2).reshape(len(P), -1).sum(1).mean())
np.save(a["pred"], P)
print(json.dumps(out))
"""


def run(mode, solver, n, chunk, p, tol, tmp):
    pred = str(Path(tmp) / f"{mode}_{solver}.npy")
    args = {"n": n, "chunk": chunk, "d": D, "p": p, "mode": mode, "solver": solver, "gamma": GAMMA,
            "lam": {"cg": 1.0, "mvml": 0.1}.get(solver, LAM),
            "tol": tol, "pred": pred}
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", CHILD, json.dumps(args)], capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"{mode} {solver} failed:\n{proc.stderr[-2000:]}")
    r = json.loads(proc.stdout.strip().splitlines()[-1])
    r["wall"], r["P"] = wall, np.load(pred)
    print(mode, solver, n, {k: v for k, v in r.items() if k != "P"}, flush=True)
    return r


def rows_for(solver, n, chunk, p, tol, tmp):
    s = run("single", solver, n, chunk, p, tol, tmp)
    dk = run("dask", solver, n, chunk, p, tol, tmp)
    diff = float(np.abs(dk["P"] - s["P"]).max())
    what = {"nystrom": f"nystrom p = {p}", "cg": "exact CG (Jacobi), lam = 1",
            "mvml": f"MVML, learned metric, 3 views x {p} landmarks, lam = 0.1"}[solver]
    rows = [{"solver": what, "n": n, "where": "one machine (one process, BLAS as installed)", "fit (s)": s["fit"],
             "peak RSS (MB)": s["peak_MB"], "note": f"data alone {s['data_MB']:.0f} MB; test MSE {s['test_mse']:.3g}"
             + (f"; {s['iterations']} CG iterations" if solver == "cg" else "")},
            {"solver": what, "n": n, "where": "Dask LocalCluster, 2 workers x 1 thread", "fit (s)": dk["fit"],
             "peak RSS (MB)": max(dk["workers_peak_MB"]), "peak RSS per worker (MB)": " / ".join(f"{v:.0f}" for v in dk["workers_peak_MB"]),
             "worker RSS before the fit (MB)": " / ".join(f"{v:.0f}" for v in dk["workers_base_MB"]),
             "driver peak RSS (MB)": dk["driver_peak_MB"], "max |prediction difference|": diff,
             "note": f"row chunks of {chunk}; test MSE {dk['test_mse']:.3g}; predict 5000 points blockwise {dk['predict_dask']:.2f} s"
             + (f"; {dk['iterations']} CG iterations" if solver == "cg" else "")
             + ("" if dk["workers_reset"] else "; worker peaks not reset (include start-up)")}]
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--p", type=int, default=1000)
    ap.add_argument("--chunk", type=int, default=50_000)
    ap.add_argument("--cg-n", type=int, default=8000)
    ap.add_argument("--mvml-n", type=int, default=200_000)
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    if a.quick:
        a.n, a.p, a.chunk, a.cg_n, a.mvml_n = 20000, 200, 5000, 1500, 10000
    import tempfile
    load0, t0 = os.getloadavg(), time.time()
    with tempfile.TemporaryDirectory(dir="/tmp") as tmp:
        rows = rows_for("nystrom", a.n, a.chunk, a.p, 1e-10, tmp)
        rows += rows_for("cg", a.cg_n, max(a.cg_n // 8, 1), a.p, 1e-10, tmp) if a.cg_n else []
        rows += rows_for("mvml", a.mvml_n, max(a.mvml_n // 8, 1), 200, 1e-10, tmp) if a.mvml_n else []
    load1, secs = os.getloadavg(), time.time() - t0
    suffix = "_quick" if a.quick else ""
    OUT.mkdir(exist_ok=True)
    (OUT / f"dask{suffix}.csv").write_text(rows_to_csv(rows))
    head = [f"# OVKRidge and MVML on Dask vs one machine{' (quick)' if a.quick else ''}", "",
            f"`python bench/bench_dask.py{' --quick' if a.quick else ''} --n {a.n} --p {a.p} --chunk {a.chunk} --cg-n {a.cg_n} --mvml-n {a.mvml_n}` on "
            f"{platform.machine()}, {os.cpu_count()} cores shared with other processes, Python {platform.python_version()}; "
            f"{secs:.0f} s in all. Load average (1 / 5 / 15 min) {load0[0]:.1f} / {load0[1]:.1f} / {load0[2]:.1f} at the start, "
            f"{load1[0]:.1f} / {load1[1]:.1f} / {load1[2]:.1f} at the end. Data: paper 000's synthetic set (20 features), "
            f"d = {D} outputs, Gaussian x J with gamma = {GAMMA}; Nystrom lam = {LAM}, CG lam = 1; MVML: the first output, 3 views (features 1-7, 8-14, 15-20), Gaussian kernels with the default bandwidths, lam = 0.1. The Dask data are generated "
            "block by block on the workers (the same rows as the single-machine run, which generates all of them in its process). "
            "Each fit runs in a fresh process; peak RSS = VmHWM (the workers' reset just before the fit). The two Dask workers "
            "share the 2 cores with the driver and with everything else on the machine.", ""]
    (OUT / f"dask{suffix}.md").write_text("\n".join(head + [rows_to_markdown(rows), ""]))
    print("\n".join(head + [rows_to_markdown(rows)]))


if __name__ == "__main__":
    main()
