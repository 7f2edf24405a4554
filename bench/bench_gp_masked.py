"""The exact masked (missing-output) solve at scale (issue 31.4): PCG on the observed entries, the masked Nystrom
preconditioner (`ovk_nb.gp.MaskedNystromPreconditioner`) against the unmasked ones it replaces.

  python bench/bench_gp_masked.py iters --quick       # PCG iterations per preconditioner at n = 2000 (about 1 min quiet)
  python bench/bench_gp_masked.py iters               # ... at n = 2000, 5000, 10000 (about 10 min quiet)
  python bench/bench_gp_masked.py solve [n ...]       # the full solve, default n = 20000 (about 2-3 min quiet, 3.5 GB)
  python bench/bench_gp_masked.py stochastic --quick  # the stochastic fits against the exact one at n = 400 (3-5 min quiet)
  python bench/bench_gp_masked.py stochastic [n:frac:p1,p2[:dim] ...]   # default grid STOCH (an hour or more)
                                                      # -> bench/results/gp_masked_stochastic.csv
  python bench/bench_gp_masked.py estimate            # the estimate at one theta against the exact LML (about 1 min
                                                      # quiet; PYTHONPATH=<an older checkout> for its estimator)
                                                      # -> bench/results/gp_masked_estimate.csv
  python bench/bench_gp_masked.py eval [n ...]        # one evaluation of each route (exact, stochastic) at one theta,
                                                      # CPU time and peak memory: the threshold's measurement (default
                                                      # n = 1000 2000 3000 4500: about 6 min quiet, 8 GB at n = 4500)
                                                      # -> bench/results/gp_masked_eval.csv
  python bench/bench_gp_masked.py path [n] [dg:dn ...]   # the same two evaluations at theta moved by (d log gamma,
                                                      # d log noise), default PATH at n = 4500 (n_o = 12537, past
                                                      # MASKED_DENSE_MAX): the estimator's error along the way a fit
                                                      # goes (about 3 min a point on one core, 8 GB)
                                                      # -> bench/results/gp_masked_path.csv
  python bench/bench_gp_masked.py seeds n probes:seed ...   # the stochastic estimate alone at path's theta (offset
                                                      # 0) over probe draws, against path's exact LML at n
                                                      # -> bench/results/gp_masked_seeds.csv
  python bench/bench_gp_masked.py hessian n exact|stochastic [probes [all]]   # the certificate's -H (differences along
                                                      # the model's directions, or every coordinate) and C at path's
                                                      # theta; with both files of n, its row in
                                                      # bench/results/gp_masked_certificate.csv (n = 4500: about 18 min
                                                      # a route on one core with 'all', 8 GB)
  python bench/bench_gp_masked.py report              # bench/results/gp_masked.md from the csv files

The case is `bench_gp.masked_case`'s (X uniform on [-3, 3]^4, RBF gamma = 0.5, d = 4, random PSD T, lam = 0.1, 30% of
the entries and the first 10 rows missing, tolerance 1e-8), drawn by the same generator calls. Each case runs in a fresh
subprocess with BENCH_GP_THREADS BLAS threads (default one); the load average is written beside every time. Iteration
counts do not depend on the machine; the times do.
"""
import json
import os
import resource
import sys
import time
from pathlib import Path

import numpy as np


sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_gp import RES, THREADS, _read, _sub, _write, masked_data, md_table  # noqa: E402


def _precond(name, X, Y, T, lam, G):
    "'separable' / 'nystrom:r' (masked_solve's unmasked ones) or 'masked:r' / 'masked' (r = None: the default)."
    from ovk_nb.gp import MaskedNystromPreconditioner
    from ovk_nb.kernels import RBF
    kind, _, r = name.partition(":")
    if kind == "masked":
        return MaskedNystromPreconditioner(RBF(0.5), T, X, ~np.isnan(Y), lam, int(r) if r else None), {}
    return kind, ({"n_landmarks": int(r)} if r else {})


def case(n, name, lam=0.1, tol=1e-8):
    "One masked_solve with the preconditioner `name`; the residual recomputed from scratch."
    from ovk_nb.kernels import RBF, Separable
    from ovk_nb.linalg import KernelParts, kernel_matvec, masked_solve
    load0 = os.getloadavg()[0]
    X, Y, T = masked_data(n)
    P = KernelParts(Separable(RBF(0.5), T))
    t = time.perf_counter(); G = P.grams(X, X); t_gram = time.perf_counter() - t
    t = time.perf_counter(); pc, kw = _precond(name, X, Y, T, lam, G); t_setup = time.perf_counter() - t
    t = time.perf_counter()
    C, info = masked_solve(P, X, Y, lam, tol=tol, grams=G, precond=pc, **kw)
    t_solve = time.perf_counter() - t                 # the unmasked preconditioners are built inside masked_solve
    M = ~np.isnan(Y)
    res = np.linalg.norm((kernel_matvec(P, X, lam, G)(C) - np.where(M, Y, 0)) * M) / np.linalg.norm(Y[M])
    return {"n": n, "d": Y.shape[1], "missing": round(float(1 - M.mean()), 3), "lam": lam, "precond": name,
            "landmarks": getattr(pc, "rank_", kw.get("n_landmarks", "")), "gram_s": round(t_gram, 1),
            "setup_s": round(t_setup, 1), "solve_s": round(t_solve, 1), "total_s": round(t_setup + t_solve, 1),
            "iterations": info["iterations"], "rel_residual": float(f"{res:.2e}"), "threads": THREADS,
            "load": f"{load0:.1f}-{os.getloadavg()[0]:.1f}",
            "peak_rss_gb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2 ** 20, 2)}


ITERS = {2000: ["separable", "nystrom:1000", "masked:500", "masked:1000"],
         5000: ["nystrom:1000", "masked:500", "masked:1000", "masked:2000"],
         10000: ["nystrom:1000", "masked:1000", "masked:2000"]}


def run(path, cases):
    "Each (n, name) in a fresh subprocess; its rows replace the rows of `path` with the same (n, precond)."
    rows = [r for r in (_sub([__file__, "--case", str(n), name]) for n, name in cases) if r]
    keys = {(str(r["n"]), r["precond"]) for r in rows}
    _write(path, [r for r in _read(path) if (r["n"], r.get("precond", "")) not in keys] + rows)
    return rows


def stochastic_case(n, frac, probes, p=2):
    """Both masked fits on bench_gp.icm_data(n) (d = 4) with `frac` of Y hidden (one shared noise, raw targets): the exact
    fit once, the stochastic one per number of probes; the exact masked LML at each optimum, the relative gap of the
    stochastic one, its own standard error, the times. One row per number of probes."""
    import warnings
    from bench_gp import icm_data
    from ovk_nb.gp import MaskedLikelihood, OVKGaussianProcess
    X, Y, _, _ = icm_data(n, p=p)                           # p: the input dimension (2: the bench_gp default)
    Y = Y.copy()
    Y[np.random.default_rng(1).random(Y.shape) < frac] = np.nan
    rows, exact = [], None
    for m, n_probes in [("exact", -1)] + [("stochastic", p) for p in probes]:     # probes 0: n_probes='auto'
        load0 = os.getloadavg()[0]
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            t = time.perf_counter()
            gp = OVKGaussianProcess(missing="ignore", method=m, n_probes=max(n_probes, 2) if n_probes else "auto",
                                    noise_per_output=False, normalize_y=False, random_state=0).fit(X, Y)
            fit_s = round(time.perf_counter() - t, 1)
        lml = MaskedLikelihood(gp.kernel_, X, Y)(np.r_[gp.kernel_.theta, np.log(gp.noise_)], False)
        if m == "exact":
            exact = {"exact_fit_s": fit_s, "exact_lml": round(lml, 4), "exact_load": f"{load0:.1f}-{os.getloadavg()[0]:.1f}"}
            continue
        gap = exact["exact_lml"] - lml
        rows.append({"n": n, "p": p, "frac": frac, "n_probes": n_probes, "n_observed": int((~np.isnan(Y)).sum()), **exact,
                     "stochastic_fit_s": fit_s, "stochastic_lml": round(lml, 4), "gap": round(gap, 4),
                     "rel_gap": float(f"{gap / abs(exact['exact_lml']):.2e}"), "stderr_half": round(0.5 * gp._lik.logdet_stderr_, 4),
                     "pcg_iterations": gp._lik.iterations_, "warnings": len(w), "probes_used": gp.n_probes_,
                     "shortfall_estimate": None if gp.lml_shortfall_ is None else float(f"{gp.lml_shortfall_:.3g}"),
                     "threads": THREADS,
                     "load": f"{load0:.1f}-{os.getloadavg()[0]:.1f}"})
    return rows


def estimate_case(data, n, n_probes):
    """The stochastic LML and gradient at one theta against the exact masked ones: 'icm' = bench_gp.icm_data(n), 30%
    hidden, theta of the complete-data fit (one shared noise, raw targets); 'masked' = masked_data(n), the generating
    theta (RBF gamma 0.5, T, noise 0.1)."""
    import warnings
    from bench_gp import icm_data
    from ovk_nb.gp import MaskedLikelihood, OVKGaussianProcess, StochasticMaskedLikelihood
    from ovk_nb.kernels import RBF, Separable
    load0 = os.getloadavg()[0]
    if data == "icm":
        X, Yfull, _, _ = icm_data(n)
        Y = Yfull.copy()
        Y[np.random.default_rng(1).random(Y.shape) < 0.3] = np.nan
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            gp = OVKGaussianProcess(noise_per_output=False, normalize_y=False).fit(X, Yfull)
        K, s2 = gp.kernel_, gp.noise_
    else:
        X, Y, T = masked_data(n)
        K, s2 = Separable(RBF(0.5), T), 0.1
    th = np.r_[K.theta, np.log(s2)]
    ex, ge = MaskedLikelihood(K, X, Y)(th)
    t = time.perf_counter()
    lik = StochasticMaskedLikelihood(K, X, Y, n_probes, random_state=0)
    est, g = lik(th)
    t = time.perf_counter() - t
    return {"data": data, "n": n, "n_probes": n_probes, "n_observed": int((~np.isnan(Y)).sum()), "exact_lml": round(ex, 3),
            "estimate": round(est, 3), "error": round(est - ex, 3), "stderr_half": round(0.5 * lik.logdet_stderr_, 3),
            "grad_abs_error": float(f"{np.abs(g - ge).max():.3g}"), "grad_abs_max": float(f"{np.abs(ge).max():.3g}"),
            "pcg_iterations": lik.iterations_, "eval_s": round(t, 2), "threads": THREADS,
            "load": f"{load0:.1f}-{os.getloadavg()[0]:.1f}"}


def _eval_setup(n):
    """`eval_case`'s data and theta: bench_gp.icm_data(n, p=4) (d = 4) with 30% of Y hidden, and the complete-data fit on
    its first 300 rows; (X, Y with NaN, that fit's kernel, theta = its kernel's theta and log noise)."""
    import warnings
    from bench_gp import icm_data
    from ovk_nb.gp import OVKGaussianProcess
    X, Yf, _, _ = icm_data(n, p=4)
    Y = Yf.copy()
    Y[np.random.default_rng(1).random(Y.shape) < 0.3] = np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gp = OVKGaussianProcess(noise_per_output=False, normalize_y=False).fit(X[:300], Yf[:300])
    return X, Y, gp.kernel_, np.r_[gp.kernel_.theta, np.log(gp.noise_)]


def eval_case(n, n_probes=30, d_gamma=0.0, d_noise=0.0):
    """One LML + gradient evaluation of `MaskedLikelihood` and of `StochasticMaskedLikelihood` at the same theta (the
    complete-data fit on the first 300 rows, its log gamma moved by `d_gamma` and its log noise by `d_noise`) on
    bench_gp.icm_data(n, p=4) (d = 4) with 30% of Y hidden: CPU and wall seconds, the exact route's peak memory in
    n_o x n_o float64 arrays (tracemalloc), the two values."""
    import tracemalloc
    from ovk_nb.gp import MaskedLikelihood, StochasticMaskedLikelihood
    X, Y, kernel, th = _eval_setup(n)
    row = {"n": n, "n_probes": n_probes}
    if d_gamma or d_noise:                            # `path`: theta around that point (the kernel's first entry is
        th[0] += d_gamma                              # log gamma, the last entry log noise)
        th[-1] += d_noise
        row.update(d_log_gamma=d_gamma, d_log_noise=d_noise)
    load0 = os.getloadavg()[0]
    for name, lik in (("exact", MaskedLikelihood(kernel, X, Y)),
                      ("stochastic", StochasticMaskedLikelihood(kernel, X, Y, n_probes, random_state=0))):
        if name == "exact":
            tracemalloc.start()
        t, c = time.perf_counter(), time.process_time()
        v, _ = lik(th)
        row.update({f"{name}_cpu_s": round(time.process_time() - c, 2), f"{name}_wall_s": round(time.perf_counter() - t, 2),
                    f"{name}_lml": round(v, 3)})
        if name == "exact":
            n_o = lik.y.size
            row["n_observed"] = n_o
            row["exact_peak_copies"] = round(tracemalloc.get_traced_memory()[1] / (8.0 * n_o * n_o), 2)
            tracemalloc.stop()
        else:
            row["pcg_iterations"] = lik.iterations_
    row["rel_difference"] = float(f"{(row['stochastic_lml'] - row['exact_lml']) / abs(row['exact_lml']):.2e}")
    return {**row, "threads": THREADS, "load": f"{load0:.1f}-{os.getloadavg()[0]:.1f}"}


def seeds_case(n, n_probes, seed):
    """The stochastic estimate alone at `eval_case`'s theta (no offset) with `n_probes` probes drawn from `seed`: its
    spread over the draws, against the exact LML of `path`'s row at that theta."""
    from ovk_nb.gp import StochasticMaskedLikelihood
    X, Y, kernel, th = _eval_setup(n)
    lik = StochasticMaskedLikelihood(kernel, X, Y, n_probes, random_state=seed)
    load0, c = os.getloadavg()[0], time.process_time()
    v, _ = lik(th)
    return {"n": n, "n_probes": n_probes, "seed": seed, "stochastic_lml": round(v, 3),
            "lml_stderr": round(0.5 * lik.logdet_stderr_, 3), "stochastic_cpu_s": round(time.process_time() - c, 1), "pcg_iterations": lik.iterations_, "threads": THREADS,
            "load": f"{load0:.1f}-{os.getloadavg()[0]:.1f}"}


def hessian_case(n, which, n_probes=30, directions="model"):
    """The certificate's ingredients at `eval_case`'s theta (no offset): -H by forward differences (FD_STEP) of the
    exact masked gradient ('exact') or of the stochastic estimate's ('stochastic', `n_probes` probes, random_state 0,
    probes held, with the per-probe gradient covariance C at theta), along the model's directions S
    (`_model_directions`) or every coordinate ('all'); kept in gp_masked_hessian_{n}_{which}.npz (H on S: S^T H S)."""
    from ovk_nb.gp import FD_STEP, MaskedLikelihood, StochasticMaskedLikelihood, _model_directions, _neg_hessian_fd
    X, Y, kernel, th = _eval_setup(n)
    lik = (MaskedLikelihood(kernel, X, Y) if which == "exact" else
           StochasticMaskedLikelihood(kernel, X, Y, n_probes, random_state=0))
    load0, c = os.getloadavg()[0], time.process_time()
    f, g = lik(th)
    C = getattr(lik, "grad_cov_", np.zeros((len(th), len(th))))
    S = np.eye(len(th)) if directions == "all" else _model_directions(lik, th, np.ones(len(th), bool))
    negH = _neg_hessian_fd(lik, th, g, S, FD_STEP)
    np.savez(RES / f"gp_masked_hessian_{n}_{which}.npz", theta=th, lml=f, g=g, C=C, negH=negH, S=S, n_probes=n_probes,
             n_observed=int((~np.isnan(Y)).sum()))
    w = np.linalg.eigvalsh(negH)
    return {"n": n, "which": which, "n_probes": n_probes if which != "exact" else 0, "n_theta": len(th),
            "directions": S.shape[1], "lml": round(f, 3), "eig_max": float(f"{w.max():.4g}"),
            "eig_min": float(f"{w.min():.4g}"), "cpu_s": round(time.process_time() - c, 1), "threads": THREADS,
            "load": f"{load0:.1f}-{os.getloadavg()[0]:.1f}"}


def certificate_row(n):
    """The certificate at `eval_case`'s theta from the two `hessian_case` files of n: -H_S exact against the estimate's
    (held probes), the probes' share of the shortfall (10) (its mean and mean + 2 sd, from C and each -H_S) against
    SHORTFALL_RTOL |L|, and the Mahalanobis norm of the estimate's actual gradient error in C (about its dimension when
    C is right)."""
    from ovk_nb.gp import SHORTFALL_RTOL, _pinv_neg_hessian, _shortfall
    z, s = (np.load(RES / f"gp_masked_hessian_{n}_{w}.npz") for w in ("exact", "stochastic"))
    S = z["S"] if "S" in z.files else np.eye(len(z["theta"]))
    He, Hs = (x["negH"] if x["negH"].shape[0] == S.shape[1] else S.T @ x["negH"] @ S for x in (z, s))
    C, L = S.T @ s["C"] @ S, float(z["lml"])
    row = {"n": n, "n_observed": int(z["n_observed"]) if "n_observed" in z.files else "", "n_probes": int(s["n_probes"]),
           "directions": S.shape[1], "H_rel_difference": float(f"{np.abs(He - Hs).max() / np.abs(He).max():.2e}")}
    for name, H in (("exact_H", He), ("estimated_H", Hs)):
        m, q = _shortfall(_pinv_neg_hessian(H)[0], np.zeros(len(H)), C)
        row.update({f"{name}_mean": float(f"{m:.3g}"), f"{name}_q": float(f"{q:.3g}"), f"{name}_q_rel": float(f"{q / abs(L):.2e}")})
    e = S.T @ (s["g"] - z["g"])
    w, U = np.linalg.eigh(C)
    row.update(target_nats=round(SHORTFALL_RTOL * abs(L), 3), mahalanobis=round(float(np.sum((U.T @ e) ** 2 / w)), 1))
    return row

def _upsert(path, r, key, defaults=None):
    """Write the row r into the csv at `path`, replacing the row with the same values of the columns `key` (strings; an
    older row missing a column reads `defaults`' value), and print it: each row kept as soon as it is measured."""
    defaults = defaults or {}
    k = tuple(str(r[c]) for c in key)
    _write(path, [o for o in _read(path) if tuple(o.get(c, defaults.get(c)) for c in key) != k] + [r])
    print(r, flush=True)


PATH = ["0:0", "-0.3:0", "0.3:0", "0:-0.7", "0:0.7"]    # (d log gamma, d log noise) around the complete-data fit
ESTIMATE = ["icm:1200:30", "masked:1000:10", "masked:1000:30"]
STOCH = ["400:0.3:10,30", "600:0.3:30", "500:0.3:30:4", "800:0.3:10,30", "800:0.1:30", "800:0.5:30", "1200:0.3:30"]


def _section(name, title, text):
    "A report section: title, text and the table of the csv `name` in RES with all its columns; none when it is empty."
    rows = _read(RES / name)
    return [f"## {title}", "", text, "", md_table(rows, list(rows[0])), ""] if rows else []


def report():
    L = ["# The exact masked solve at scale (issue 31.4)", "",
         "Generated by `python bench/bench_gp_masked.py report` from `gp_masked.csv` (full solves) and "
         "`gp_masked_iters.csv` (iteration counts). `ovk_nb.linalg.masked_solve` on `bench_gp.masked_case`'s data "
         "(d = 4, 30% missing, lam = 0.1, RBF gamma = 0.5, tolerance 1e-8). `precond`: 'separable' = the unmasked "
         "eigen-solve (one eigh of the n x n Gram) masked after; 'nystrom:r' = the unmasked rank-r Nystrom one masked after "
         "(main before issue 31.4); 'masked:r' = `MaskedNystromPreconditioner` (the masked Nystrom system inverted by "
         "Woodbury, one core term per output pattern), 'masked' its default r. `setup_s`: building the masked "
         "preconditioner (the unmasked ones are built inside `solve_s`); `total_s` = setup + solve (the Gram apart). "
         "Times at the load shown (2 cores shared): read the iterations, rerun on a quiet machine for the times.", ""]
    L += _section("gp_masked_eval.csv", "One evaluation of each route: the threshold's measurement",
                  "`MaskedLikelihood` and `StochasticMaskedLikelihood` (30 probes), one LML + gradient at the same theta on "
                  "`bench_gp.icm_data(n, p=4)` (d = 4) with 30% of Y hidden; `exact_peak_copies`: the exact route's peak "
                  "memory in n_o x n_o float64 arrays (tracemalloc); `rel_difference`: (stochastic - exact) / |exact|.")
    L += _section("gp_masked_path.csv", "The estimator's error along theta, past the switch",
                  "`python bench/bench_gp_masked.py path [n]`: the same two evaluations as above at n = 4500 and 6000 (n_o = "
                  "12537 and 16746 > `MASKED_DENSE_MAX`, where `method='auto'` is stochastic; one BLAS thread), at the "
                  "complete-data fit's theta moved by `d_log_gamma` and `d_log_noise` (the region a fit's path crosses). What "
                  "it bounds: if the estimate is within eps |L| of the exact LML at the two optima, the stochastic optimum's "
                  "exact LML is within 2 eps |L| of the exact optimum's (L(t_s) >= L^(t_s) - eps >= L^(t*) - eps >= L(t*) - 2 "
                  "eps).")
    L += _section("gp_masked_certificate.csv", "The fit's shortfall past the switch: the certificate's ingredients",
                  "`python bench/bench_gp_masked.py hessian n exact` and `... hessian n stochastic 30` (one BLAS thread), "
                  "at the path's theta (offset 0), on the model's `directions` (`ovk_nb.gp._model_directions`: 12 of the "
                  "22 entries of theta for d = 4). `H_rel_difference`: the largest entry of (-H_S exact) - (-H_S of the "
                  "estimate, probes held) over the largest of -H_S exact. `*_mean`, `*_q`: the probes' share of the "
                  "shortfall (10) of the GP notebook, 1/2 e^T (-H_S)^-1 e for e ~ N(0, C) (C the 30-probe gradient "
                  "covariance), its mean and mean + 2 sd (the certificate), in nats, with the exact and the estimated "
                  "-H_S; `*_q_rel` over |L|; `target_nats`: SHORTFALL_RTOL |L|. `mahalanobis`: e^T C^-1 e for the "
                  "estimate's actual gradient error e at that theta (about `directions` when C is right).")
    L += _section("gp_masked_hessian.csv", "The certificate's Hessians",
                  "Each route's run of `hessian`: theta's size, the directions differenced (22: every coordinate, the "
                  "n = 4500 runs, projected on the 12 model directions after), -H's extreme eigenvalues there, CPU "
                  "seconds of the one gradient and the differences.")
    L += _section("gp_masked_seeds.csv", "The estimate's spread over probe draws",
                  "`python bench/bench_gp_masked.py seeds n probes:seed ...`: the stochastic LML alone at the path's theta "
                  "(offset 0), each probe draw from its own seed, against the exact LML of the path's row. The draws are "
                  "fixed for a whole fit (common random numbers), so this spread is an offset of the estimated surface, not "
                  "noise between a fit's evaluations; the bound above needs it small.")
    L += _section("gp_masked_stochastic.csv", "The stochastic masked fit against the exact one",
                  "`OVKGaussianProcess(missing='ignore', method=m, n_probes, noise_per_output=False, normalize_y=False)` on "
                  "`bench_gp.icm_data(n)` (d = 4) with `frac` of Y hidden; `*_lml`: the exact masked LML at each fit's "
                  "optimum; `rel_gap` = (exact - stochastic) / |exact|; `stderr_half`: the stochastic LML's own standard "
                  "error at its optimum. Rows with `probes_used` (from issue 31.4's certificate on): `n_probes` 0 is "
                  "n_probes='auto', `probes_used` the probes the fit ended with, `shortfall_estimate` its own estimate "
                  "(10) of `gap` in nats; the older rows ran before the fit's end was polished and certified.")
    L += _section("gp_masked_estimate.csv", "The stochastic estimate at one theta",
                  "`StochasticMaskedLikelihood(kernel, X, Y, n_probes, random_state=0)` against `MaskedLikelihood` at one "
                  "theta (`code`: 'now', or the tag of an older checkout run by BENCH_TAG=... PYTHONPATH=...).")
    for name, title in (("gp_masked.csv", "Full solves"), ("gp_masked_iters.csv", "Iteration counts")):
        rows = _read(RES / name)
        if not rows:
            continue
        cols = ["n", "precond", "landmarks", "iterations", "rel_residual", "gram_s", "setup_s", "solve_s", "total_s",
                "threads", "load", "peak_rss_gb"]
        L += [f"## {title}", "", md_table(rows, cols), ""]
    (RES / "gp_masked.md").write_text("\n".join(L))
    return "\n".join(L)


if __name__ == "__main__":
    a = sys.argv[1:]
    if a[:1] == ["--case"]:
        print(json.dumps(case(int(a[1]), a[2])))
    elif a[:1] == ["--path-case"]:
        print(json.dumps(eval_case(int(a[1]), 30, float(a[2]), float(a[3]))))
    elif a[:1] == ["--seeds-case"]:
        print(json.dumps(seeds_case(int(a[1]), int(a[2]), int(a[3]))))
    elif a[:1] == ["--hessian-case"]:
        print(json.dumps(hessian_case(int(a[1]), a[2], *map(int, a[3:4]), *a[4:5])))
    elif a[:1] == ["hessian"]:                          # the certificate's -H and C past the switch: n exact|stochastic
        r = _sub([__file__, "--hessian-case", *a[1:]], timeout=4 * 3600)
        if r:
            _upsert(RES / "gp_masked_hessian.csv", r, ("n", "which", "n_probes"))
        n = int(a[1])
        if all((RES / f"gp_masked_hessian_{n}_{w}.npz").exists() for w in ("exact", "stochastic")):
            _upsert(RES / "gp_masked_certificate.csv", certificate_row(n), ("n",))
    elif a[:1] == ["seeds"]:                            # the estimate's spread over probe draws: n probes:seed ...
        n, path = int(a[1]), RES / "gp_masked_seeds.csv"
        exact = {o["n"]: o["exact_lml"] for o in _read(RES / "gp_masked_path.csv")
                 if float(o["d_log_gamma"]) == 0 and float(o["d_log_noise"]) == 0}
        for c in a[2:]:
            r = _sub([__file__, "--seeds-case", str(n), *c.split(":")])
            if r:
                e = float(exact[str(n)])
                r.update(exact_lml=e, rel_difference=float(f"{(r['stochastic_lml'] - e) / abs(e):.2e}"))
                _upsert(path, r, ("n", "n_probes", "seed"))
    elif a[:1] == ["path"]:                             # the estimator's error along theta past MASKED_DENSE_MAX
        n = next((int(x) for x in a[1:] if x.isdigit()), 4500)
        path = RES / "gp_masked_path.csv"
        for c in [c for c in a[1:] if ":" in c] or PATH:
            r = _sub([__file__, "--path-case", str(n), *c.split(":")])
            if r:
                _upsert(path, {"d_log_gamma": 0.0, "d_log_noise": 0.0, **r}, ("n", "d_log_gamma", "d_log_noise"))
    elif a[:1] == ["iters"]:
        ns = [2000] if "--quick" in a else [int(x) for x in a[1:] if x.isdigit()] or list(ITERS)
        print(run(RES / "gp_masked_iters.csv", [(n, p) for n in ns for p in ITERS.get(n, ITERS[10000])]))
        print(report())
    elif a[:1] == ["solve"]:
        print(run(RES / "gp_masked.csv", [(int(x), "masked") for x in a[1:]] or [(20000, "masked")]))
        print(report())
    elif a[:1] == ["--stochastic-case"]:
        print(json.dumps(stochastic_case(int(a[1]), float(a[2]), [int(p) for p in a[3].split(",")], *map(int, a[4:5]))))
    elif a[:1] == ["stochastic"]:
        grid = ["400:0.3:30"] if "--quick" in a else [c for c in a[1:] if ":" in c] or STOCH
        path = RES / "gp_masked_stochastic.csv"
        for c in grid:                                  # each row written as soon as it is measured
            for r in _sub([__file__, "--stochastic-case", *c.split(":")]) or []:
                _upsert(path, r, ("n", "p", "frac", "n_probes"), {"p": "2"})
        print(report())
    elif a[:1] == ["--estimate-case"]:
        print(json.dumps(estimate_case(a[1], int(a[2]), int(a[3]))))
    elif a[:1] == ["estimate"]:
        tag = os.environ.get("BENCH_TAG", "now")                  # e.g. BENCH_TAG=main with PYTHONPATH=<main checkout>
        path = RES / "gp_masked_estimate.csv"
        for c in [c for c in a[1:] if ":" in c] or ESTIMATE:
            r = _sub([__file__, "--estimate-case", *c.split(":")])
            if r:
                r["code"] = tag
                _upsert(path, r, ("data", "n", "n_probes", "code"))
        print(report())
    elif a[:1] == ["--eval-case"]:
        print(json.dumps(eval_case(int(a[1]))))
    elif a[:1] == ["eval"]:
        path = RES / "gp_masked_eval.csv"
        for n in [int(x) for x in a[1:] if x.isdigit()] or [1000, 2000, 3000, 4500]:
            r = _sub([__file__, "--eval-case", str(n)])
            if r:
                _write(path, [o for o in _read(path) if o["n"] != str(n)] + [r])
                print(r, flush=True)
        print(report())
    elif a[:1] == ["report"]:
        print(report())
    else:
        sys.exit(__doc__)
