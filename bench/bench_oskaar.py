"""OSKAAR (paper 002) timings: the exact learner (blocked bordered Cholesky) against literal refits on a stream with 100
input features, the budgeted (Nystrom) variant on a long stream with its pickled size, and SALAMI (covering schedule,
default lifetime 4, and lifetime 2) against OSKAAR on the same stream: bench/results/oskaar.{csv,md}.
The budgeted SALAMI (every expert a budgeted OSKAAR, m = 100) on T_bsal / 4 and T_bsal rounds beside the exact SALAMI on
T_salami rounds: wall time, CPU time and peak traced memory (tracemalloc; the stream itself excluded):
bench/results/oskaar_salami_budget.{csv,md}.
Run: python bench/bench_oskaar.py [T_exact] [T_literal] [T_budget] [T_salami] [T_bsal]   (both parts)
     python bench/bench_oskaar.py salami-budget [T_salami] [T_bsal]                     (the second part only)"""
import os
import time
import tracemalloc
import pickle
import sys
from pathlib import Path

import numpy as np
from ovk_nb.experiments.core import rows_to_markdown
from _timing import best_time

from ovk_nb.decoding import Hamming
from ovk_nb.kernels import RBF
from ovk_nb.oskaar import OSKAAR, oskaar_literal
from ovk_nb.salami import SALAMI

ONLY_BSAL = sys.argv[1:2] == ["salami-budget"]
_args = ["10000", "400", "100000"] + sys.argv[2:] if ONLY_BSAL else sys.argv[1:]
T_EXACT, T_LIT, T_BUDGET, T_SAL, T_BSAL = (int(a) for a in (_args + ["10000", "400", "100000", "5000", "20000"][len(_args):])[:5])
out = Path(__file__).parent / "results"


def stream(n, seed=0):
    r = np.random.default_rng(seed)
    X = r.normal(size=(n, 100)) / 10
    Y = (X[:, :14] + 0.05 * r.normal(size=(n, 14)) > 0).astype(int)
    return X, Y


def main_part():
    rows = []
    X, Y = stream(T_EXACT)
    t_exact, est = best_time(lambda: OSKAAR(RBF(0.5), lam=0.5, decoder=Hamming()).fit(X, Y), 1)
    rows.append({"what": "OSKAAR exact", "rounds": T_EXACT, "seconds": t_exact, "mean Hamming": est.losses_.mean()})
    t_lit, _ = best_time(lambda: oskaar_literal(RBF(0.5), 0.5, X[:T_LIT], Y[:T_LIT], Hamming()), 1)
    t_fast, _ = best_time(lambda: OSKAAR(RBF(0.5), lam=0.5, decoder=Hamming()).fit(X[:T_LIT], Y[:T_LIT]), 3)
    rows.append({"what": "literal refits (solve every round)", "rounds": T_LIT, "seconds": t_lit,
                 "ratio literal / exact": t_lit / t_fast})
    Xb, Yb = stream(T_BUDGET, 1)
    t_b, eb = best_time(lambda: OSKAAR(RBF(0.5), lam=0.5, decoder=Hamming(), budget=200).fit(Xb, Yb), 1)
    rows.append({"what": "OSKAAR budget m=200", "rounds": T_BUDGET, "seconds": t_b, "mean Hamming": eb.losses_.mean(),
                 "pickled MB": len(pickle.dumps(eb)) / 1e6, "state arrays MB (excl. per-step records)":
                 (eb._X.nbytes + eb._codes.nbytes + eb._primal["R"].nbytes + eb._primal["S"].nbytes) / 1e6})
    Xs, Ys = stream(T_SAL, 2)
    t_o, eo = best_time(lambda: OSKAAR(RBF(0.5), lam=0.5, decoder=Hamming()).fit(Xs, Ys), 1)
    rows.append({"what": "OSKAAR exact (SALAMI's stream)", "rounds": T_SAL, "seconds": t_o, "mean Hamming": eo.losses_.mean()})
    for life in (4, 2):
        t_s, es = best_time(lambda: SALAMI(RBF(0.5), lam=0.5, decoder=Hamming(), lifetime=life).fit(Xs, Ys), 1)
        rows.append({"what": f"SALAMI covering, lifetime {life}" + (" (default)" if life == 4 else ""), "rounds": T_SAL,
                     "seconds": t_s, "mean Hamming": es.losses_.mean(), "ratio SALAMI / OSKAAR": t_s / t_o,
                     "max live experts": int(es.n_live_.max())})
    return rows


def write(name, rows, title):
    cols = list(dict.fromkeys(k for r in rows for k in r))
    (out / f"{name}.csv").write_text(",".join(cols) + "\n" + "\n".join(",".join(str(r.get(c, "")) for c in cols) for r in rows) + "\n")
    md = rows_to_markdown([{c: r.get(c, "") for c in cols} for r in rows])          # floats to 4 significant digits
    (out / f"{name}.md").write_text(title + "\n\n" + md + "\n")
    print("\n".join(md))


def traced(f):
    "Wall time, CPU time, peak traced memory (MB) of one call, and its result."
    tracemalloc.start()
    t0, c0 = time.perf_counter(), time.process_time()
    res = f()
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    peak = tracemalloc.get_traced_memory()[1] / 1e6
    tracemalloc.stop()
    return wall, cpu, peak, res


def salami_budget_part():
    rows = []
    kw = dict(kernel=RBF(0.5), lam=0.5, decoder=Hamming(), history=1000)
    Xs, Ys = stream(T_SAL, 2)
    for what, make, T in [("SALAMI exact", lambda: SALAMI(**kw), T_SAL),
                          ("SALAMI budget m=100", lambda: SALAMI(**kw, budget=100), T_SAL),
                          ("SALAMI budget m=100", lambda: SALAMI(**kw, budget=100), T_BSAL)]:
        X, Y = (Xs, Ys) if T == T_SAL else stream(T, 3)
        w, c, pk, es = traced(lambda: make().fit(X, Y))
        rows.append({"what": what + ", lifetime 4, history 1000", "rounds": T, "seconds": w, "CPU seconds": c, "peak MB": pk,
                     "mean Hamming, last 1000 rounds": es.losses_.mean(), "max live experts": int(es.n_live_.max()),
                     "stored input rows at the end": es._n_in})
    return rows


if not ONLY_BSAL:
    write("oskaar", main_part(), "OSKAAR timings (single-threaded BLAS inside the pass; 2-core machine shared with other jobs)")
write("oskaar_salami_budget", salami_budget_part(),
      "Budgeted SALAMI (every expert a budgeted OSKAAR on its own dictionary of m = 100 inputs) against the exact SALAMI, "
      "single-threaded BLAS, under tracemalloc (peak MB = the largest traced allocation total during the fit; the stream "
      "itself excluded; per-step records bounded by history=1000). 2-core machine shared with other jobs: load average "
      f"{os.getloadavg()[0]:.1f} at the end, so CPU seconds are the steadier figure. The exact SALAMI on {T_SAL} rounds and "
      f"the budgeted one on {T_SAL} see the same stream.")
