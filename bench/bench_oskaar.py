"""OSKAAR (paper 002) timings: the exact learner (blocked bordered Cholesky) against literal refits on a stream with 100
input features, the budgeted (Nystrom) variant on a long stream with its pickled size, and SALAMI (covering schedule,
default lifetime 4, and lifetime 2) against OSKAAR on the same stream.
Run: python bench/bench_oskaar.py [T_exact] [T_literal] [T_budget] [T_salami]; writes bench/results/oskaar.{csv,md}."""
import pickle
import sys
from pathlib import Path

import numpy as np
from _timing import best_time

from ovk_nb.decoding import Hamming
from ovk_nb.kernels import RBF
from ovk_nb.oskaar import OSKAAR, oskaar_literal
from ovk_nb.salami import SALAMI

T_EXACT, T_LIT, T_BUDGET, T_SAL = (int(a) for a in (sys.argv[1:] + ["10000", "400", "100000", "5000"][len(sys.argv) - 1:])[:4])


def stream(n, seed=0):
    r = np.random.default_rng(seed)
    X = r.normal(size=(n, 100)) / 10
    Y = (X[:, :14] + 0.05 * r.normal(size=(n, 14)) > 0).astype(int)
    return X, Y


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
cols = list(dict.fromkeys(k for r in rows for k in r))
out = Path(__file__).parent / "results"
(out / "oskaar.csv").write_text(",".join(cols) + "\n" + "\n".join(",".join(str(r.get(c, "")) for c in cols) for r in rows) + "\n")
md = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
md += ["| " + " | ".join(f"{r[c]:.4g}" if isinstance(r.get(c), float) else str(r.get(c, "")) for c in cols) + " |" for r in rows]
(out / "oskaar.md").write_text("OSKAAR timings (single-threaded BLAS inside the pass; 2-core machine shared with other jobs)\n\n"
                                + "\n".join(md) + "\n")
print("\n".join(md))
