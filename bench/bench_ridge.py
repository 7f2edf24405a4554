"""Benchmark of OVKRidge (ovk_nb.ridge) on paper 000's synthetic data (20 uniform features, d outputs).

1. Speed at n = 5000, d = 10, separable Gaussian x J: our solvers ("auto" = grouped Cholesky, "eigen") against
   scikit-learn's KernelRidge on the same X with independent outputs (the same Gram, T = I), and our T = I fit.
2. Accuracy at n = 1000: every solver against the dense nd x nd reference (relative difference of the coefficients),
   and operalib's OVKRidge (L-BFGS on the same objective) through bench/.venv-operalib in a subprocess.
3. Nystrom: test MSE and distance to the exact solution at n = 5000 for several p, then n = 100000, d = 10 in a
   fresh subprocess: fit time and peak memory (resource.getrusage of that process).

Every section runs twice in the same run: "as installed" (BLAS with its default threads, what a user gets) and "one thread"
(threadpoolctl's limit of 1 BLAS thread); both times are reported side by side. The machine is shared with other processes:
the load average is recorded at the start and the end.

Writes bench/results/ridge.md and bench/results/ridge.csv.

4. (--shift, alone) issue 34's target: Gaussian x J, n = 5000, d = 4 against KernelRidge, one thread and as installed,
   wall and CPU seconds and the load; written as section 4 of ridge.md and as ridge_shift.csv.

    python bench/bench_ridge.py [--quick] [--shift]
"""
import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from ovk_nb.datasets import make_paper000_synthetic
from ovk_nb.kernels import Separable, RBF, gaussian_times_J, linear_quadratic
from ovk_nb.experiments.core import rows_to_csv, rows_to_markdown
from ovk_nb.ridge import OVKRidge, ridge_dense_reference

from _timing import best_time

HERE = Path(__file__).resolve().parent
OUT = HERE / "results"
OPERALIB_PY = HERE / ".venv-operalib" / "bin" / "python"
GAMMA, LAM = 0.1, 1e-3          # mu = 10 in paper 000's exp(-||x - x'||^2 / mu) J; lam of the order CV picks


def rel(a, b):
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


MODES = (("as installed", None), ("one thread", 1))


def modes_time(f, repeat=1):
    """Time f in each mode, the modes interleaved within each repeat (so that load drifting over the run hits both alike):
    ({mode: best seconds}, {mode: all seconds}, last result)."""
    times, res = {m: [] for m, _ in MODES}, None
    for _ in range(repeat):
        for m, limit in MODES:
            with threadpool_limits(limit):
                t, res = best_time(f, 1)
            times[m].append(t)
    return {m: min(ts) for m, ts in times.items()}, times, res


def time_cols(best, ref=None, ref_name=None, allt=None):
    "The side-by-side columns: fit time per mode, ratio to a reference per mode, all repeats per mode."
    row = {f"fit time, {m} (s)": best[m] for m, _ in MODES}
    if ref is not None:
        row.update({f"ratio to {ref_name}, {m}": best[m] / ref[m] for m, _ in MODES})
    if allt is not None:
        row.update({f"all repeats, {m} (s)": " ".join(f"{t:.2f}" for t in allt[m]) for m, _ in MODES})
    return row


def speed_rows(n, d, repeat, n_lams=20):
    """Fit times at (n, d) in both modes; methods and modes are interleaved within each repeat so that load from other
    processes hits all of them alike, and the best time of each is kept."""
    from sklearn.kernel_ridge import KernelRidge
    X, Y = make_paper000_synthetic(n, d, random_state=0, return_X_y=True)
    K, KI = gaussian_times_J(d, GAMMA), Separable(RBF(GAMMA), np.eye(d))
    KR = "sklearn KernelRidge (independent outputs, T = I)"
    methods = {
        KR: lambda: KernelRidge(alpha=LAM, kernel="rbf", gamma=GAMMA).fit(X, Y),
        "ours, T = I, solver auto": lambda: OVKRidge(KI, lam=LAM, center_y=False).fit(X, Y),
        "ours, Gaussian x J, solver auto": lambda: OVKRidge(K, lam=LAM, center_y=False).fit(X, Y),
    }
    times, fits = {k: {m: [] for m, _ in MODES} for k in methods}, {}
    for _ in range(repeat):
        for k, f in methods.items():
            for m, limit in MODES:
                with threadpool_limits(limit):
                    t, fits[k] = best_time(f, 1)
                times[k][m].append(t)
    best = {k: {m: min(v) for m, v in ts.items()} for k, ts in times.items()}
    kr = fits[KR]
    rows = []
    for k in methods:
        m = fits[k]
        row = {"section": "speed", "n": n, "d": d, "method": k + (f" -> {m.solver_}" if hasattr(m, "solver_") else ""),
               **time_cols(best[k], best[KR], "KernelRidge", times[k])}
        if "T = I" in k and hasattr(m, "solver_"):
            row["rel. diff. of predictions to KernelRidge"] = rel(m.predict(X[:500]), kr.predict(X[:500]))
        rows.append(row)
    C_auto = fits["ours, Gaussian x J, solver auto"].coef_
    t, _, m = modes_time(lambda: OVKRidge(K, lam=LAM, solver="eigen", center_y=False).fit(X, Y))
    rows.append({"section": "speed", "n": n, "d": d, "method": "ours, Gaussian x J, solver eigen (one eigh)",
                 **time_cols(t, best[KR], "KernelRidge"), "rel. diff. of coef to the cholesky solve": rel(m.coef_, C_auto)})
    lams = np.logspace(-8, 0, n_lams)
    t2, _, _ = modes_time(lambda: (m.coef_path(lams), m.loo_errors(lams)))
    rows.append({"section": "speed", "n": n, "d": d, "method": f"  + {n_lams}-lam coef path and closed-form LOO from that eigh",
                 **time_cols(t2, best[KR], "KernelRidge"),
                 "note": f"vs {n_lams} grouped-Cholesky fits: about {n_lams} x the 'auto' time, without LOO"})
    return rows, (X, Y)


def operalib_fit(X, Y, J, lam, gamma, tight=False, timeout=900):
    """operalib OVKRidge('DGauss', A=J) in its own venv; returns (fit seconds, dual coefficients (n, d), note).
    tight: L-BFGS-B with ftol = gtol = 1e-12 and up to 5000 iterations instead of scipy's defaults."""
    if not OPERALIB_PY.exists():
        return None, None, "operalib venv missing (bash bench/peers/operalib_venv.sh)"
    code = r"""
import sys, time, json, numpy as np
from operalib import OVKRidge
f = np.load(sys.argv[1])
opts = {"ftol": 1e-12, "gtol": 1e-12, "maxiter": 5000, "maxfun": 10000} if int(f["tight"]) else None
m = OVKRidge(ovkernel="DGauss", lbda=float(f["lam"]), A=f["J"], gamma=float(f["gamma"]), solver_params=opts)
t = time.perf_counter(); m.fit(f["X"], f["Y"]); t = time.perf_counter() - t
np.save(sys.argv[2], np.asarray(m.dual_coefs_).reshape(f["Y"].shape))
print(json.dumps({"time": t, "nit": int(getattr(m.solver_res_, "nit", -1)), "success": bool(m.solver_res_.success)}))
"""
    with tempfile.TemporaryDirectory() as tmp:
        inp, out = Path(tmp) / "in.npz", Path(tmp) / "coef.npy"
        np.savez(inp, X=X, Y=Y, J=J, lam=lam, gamma=gamma, tight=int(tight))
        try:
            p = subprocess.run([str(OPERALIB_PY), "-c", code, str(inp), str(out)], capture_output=True, text=True, timeout=timeout,
                               env={"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"})
        except subprocess.TimeoutExpired:
            return None, None, f"operalib did not finish in {timeout} s"
        if p.returncode != 0:
            return None, None, "operalib failed: " + p.stderr.strip().splitlines()[-1][:200]
        info = json.loads(p.stdout.strip().splitlines()[-1])
        return info["time"], np.load(out), f"L-BFGS-B, {info['nit']} iterations, success={info['success']}"


def accuracy_rows(n, d, repeat):
    X, Y = make_paper000_synthetic(n, d, random_state=1, return_X_y=True)
    rows = []
    for name, K in [("Gaussian x J", gaussian_times_J(d, GAMMA)), ("linear_quadratic mu=0.2", linear_quadratic(d, 0.2))]:
        t_ref, _, C = modes_time(lambda: ridge_dense_reference(K, X, Y, LAM))
        rows.append({"section": "accuracy", "n": n, "d": d, "method": f"dense reference, {name}", **time_cols(t_ref, t_ref, "dense"),
                     "rel. diff. of coef to dense": 0.0})
        solvers = ["eigen", "cholesky", "cg", "nystrom"] if isinstance(K, Separable) else ["cholesky", "cg", "nystrom"]
        for solver in solvers:
            t, _, m = modes_time(lambda: OVKRidge(K, lam=LAM, solver=solver, tol=1e-12, n_components=n, center_y=False).fit(X, Y), repeat)
            P = m.predict(X)
            rows.append({"section": "accuracy", "n": n, "d": d, "method": f"ours {solver}, {name}" + (f" ({m.n_iter_} it.)" if solver == "cg" else "")
                         + (" (p = n)" if solver == "nystrom" else ""), **time_cols(t, t_ref, "dense"),
                         "rel. diff. of coef to dense": rel(m.coef_, C) if m.coef_ is not None else None,
                         "rel. diff. of predictions to dense": rel(P, K.apply(X, X, C))})
        for tight in ([False, True] if isinstance(K, Separable) else []):
            t, Cop, note = operalib_fit(X, Y, K.T, LAM, GAMMA, tight)
            rows.append({"section": "accuracy", "n": n, "d": d,
                         "method": f"operalib OVKRidge, {name}, " + ("ftol = gtol = 1e-12" if tight else "default tolerances"),
                         "fit time, as installed (s)": None, "fit time, one thread (s)": t,
                         "ratio to dense, one thread": None if t is None else t / t_ref["one thread"],
                         "rel. diff. of coef to dense": None if Cop is None else rel(Cop, C),
                         "rel. diff. of predictions to dense": None if Cop is None else rel(K.apply(X, X, Cop), K.apply(X, X, C)),
                         "note": note})
    return rows


NYSTROM_CHILD = r"""
import json, resource, sys, time, numpy as np
from threadpoolctl import threadpool_limits
from ovk_nb.datasets import make_paper000_synthetic
from ovk_nb.kernels import gaussian_times_J
from ovk_nb.ridge import OVKRidge
n, d, p, threads, gamma, lam = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]), float(sys.argv[6])
with threadpool_limits(threads if threads > 0 else None):      # 0: as installed
    X, Y = make_paper000_synthetic(n + 5000, d, random_state=2, return_X_y=True)
    Xte, Yte, X, Y = X[n:], Y[n:], X[:n], Y[:n]
    def hwm():   # peak RSS of this process in MB (VmHWM is reset by exec; ru_maxrss may keep the parent's peak)
        for line in open("/proc/self/status"):
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    base = hwm()
    t = time.perf_counter()
    m = OVKRidge(gaussian_times_J(d, gamma), lam=lam, solver="nystrom", n_components=p, random_state=0, center_y=False).fit(X, Y)
    t_fit = time.perf_counter() - t
    t = time.perf_counter(); P = m.predict(Xte); t_pred = time.perf_counter() - t
peak = hwm()
print(json.dumps({"fit": t_fit, "predict_5000": t_pred, "peak_MB": peak, "data_MB": base,
                  "test_mse": float(((P - Yte) ** 2).sum(1).mean())}))
"""


def nystrom_rows(n_exact, n_big, d, ps, p_big):
    X, Y = make_paper000_synthetic(n_exact + 2000, d, random_state=2, return_X_y=True)
    Xte, Yte, X, Y = X[n_exact:], Y[n_exact:], X[:n_exact], Y[:n_exact]
    K = gaussian_times_J(d, GAMMA)
    t_ex, _, m = modes_time(lambda: OVKRidge(K, lam=LAM, center_y=False).fit(X, Y))
    P_ex = m.predict(Xte)
    mse_ex = float(((P_ex - Yte) ** 2).sum(1).mean())
    rows = [{"section": "nystrom", "n": n_exact, "d": d, "method": f"exact ({m.solver_})", **time_cols(t_ex), "test MSE": mse_ex}]
    for p in ps:
        t, _, mn = modes_time(lambda: OVKRidge(K, lam=LAM, solver="nystrom", n_components=p, random_state=0, center_y=False).fit(X, Y))
        P = mn.predict(Xte)
        rows.append({"section": "nystrom", "n": n_exact, "d": d, "method": f"nystrom p = {p}", **time_cols(t),
                     "test MSE": float(((P - Yte) ** 2).sum(1).mean()), "rel. diff. of test predictions to exact": rel(P, P_ex)})
    row, notes = {"section": "nystrom", "n": n_big, "d": d, "method": f"nystrom p = {p_big} (fresh process per mode)"}, []
    for m, limit in MODES:
        proc = subprocess.run([sys.executable, "-c", NYSTROM_CHILD, str(n_big), str(d), str(p_big), str(limit or 0), str(GAMMA),
                               str(LAM)], capture_output=True, text=True)
        if proc.returncode != 0:
            notes.append(f"{m}: failed: " + proc.stderr[-300:])
            continue
        r = json.loads(proc.stdout.strip().splitlines()[-1])
        row[f"fit time, {m} (s)"], row[f"peak memory, {m} (MB)"], row["test MSE"] = r["fit"], r["peak_MB"], r["test_mse"]
        notes.append(f"{m}: data + imports {r['data_MB']:.0f} MB before the fit, predict 5000 points {r['predict_5000']:.2f} s")
    row["note"] = "peak RSS of the process; " + "; ".join(notes)
    rows.append(row)
    return rows


def shift_rows(n, d, repeat):
    """Issue 34's target: exact separable ridge, Gaussian x J, (n, d), against KernelRidge, one thread and as installed;
    ours with the shifted-PCG grouped Cholesky ('auto': one Cholesky + PCG) and with one Cholesky per group (the previous
    route, `shift_solve="cholesky"`). Wall and CPU (`time.process_time`) seconds, best of the repeats, the 1-minute load
    average at each fit, the methods and modes interleaved within each repeat."""
    from functools import partial
    from sklearn.kernel_ridge import KernelRidge
    import ovk_nb.ridge as ridge_mod
    from ovk_nb import linalg
    X, Y = make_paper000_synthetic(n, d, random_state=0, return_X_y=True)
    K = gaussian_times_J(d, GAMMA)
    KR = "sklearn KernelRidge (rbf, T = I)"

    def ours(mode):
        ridge_mod.grouped_cholesky = partial(linalg.grouped_cholesky, shift_solve=mode)
        try:
            return OVKRidge(K, lam=LAM, center_y=False).fit(X, Y)
        finally:
            ridge_mod.grouped_cholesky = linalg.grouped_cholesky
    methods = {KR: lambda: KernelRidge(alpha=LAM, kernel="rbf", gamma=GAMMA).fit(X, Y),
               "ours, Gaussian x J, one Cholesky + PCG (auto)": lambda: ours("auto"),
               "ours, Gaussian x J, one Cholesky per group (before)": lambda: ours("cholesky")}
    rec = {(k, m): [] for k in methods for m, _ in MODES}
    fits = {}
    for _ in range(repeat):
        for k, f in methods.items():
            for m, limit in MODES:
                with threadpool_limits(limit):
                    t0, c0 = time.perf_counter(), time.process_time()
                    fits[k] = f()
                    rec[k, m].append((time.perf_counter() - t0, time.process_time() - c0, os.getloadavg()[0]))
    rows = []
    for k in methods:
        for m, _ in MODES:
            w, c = min(t for t, _, _ in rec[k, m]), min(t for _, t, _ in rec[k, m])       # each the best of the repeats
            wk, ck = min(t for t, _, _ in rec[KR, m]), min(t for _, t, _ in rec[KR, m])
            rows.append({"section": "issue 34", "n": n, "d": d, "method": k, "mode": m, "wall (s)": w, "cpu (s)": c,
                         "wall ratio to KernelRidge": w / wk, "cpu ratio to KernelRidge": c / ck,
                         "load (1 min), each repeat": " ".join(f"{x:.1f}" for _, _, x in rec[k, m]),
                         "all walls (s)": " ".join(f"{t:.2f}" for t, _, _ in rec[k, m]),
                         "all cpus (s)": " ".join(f"{t:.2f}" for _, t, _ in rec[k, m])})
    a, b = (fits[k].coef_ for k in list(methods)[1:])
    rows[-1]["note"] = f"rel. diff. of coef, auto vs before: {rel(a, b):.2e}"
    return rows


def shift_main(quick, repeat=None):
    "`--shift`: the issue-34 section only, written between markers into ridge.md and as ridge_shift.csv."
    n, d, repeat = (1500, 4, repeat or 1) if quick else (5000, 4, repeat or 3)
    load0 = os.getloadavg()
    rows = shift_rows(n, d, repeat)
    load1 = os.getloadavg()
    print(rows_to_markdown(rows), flush=True)
    OUT.mkdir(exist_ok=True)
    suffix = "_quick" if quick else ""
    (OUT / f"ridge_shift{suffix}.csv").write_text(rows_to_csv(rows))
    sec = ["<!-- shift -->", f"## 4. Issue 34: Gaussian x J, n = {n}, d = {d} against KernelRidge (`--shift`)", "",
           f"`python bench/bench_ridge.py --shift{' --quick' if quick else ''}`, {os.cpu_count()} cores, gamma = {GAMMA}, "
           f"lam = {LAM}; load average (1 / 5 / 15 min) {load0[0]:.1f} / {load0[1]:.1f} / {load0[2]:.1f} at the start, "
           f"{load1[0]:.1f} / {load1[1]:.1f} / {load1[2]:.1f} at the end. 'one thread': threadpoolctl's limit of 1; 'as "
           f"installed': no limit (OVKRidge's thread policy decides). {repeat} repeats, wall and CPU each the best of them; CPU seconds from "
           "`time.process_time`, which a loaded machine distorts less than wall time.", "", rows_to_markdown(rows),
           "<!-- /shift -->", ""]
    md = OUT / f"ridge{suffix}.md"
    old = md.read_text() if md.exists() else ""
    if "<!-- shift -->" in old:
        old = old[:old.index("<!-- shift -->")] + old[old.index("<!-- /shift -->") + len("<!-- /shift -->\n"):]
    md.write_text(old.rstrip("\n") + "\n\n" + "\n".join(sec))
    print(f"wrote {md}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="small sizes (a smoke test, about two minutes)")
    ap.add_argument("--repeat", type=int, default=None, help="--shift: repeats (default 3; quick 1)")
    ap.add_argument("--shift", action="store_true", help="only issue 34's Gaussian x J, d = 4 against KernelRidge")
    args = ap.parse_args()
    if args.shift:
        return shift_main(args.quick, args.repeat)
    t0, load0 = time.time(), os.getloadavg()
    if args.quick:
        n_speed, n_acc, n_exact, n_big, ps, p_big, repeat = 1500, 200, 1500, 20000, [100, 300], 300, 1
    else:
        n_speed, n_acc, n_exact, n_big, ps, p_big, repeat = 5000, 1000, 5000, 100000, [200, 500, 1000], 1000, 3
    d = 10
    rows, _ = speed_rows(n_speed, d, repeat)
    print(rows_to_markdown(rows), flush=True)
    accs = accuracy_rows(n_acc, d, repeat)
    print(rows_to_markdown(accs), flush=True)
    nys = nystrom_rows(n_exact, n_big, d, ps, p_big)
    print(rows_to_markdown(nys), flush=True)
    seconds, load1 = time.time() - t0, os.getloadavg()
    suffix = "_quick" if args.quick else ""
    OUT.mkdir(exist_ok=True)
    (OUT / f"ridge{suffix}.csv").write_text(rows_to_csv(rows + accs + nys))
    auto = next(r for r in rows if r["method"].startswith("ours, Gaussian x J, solver auto"))
    md = [f"# OVKRidge benchmark{' (quick)' if args.quick else ''}", "",
          f"`python bench/bench_ridge.py{' --quick' if args.quick else ''}` on {platform.machine()}, {os.cpu_count()} cores, "
          f"Python {platform.python_version()}, numpy {np.__version__}; {seconds:.0f} s in all. Every section ran twice: "
          "**as installed** (OpenBLAS with its default threads, what a user gets; OVKRidge limits its own threads where the work "
          "is small, see `nbs/2_algorithms/00_ridge.ipynb`) and **one thread** (threadpoolctl's limit of one BLAS thread around "
          "everything), side by side below; the two modes alternate within each repeat of each method, so that load drifting over "
          "the run hits both alike. "
          f"Data: paper 000's synthetic set (20 uniform features), d = {d}; Gaussian gamma = {GAMMA} (mu = {1 / GAMMA:g}), lam = {LAM}. "
          "Times are the best of the repeats. The machine is shared with other processes: load average (1 / 5 / 15 min) "
          f"{load0[0]:.1f} / {load0[1]:.1f} / {load0[2]:.1f} at the start, {load1[0]:.1f} / {load1[1]:.1f} / {load1[2]:.1f} at the end.", "",
          "## 1. Speed: ours vs scikit-learn KernelRidge", "",
          "KernelRidge solves the d outputs independently (T = I) with one Cholesky of the n x n Gram. Our Gaussian x J fit with "
          "solver='auto' is the grouped Cholesky: J = 0.9 I + 0.1 11^T has two distinct eigenvalues, so two Choleskys; 'eigen' is the "
          "full eigh route (for lam paths / LOO).", "",
          rows_to_markdown(rows), "",
          "**Ours (auto, Gaussian x J) / KernelRidge = " + ", ".join(f"{auto[f'ratio to KernelRidge, {m}']:.2f} {m}" for m, _ in MODES)
          + "** (target <= 1.5).", "",
          "## 2. Accuracy: every solver against the dense nd x nd solve, and operalib", "",
          "operalib's OVKRidge minimises the same objective ||Kc - y||^2 + lam c^T K c (up to the constant 1/(2nd)) by L-BFGS-B. "
          "It runs once, in its own venv, with one BLAS thread (its subprocess pins OPENBLAS_NUM_THREADS=1): its times are in the "
          "'one thread' column.", "",
          rows_to_markdown(accs), "",
          "## 3. Nystrom", "",
          "The n = 100000 row runs in a fresh process per mode, one after the other (peak RSS of that process).", "",
          rows_to_markdown(nys), ""]
    (OUT / f"ridge{suffix}.md").write_text("\n".join(md))
    print(f"wrote {OUT / f'ridge{suffix}.md'} in {seconds:.0f} s")


if __name__ == "__main__":
    main()
