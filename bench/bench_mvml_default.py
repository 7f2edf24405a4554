"""MVML's regression default (issue 29): 5-fold held-out R^2 of MVML() and its variants against KernelRidge(rbf) and the
mean predictor, X raw and standardized; also MovKL() and FunctionalKRR() against the same bar.

  python bench/bench_mvml_default.py            # diabetes, linnerud, Friedman 1 (n = 200) -> bench/results/mvml_default.md
  python bench/bench_mvml_default.py --quick    # diabetes and linnerud only, printed (nothing written)

The table in the MVML notebook's decision ("the regression default standardizes y") comes from this script.
"""
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np


def candidates():
    from sklearn.dummy import DummyRegressor
    from sklearn.kernel_ridge import KernelRidge
    from ovk_nb import FunctionalKRR, MovKL, MVML
    return {"mean": DummyRegressor, "KernelRidge(rbf)": lambda: KernelRidge(kernel="rbf"),
            "MVML(normalize_y=False)": lambda: MVML(normalize_y=False), "MVML(lam=0.01)": lambda: MVML(lam=0.01),
            "MVML()": MVML, "MVML(lam=1)": lambda: MVML(lam=1.0), "MVML(metric='identity')": lambda: MVML(metric="identity"),
            "MovKL()": MovKL, "FunctionalKRR()": FunctionalKRR}


def datasets(quick: bool):
    from sklearn.datasets import load_diabetes, load_linnerud, make_friedman1
    out = {"diabetes": load_diabetes(return_X_y=True), "linnerud": load_linnerud(return_X_y=True)}
    if not quick:
        out["Friedman 1 (n = 200)"] = make_friedman1(200, random_state=0)
    return out


def cv_r2(make, X, Y):
    from sklearn.metrics import r2_score
    from sklearn.model_selection import KFold
    s = []
    for tr, te in KFold(5, shuffle=True, random_state=0).split(X):
        s.append(r2_score(Y[te], make().fit(X[tr], Y[tr]).predict(X[te])))
    return float(np.mean(s))


def main(quick: bool):
    from sklearn.preprocessing import StandardScaler
    from threadpoolctl import threadpool_info
    warnings.simplefilter("ignore")
    cands = candidates()
    lines = ["| data | X | " + " | ".join(cands) + " |", "|---|---|" + "---|" * len(cands)]
    print(lines[0], flush=True)
    t0 = time.perf_counter()
    for name, (X, Y) in datasets(quick).items():
        for sc in ("raw", "std"):
            Xs = StandardScaler().fit_transform(X) if sc == "std" else X
            lines.append(f"| {name} | {sc} | " + " | ".join(f"{cv_r2(m, Xs, Y):.3f}" for m in cands.values()) + " |")
            print(lines[-1], flush=True)
    threads = max([i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"], default=1)
    note = (f"\n5-fold held-out R^2 (KFold(5, shuffle=True, random_state=0)); load average "
            f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores, {threads} BLAS threads, {time.perf_counter() - t0:.0f} s.\n")
    print(note)
    if not quick:
        out = Path(__file__).parent / "results" / "mvml_default.md"
        out.write_text("# MVML's regression default against KernelRidge(rbf)\n\n" + "\n".join(lines) + "\n" + note)
        print("wrote", out)


if __name__ == "__main__":
    main("--quick" in sys.argv[1:])
