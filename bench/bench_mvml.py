"""MVML against scikit-multimodallearn's MVML (the authors' code, ported) on UCI multiple features: 6 views, 10 classes,
24 % Nystrom, learned metric, the same split and RBF kernels; accuracy, fit time and the smallest eigenvalue of A.

  bash bench/peers/multimodallearn_venv.sh        # once: bench/.venv-multimodallearn
  python bench/bench_mvml.py                      # writes bench/results/mvml.csv and mvml.md

The peer has no multi-class: it is wrapped in scikit-learn's OneVsRestClassifier (one binary MVML per class, as ours).
The peer draws its own landmarks (nystrom_param = 0.24); ours use random_state = draw.
"""
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

HERE = Path(__file__).resolve().parent
PEER = HERE / ".venv-multimodallearn" / "bin" / "python"
N_DRAWS, FRAC, LAM, ETA = int(sys.argv[1]) if len(sys.argv) > 1 else 4, 0.24, 0.1, 1.0


def data(seed=0, n_train=1000):
    d = np.load(HERE.parent / "ovk_nb" / "data" / "mfeat.npz")
    views = [d[v].astype(float) for v in d["views"]]
    views = [(V - V.mean(0)) / np.where(V.std(0) > 0, V.std(0), 1) for V in views]
    X = np.hstack(views)
    ends = np.cumsum([V.shape[1] for V in views])
    idx = np.random.default_rng(seed).permutation(len(X))
    tr, te = idx[:n_train], idx[n_train:]
    return X, d["target"].astype(int), tr, te, [list(range(e - V.shape[1], e)) for V, e in zip(views, ends)]


def gammas(X, tr, views):
    from ovk_nb.mvml import mean_distance_gamma
    return [mean_distance_gamma(X[tr][:, c], np.random.default_rng(0)) for c in views]


PEER_CODE = r'''
import json, sys, time, numpy as np
from sklearn.multiclass import OneVsRestClassifier
from multimodal.kernels.mvml import MVML
from multimodal.datasets.data_sample import MultiModalArray
a = json.loads(sys.stdin.read())
X, y = np.array(a["X"]), np.array(a["y"])
tr, te = np.array(a["tr"]), np.array(a["te"])
starts = [c[0] for c in a["views"]] + [X.shape[1]]
out = []
for draw in range(a["draws"]):
    np.random.seed(draw)
    est = OneVsRestClassifier(MVML(lmbda=a["lam"], eta=a["eta"], nystrom_param=a["frac"], kernel="rbf",
                                   kernel_params=[{"gamma": g} for g in a["gammas"]], learn_A=1, n_loops=6))
    Xtr = MultiModalArray(X[tr], np.array(starts)); Xte = MultiModalArray(X[te], np.array(starts))
    t = time.perf_counter(); est.fit(Xtr, y[tr]); t = time.perf_counter() - t
    acc = float(np.mean(est.predict(Xte) == y[te]))
    mins = []
    for e in est.estimators_:
        A = getattr(e, "A", None)
        if A is not None:
            mins.append(float(np.linalg.eigvalsh((A + A.T) / 2).min()))
    out.append({"draw": draw, "accuracy": acc, "fit_s": t, "min_eig_A": min(mins) if mins else None})
print(json.dumps(out))
'''


def ours(X, y, tr, te, views, gs):
    from ovk_nb.kernels import RBF
    from ovk_nb.mvml import MVMLClassifier
    out = []
    for draw in range(N_DRAWS):
        m = MVMLClassifier(views, [RBF(g) for g in gs], lam=LAM, eta=ETA, n_components=FRAC, random_state=draw)
        t = time.perf_counter(); m.fit(X[tr], y[tr]); t = time.perf_counter() - t
        mins = [float(np.linalg.eigvalsh(M.dense()).min()) for M in m.metrics_]
        out.append({"draw": draw, "accuracy": float(m.score(X[te], y[te])), "fit_s": t, "min_eig_A": min(mins)})
    return out


def main():
    X, y, tr, te, views = data()
    gs = gammas(X, tr, views)
    with threadpool_limits(2):
        mine = ours(X, y, tr, te, views, gs)
    rows = [{"method": "ovk_nb MVMLClassifier", **r} for r in mine]
    if PEER.exists():
        payload = json.dumps({"X": X.tolist(), "y": y.tolist(), "tr": tr.tolist(), "te": te.tolist(), "views": views,
                              "gammas": gs, "lam": LAM, "eta": ETA, "frac": FRAC, "draws": N_DRAWS})
        res = subprocess.run([str(PEER), "-c", PEER_CODE], input=payload, capture_output=True, text=True,
                             env={"OMP_NUM_THREADS": "2", "OPENBLAS_NUM_THREADS": "2", "PATH": "/usr/bin:/bin"})
        if res.returncode:
            print(res.stderr[-3000:], file=sys.stderr)
        else:
            rows += [{"method": "scikit-multimodallearn MVML (OvR)", **r} for r in json.loads(res.stdout)]
    cols = ["method", "draw", "accuracy", "fit_s", "min_eig_A"]
    (HERE / "results").mkdir(exist_ok=True)
    (HERE / "results" / "mvml.csv").write_text("\n".join([",".join(cols)] + [",".join(str(r[c]) for c in cols) for r in rows]) + "\n")
    md = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    md += ["| " + " | ".join(f"{r[c]:.4g}" if isinstance(r[c], float) else str(r[c]) for c in cols) + " |" for r in rows]
    (HERE / "results" / "mvml.md").write_text(__doc__ + "\n" + "\n".join(md) + "\n")
    print("\n".join(md))


if __name__ == "__main__":
    main()
