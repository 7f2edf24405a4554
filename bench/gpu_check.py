"""The GPU check of issue 24 (run by bench/gpu_check.sh): OVKRidge on PyTorch CUDA tensors and CuPy arrays against NumPy on the
same machine's CPU. Writes bench/results/gpu_table.md and gpu.csv (the summary, gpu.md, is written by hand from them).

Targets (issue 24): exact separable fp64 n = 20000 <= 1.5 s on one H100; n = 5000 >= 15x faster than our CPU path on the
GPU machine's own CPU; Nystrom n = 1e6, p = 2000 <= 5 s. Equality: predictions on 1000 test points against the NumPy fit
(relative, fp64), where the NumPy fit is affordable (n <= 20000 exact; Nystrom on the first 1e5 rows). Besides the targets:
CG (`linalg.pcg` on the device, separable preconditioner) on a sum of two non-commuting separable kernels at n = 5000,
its iterations and equality against NumPy's CG; float32 at n = 20000 against NumPy's float64 fit; PyTorch's CUDA peak
memory of each fit in units of one n x n float64 array; OVKGaussianProcess (the default kernel: RBF bandwidth, full-rank
T = W W^T + diag(kappa) and the noise learned, exact likelihood in the joint eigenbasis) at n = 2000 on the device against
NumPy (time, LML, predictions, std) and at n = 5000 on the device (one fit, on the first library; one
likelihood-and-gradient evaluation at a new bandwidth on each library and on the CPU).

    python bench/gpu_check.py            # on a GPU machine (after gpu_check.sh's installs)
    python bench/gpu_check.py --dry-run  # toy sizes on the CPU (PyTorch CPU tensors), to check the script itself
    GPU_CHECK_RESULTS=/tmp/gc python bench/gpu_check.py --dry-run    # ... writing gpu_table.md / gpu.csv there instead
"""
from __future__ import annotations

import csv
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np
from ovk_nb.experiments.core import rows_to_markdown

from ovk_nb.gp import OVKGaussianProcess
from ovk_nb.kernels import RBF, Separable, SumKernel, paper000_J
from ovk_nb.ridge import OVKRidge

OUT = Path(os.environ.get("GPU_CHECK_RESULTS") or Path(__file__).resolve().parent / "results")
DRY = "--dry-run" in sys.argv
D, P_IN, LAM = 4, 10, 1e-2


def data(n, seed=0):
    r = np.random.default_rng(seed)
    X = r.uniform(-1, 1, size=(n, P_IN))
    F = truth(X)
    return X, F + 0.1 * r.normal(size=F.shape)


def libraries():
    "(name, to_device, synchronise) for the GPU libraries importable here (PyTorch CPU tensors in a dry run)."
    out = []
    try:
        import torch
        dev = "cuda" if torch.cuda.is_available() and not DRY else "cpu"
        if DRY:              # torch's CPU threads spin on a loaded machine (eigh 300 x 300: 5 s with 2 threads, 0.015 s with
            torch.set_num_threads(1)                   # one); the dry run only checks the script
        sync = torch.cuda.synchronize if dev == "cuda" else (lambda: None)
        out.append((f"torch ({dev})", lambda A: torch.asarray(A, device=dev), sync))
    except ImportError:
        pass
    if not DRY:
        try:
            import cupy
            out.append(("cupy", cupy.asarray, cupy.cuda.Device().synchronize))
        except ImportError:
            pass
    return out


def host(A):
    return A.get() if hasattr(A, "get") else (A.cpu().numpy() if hasattr(A, "cpu") else np.asarray(A))


def timed(f, sync=lambda: None):
    sync(); t = time.perf_counter(); out = f(); sync()
    return time.perf_counter() - t, out


def peak_reset():
    "Reset PyTorch's CUDA peak-memory counter (nothing on the CPU)."
    try:
        import torch
        if torch.cuda.is_available() and not DRY:
            torch.cuda.reset_peak_memory_stats()
    except ImportError:
        pass


def peak_n2(name, n):
    "PyTorch's CUDA peak memory since `peak_reset`, in units of one n x n float64 array (None off CUDA)."
    if not name.startswith("torch (cuda"):
        return None
    import torch
    return torch.cuda.max_memory_allocated() / (8.0 * n * n)


def gp_compare_row(libs, Xt, X, Y, case, **kw):
    """One row: OVKGaussianProcess(**kw) (hyper-parameters learned) on NumPy and on each device library, the fit times,
    LML, predictions and std at each library's own optimum, and again at NumPy's learned hyper-parameters (no search: the
    computation alone, apart from where L-BFGS-B stops)."""
    n = X.shape[0]
    row = {"case": case, "n": n}
    row["cpu numpy fit (s)"], ref = timed(lambda: OVKGaussianProcess(**kw).fit(X, Y))
    Fr, Sr = ref.predict(Xt, return_std=True)
    ref_fixed = OVKGaussianProcess(optimizer=None, kernel=ref.kernel_, noise=ref.noise_, **kw).fit(X, Y)
    Ff, Sf = ref_fixed.predict(Xt, return_std=True)
    rel = lambda A, R: float(np.abs(A - R).max() / np.abs(R).max())
    for name, to, sync in libs:
        Xd, Yd = to(X), to(Y)
        peak_reset()
        t, m = timed(lambda: OVKGaussianProcess(**kw).fit(Xd, Yd), sync)
        F, S = (host(A) for A in m.predict(to(Xt), return_std=True))
        row[f"{name} fit (s)"] = t
        row[f"{name} speed-up vs cpu"] = row["cpu numpy fit (s)"] / t
        row[f"{name} LML rel. diff"] = abs(m.log_marginal_likelihood_value_ - ref.log_marginal_likelihood_value_) / abs(
            ref.log_marginal_likelihood_value_)
        row[f"{name} max rel. diff"], row[f"{name} std max rel. diff"] = rel(F, Fr), rel(S, Sr)
        if peak_n2(name, n) is not None and kw.get("method") != "nystrom":
            row[f"{name} peak GPU memory (n^2 fp64)"] = peak_n2(name, n)
        fixed = OVKGaussianProcess(optimizer=None, kernel=ref.kernel_, noise=ref.noise_, **kw).fit(Xd, Yd)
        F, S = (host(A) for A in fixed.predict(to(Xt), return_std=True))
        row[f"{name} at NumPy's hyper-parameters: LML rel. diff"] = abs(
            fixed.log_marginal_likelihood_value_ - ref_fixed.log_marginal_likelihood_value_) / abs(
            ref_fixed.log_marginal_likelihood_value_)
        row[f"{name} at NumPy's hyper-parameters: max rel. diff"] = rel(F, Ff)
        row[f"{name} at NumPy's hyper-parameters: std max rel. diff"] = rel(S, Sf)
        del m, fixed, Xd, Yd
        free_device()
    print(row, flush=True)
    return row


def gp_rows(libs, Xt):
    """OVKGaussianProcess (default kernel, fp64) on the device against NumPy at n = 2000 (fit time, LML, predictions and std
    on 200 test points; `gp_device_rows` is the n = 5000 half)."""
    import warnings
    from sklearn.exceptions import ConvergenceWarning
    warnings.simplefilter("ignore", ConvergenceWarning)
    X, Y = data(150 if DRY else 2000)
    return [gp_compare_row(libs, Xt, X, Y, "GP, default kernel (RBF, W W^T + diag, noise learned), fp64")]


def gp_nystrom_rows(libs, Xt):
    """OVKGaussianProcess(method='nystrom') (SoR / DTC likelihood, m landmarks, default kernel learned): on the device against
    NumPy at n = 10000 (`gp_compare_row`), and fits on the device alone at n = 1e5 and 1e6 (NumPy's n = 1e5 fit: 590 s on
    the 2-core development machine)."""
    import warnings
    from sklearn.exceptions import ConvergenceWarning
    warnings.simplefilter("ignore", ConvergenceWarning)
    n_cmp, sizes, m = (400, [2000], 50) if DRY else (10000, [100_000, 1_000_000], 500)
    kw = dict(method="nystrom", n_components=m, random_state=0)
    X, Y = data(n_cmp)
    out = [gp_compare_row(libs, Xt, X, Y, f"GP nystrom m = {m}, default kernel learned, fp64", **kw)]
    name, to, sync = libs[0]                              # the large sizes on the first library only (device minutes)
    for n in sizes:
        X, Y = data(n)
        Xd, Yd = to(X), to(Y)
        peak_reset()
        row = {"case": f"GP nystrom m = {m}, default kernel learned, fp64 (device only)", "n": n}
        row[f"{name} fit (s)"], mdl = timed(lambda: OVKGaussianProcess(**kw).fit(Xd, Yd), sync)
        if name.startswith("torch (cuda"):
            import torch
            row[f"{name} peak GPU memory (GB)"] = torch.cuda.max_memory_allocated() / 1e9
        F = host(mdl.predict(to(Xt)))
        row[f"{name} test MSE (noise-free targets)"] = float(np.mean((F - truth(Xt)) ** 2))
        del mdl, Xd, Yd
        free_device()
        out.append(row)
        print(row, flush=True)
    return out


def truth(X):
    "The noise-free targets of `data`."
    return np.column_stack([np.sin(3 * X[:, 0]), X[:, 1] * X[:, 2], np.cos(2 * X[:, 3]), X[:, 4] ** 2])


def gp_device_rows(libs):
    "The n = 5000 half of `gp_rows` (its own section: the deadline can skip it)."
    n_dev = 300 if DRY else 5000
    out = []
    X, Y = data(n_dev)
    row = {"case": "GP, default kernel, fp64: fit on the first device library; one LML + gradient at a new bandwidth",
           "n": n_dev}
    fitted = None                                         # the full fit once (the first library: minutes of budget matter)
    for name, to, sync in libs:
        Xd, Yd = to(X), to(Y)
        peak_reset()
        if fitted is None:
            t, fitted = timed(lambda: OVKGaussianProcess().fit(Xd, Yd), sync)
            row[f"{name} fit (s)"], m = t, fitted
        else:                                             # the others: the learned hyper-parameters, one eigh, no search
            m = OVKGaussianProcess(optimizer=None, kernel=fitted.kernel_, noise=fitted.noise_).fit(Xd, Yd)
        theta = fitted._theta.copy()
        theta[0] += 0.1                                   # a new bandwidth: one eigh of the n x n Gram, then the gradient
        row[f"{name} LML + gradient (s)"], _ = timed(lambda: m.log_marginal_likelihood(theta, True), sync)
        if peak_n2(name, n_dev) is not None:
            row[f"{name} peak GPU memory (n^2 fp64)"] = peak_n2(name, n_dev)
    if fitted is not None:                                # the same evaluation on the CPU (NumPy), its likelihood built once
        ref = OVKGaussianProcess(optimizer=None, kernel=fitted.kernel_, noise=fitted.noise_).fit(X, Y)
        theta = fitted._theta.copy()
        theta[0] += 0.1
        row["cpu numpy LML + gradient (s)"], _ = timed(lambda: ref.log_marginal_likelihood(theta, True))
    out.append(row)
    print(row, flush=True)
    return out


T0 = time.perf_counter()
DEADLINE = float(os.environ.get("GPU_CHECK_DEADLINE", "inf"))   # seconds from the start: later sections are skipped


def free_device():
    "Hand the libraries' cached device memory back between fits (PyTorch's and CuPy's pools would otherwise stack)."
    try:
        import torch
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
    except ImportError:
        pass
    try:
        import cupy
        cupy.get_default_memory_pool().free_all_blocks()
    except ImportError:
        pass


def write(rows, libs):
    "Write gpu.csv and gpu_table.md from the rows so far (after every section: a run stopped at its limit keeps what it did)."
    OUT.mkdir(parents=True, exist_ok=True)
    keys = list(dict.fromkeys(k for r in rows for k in r))
    with open(OUT / "gpu.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys); w.writeheader(); w.writerows(rows)
    fmt = lambda v: f"{v:.3g}" if isinstance(v, float) else str(v)
    lines = ["# OVKRidge and OVKGaussianProcess on a GPU (bench/gpu_check.py)", "", ENV_LINE + (
             " -- DRY RUN on the CPU at toy sizes" if DRY else ""), "",
             rows_to_markdown([{k: fmt(r.get(k, "")) for k in keys} for r in rows])]
    (OUT / "gpu_table.md").write_text("\n".join(lines) + "\n")


def environment(libs):
    "One line: machine, CPUs, GPU and the versions that matter."
    import scipy, sklearn
    parts = [f"Machine: {platform.node()} ({platform.machine()}, {os.cpu_count()} CPUs)",
             f"Python {platform.python_version()}", f"numpy {np.__version__}", f"scipy {scipy.__version__}",
             f"scikit-learn {sklearn.__version__}"]
    try:
        import torch
        parts.append(f"torch {torch.__version__}" + (f" on {torch.cuda.get_device_name(0)}" if torch.cuda.is_available() else ""))
    except ImportError:
        pass
    try:
        import cupy
        parts.append(f"cupy {cupy.__version__}")
    except ImportError:
        pass
    return "; ".join(parts) + "; libraries timed: " + ", ".join(n for n, _, _ in libs)


def exact_rows(libs, Xt, refs):
    sizes = [200, 400, 800] if DRY else [5000, 20000, 40000]
    cpu_max = sizes[1]                                  # the NumPy exact fit beyond this takes minutes: not timed
    K = Separable(RBF(0.5), np.eye(D))
    out = []
    for n in sizes:
        X, Y = data(n)
        row = {"case": "exact separable, T = I (cholesky), fp64", "n": n}
        ref = None
        if n <= cpu_max:
            row["cpu numpy fit (s)"], ref = timed(lambda: OVKRidge(K, lam=LAM, solver="cholesky").fit(X, Y))
        for name, to, sync in libs:
            Xd, Yd = to(X), to(Y)
            peak_reset()
            t1, m = timed(lambda: OVKRidge(K, lam=LAM, solver="cholesky").fit(Xd, Yd), sync)
            del m
            free_device()
            t, m = timed(lambda: OVKRidge(K, lam=LAM, solver="cholesky").fit(Xd, Yd), sync)
            row[f"{name} first fit (s)"], row[f"{name} fit (s)"] = t1, t     # first: one-off kernel compiles, plans
            if peak_n2(name, n) is not None:
                row[f"{name} peak GPU memory (n^2 fp64)"] = peak_n2(name, n)
            if ref is not None:
                P, Pr = host(m.predict(to(Xt))), ref.predict(Xt)
                row[f"{name} max rel. diff"] = float(np.abs(P - Pr).max() / np.abs(Pr).max())
                row[f"{name} speed-up vs cpu"] = row["cpu numpy fit (s)"] / t
            del m, Xd, Yd
            free_device()
        if n == cpu_max:
            refs["exact"] = (n, ref)                     # the fp32 section compares against this fit
        out.append(row)
        print(row, flush=True)
    return out


def fp32_rows(libs, Xt, refs):
    n, ref = refs["exact"]                               # float32 follows X: its time, and its accuracy against NumPy's fp64
    K = Separable(RBF(0.5), np.eye(D))
    X, Y = data(n)
    row = {"case": "exact separable, T = I (cholesky), fp32 vs NumPy fp64", "n": n}
    for name, to, sync in libs:
        Xd, Yd = to(X.astype(np.float32)), to(Y.astype(np.float32))
        t1, m = timed(lambda: OVKRidge(K, lam=LAM, solver="cholesky").fit(Xd, Yd), sync)
        row[f"{name} first fit (s)"] = t1                # (float32 kernels compiled on first use)
        del m
        free_device()
        t, m = timed(lambda: OVKRidge(K, lam=LAM, solver="cholesky").fit(Xd, Yd), sync)
        P, Pr = host(m.predict(to(Xt.astype(np.float32)))), ref.predict(Xt)
        row[f"{name} fit (s)"], row[f"{name} max rel. diff"] = t, float(np.abs(P - Pr).max() / np.abs(Pr).max())
        del m, Xd, Yd
        free_device()
    print(row, flush=True)
    return [row]


def cg_rows(libs, Xt):
    n_cg = 300 if DRY else 5000                          # CG: a sum whose T's do not commute (no grouped Cholesky, no eigen)
    K_cg = SumKernel([Separable(RBF(0.5), paper000_J(D, 0.3)), Separable(RBF(2.0), np.diag(np.arange(1.0, D + 1)))])
    X, Y = data(n_cg)
    row = {"case": "CG, sum of 2 non-commuting separables, fp64", "n": n_cg}
    row["cpu numpy fit (s)"], ref = timed(lambda: OVKRidge(K_cg, lam=LAM, solver="cg").fit(X, Y))
    row["cpu numpy CG iterations"] = ref.n_iter_
    for name, to, sync in libs:
        Xd, Yd = to(X), to(Y)
        peak_reset()
        t, m = timed(lambda: OVKRidge(K_cg, lam=LAM, solver="cg").fit(Xd, Yd), sync)
        if peak_n2(name, n_cg) is not None:
            row[f"{name} peak GPU memory (n^2 fp64)"] = peak_n2(name, n_cg)
        P, Pr = host(m.predict(to(Xt))), ref.predict(Xt)
        row[f"{name} fit (s)"], row[f"{name} CG iterations"] = t, m.n_iter_
        row[f"{name} max rel. diff"] = float(np.abs(P - Pr).max() / np.abs(Pr).max())
        row[f"{name} speed-up vs cpu"] = row["cpu numpy fit (s)"] / t
        del m, Xd, Yd
        free_device()
    print(row, flush=True)
    return [row]


def nystrom_rows(libs, Xt):
    ny_n, ny_p = (5000, 100) if DRY else (1_000_000, 2000)
    K = Separable(RBF(0.5), np.eye(D))
    X, Y = data(ny_n)
    row = {"case": f"Nystrom p = {ny_p}, fp64", "n": ny_n}
    sub = min(ny_n, 100_000)
    t_cpu, ref = timed(lambda: OVKRidge(K, lam=LAM, solver="nystrom", n_components=ny_p, random_state=0).fit(X[:sub], Y[:sub]))
    row[f"cpu numpy fit on {sub} rows (s)"] = t_cpu
    for name, to, sync in libs:
        Xd, Yd = to(X), to(Y)
        peak_reset()
        t1, m = timed(lambda: OVKRidge(K, lam=LAM, solver="nystrom", n_components=ny_p, random_state=0).fit(Xd, Yd), sync)
        del m
        free_device()
        t, m = timed(lambda: OVKRidge(K, lam=LAM, solver="nystrom", n_components=ny_p, random_state=0).fit(Xd, Yd), sync)
        row[f"{name} first fit (s)"], row[f"{name} fit (s)"] = t1, t
        if name.startswith("torch (cuda"):
            import torch
            row[f"{name} peak GPU memory (GB)"] = torch.cuda.max_memory_allocated() / 1e9
        del m, Xd, Yd
        free_device()
        ms = OVKRidge(K, lam=LAM, solver="nystrom", n_components=ny_p, random_state=0).fit(to(X[:sub]), to(Y[:sub]))
        P, Pr = host(ms.predict(to(Xt))), ref.predict(Xt)
        row[f"{name} max rel. diff ({sub} rows)"] = float(np.abs(P - Pr).max() / np.abs(Pr).max())
        del ms
        free_device()
    print(row, flush=True)
    return [row]


ENV_LINE = ""


def main():
    global ENV_LINE
    import traceback
    Xt, _ = data(1000, seed=1)
    libs = libraries()
    ENV_LINE = environment(libs)
    print(ENV_LINE, flush=True)
    for name, to, sync in libs:                          # warm-up: CUDA context, kernels, cuSOLVER handles
        X, Y = data(500)
        OVKRidge(Separable(RBF(0.5), np.eye(D)), lam=LAM, solver="cholesky").fit(to(X), to(Y)).predict(to(Xt)); sync()
    rows, refs = [], {}
    sections = [("exact", lambda: exact_rows(libs, Xt, refs)), ("nystrom", lambda: nystrom_rows(libs, Xt)),
                ("fp32", lambda: fp32_rows(libs, Xt, refs)), ("cg", lambda: cg_rows(libs, Xt)),
                ("gp", lambda: gp_rows(libs, Xt[:200])), ("gp n = 5000", lambda: gp_device_rows(libs)),
                ("gp nystrom", lambda: gp_nystrom_rows(libs, Xt[:200]))]
    only = [a.split("=", 1)[1] for a in sys.argv[1:] if a.startswith("--only=")]   # --only=gp nystrom,exact: those alone
    if only:
        keep = {x.strip() for x in only[0].split(",")}
        sections = [(label, run) for label, run in sections if label in keep]
    for label, run in sections:                          # the targets first; each section on its own, errors recorded
        elapsed = time.perf_counter() - T0
        if elapsed > DEADLINE:
            rows.append({"case": f"{label}: skipped", "n": "", "note": f"{elapsed:.0f} s elapsed > deadline {DEADLINE:.0f} s"})
        else:
            try:
                rows += run()
            except Exception as e:                       # noqa: BLE001 -- the check reports every failure and goes on
                traceback.print_exc()
                rows.append({"case": f"{label}: FAILED", "n": "", "note": f"{type(e).__name__}: {e}"[:300]})
            free_device()
        print(f"[{label}] done at {time.perf_counter() - T0:.0f} s", flush=True)
        write(rows, libs)
    print((OUT / "gpu_table.md").read_text())


if __name__ == "__main__":
    main()
