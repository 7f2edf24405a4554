"""Benchmark of JointQuantileRegressor (ovk_nb.quantile) on the heteroscedastic sine (y = sin 2 pi x + (0.1 + 0.5 x) eps).

1. Against operalib's `Quantile` (cvxopt on the dense dual, the same QP) run in its own venv (bench/.venv-operalib, made by
   bash bench/peers/operalib_venv.sh) through a subprocess, on the same data and hyper-parameters (operalib's `lbda` is
   our lam * n; its DGauss kernel with our resolved gamma and B = exp(-gamma_tau (tau_i - tau_j)^2)): the value of the
   dual QP at each solution (1/2 c'Gc - ytilde'c, with operalib's own Gram), the predictions, fit times and their ratio.
2. Against what a scikit-learn user would fit instead, one model per level: GradientBoostingRegressor(loss="quantile"),
   and QuantileRegressor (linear program, highs) on Nystroem RBF features: held-out coverage, mean pinball loss,
   crossing rate on held-out points, fit time.

Both processes run with one BLAS thread (a shared 2-core machine); each time is the best of `--repeat` fits.
Writes bench/results/quantile.md and bench/results/quantile.csv.

    python bench/bench_quantile.py [--quick]
"""
import argparse
import csv
import json
import os
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from _timing import best_time
from ovk_nb.quantile import JointQuantileRegressor, heteroscedastic_sine, pinball_loss

HERE = Path(__file__).resolve().parent
OPERALIB_PY = HERE / ".venv-operalib" / "bin" / "python"
LEVELS = (0.1, 0.5, 0.9)
LAM, GAMMA_TAU = 1e-3, 10.0

OPERALIB_CODE = r"""
import sys, time, json, warnings, numpy as np
warnings.simplefilter("ignore")
from operalib import Quantile
f = np.load(sys.argv[1])
X, y, Xt, probs = f["X"], f["y"], f["Xt"], f["probs"]
m = Quantile(probs=list(probs), kernel="DGauss", lbda=float(f["lbda"]), gamma=float(f["gamma"]),
             gamma_quantile=float(f["gamma_tau"]), nc_const=bool(f["nc"]), tol=1e-8)
ts = []
for _ in range(int(f["repeat"])):
    t = time.perf_counter(); m.fit(X, y); ts.append(time.perf_counter() - t)
G = m.linop_.Gram_dense(X)
c = np.asarray(m.model_["coefs"]).ravel()
value = 0.5 * c @ (G @ c) - np.kron(y, np.ones(len(probs))) @ c
np.save(sys.argv[2], np.asarray(m.predict(Xt)).T)
print(json.dumps({"time": min(ts), "value": float(value), "status": m.sol_["status"]}))
"""


def operalib_fit(X, y, Xt, gamma, nc, repeat, timeout=900):
    "(time, dual value, test predictions (m, p), note) of operalib's Quantile in its venv, or Nones and why not."
    if not OPERALIB_PY.exists():
        return None, None, None, "operalib venv missing (bash bench/peers/operalib_venv.sh)"
    with tempfile.TemporaryDirectory() as tmp:
        inp, out = Path(tmp) / "in.npz", Path(tmp) / "out.npy"
        np.savez(inp, X=X, y=y, Xt=Xt, probs=np.array(LEVELS), lbda=LAM * len(X), gamma=gamma, gamma_tau=GAMMA_TAU,
                 nc=nc, repeat=repeat)
        try:
            p = subprocess.run([str(OPERALIB_PY), "-c", OPERALIB_CODE, str(inp), str(out)], capture_output=True, text=True,
                               timeout=timeout, env={"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1",
                                                     "MKL_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"})
        except subprocess.TimeoutExpired:
            return None, None, None, f"operalib did not finish in {timeout} s"
        if p.returncode != 0:
            return None, None, None, "operalib failed: " + p.stderr.strip().splitlines()[-1][:200]
        info = json.loads(p.stdout.strip().splitlines()[-1])
        return info["time"], info["value"], np.load(out), f"cvxopt {info['status']}"


def quality(Q, yt):
    "coverage's largest gap to the levels, mean pinball loss, share of held-out points where two levels cross."
    cov = (yt[:, None] <= Q).mean(axis=0)
    return (float(np.abs(cov - np.array(LEVELS)).max()), float(pinball_loss(yt, Q, LEVELS).mean()),
            float((np.diff(Q, axis=1) < -1e-9).any(axis=1).mean()), cov)


def sklearn_peers(X, y, Xt, repeat):
    from sklearn.ensemble import GradientBoostingRegressor
    from sklearn.kernel_approximation import Nystroem
    from sklearn.linear_model import QuantileRegressor
    from sklearn.pipeline import make_pipeline
    peers = {
        "GradientBoostingRegressor(loss='quantile'), one per level":
            lambda a: GradientBoostingRegressor(loss="quantile", alpha=a, random_state=0),
        "Nystroem(rbf, 100) + QuantileRegressor(alpha=1e-4, highs), one per level":
            lambda a: make_pipeline(Nystroem(gamma=1 / X.var(), n_components=100, random_state=0),
                                    QuantileRegressor(quantile=a, alpha=1e-4, solver="highs")),
    }
    for name, make in peers.items():
        def fit():
            return [make(a).fit(X, y) for a in LEVELS]
        t, models = best_time(fit, repeat)
        yield name, t, np.column_stack([m.predict(Xt) for m in models])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    sizes_op = (200,) if a.quick else (200, 500)
    sizes = (200,) if a.quick else (200, 500, 1000)
    load0 = os.getloadavg()[0]
    Xt, yt, Qtrue = heteroscedastic_sine(5000, random_state=1, return_quantiles=LEVELS)
    rows_op, rows_q = [], []
    with threadpool_limits(1):
        for n in sizes:
            X, y = heteroscedastic_sine(n, random_state=0)
            for nc in (True, False):
                if nc is False and n not in sizes_op:
                    continue
                t, m = best_time(lambda: JointQuantileRegressor(LEVELS, lam=LAM, gamma_tau=GAMMA_TAU, non_crossing=nc).fit(X, y),
                                 a.repeat)
                td, md = best_time(lambda: JointQuantileRegressor(LEVELS, lam=LAM, gamma_tau=GAMMA_TAU, non_crossing=nc,
                                                                  solver="dense").fit(X, y), 1)
                Q = m.predict_quantiles(Xt)
                if nc:
                    rows_q.append(dict(n=n, method="JointQuantileRegressor (ours, factored QP)", time=t, *(), **dict(zip(
                        ("coverage_gap", "pinball", "crossing"), quality(Q, yt)[:3]))))
                row = dict(n=n, non_crossing=nc, ours_time=t, ours_dense_time=td, rank=m.rank_, ours_value=m.dual_objective_,
                           dense_value=md.dual_objective_)
                if n in sizes_op:
                    to, vo, Qo, note = operalib_fit(X, y, Xt, m.kernel_.scalar_kernel.gamma, nc, a.repeat if n <= 200 else 1)
                    row.update(operalib_time=to, operalib_value=vo, note=note)
                    if vo is not None:
                        row.update(value_rel_diff=abs(vo - m.dual_objective_) / abs(vo), ratio=to / t,
                                   pred_max_diff=float(np.abs(Qo - Q).max()))
                rows_op.append(row); print(row, flush=True)
            if n == max(sizes):
                for name, t, Q in sklearn_peers(X, y, Xt, 1):
                    rows_q.append(dict(n=n, method=name, time=t, **dict(zip(("coverage_gap", "pinball", "crossing"),
                                                                                quality(Q, yt)[:3]))))
                rows_q.append(dict(n=n, method="true conditional quantiles", time=float("nan"),
                                   **dict(zip(("coverage_gap", "pinball", "crossing"), quality(Qtrue, yt)[:3]))))
    load1 = os.getloadavg()[0]
    write(rows_op, rows_q, load0, load1, a)


def fmt(v, spec):
    return "-" if v is None or (isinstance(v, float) and np.isnan(v)) else format(v, spec)


def write(rows_op, rows_q, load0, load1, a):
    out = HERE / "results"
    with open(out / "quantile.csv", "w", newline="") as f:
        keys = sorted({k for r in rows_op + rows_q for k in r}, key=lambda k: (k != "n", k))
        w = csv.DictWriter(f, fieldnames=["table"] + keys)
        w.writeheader()
        for r in rows_op: w.writerow({"table": "operalib", **r})
        for r in rows_q: w.writerow({"table": "quality", **r})
    L = ["# Joint quantile regression (ovk_nb.quantile)", "",
         f"`python bench/bench_quantile.py{' --quick' if a.quick else ''}`: heteroscedastic sine, levels {LEVELS}, "
         f"lam = {LAM} (operalib lbda = lam n), gamma_tau = {GAMMA_TAU}, RBF gamma='scale'; one BLAS thread in both "
         f"processes; best of {a.repeat} fits (operalib at n >= 500: one fit). Shared 2-core machine, load average "
         f"{load0:.1f} at the start, {load1:.1f} at the end.", "",
         "## Against operalib's `Quantile` (its venv: Python 3.8, numpy 1.23, scikit-learn 0.22, cvxopt)", "",
         "Value = the dual QP 1/2 c'Gc - y'c at each solution (operalib's with its own Gram). Same problem, same optimum.", "",
         "| n | non-crossing | ours (factored) s | ours dense QP s | operalib s | operalib / ours | rank r | value ours | value operalib | rel. diff | max pred. diff | operalib status |",
         "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows_op:
        L.append(f"| {r['n']} | {r['non_crossing']} | {fmt(r['ours_time'], '.2f')} | {fmt(r['ours_dense_time'], '.2f')} | "
                 f"{fmt(r.get('operalib_time'), '.2f')} | {fmt(r.get('ratio'), '.1f')} | {r['rank']} | {r['ours_value']:.8g} | "
                 f"{fmt(r.get('operalib_value'), '.8g')} | {fmt(r.get('value_rel_diff'), '.1e')} | "
                 f"{fmt(r.get('pred_max_diff'), '.1e')} | {r.get('note', 'not run at this n')} |")
    L += ["", "## Against what a scikit-learn user would fit (5000 held-out points)", "",
          "coverage gap = max over levels of |P(y <= q_tau(x)) - tau| on held-out points; crossing = share of held-out points "
          "where two predicted levels are out of order.", "",
          "| n | method | fit s | coverage gap | mean pinball | crossing |", "|---|---|---|---|---|---|"]
    for r in rows_q:
        L.append(f"| {r['n']} | {r['method']} | {fmt(r['time'], '.2f')} | {r['coverage_gap']:.3f} | {r['pinball']:.4f} | "
                 f"{100 * r['crossing']:.1f}% |")
    (out / "quantile.md").write_text("\n".join(L) + "\n")
    print("\n".join(L))


if __name__ == "__main__":
    main()
