"""Issue 31.1 on every draw: the exact OVKGaussianProcess fit's n x n eighs, its time in eighs, and its optimum against the
plain profile L-BFGS-B, per data seed.

  python bench/bench_gp_exact4.py --quick          # n = 1500, seeds 0-4 (about 1 min on a quiet 2-core machine)
  python bench/bench_gp_exact4.py --n 1500         # n = 1500, seeds 0-9 (about 2 min quiet)
  python bench/bench_gp_exact4.py --n 3000 --seeds 0     # one seed at n = 3000 (about 75 s quiet; --seeds 1, ... 4 alike)
  python bench/bench_gp_exact4.py --digits         # the digits data shipped with scikit-learn (n = 1797, about 20 s)
  python bench/bench_gp_exact4.py --curvature-threads [N]   # issue 34: the exact curvature's products on 1 BLAS thread
                                                   # and on all, N = 2000 (about 15 s quiet)
  python bench/bench_gp_exact4.py --threads [N]    # issue 34: bench_threads' optimized GP (N = 2000, d = 3) on one BLAS
                                                   # thread and as installed, back to back, best of 2 (about 25 s quiet)
  python bench/bench_gp_exact4.py --phases icm 1500 3   # one fit's time split by phase (one BLAS thread; also
                                                   # `--phases digits` and `--phases threads 2000`: bench_threads' GP)
  python bench/bench_gp_exact4.py                  # all of the above: n = 1500 seeds 0-9, n = 3000 seeds 0-4, digits
                                                   # (about 9 min quiet)
  (estimates from the CPU seconds measured under load; most of each case is the plain L-BFGS-B reference, 8-14 eighs)
  -> bench/results/gp_exact_draws.csv (rows of other (data, n, seed) kept) and bench/results/gp_exact_draws.md

Each (n, seed) runs in a fresh subprocess with one BLAS thread (bench_gp.ENV1). `OVKGaussianProcess()` (default
arguments: d = 4 outputs, full-rank T, learned bandwidth and noise) on bench_gp's `icm_data(n, seed=seed)`, between two
`eigh_psd` of the n x n RBF Gram (scipy's syevd, as numpy.linalg.eigh; the faster of the two is the unit), wall and CPU
seconds (`time.process_time`, one thread: the load-robust clock) for both; the n x n eighs of the fit counted by wrapping
`ovk_nb.gp.eigh_psd`. The reference is the plain profile L-BFGS-B (`SURROGATE_ROWS` set past n: the route before issue
31), run once in the same process, for the optimum it reaches: rel. diff = (LML - LML ref) / |LML ref| (positive: the
new fit is higher). `--digits`: scikit-learn's `load_digits` (1797 images of 8 x 8 pixels), X = the 4 leading principal
components of the left half of each image, Y = the 4 leading principal components of its right half (4 correlated
outputs), both standardised.
"""
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_gp import RES, _read, _sub, _write, icm_data   # noqa: E402

CSV, MD = RES / "gp_exact_draws.csv", RES / "gp_exact_draws.md"


def digits_data():
    "load_digits: X = 4 leading PCs of each image's left half, Y = 4 leading PCs of its right half, standardised."
    from sklearn.datasets import load_digits
    from sklearn.decomposition import PCA
    img = load_digits().images                                  # (1797, 8, 8)
    left, right = img[:, :, :4].reshape(len(img), -1), img[:, :, 4:].reshape(len(img), -1)
    X = PCA(4, random_state=0).fit_transform(left)
    Y = PCA(4, random_state=0).fit_transform(right)
    return (X - X.mean(0)) / X.std(0), (Y - Y.mean(0)) / Y.std(0)


def case(data, n, seed):
    import ovk_nb.gp as gpm
    from ovk_nb.kernels import RBF
    from ovk_nb.linalg import eigh_psd
    if data == "digits":
        X, Y = digits_data()
        n = len(X)
    else:
        X, Y, _, _ = icm_data(n, seed=seed)
    K = RBF(1.0)(X, X)
    sizes = []

    def counted(A, *a, **k):
        sizes.append(A.shape[0])
        return eigh_psd(A, *a, **k)
    gpm.eigh_psd = counted
    scouts, eigh32 = [], gpm._eigh32

    def scouted(A):
        scouts.append(A.shape[0])
        return eigh32(A)
    gpm._eigh32 = scouted

    def timed(f):
        w, c = time.perf_counter(), time.process_time()
        r = f()
        return r, time.perf_counter() - w, time.process_time() - c
    load0 = os.getloadavg()[0]
    _, ew1, ec1 = timed(lambda: eigh_psd(K))
    gp, fw, fc = timed(lambda: gpm.OVKGaussianProcess().fit(X, Y))
    _, ew2, ec2 = timed(lambda: eigh_psd(K))
    ew, ec = min(ew1, ew2), min(ec1, ec2)
    eighs, n32 = sizes.count(n), scouts.count(n)
    sizes.clear()
    rows0, gpm.SURROGATE_ROWS = gpm.SURROGATE_ROWS, 10 ** 9
    one0, gpm._one_bandwidth = gpm._one_bandwidth, lambda lik, bounds: False   # the plain L-BFGS-B, not secant starts
    ref, rw, rc = timed(lambda: gpm.OVKGaussianProcess().fit(X, Y))
    gpm.SURROGATE_ROWS, gpm._one_bandwidth = rows0, one0
    lml, lr = gp.log_marginal_likelihood_value_, ref.log_marginal_likelihood_value_
    return {"data": data, "n": n, "seed": seed if data != "digits" else "", "threads": 1,
            "load": f"{load0:.1f}-{os.getloadavg()[0]:.1f}",
            "eigh_s": round(ew, 3), "eigh_cpu_s": round(ec, 3), "fit_s": round(fw, 3), "fit_cpu_s": round(fc, 3),
            "ratio": round(fw / ew, 2), "ratio_cpu": round(fc / ec, 2), "eighs_n": eighs, "scouts_n": n32,
            "log_gamma": round(float(gp.kernel_.theta[0]), 6), "lml": repr(lml),
            "ref_fit_s": round(rw, 3), "ref_ratio_cpu": round(rc / ec, 2), "ref_eighs_n": sizes.count(n),
            "log_gamma_ref": round(float(ref.kernel_.theta[0]), 6), "lml_ref": repr(lr),
            "lml_rel_diff": f"{(lml - lr) / abs(lr):.2e}"}


def report():
    rows = _read(CSV)
    L = ["# The exact GP fit on many draws: n x n eighs and the optimum (issue 31.1)", "",
         "`python bench/bench_gp_exact4.py [--quick] [--n N ...] [--seeds a-b] [--digits]` (its docstring): "
         "`OVKGaussianProcess()` (d = 4, full-rank T, learned bandwidth and noise) on `bench_gp.icm_data(n, seed)` or "
         "scikit-learn's digits (X: 4 PCs of the left half-images, Y: 4 PCs of the right halves), one BLAS thread, each "
         "case in a fresh process; `eigh`: the faster of two `eigh_psd` of the n x n Gram around the fit (wall, and CPU "
         "seconds at one thread, the load-robust clock); `ratio`: fit / eigh (wall; CPU); `eighs`: the n x n eighs of the "
         "fit in float64, + its float32 scout eighs (`ssyevd`, about half the time: the exact polish's scouts, `_secant_polish`'s `exact`; rows without "
         "them ran before it); `ref`: the plain profile L-BFGS-B (the route before issue 31) in the same process; rel. diff = (LML - LML "
         "ref) / |LML ref| (positive: higher). The load (1-minute average, start-end) beside each row.", "",
         "| data | n | seed | load | eigh s (cpu) | fit s (cpu) | ratio wall | ratio cpu | eighs | log gamma | LML | "
         "ref eighs | ref fit/eigh cpu | log gamma ref | LML ref | rel. diff |", "|" + "---|" * 16]
    for r in rows:
        L.append(f"| {r['data']} | {r['n']} | {r['seed']} | {r['load']} | {r['eigh_s']} ({r['eigh_cpu_s']}) | "
                 f"{r['fit_s']} ({r['fit_cpu_s']}) | {r['ratio']} | {r['ratio_cpu']} | {r['eighs_n']}{' + ' + r['scouts_n'] + ' f32' if r.get('scouts_n') else ''} | {r['log_gamma']} | "
                 f"{float(r['lml']):.6f} | {r['ref_eighs_n']} | {r['ref_ratio_cpu']} | {r['log_gamma_ref']} | "
                 f"{float(r['lml_ref']):.6f} | {r['lml_rel_diff']} |")
    icm = [r for r in rows if r["data"] == "icm"]
    if rows:
        L += ["", f"Cases: {len(rows)}; most n x n eighs in a fit: {max(int(r['eighs_n']) for r in rows)}; largest CPU "
              f"ratio: {max(float(r['ratio_cpu']) for r in rows)}; smallest rel. diff: "
              f"{min(float(r['lml_rel_diff']) for r in rows):.2e}"
              + (f" (icm draws: {len(icm)})" if icm else "") + "."]
    MD.write_text("\n".join(L) + "\n")


def run(cases):
    keys = {(d, str(n), str(s)) for d, n, s in cases}
    rows = [r for r in _read(CSV) if (r["data"], r["n"], r["seed"]) not in keys]
    for d, n, s in cases:
        r = _sub([__file__, "--case", d, str(n), str(s)])
        if r:
            print(r, flush=True)
            rows = [x for x in rows if (x["data"], str(x["n"]), str(x["seed"])) != (r["data"], str(r["n"]), str(r["seed"]))]
            rows.append(r)
            _write(CSV, sorted(rows, key=lambda r: (r["data"], int(r["n"]), int(r["seed"] or -1))))
            report()


def curvature_threads(n=2000, reps=3):
    """Issue 34: `_profile_curvature` at the fitted bandwidth of bench_threads' optimized GP (`regression(n, p=5, d=3)`), its
    O(n^2 r) products on one BLAS thread and on the fit's threads (`_big_threads` = every BLAS thread), best of `reps`,
    wall and CPU seconds, with the load; (F', F'') of both printed (equal to 1e-12)."""
    from threadpoolctl import threadpool_limits
    import ovk_nb.gp as gpm
    from ovk_nb.linalg import blas_ceiling
    from bench_threads import regression
    X, Y = regression(n, p=5, d=3)
    gp = gpm.OVKGaussianProcess(random_state=0).fit(X, Y)
    lik = gpm.SeparableLikelihood(gp.kernel_, X, (Y - Y.mean(0)) / Y.std(0))
    t = np.r_[gp.kernel_.theta, np.log(np.atleast_1d(gp.noise_))]
    b = np.array([[-20.0, 20.0]] * len(t))
    ks = (1, blas_ceiling())
    with threadpool_limits(1):
        lik.state(t)                                        # the eigh, outside the timing
        out = {}
        for k in ks:
            gpm.big_work_threads, best = (lambda size, min_size, k=k: k), (np.inf, np.inf, None)   # the policy's count
            for _ in range(reps):
                w, c = time.perf_counter(), time.process_time()
                r = gpm._profile_curvature(lik, t, b)
                best = min(best, (time.perf_counter() - w, time.process_time() - c, r))
            out[k] = best
    load = os.getloadavg()[0]
    for k, (w, c, r) in out.items():
        print(f"n = {n}, {k} BLAS thread(s): curvature {w:.3f} s wall, {c:.3f} s CPU (F', F'') = {r}; load {load:.1f}")


def threads(n=2000, reps=2):
    """Issue 34: bench_threads' "OVKGaussianProcess, optimized" (`regression(n, p=5, d=3)`, `OVKGaussianProcess(random_state=0)`)
    on one BLAS thread (`threadpool_limits(1)`) and as installed (the thread policy), alternating, best of `reps` each,
    wall and CPU seconds, the load and the idle cores the policy saw; the LMLs of both (the same optimum)."""
    from threadpoolctl import threadpool_limits
    import ovk_nb.gp as gpm
    from ovk_nb.linalg import blas_ceiling, idle_cores
    from bench_threads import regression
    X, Y = regression(n, p=5, d=3)
    fit = lambda: gpm.OVKGaussianProcess(random_state=0).fit(X, Y)
    best, lml, idle = {}, {}, []
    for _ in range(reps):
        for mode in ("one thread", "as installed"):
            idle.append(idle_cores())
            with threadpool_limits(1) if mode == "one thread" else threadpool_limits(blas_ceiling()):
                w, c = time.perf_counter(), time.process_time()
                gp = fit()
                w, c = time.perf_counter() - w, time.process_time() - c
            lml[mode] = gp.log_marginal_likelihood_value_
            best[mode] = min(best.get(mode, (np.inf, np.inf)), (w, c))
    (w1, c1), (wi, ci) = best["one thread"], best["as installed"]
    print(f"n = {n}: one thread {w1:.3f} s wall ({c1:.3f} s CPU); as installed {wi:.3f} s wall ({ci:.3f} s CPU); "
          f"as installed / one thread {wi / w1:.3f} (wall); BLAS ceiling {blas_ceiling()}, idle cores seen "
          f"{min(idle):.2f}-{max(idle):.2f}, load {os.getloadavg()[0]:.2f}; LML {lml['one thread']!r} / {lml['as installed']!r}")


def phases(data="icm", n=1500, seed=0):
    """One fit on one BLAS thread, its time split by phase: exclusive wall and CPU seconds of the n x n eighs (and the
    subsample's), the Grams, the curvature, the n^3 gradient contractions, the inner solves' evaluations (exact and Nystrom),
    L-BFGS-B's own time, the guard, ...; each in units of one eigh of the n x n Gram measured before the fit."""
    from collections import defaultdict
    from threadpoolctl import threadpool_limits
    import ovk_nb.gp as gpm
    from ovk_nb.kernels import RBF
    from ovk_nb.linalg import eigh_psd
    if data == "digits":
        X, Y = digits_data()
    elif data == "threads":
        from bench_threads import regression
        X, Y = regression(n, p=5, d=3)
    else:
        X, Y, _, _ = icm_data(n, seed=seed)
    n, tot, stack = len(X), defaultdict(lambda: [0.0, 0.0, 0]), []

    def clock():
        return np.array([time.perf_counter(), time.process_time()])

    def wrap(label, f):
        def g(*a, **k):
            lab, t0 = label(*a, **k) if callable(label) else label, clock()
            stack.append([lab, 0.0 * t0])
            try:
                return f(*a, **k)
            finally:
                lab, child = stack.pop()
                dt = clock() - t0
                tot[lab][0] += dt[0] - child[0]; tot[lab][1] += dt[1] - child[1]; tot[lab][2] += 1
                if stack:
                    stack[-1][1] = stack[-1][1] + dt
        return g
    SL = gpm.SeparableLikelihood
    gpm.eigh_psd = wrap(lambda A, *a, **k: f"eigh n={A.shape[0]}", eigh_psd)
    SL._gram_gradient = wrap(lambda self, sk: f"Gram and derivative n={self.X.shape[0]}", SL._gram_gradient)
    SL.__call__ = wrap(lambda self, th, eval_gradient=True, kernel_grad=True: f"exact likelihood n={self.X.shape[0]} " + (
        "with the n^3 gradient" if eval_gradient and kernel_grad else "inner" if eval_gradient else "value"), SL.__call__)
    gpm.NystromLikelihood.__call__ = wrap("Nystrom likelihood (its passes, inner solves)", gpm.NystromLikelihood.__call__)
    for name in ("_profile_curvature", "_null_or_fit", "_check_fit", "_fit_data", "_start", "minimize"):
        setattr(gpm, name, wrap(name if name != "minimize" else "L-BFGS-B's own", getattr(gpm, name)))
    gpm._SeparablePosterior.__init__ = wrap("posterior", gpm._SeparablePosterior.__init__)
    K = RBF(1.0)(X, X)
    with threadpool_limits(1):
        t = clock()
        eigh_psd(K)
        e = clock() - t
        t = clock()
        gp = wrap("the rest of fit", gpm.OVKGaussianProcess(random_state=0).fit)(X, Y)
        f = clock() - t
    print(f"{data} n = {n}{' seed %d' % seed if data == 'icm' else ''}: one BLAS thread, load {os.getloadavg()[0]:.2f}; "
          f"eigh {e[0]:.3f} s ({e[1]:.3f} s CPU), fit {f[0]:.3f} s ({f[1]:.3f} s CPU) = {f[1] / e[1]:.2f} eighs (CPU); "
          f"LML {gp.log_marginal_likelihood_value_!r}, log gamma {gp.kernel_.theta[0]:.6f}")
    for k, (w, c, m) in sorted(tot.items(), key=lambda kv: -kv[1][1]):
        print(f"  {k:48s} {m:5d} calls {w:8.3f} s {c:8.3f} s CPU {c / e[1]:6.2f} eighs")


def _seeds(a, default):
    if "--seeds" not in a:
        return default
    lo, _, hi = a[a.index("--seeds") + 1].partition("-")
    return list(range(int(lo), int(hi or lo) + 1))


if __name__ == "__main__":
    a = sys.argv[1:]
    if a[:1] == ["--case"]:
        print(json.dumps(case(a[1], int(a[2]), int(a[3]) if a[3] else 0)))
    elif a[:1] == ["--help"]:
        print(__doc__)
    elif a[:1] == ["--phases"]:
        phases(a[1] if a[1:] else "icm", int(a[2]) if a[2:] else 1500, int(a[3]) if a[3:] else 0)
    elif a[:1] == ["--threads"]:
        threads(int(a[1]) if a[1:] else 2000)
    elif a[:1] == ["--curvature-threads"]:
        curvature_threads(int(a[1]) if a[1:] else 2000)
    else:
        ns = [int(a[i + 1]) for i, v in enumerate(a) if v == "--n"]
        if "--quick" in a:
            cases = [("icm", 1500, s) for s in _seeds(a, range(5))]
        elif ns:
            cases = [("icm", n, s) for n in ns for s in _seeds(a, range(10) if n <= 2000 else range(5))]
        elif "--digits" in a:
            cases = []
        else:
            cases = [("icm", 1500, s) for s in range(10)] + [("icm", 3000, s) for s in range(5)]
        if "--digits" in a or not (ns or "--quick" in a):
            cases.append(("digits", 1797, ""))
        run(cases)
