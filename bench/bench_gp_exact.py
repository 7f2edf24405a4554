"""Issue 31.1: the exact OVKGaussianProcess fit in units of one eigh of the n x n Gram, with where its time goes.

  python bench/bench_gp_exact.py            # n = 1500 and 3000, best of 3 (about 2.5 min on a quiet 2-core machine)
  python bench/bench_gp_exact.py --quick    # n = 1500, best of 2 (about 30 s quiet; 2 min at load 9)
  python bench/bench_gp_exact.py 2000 ...   # other sizes
  -> bench/results/gp_exact.csv (rows of other n kept) and bench/results/gp_exact.md

Each n runs in a fresh subprocess with one BLAS thread (bench_gp.ENV1). `OVKGaussianProcess()` (default arguments: d = 4
outputs, full-rank T, learned bandwidth and per-output noise) on bench_gp's `icm_data(n)`, interleaved with one
`eigh_psd` of the n x n RBF Gram (scipy's syevd, as numpy.linalg.eigh), best of `repeats` for each; the reference is the
plain profile L-BFGS-B (`SURROGATE_ROWS` set past n: the route before issue 31), run once, for the optimum it reaches.
The fit's time is split by wrapping the module's functions: n x n eighs (count, time), the subsample search, the exact
curvature, the posterior and checks. Also: scipy's 'evr' driver and numpy.linalg.eigh against 'evd' (idea (c)).
"""
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_gp import ENV1, RES, _read, _sub, _write, icm_data   # noqa: E402


def case(n, repeats=3):
    import scipy.linalg as sla
    import ovk_nb.gp as gpm
    from ovk_nb.kernels import RBF
    from ovk_nb.linalg import eigh_psd
    X, Y, _, _ = icm_data(n)
    K = RBF(1.0)(X, X)
    acc = {}

    def timed(name, f, key=None):
        def g(*a, **k):
            t = time.perf_counter()
            try:
                return f(*a, **k)
            finally:
                kk = key(*a) if key else name
                c, s = acc.get(kk, (0, 0.0))
                acc[kk] = (c + 1, s + time.perf_counter() - t)
        return g
    gpm.eigh_psd = timed("eigh", eigh_psd, key=lambda A, *a: "eigh_n" if A.shape[0] == n else "eigh_sub")
    for name in ("_profile_curvature", "_check_fit", "_null_or_fit", "_fit_data", "_start"):
        setattr(gpm, name, timed(name, getattr(gpm, name)))
    sub0 = gpm._surrogate_profile
    gpm._surrogate_profile = timed("surrogate_route", sub0)
    search = gpm.minimize
    gpm.minimize = timed("minimize", search)            # the subsample's outer search and every inner L-BFGS-B
    load0 = os.getloadavg()[0]
    t_e, fits = [], []
    for _ in range(repeats):
        t = time.perf_counter(); eigh_psd(K); t_e.append(time.perf_counter() - t)
        acc.clear()
        t = time.perf_counter(); gp = gpm.OVKGaussianProcess().fit(X, Y); dt = time.perf_counter() - t
        fits.append((dt, gp.log_marginal_likelihood_value_, dict(acc)))
    t = time.perf_counter(); eigh_psd(K); t_e.append(time.perf_counter() - t)
    drv = {}
    for name, f in (("evr", lambda: sla.eigh(K, driver="evr", check_finite=False)), ("numpy", lambda: np.linalg.eigh(K)),
                    ("evd", lambda: eigh_psd(K))):
        drv[name] = min(_t(f) for _ in range(2))
    other = []                                          # the exact eigh count on other draws (n <= 2000: a few seconds each)
    for seed in (range(1, 6) if n <= 2000 else ()):
        Xs, Ys, _, _ = icm_data(n, seed=seed)
        acc.clear()
        gpm.OVKGaussianProcess().fit(Xs, Ys)
        other.append(str(acc.get("eigh_n", (0, 0))[0]))
    gpm.SURROGATE_ROWS = 10 ** 9
    acc.clear()
    t = time.perf_counter(); ref = gpm.OVKGaussianProcess().fit(X, Y); t_ref = time.perf_counter() - t
    n_ref = acc.get("eigh_n", (0, 0))[0]
    e = min(t_e)
    dt, lml, a = min(fits, key=lambda r: r[0])
    cnt = lambda k: a.get(k, (0, 0.0))[0]
    sec = lambda k: a.get(k, (0, 0.0))[1]
    return {"n": n, "threads": 1, "load": f"{load0:.1f}-{os.getloadavg()[0]:.1f}", "repeats": repeats,
            "eigh_s": round(e, 3), "fit_s": round(dt, 3), "ratio": round(dt / e, 2),
            "eighs_n": cnt("eigh_n"), "eighs_sub": cnt("eigh_sub"), "eigh_n_s": round(sec("eigh_n"), 3),
            "curvature_s": round(sec("_profile_curvature"), 3),
            "surrogate_route_s": round(sec("surrogate_route"), 3),
            "checks_s": round(sec("_check_fit") + sec("_null_or_fit") + sec("_fit_data") + sec("_start"), 3),
            "lml": repr(lml), "ref_fit_s": round(t_ref, 3), "ref_ratio": round(t_ref / e, 2), "ref_eighs_n": n_ref,
            "lml_ref": repr(ref.log_marginal_likelihood_value_),
            "lml_rel_diff": f"{(lml - ref.log_marginal_likelihood_value_) / abs(ref.log_marginal_likelihood_value_):.2e}",
            "evr_over_evd": round(drv["evr"] / drv["evd"], 3), "numpy_over_evd": round(drv["numpy"] / drv["evd"], 3),
            "eighs_n_seeds_1_5": "/".join(other)}


def _t(f):
    t = time.perf_counter(); f(); return time.perf_counter() - t


def report():
    rows = _read(RES / "gp_exact.csv")
    L = ["# The exact GP fit in eigh units (issue 31.1)", "",
         "`python bench/bench_gp_exact.py [--quick] [n ...]`: `OVKGaussianProcess()` (d = 4, full-rank T, learned bandwidth "
         "and per-output noise) on `bench_gp.icm_data(n)` against one `eigh_psd` of the n x n Gram (syevd, as "
         "`numpy.linalg.eigh`), interleaved in one process, best of `repeats`, one BLAS thread; the load (1-minute average, "
         "start-end) beside each row. `eighs`: n x n eighs of the fit (+ the subsample's); `curv.`: the exact profile "
         "curvature's time; `route`: the whole surrogate route (search + exact polish); `ref`: the plain profile L-BFGS-B "
         "(the route before issue 31), once; rel. diff = (LML - LML ref) / |LML ref| (positive: higher); `seeds 1-5`: the "
         "n x n eighs of the fit on icm_data(n, seed=1..5) (n <= 2000 only).", "",
         "| n | load | eigh (s) | fit (s) | fit / eigh | eighs | n x n eigh time (s) | curv. (s) | route (s) | ref (s) | "
         "ref / eigh | ref eighs | LML | LML ref | rel. diff | evr / evd | numpy / evd | seeds 1-5 |", "|" + "---|" * 18]
    for r in rows:
        L.append(f"| {r['n']} | {r['load']} | {r['eigh_s']} | {r['fit_s']} | {r['ratio']} | {r['eighs_n']} + {r['eighs_sub']} "
                 f"| {r['eigh_n_s']} | {r['curvature_s']} | {r['surrogate_route_s']} | {r['ref_fit_s']} | {r['ref_ratio']} | "
                 f"{r['ref_eighs_n']} | {r['lml']} | {r['lml_ref']} | {r['lml_rel_diff']} | {r['evr_over_evd']} | "
                 f"{r['numpy_over_evd']} | {r.get('eighs_n_seeds_1_5', '')} |")
    (RES / "gp_exact.md").write_text("\n".join(L) + "\n")


def run(ns, repeats):
    rows = [r for r in _read(RES / "gp_exact.csv") if int(r["n"]) not in ns]
    for n in ns:
        r = _sub([__file__, "--case", str(n), str(repeats)])
        if r:
            print(r, flush=True)
            rows.append(r)
    _write(RES / "gp_exact.csv", sorted(rows, key=lambda r: int(r["n"])))
    report()


if __name__ == "__main__":
    a = sys.argv[1:]
    if a[:1] == ["--case"]:
        print(json.dumps(case(int(a[1]), int(a[2]))))
    elif a[:1] == ["--help"]:
        print(__doc__)
    else:
        quick = "--quick" in a
        run([int(x) for x in a if x.isdigit()] or ((1500,) if quick else (1500, 3000)), 2 if quick else 3)
