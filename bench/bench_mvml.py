"""MVML against scikit-multimodallearn's MVML (the authors' code, ported) on UCI multiple features: 6 views, 10 classes,
24 % Nystrom, learned metric, the same split and RBF kernels; accuracy, fit time and the smallest eigenvalue of A.

  bash bench/peers/multimodallearn_venv.sh        # once: bench/.venv-multimodallearn
  python bench/bench_mvml.py [draws]              # writes bench/results/mvml.csv and mvml.md

Also the scale point: n = 20000 synthetic samples, 6 views of 20 features, 500 landmarks per view (r <= 3000), learned A,
one regression target: fit time and peak memory (tracemalloc of Python/numpy allocations, and the process's max RSS).
Before/after of the low-rank alternation (same problem, 10 classes): the eigen-form path took 579 s, the low-rank 5.1 s.

The peer has no multi-class: it is wrapped in scikit-learn's OneVsRestClassifier (one binary MVML per class, as ours).
The peer's landmarks are the first nystrom_param * n = 240 training rows (its _calc_nystrom takes kernel[:, :n_approx]; the
training rows are a random permutation, so a random subset, but the same one in every draw); ours use random_state = draw.

  python bench/bench_mvml.py --binary [digit ...]  # the peer on one-vs-all problems alone:
                                                   # writes bench/results/mvml_binary.csv and its section of mvml.md
  python bench/bench_mvml.py --peer10 DRAW LOG     # the peer's 10-class fit class by class, one JSON line per class in LOG
  python bench/bench_mvml.py --record-peer10 LOG.. # ours (4 draws, 1 thread) beside those logs -> mvml.csv and mvml.md
  python bench/bench_mvml.py --threads [repeats]   # as installed vs one BLAS thread (OPENBLAS_NUM_THREADS=1 and
                                                   # OMP_NUM_THREADS=1 in a subprocess), each case in fresh processes,
                                                   # alternated: bench/results/mvml_threads.csv and mvml_threads.md
"""
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from ovk_nb.experiments.core import rows_to_markdown
from threadpoolctl import threadpool_limits

HERE = Path(__file__).resolve().parent
PEER = HERE / ".venv-multimodallearn" / "bin" / "python"
N_DRAWS, FRAC, LAM, ETA = int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1].isdigit() else 4, 0.24, 0.1, 1.0


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
import multimodal.kernels.mvml as peer
from multimodal.kernels.mvml import MVML
from multimodal.datasets.data_sample import MultiModalArray
peer.check_is_fitted = lambda *args, **kw: None     # its sklearn-tags lookup fails with scikit-learn 1.6 (not the algorithm)
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


PEER_BINARY = r'''
import json, sys, time, numpy as np
import multimodal.kernels.mvml as peer
from multimodal.kernels.mvml import MVML
from multimodal.datasets.data_sample import MultiModalArray
peer.check_is_fitted = lambda *args, **kw: None     # its sklearn-tags lookup fails with scikit-learn 1.6 (not the algorithm)
a = json.loads(sys.stdin.read())
X, y = np.array(a["X"]), np.array(a["y"])
tr, te = np.array(a["tr"]), np.array(a["te"])
starts = np.array([c[0] for c in a["views"]] + [X.shape[1]])
np.random.seed(a["draw"])
est = MVML(lmbda=a["lam"], eta=a["eta"], nystrom_param=a["frac"], kernel="rbf",
           kernel_params=[{"gamma": g} for g in a["gammas"]], learn_A=1, n_loops=6)
t = time.perf_counter(); est.fit(MultiModalArray(X[tr], starts), y[tr]); t = time.perf_counter() - t
acc = float(np.mean(est.predict(MultiModalArray(X[te], starts)) == y[te]))
A = np.asarray(est.A)
print(json.dumps({"accuracy": acc, "fit_s": t, "min_eig_A": float(np.linalg.eigvalsh((A + A.T) / 2).min()),
                  "max_eig_A": float(np.linalg.eigvalsh((A + A.T) / 2).max()),
                  "asym": float(np.linalg.norm(A - A.T) / np.linalg.norm(A)), "warnings": str(est.warning_message)}))
'''



def run_peer(code, payload):
    "Run `code` in the peer's venv with the JSON `payload` on stdin (two BLAS threads); its stdout, or None (stderr printed)."
    res = subprocess.run([str(PEER), "-c", code], input=json.dumps(payload), capture_output=True, text=True,
                         env={"OMP_NUM_THREADS": "2", "OPENBLAS_NUM_THREADS": "2", "PATH": "/usr/bin:/bin"})
    if res.returncode:
        print(res.stderr[-3000:], file=sys.stderr)
        return None
    return res.stdout

def binary(digits=(0,), etas=(1.0, 10.0), draw=0):
    """One-vs-all problems (digit vs rest, labels +-1) for both implementations, same split, gammas and level; the peer's
    accuracy, fit time and its A's extreme eigenvalues (symmetrised) and asymmetry beside ours."""
    from ovk_nb.kernels import RBF
    from ovk_nb.mvml import MVMLClassifier
    X, y10, tr, te, views = data()
    gs = gammas(X, tr, views)
    rows = []
    for dg in digits:
        y = np.where(y10 == dg, 1, -1)
        for eta in etas:
            with threadpool_limits(2):
                m = MVMLClassifier(views, [RBF(g) for g in gs], lam=LAM, eta=eta, n_components=FRAC, random_state=draw)
                t = time.perf_counter(); m.fit(X[tr], y[tr]); t = time.perf_counter() - t
            ev = np.linalg.eigvalsh(m.A_)
            rows.append({"method": "ovk_nb MVMLClassifier", "problem": f"{dg} vs rest", "eta": eta, "accuracy": m.score(X[te], y[te]),
                         "fit_s": t, "min_eig_A": float(ev.min()), "max_eig_A": float(ev.max()), "asym": 0.0,
                         "n_iter": m.n_iter_})
            print(rows[-1], flush=True)
            if PEER.exists():
                out = run_peer(PEER_BINARY, {"X": X.tolist(), "y": y.tolist(), "tr": tr.tolist(), "te": te.tolist(),
                                             "views": views, "gammas": gs, "lam": LAM, "eta": eta, "frac": FRAC, "draw": draw})
                if out is not None:
                    rows.append({"method": "scikit-multimodallearn MVML", "problem": f"{dg} vs rest", "eta": eta,
                                 **json.loads(out.strip().splitlines()[-1])})
                    print(rows[-1], flush=True)
    cols = ["method", "problem", "eta", "accuracy", "fit_s", "min_eig_A", "max_eig_A", "asym", "n_iter", "warnings"]
    (HERE / "results" / "mvml_binary.csv").write_text(
        "\n".join([",".join(cols)] + [",".join(f'"{r.get(c, "")}"' if c == "warnings" else str(r.get(c, "")) for c in cols)
                                      for r in rows]) + "\n")
    md = [BINARY_MARK, "", f"One-vs-all problems on the same split, gammas and 24 % Nystrom (draw {draw}), lam = {LAM}; the peer "
          "alone (no OneVsRest wrapper). asym: ||A - A^T||_F / ||A||_F of the peer's A; eigenvalues of (A + A^T) / 2.", "",
          rows_to_markdown([{c: r.get(c, "") for c in cols} for r in rows])]
    path = HERE / "results" / "mvml.md"
    old = path.read_text() if path.exists() else __doc__
    path.write_text(old.split(BINARY_MARK)[0].rstrip("\n") + "\n\n" + "\n".join(md) + "\n")
    return rows


PEER_OVR_PROGRESS = r"""
import json, sys, time, numpy as np
import multimodal.kernels.mvml as peer
from multimodal.kernels.mvml import MVML
from multimodal.datasets.data_sample import MultiModalArray
peer.check_is_fitted = lambda *args, **kw: None     # its sklearn-tags lookup fails with scikit-learn 1.6 (not the algorithm)
a = json.loads(open(sys.argv[1]).read())
X, y = np.array(a["X"]), np.array(a["y"])
tr, te = np.array(a["tr"]), np.array(a["te"])
starts = np.array([c[0] for c in a["views"]] + [X.shape[1]])
Xtr, Xte = MultiModalArray(X[tr], starts), MultiModalArray(X[te], starts)
np.random.seed(a["draw"])                           # once, then the classes in order: what OneVsRestClassifier does
log = open(a["log"], "a")
for c in np.unique(y[tr]):
    est = MVML(lmbda=a["lam"], eta=a["eta"], nystrom_param=a["frac"], kernel="rbf",
               kernel_params=[{"gamma": g} for g in a["gammas"]], learn_A=1, n_loops=6)
    t = time.perf_counter(); est.fit(Xtr, (y[tr] == c).astype(int)); t = time.perf_counter() - t
    d = np.asarray(est.decision_function(Xte), float)
    A = np.asarray(est.A); ev = np.linalg.eigvalsh((A + A.T) / 2)
    log.write(json.dumps({"draw": a["draw"], "class": int(c), "fit_s": t, "cpu_s": time.process_time(),
                          "binary_accuracy": float(np.mean((d > 0) == (y[te] == c))),
                          "min_eig_A": float(ev.min()), "max_eig_A": float(ev.max()),
                          "warnings": str(est.warning_message), "decision": d.tolist()}) + "\n")
    log.flush()
"""


def peer10(draw=0, log=None):
    """The peer's 10-class one-vs-rest fit, class by class with progress: one JSON line per finished binary problem (its
    fit time, binary accuracy, A's extreme eigenvalues and test decision values) in `log`; the classes are fitted in order
    after one np.random.seed(draw), as OneVsRestClassifier(MVML) does, so argmax of the decision values is its prediction."""
    X, y, tr, te, views = data()
    gs = gammas(X, tr, views)
    log = Path(log or f"/tmp/peer10_draw{draw}.jsonl")
    payload = log.with_suffix(".payload.json")
    payload.write_text(json.dumps({"X": X.tolist(), "y": y.tolist(), "tr": tr.tolist(), "te": te.tolist(), "views": views,
                                   "gammas": gs, "lam": LAM, "eta": ETA, "frac": FRAC, "draw": draw, "log": str(log)}))
    return subprocess.run([str(PEER), "-c", PEER_OVR_PROGRESS, str(payload)],
                          env={"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"}).returncode


def record_peer10(logs, note=""):
    """Ours (N_DRAWS draws, one BLAS thread like the peer's run) beside the peer's class-by-class logs (peer10): per draw its
    10-class accuracy (argmax of the ten decision values, what OneVsRestClassifier predicts), summed fit time and the smallest
    eigenvalue of its ten A (symmetrised); a draw with fewer than ten classes finished is recorded as such. The scale row of
    the previous results is kept."""
    import csv
    X, y, tr, te, views = data()
    gs = gammas(X, tr, views)
    with threadpool_limits(1):
        rows = [{"method": "ovk_nb MVMLClassifier", **r} for r in ours(X, y, tr, te, views, gs)]
    for i, log in enumerate(logs):
        recs = [json.loads(line) for line in Path(log).read_text().splitlines() if line.strip()]
        if not recs:
            continue
        if i == 0:                                      # the per-class problems of the first draw, in the note
            note += ("\n\nThe peer's ten binary problems of draw %d (fit s, binary test accuracy, extreme eigenvalues of its "
                     "symmetrised A, its warnings):\n\n| class | fit_s | binary accuracy | min_eig_A | max_eig_A | warnings |\n"
                     "|---|---|---|---|---|---|\n" % recs[0]["draw"]) + "\n".join(
                f"| {r['class']} | {r['fit_s']:.3g} | {r['binary_accuracy']:.3f} | {r['min_eig_A']:.3g} | {r['max_eig_A']:.3g} | "
                f"{r['warnings']} |" for r in sorted(recs, key=lambda r: r["class"]))
        draw = recs[0]["draw"]
        D = np.array([r["decision"] for r in sorted(recs, key=lambda r: r["class"])])
        done = len(recs)
        rows.append({"method": "scikit-multimodallearn MVML (OvR)" if done == 10 else
                     f"scikit-multimodallearn MVML (OvR, {done} of 10 classes finished)", "draw": draw,
                     "accuracy": float(np.mean(np.argmax(D, 0) == y[te])) if done == 10 else None,
                     "fit_s": float(sum(r["fit_s"] for r in recs)), "min_eig_A": float(min(r["min_eig_A"] for r in recs)),
                     "max_eig_A": float(max(r["max_eig_A"] for r in recs)),
                     "binary_accuracy": float(np.mean([r["binary_accuracy"] for r in recs]))})
    path = HERE / "results" / "mvml.csv"
    if path.exists():
        rows += [{k: (float(v) if k in ("accuracy", "fit_s", "min_eig_A", "peak_GB", "max_rss_GB") and v not in ("", "None")
                      else v) for k, v in r.items()} for r in csv.DictReader(path.open()) if r["method"].startswith("ovk_nb MVML scale")]
    write_results(rows, note)
    return rows


RESULT_COLS = ["method", "draw", "accuracy", "fit_s", "min_eig_A", "max_eig_A", "binary_accuracy", "peak_GB", "max_rss_GB",
               "n_iter"]


def write_results(rows, note=""):
    "bench/results/mvml.csv and the head of mvml.md (the one-vs-all section of mvml.md is kept)."
    cols = RESULT_COLS
    (HERE / "results").mkdir(exist_ok=True)
    (HERE / "results" / "mvml.csv").write_text("\n".join([",".join(cols)] + [",".join(str(r.get(c, "")) for c in cols)
                                                                              for r in rows]) + "\n")
    md = [rows_to_markdown([{c: r.get(c, "") for c in cols} for r in rows])]
    path = HERE / "results" / "mvml.md"
    keep = path.read_text().split(BINARY_MARK, 1) if path.exists() else [""]
    path.write_text(__doc__ + ("\n" + note.strip() + "\n" if note else "") + "\n" + "\n".join(md) + "\n"
                    + (f"\n{BINARY_MARK}{keep[1]}" if len(keep) > 1 else ""))
    print("\n".join(md))


NOTE_PEER10 = """Run of this session (`--peer10 d LOG` for d = 0..3, then `--record-peer10 LOG..`): the peer's 10-class one-vs-rest
fit, class by class with one BLAS thread (bench/.venv-multimodallearn: scikit-multimodallearn 0.1.0, scikit-learn 1.6.1,
numpy 2.2.6), beside ours with one thread. The peer's four draws are one fit repeated (same landmarks, see above): 93.8 %
accuracy against our 99.1-99.2 %, and an indefinite A in every class problem (smallest eigenvalue of the symmetrised A down to
-1.6e12, the largest 2.1e13), where ours are PSD (smallest kept eigenvalue ~2e-12 of the largest's scale, none negative).
Times: the peer's draw 0 ran on a quiet machine (load 0.4), 61.6 s; its later draws 77-121 s and our fits 5.1-6.5 s ran while
other jobs kept the 2 cores busy (load average 6-6.4): at least 9.5x (61.6 / 6.5) and 12-21x draw by draw. The previous
session's 141 s per binary problem was with two BLAS threads on a loaded machine; with one thread one problem takes 5-8 s
(the cause of that 20x was not investigated)."""


BINARY_MARK = "## One-vs-all problems: the peer's accuracy and the eigenvalues of its A"


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


def scale_point(n=20000, v=6, p=20, landmarks=500):
    import resource
    import tracemalloc
    from ovk_nb.kernels import RBF
    from ovk_nb.mvml import MVML
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, v * p))
    y = np.sin(X[:, 0]) + X[:, p] * X[:, 2 * p] + 0.1 * rng.normal(size=n)
    views = [list(range(l * p, (l + 1) * p)) for l in range(v)]
    tracemalloc.start()
    t = time.perf_counter()
    m = MVML(views, RBF(1.0 / (2 * p)), lam=0.1, eta=1.0, n_components=landmarks, random_state=0).fit(X, y)
    t = time.perf_counter() - t
    peak = tracemalloc.get_traced_memory()[1] / 2 ** 30
    tracemalloc.stop()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2 ** 20
    return {"method": f"ovk_nb MVML scale n={n} v={v} landmarks/view={landmarks} r={m.features_.offsets[-1]}", "draw": 0,
            "accuracy": float(m.score(X, y)), "fit_s": t, "min_eig_A": float(np.linalg.eigvalsh(m.A_).min()),
            "peak_GB": peak, "max_rss_GB": rss, "n_iter": m.n_iter_}


def main():
    X, y, tr, te, views = data()
    gs = gammas(X, tr, views)
    with threadpool_limits(2):
        mine = ours(X, y, tr, te, views, gs)
    rows = [{"method": "ovk_nb MVMLClassifier", **r} for r in mine]
    if PEER.exists():
        out = run_peer(PEER_CODE, {"X": X.tolist(), "y": y.tolist(), "tr": tr.tolist(), "te": te.tolist(), "views": views,
                                   "gammas": gs, "lam": LAM, "eta": ETA, "frac": FRAC, "draws": N_DRAWS})
        if out is not None:
            rows += [{"method": "scikit-multimodallearn MVML (OvR)", **r} for r in json.loads(out)]
    with threadpool_limits(2):
        rows.append(scale_point())
    write_results(rows)


THREAD_CASES = {
    # name: (what, code run in the subprocess; prints the fit time)
    "mfeat 10 classes, 24 % landmarks (r ~ 1400)": "clf", "mfeat 10 classes, 40 % landmarks (r ~ 2400)": "clf40",
    "mfeat 10 classes, n_components='auto' (r ~ 1000)": "clfauto", "regression n = 20000, 6 views x 300 landmarks (r = 1800)": "scale",
}


def _thread_case(kind):
    "One fit of `kind` in this process; returns its time (s)."
    from ovk_nb.mvml import MVML, MVMLClassifier
    if kind == "scale":
        rng = np.random.default_rng(0)
        n, v, p = 20000, 6, 20
        X = rng.normal(size=(n, v * p))
        y = np.sin(X[:, 0]) + X[:, p] * X[:, 2 * p] + 0.1 * rng.normal(size=n)
        views = [list(range(l * p, (l + 1) * p)) for l in range(v)]
        t = time.perf_counter(); MVML(views, n_components=300, random_state=0).fit(X, y)
        return time.perf_counter() - t
    X, y, tr, te, views = data()
    nc = {"clf": FRAC, "clf40": 0.4, "clfauto": "auto"}[kind]
    t = time.perf_counter()
    m = MVMLClassifier(views, lam=LAM, eta=ETA, n_components=nc, random_state=0).fit(X[tr], y[tr])
    t = time.perf_counter() - t
    print(f"# accuracy {m.score(X[te], y[te]):.4f} r={m.features_.offsets[-1]}", file=sys.stderr)
    return t


def threads(repeats=3):
    """Each case in fresh subprocesses, as installed (the environment as it is) and with one BLAS thread
    (OPENBLAS_NUM_THREADS=1, OMP_NUM_THREADS=1, MKL_NUM_THREADS=1), alternated `repeats` times; the median of each and the
    ratio, with the load average before and after (the machine is shared)."""
    import os
    from threadpoolctl import threadpool_info
    load0 = os.getloadavg()
    installed = {k: os.environ[k] for k in os.environ if not k.endswith("_NUM_THREADS")}
    one = {**installed, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    rows = []
    for name, kind in THREAD_CASES.items():
        t = {"installed": [], "one thread": []}
        for _ in range(repeats):
            for label, env in (("installed", installed), ("one thread", one)):
                out = subprocess.run([sys.executable, __file__, "--thread-case", kind], env=env, capture_output=True,
                                     text=True, cwd=str(HERE.parent))
                if out.returncode:
                    raise RuntimeError(out.stderr[-2000:])
                t[label].append(float(out.stdout.strip().splitlines()[-1]))
        a, b = float(np.median(t["installed"])), float(np.median(t["one thread"]))
        rows.append({"case": name, "installed_s": a, "one_thread_s": b, "ratio": a / b,
                     "installed_all": " ".join(f"{x:.2f}" for x in t["installed"]),
                     "one_thread_all": " ".join(f"{x:.2f}" for x in t["one thread"])})
        print(rows[-1], flush=True)
    load1 = os.getloadavg()
    blas = "; ".join(f"{i.get('internal_api')} {i.get('version')} ({i.get('num_threads')} threads)"
                     for i in threadpool_info() if i.get("user_api") == "blas")
    cols = ["case", "installed_s", "one_thread_s", "ratio", "installed_all", "one_thread_all"]
    (HERE / "results" / "mvml_threads.csv").write_text("\n".join([",".join(cols)] + [",".join(
        f'"{r[c]}"' if isinstance(r[c], str) else f"{r[c]:.4g}" for c in cols) for r in rows]) + "\n")
    md = ["# MVML: as installed vs one BLAS thread", "",
          f"`python bench/bench_mvml.py --threads {repeats}`: every fit in a fresh process, as installed ({blas}, {os.cpu_count()} "
          f"cores) and with OPENBLAS_NUM_THREADS=1, alternated, {repeats} times each; medians, and every time. Load average "
          f"{load0[0]:.1f} / {load0[1]:.1f} / {load0[2]:.1f} before, {load1[0]:.1f} / {load1[1]:.1f} / {load1[2]:.1f} after "
          "(the 2 cores are shared with other engineers' jobs).", "",
          "| case | as installed s | one thread s | ratio | as installed, each | one thread, each |", "|---|---|---|---|---|---|"]
    md += [f"| {r['case']} | {r['installed_s']:.2f} | {r['one_thread_s']:.2f} | {r['ratio']:.2f} | {r['installed_all']} | "
           f"{r['one_thread_all']} |" for r in rows]
    (HERE / "results" / "mvml_threads.md").write_text("\n".join(md) + "\n")
    print("\n".join(md))
    return rows


if __name__ == "__main__":
    if "--thread-case" in sys.argv:
        print(_thread_case(sys.argv[sys.argv.index("--thread-case") + 1]))
    elif "--threads" in sys.argv:
        i = sys.argv.index("--threads")
        threads(int(sys.argv[i + 1]) if len(sys.argv) > i + 1 else 3)
    elif "--record-peer10" in sys.argv:
        record_peer10(sys.argv[sys.argv.index("--record-peer10") + 1:], NOTE_PEER10)
    elif "--peer10" in sys.argv:
        peer10(int(sys.argv[sys.argv.index("--peer10") + 1]), sys.argv[sys.argv.index("--peer10") + 2])
    elif "--binary" in sys.argv:
        binary(tuple(int(a) for a in sys.argv[sys.argv.index("--binary") + 1:]) or (0,))
    else:
        main()
