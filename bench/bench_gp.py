"""OVKGaussianProcess (issue 20) side by side with its peers, and the masked (missing-output) solve at scale.

  python bench/bench_gp.py masked              # masked_solve at n=20000, d=4, 30% missing -> bench/results/gp_masked.csv
  python bench/bench_gp.py peers [n ...] [ours|sklearn|gpytorch ...]   # exact ICM vs GPyTorch and per-output sklearn
                                               # GPR -> bench/results/gp.csv (other rows kept)
  python bench/bench_gp.py nystrom 2000:500:exact 2000:500 100000:500   # method='nystrom' (and the exact fit) ->
                                               # bench/results/gp_nystrom.csv
  python bench/bench_gp.py nystrom-eval 20000:500 100000:500   # one LML + gradient against its BLAS-3 floors (same run,
                                               # interleaved, best of 5) -> bench/results/gp_nystrom_eval.csv
  python bench/bench_gp.py nystrom-memory 1000000:500   # peak RSS of a method='nystrom' fit -> gp_nystrom_memory.csv
  python bench/bench_gp.py stochastic 1200 400:fits   # the stochastic masked likelihood vs the exact one: its error at
                                               # 3360 observed entries, both fits at n = 400 -> bench/results/gp_stochastic.csv
  python bench/bench_gp.py eighs [--quick] [n ...]   # the exact fit vs one eigh of the n x n Gram, eighs counted
                                               # (issue 31.1) -> bench/results/gp_eighs.csv
  python bench/bench_gp.py report              # bench/results/gp.md from the csv files
  bash bench/peers/gpytorch_venv.sh            # once: bench/.venv-gpytorch (torch 2.13.0 CPU, gpytorch)

Each case runs in a fresh subprocess (peak RSS per case), one BLAS thread (torch: one thread), on a shared 2-core
machine that several agents load at the same time: the times are noisy, the ratios within one run are what to read.
"""
import csv
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
RES = HERE / "results"
PEER = HERE / ".venv-gpytorch" / "bin" / "python"
THREADS = os.environ.get("BENCH_GP_THREADS", "1")            # BLAS threads per case (default one)
ENV1 = {**os.environ, "OPENBLAS_NUM_THREADS": THREADS, "OMP_NUM_THREADS": THREADS, "MKL_NUM_THREADS": THREADS}


def _sub(args, payload=None, python=sys.executable, timeout=None):
    timeout = timeout or int(os.environ.get("BENCH_GP_TIMEOUT", 1800))     # seconds per case
    res = subprocess.run([str(python), *args], input=None if payload is None else json.dumps(payload),
                         capture_output=True, text=True, env=ENV1, timeout=timeout)
    if res.returncode:
        print(res.stderr[-3000:], file=sys.stderr)
        return None
    return json.loads(res.stdout.strip().splitlines()[-1])


# ---------------------------------------------------------------- the masked solve at scale
def masked_data(n, d=4, frac=0.3, seed=0):
    "The masked solve's data: X (n, 4), Y (n, d) with a fraction `frac` missing (NaN) and the first 10 rows whole, T."
    rng = np.random.default_rng(seed)
    X = rng.uniform(-3, 3, (n, 4))
    W = rng.normal(size=(d, d))
    T = W @ W.T / d + 0.1 * np.eye(d)
    Y = np.sin(X @ rng.normal(size=(4, d))) + 0.1 * rng.normal(size=(n, d))
    Y[rng.random(Y.shape) < frac] = np.nan
    Y[:10] = np.nan                                       # a few whole rows missing
    return X, Y, T


def masked_case(n, d=4, frac=0.3, lam=0.1, r=1000, tol=1e-8, seed=0):
    "One masked_solve (Nystrom-preconditioned PCG) on a loaded machine; the residual recomputed from scratch."
    from ovk_nb.kernels import RBF, Separable
    from ovk_nb.linalg import KernelParts, kernel_matvec, masked_solve
    X, Y, T = masked_data(n, d, frac, seed)
    P = KernelParts(Separable(RBF(0.5), T))
    t = time.perf_counter(); G = P.grams(X, X); t_gram = time.perf_counter() - t
    t = time.perf_counter()
    C, info = masked_solve(P, X, Y, lam, tol=tol, grams=G, precond="nystrom", n_landmarks=r)
    t_solve = time.perf_counter() - t
    M = ~np.isnan(Y)
    res = np.linalg.norm((kernel_matvec(P, X, lam, G)(C) - np.where(M, Y, 0)) * M) / np.linalg.norm(Y[M])
    return {"n": n, "d": d, "missing": round(float(1 - M.mean()), 3), "lam": lam, "landmarks": r, "gram_s": round(t_gram, 1),
            "solve_s": round(t_solve, 1), "iterations": info["iterations"], "rel_residual": float(f"{res:.2e}"),
            "peak_rss_gb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2 ** 20, 2)}


def run_masked(ns=(20000,)):
    rows = [_sub([__file__, "--masked-case", str(n)]) for n in ns]
    rows = [r for r in rows if r]
    _write(RES / "gp_masked.csv", rows)
    return rows


# ---------------------------------------------------------------- exact ICM: ours vs GPyTorch vs per-output sklearn GPR
def icm_data(n, n_test=1000, d=4, p=2, seed=0, noise=0.05, n_feat=2000):
    """A draw of an ICM f ~ GP(0, k (x) T*), k = RBF(gamma=1) on [-2, 2]^p (by 2000 random Fourier features: f is a
    GP draw up to that approximation), T* = w w^T / 2 + B B^T / 4 (correlated outputs), y = f + N(0, noise)."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, (n + n_test, p))
    Om, b = rng.normal(scale=np.sqrt(2.0), size=(p, n_feat)), rng.uniform(0, 2 * np.pi, n_feat)
    w, B = rng.normal(size=(d, 1)), rng.normal(size=(d, d))
    T = w @ w.T / 2 + B @ B.T / 4
    G = rng.normal(size=(n_feat, d)) @ np.linalg.cholesky(T).T
    F = np.concatenate([np.sqrt(2.0 / n_feat) * np.cos(X[i:i + 4096] @ Om + b) @ G      # by chunks: no (n, 2000) matrix
                        for i in range(0, len(X), 4096)])
    Y = F + np.sqrt(noise) * rng.normal(size=F.shape)
    return X[:n], Y[:n], X[n:], Y[n:]


def _scores(mu, var_f, noise, Yte):
    "Test MSE against the noisy y and the mean per-entry negative log predictive density (latent variance + noise)."
    v = var_f + noise
    return float(np.mean((mu - Yte) ** 2)), float(np.mean(0.5 * np.log(2 * np.pi * v) + 0.5 * (Yte - mu) ** 2 / v))


def _noise_y(gp):
    "The learned noise variance(s) in Y's units (`noise_` is the normalised targets' with normalize_y): noise_ sd^2."
    return np.asarray(gp.noise_) * np.asarray(gp._sd) ** 2


def ours_case(n):
    from ovk_nb.gp import OVKGaussianProcess
    X, Y, Xte, Yte = icm_data(n)
    ru = resource.getrusage(resource.RUSAGE_SELF)
    t = time.perf_counter(); gp = OVKGaussianProcess().fit(X, Y); t_fit = time.perf_counter() - t
    ru2 = resource.getrusage(resource.RUSAGE_SELF)
    cpu = ru2.ru_utime + ru2.ru_stime - ru.ru_utime - ru.ru_stime      # CPU seconds of the fit (one BLAS thread)
    mu, sd = gp.predict(Xte, return_std=True)
    mse, nlpd = _scores(mu, sd ** 2, _noise_y(gp), Yte)
    return {"n": n, "model": "ours ICM (full-rank T)", "fit_s": round(t_fit, 2), "fit_cpu_s": round(cpu, 1), "lml": round(gp.log_marginal_likelihood_value_, 3),
            "lml_ours_formula": round(gp.log_marginal_likelihood_value_, 3), "test_mse": round(mse, 5), "nlpd": round(nlpd, 4),
            "noise": round(gp.noise_, 5), "peak_rss_gb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2 ** 20, 2)}


def sklearn_case(n):
    from sklearn.gaussian_process import GaussianProcessRegressor
    from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel
    X, Y, Xte, Yte = icm_data(n)
    t = time.perf_counter()
    gps = [GaussianProcessRegressor(ConstantKernel() * RBF() + WhiteKernel(), random_state=0).fit(X, Y[:, o])
           for o in range(Y.shape[1])]
    t_fit = time.perf_counter() - t
    mu, sd = np.array([g.predict(Xte, return_std=True) for g in gps]).transpose(1, 2, 0)     # y's std (noise inside)
    noise = np.array([g.kernel_.k2.noise_level for g in gps])
    mse, nlpd = _scores(mu, sd ** 2 - noise, noise, Yte)
    lml = float(sum(g.log_marginal_likelihood_value_ for g in gps))
    return {"n": n, "model": "sklearn GPR per output", "fit_s": round(t_fit, 2), "lml": round(lml, 3), "lml_ours_formula": "",
            "test_mse": round(mse, 5), "nlpd": round(nlpd, 4), "noise": round(float(noise.mean()), 5),
            "peak_rss_gb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2 ** 20, 2)}


GPYTORCH = r"""
import json, resource, sys, time
import numpy as np, torch, gpytorch
torch.set_num_threads(1)
p = json.load(sys.stdin)
X, Y, Xte = (torch.tensor(p[k], dtype=torch.float64) for k in ("X", "Y", "Xte"))
d = Y.shape[1]
class ICM(gpytorch.models.ExactGP):
    def __init__(self, X, Y, lik):
        super().__init__(X, Y, lik)
        self.mean = gpytorch.means.MultitaskMean(gpytorch.means.ZeroMean(), num_tasks=d)
        self.cov = gpytorch.kernels.MultitaskKernel(gpytorch.kernels.RBFKernel(), num_tasks=d, rank=d)
    def forward(self, x):
        return gpytorch.distributions.MultitaskMultivariateNormal(self.mean(x), self.cov(x))
lik = gpytorch.likelihoods.MultitaskGaussianLikelihood(num_tasks=d, has_task_noise=False).double()
model = ICM(X, Y, lik).double()
# the same start as ours: lengthscale from gamma (k = exp(-gamma r^2) = exp(-r^2 / (2 l^2))), T = W W^T + diag(kappa), noise
model.cov.data_covar_module.lengthscale = float(np.sqrt(0.5 / p["gamma"]))
model.cov.task_covar_module.covar_factor.data = torch.tensor(p["W"], dtype=torch.float64)
model.cov.task_covar_module.var = torch.tensor(p["kappa"], dtype=torch.float64)
lik.noise = p["noise"]
model.train(); lik.train()
mll = gpytorch.mlls.ExactMarginalLogLikelihood(lik, model)
opt = torch.optim.LBFGS(model.parameters(), lr=1.0, max_iter=500, tolerance_grad=1e-6, tolerance_change=1e-10,
                        line_search_fn="strong_wolfe")
def closure():
    opt.zero_grad(); loss = -mll(model(X), Y); loss.backward(); return loss
t = time.perf_counter()
prev = None
for it in range(20):                   # LBFGS steps of up to 500 iterations each, until the loss stops moving
    loss = float(opt.step(closure))
    if prev is not None and abs(prev - loss) <= 1e-9 * max(1.0, abs(loss)):
        break
    prev = loss
t_fit = time.perf_counter() - t
with torch.no_grad():
    lml = float(mll(model(X), Y)) * Y.numel()           # gpytorch divides by the number of targets
    model.eval(); lik.eval()
    f = model(Xte)
    out = {"fit_s": t_fit, "lml_theirs": lml, "mu": f.mean.numpy().tolist(), "var_f": f.variance.numpy().tolist(),
           "noise": float(lik.noise), "lengthscale": float(model.cov.data_covar_module.lengthscale),
           "B": model.cov.task_covar_module.covar_matrix.to_dense().numpy().tolist(),
           "peak_rss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2 ** 20,
           "versions": f"torch {torch.__version__}, gpytorch {gpytorch.__version__}"}
print(json.dumps(out))
"""


def gpytorch_case(n):
    "GPyTorch's exact ICM from our start, in its own venv; its LML also re-evaluated by our exact formula at its hyper-parameters."
    from ovk_nb.gp import _default_kernel, gp_dense_reference  # noqa: F401
    from ovk_nb.gp import SeparableLikelihood
    from ovk_nb.kernels import RBF, Separable, resolve_kernel
    X, Y, Xte, Yte = icm_data(n)
    k0 = resolve_kernel(None, X, Y, default=_default_kernel)
    T0 = k0.get_params(deep=False)["T"]
    payload = {"X": X.tolist(), "Y": Y.tolist(), "Xte": Xte.tolist(), "gamma": k0.scalar_kernel.gamma,
               "W": T0.W.tolist(), "kappa": T0.kappa.tolist(), "noise": 0.1 * float(Y.var(0).mean())}
    out = _sub(["-c", GPYTORCH], payload, python=PEER)
    if out is None:
        return None
    K = Separable(RBF(0.5 / out["lengthscale"] ** 2), np.array(out["B"]))
    lml_ours = SeparableLikelihood(K, X, Y)(np.r_[K.theta, np.log(out["noise"])], False)
    mse, nlpd = _scores(np.array(out["mu"]), np.array(out["var_f"]), out["noise"], Yte)
    return {"n": n, "model": "GPyTorch exact ICM (" + out["versions"] + ")", "fit_s": round(out["fit_s"], 2),
            "lml": round(out["lml_theirs"], 3), "lml_ours_formula": round(lml_ours, 3), "test_mse": round(mse, 5),
            "nlpd": round(nlpd, 4), "noise": round(out["noise"], 5), "peak_rss_gb": round(out["peak_rss_gb"], 2)}


CASES = {"ours": ours_case, "sklearn": sklearn_case, "gpytorch": gpytorch_case}


# ---------------------------------------------------------------- the Nystrom likelihood (collapsed bound) at scale
def _count_passes():
    "Wrap NystromLikelihood._features: returns a dict whose 'rows' counts the rows of X the feature passes read."
    from ovk_nb.gp import NystromLikelihood
    seen, orig = {"rows": 0}, NystromLikelihood._features

    def features(self, sk, L):
        seen["rows"] += self.X.shape[0]
        return orig(self, sk, L)
    NystromLikelihood._features = features
    return seen


def _ridge_fit_s(X, Y, m):
    "Seconds of OVKRidge(solver='nystrom', n_components=m, random_state=0) (its default kernel) on the same data."
    from ovk_nb.ridge import OVKRidge
    t = time.perf_counter(); OVKRidge(solver="nystrom", n_components=m, random_state=0).fit(X, Y)
    return time.perf_counter() - t


def nystrom_case(n, m, exact=False):
    """One fit on icm_data(n): method='nystrom' (the collapsed bound) with m landmarks, or the exact eigenbasis fit: time,
    memory, LML, test scores; for Nystrom also OVKRidge(solver='nystrom')'s fit at the same n and m just before and just
    after ours (the ratio uses their mean: the machine's load moves), and the feature passes (rows read / n)."""
    from ovk_nb.gp import OVKGaussianProcess
    X, Y, Xte, Yte = icm_data(n)
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2 ** 20
    kw = {} if exact else {"method": "nystrom", "n_components": m, "random_state": 0}
    load0 = os.getloadavg()[0]
    ridge = [] if exact else [_ridge_fit_s(X, Y, m)]
    seen = _count_passes()
    t = time.perf_counter(); gp = OVKGaussianProcess(**kw).fit(X, Y); t_fit = time.perf_counter() - t
    ridge += [] if exact else [_ridge_fit_s(X, Y, m)]
    passes = seen["rows"] / n
    mu, sd = gp.predict(Xte, return_std=True)
    mse, nlpd = _scores(mu, sd ** 2, _noise_y(gp), Yte)
    gp._lik._key = None                                   # one LML + gradient evaluation from scratch (a new bandwidth)
    t = time.perf_counter(); gp._lik(gp._theta); t_eval = time.perf_counter() - t
    r = {"n": n, "d": Y.shape[1], "method": "exact" if exact else gp.method, "landmarks": "" if exact else m,
         "fit_s": round(t_fit, 1), "eval_s": round(t_eval, 2), "lml": round(gp.log_marginal_likelihood_value_, 3),
         "test_mse": round(mse, 5), "nlpd": round(nlpd, 4), "gamma": round(gp.kernel_.scalar_kernel.gamma, 4),
         "noise": round(float(np.mean(gp.noise_ * gp._sd ** 2)), 5),
         "peak_rss_gb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2 ** 20, 2), "data_rss_gb": round(rss0, 2),
         "passes": round(passes, 2), "threads": THREADS, "load": f"{load0:.1f}-{os.getloadavg()[0]:.1f}"}
    if ridge:
        r.update(ridge_s=" / ".join(f"{x:.2f}" for x in ridge), ratio=round(t_fit / float(np.mean(ridge)), 1))
    return r


def nystrom_memory_case(n, m):
    """Peak RSS of a method='nystrom' fit alone (no test set, no OVKRidge) on icm_data(n, n_test=1): the data's own peak
    before the fit and the process's after it, the fit's time and passes."""
    from ovk_nb.gp import OVKGaussianProcess
    X, Y, _, _ = icm_data(n, n_test=1)
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2 ** 20
    seen, load0 = _count_passes(), os.getloadavg()[0]
    t = time.perf_counter()
    gp = OVKGaussianProcess(method="nystrom", n_components=m, random_state=0).fit(X, Y)
    t_fit = time.perf_counter() - t
    return {"n": n, "landmarks": m, "fit_s": round(t_fit, 1), "passes": round(seen["rows"] / n, 2),
            "lml": round(gp.log_marginal_likelihood_value_, 3), "gamma": round(gp.kernel_.scalar_kernel.gamma, 4),
            "data_rss_gb": round(rss0, 3), "peak_rss_gb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2 ** 20, 3),
            "x_y_gb": round((X.nbytes + Y.nbytes) / 2 ** 30, 3), "threads": THREADS,
            "load": f"{load0:.1f}-{os.getloadavg()[0]:.1f}"}


def nystrom_eval_case(n, m, reps=5, chunk=2048):
    """One LML + gradient of the collapsed bound at a new bandwidth against its BLAS-3 floors, interleaved in one process,
    best of `reps`: 'syrk' = one P^T P of an n x m matrix (n m^2 flops, numpy's SYRK); 'blas' = the BLAS-3 calls the
    evaluation makes, alone, on the same shapes in the same chunks (the in-place blocked triangular solve, P^T P and the
    gradient's P^T (D o K) GEMM: 4 n m^2 flops)."""
    from ovk_nb.gp import NystromLikelihood, _trsm_right, nystrom_landmarks
    from ovk_nb.kernels import RBF, Coregionalization, Separable
    X, Y, _, _ = icm_data(n, n_test=1)
    d = Y.shape[1]
    K = Separable(RBF(0.9), Coregionalization(d, d, np.random.default_rng(0).normal(size=(d, d)), np.full(d, 0.1)))
    lik = NystromLikelihood(K, X, Y, X[nystrom_landmarks(X, m, 0)], chunk=chunk)
    theta = np.r_[K.theta, np.log(np.full(d, 0.05))]
    rng = np.random.default_rng(0)
    P = rng.random((n, m))
    A = np.asfortranarray(np.linalg.cholesky(np.cov(rng.random((m, 2 * m))) + np.eye(m)))
    B, D = np.asfortranarray(rng.random((chunk, m))), np.asfortranarray(rng.random((chunk, m)))

    def blas_calls():
        for i in range(0, n, chunk):
            _trsm_right(B, A)
            B.T @ B
            B.T @ D
    best = {"syrk": np.inf, "blas": np.inf, "eval": np.inf}
    load0 = os.getloadavg()[0]
    for _ in range(reps):
        for k, f in (("syrk", lambda: P.T @ P), ("blas", blas_calls), ("eval", lambda: (setattr(lik, "_key", None), lik(theta)))):
            t = time.perf_counter(); f(); best[k] = min(best[k], time.perf_counter() - t)
    return {"n": n, "landmarks": m, "d": d, "chunk": chunk, "threads": THREADS, "load": f"{load0:.1f}-{os.getloadavg()[0]:.1f}",
            "floor_syrk_s": round(best["syrk"], 4), "floor_blas_s": round(best["blas"], 4), "eval_s": round(best["eval"], 4),
            "eval_over_syrk": round(best["eval"] / best["syrk"], 2), "eval_over_blas": round(best["eval"] / best["blas"], 2)}


def stochastic_case(n, fits=True, frac=0.3, n_probes=30):
    """The stochastic masked likelihood against the exact one on icm_data(n) with `frac` of Y's entries hidden. fits:
    both fits (time, hyper-parameters, the exact LML at each optimum, test MSE) and the estimate's error at the exact
    optimum; else only the estimate's error, at the hyper-parameters fitted (exactly, fast) on the complete data."""
    import warnings
    from ovk_nb.gp import MaskedLikelihood, OVKGaussianProcess, StochasticMaskedLikelihood
    X, Yfull, Xte, Yte = icm_data(n)
    Y = Yfull.copy()
    Y[np.random.default_rng(1).random(Y.shape) < frac] = np.nan
    out = {"n": n, "d": Y.shape[1], "n_observed": int((~np.isnan(Y)).sum()), "n_probes": n_probes,
           "theta_from": "exact masked fit" if fits else "complete-data fit"}
    fits_ = {}
    for m in (("exact", "stochastic") if fits else ()):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            t = time.perf_counter()
            gp = OVKGaussianProcess(missing="ignore", method=m, n_probes=n_probes, random_state=0).fit(X, Y)
            out[f"{m}_fit_s"] = round(time.perf_counter() - t, 1)
        th = np.r_[gp.kernel_.theta, np.log(gp.noise_)]
        out[f"{m}_exact_lml"] = round(MaskedLikelihood(gp.kernel_, X, Y)(th, False), 3)
        out[f"{m}_gamma"], out[f"{m}_noise"] = round(gp.kernel_.scalar_kernel.gamma, 4), round(gp.noise_, 5)
        out[f"{m}_test_mse"] = round(float(np.mean((gp.predict(Xte[:200]) - Yte[:200]) ** 2)), 5)
        out[f"{m}_warnings"] = len(w)
        fits_[m] = gp
    gp = fits_["exact"] if fits else OVKGaussianProcess().fit(X, Yfull)
    th = np.r_[gp.kernel_.theta, np.log(gp.noise_)]
    lik = StochasticMaskedLikelihood(gp.kernel_, X, Y, n_probes, random_state=0)
    t = time.perf_counter(); est, g = lik(th); out["stochastic_eval_s"] = round(time.perf_counter() - t, 2)
    out["pcg_iterations"] = lik.iterations_
    t = time.perf_counter(); ex, ge = MaskedLikelihood(gp.kernel_, X, Y)(th); out["exact_eval_s"] = round(time.perf_counter() - t, 2)
    out["exact_lml"], out["estimate"] = round(ex, 3), round(est, 3)
    out["rel_error"] = float(f"{abs(est - ex) / abs(ex):.2e}")
    out["logdet_stderr"] = round(lik.logdet_stderr_, 3)
    out["grad_abs_error"] = float(f"{np.abs(g - ge).max():.3g}")        # the estimated gradient's largest error
    out["grad_abs_max"] = float(f"{np.abs(ge).max():.3g}")              # the exact gradient's largest entry (~0 at an optimum)
    if fits:
        T0, T1 = fits_["exact"].output_matrix_, fits_["stochastic"].output_matrix_
        out["T_rel_diff"] = float(f"{np.abs(T0 - T1).max() / np.abs(T0).max():.2e}")
    out["peak_rss_gb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2 ** 20, 2)
    return out


def md_table(rows, cols=None):
    "csv rows as a Markdown table of `cols` (default: the first row's keys), each cell as the csv holds it."
    from ovk_nb.experiments.core import rows_to_markdown
    cols = list(rows[0]) if cols is None else cols
    return rows_to_markdown([{c: str(r.get(c, "")) for c in cols} for r in rows])


def _read(path):
    "The rows of a results CSV (none when it does not exist yet)."
    return list(csv.DictReader(open(path))) if path.exists() else []


def _run_cases(path, argvs, key):
    "Each argument list in a fresh subprocess (`_sub`); its rows replace the rows of `path` with the same key (others kept)."
    old = _read(path)
    rows = []
    for args in argvs:
        r = _sub([__file__, *args])
        print(r, flush=True)
        if r:
            rows.append(r)
    done = {key(r) for r in rows}
    _write(path, [r for r in old if key(r) not in done] + rows)
    return rows


def run_stochastic(cases):
    "cases: (n, fits) pairs, each in a fresh subprocess -> bench/results/gp_stochastic.csv (other rows kept)."
    return _run_cases(RES / "gp_stochastic.csv", [["--stochastic-case", str(n), str(int(fits))] for n, fits in cases],
                      lambda r: (int(r["n"]), r["theta_from"]))


def run_nystrom(cases):
    "cases: (n, m, exact) triples, each in a fresh subprocess -> bench/results/gp_nystrom.csv (other rows kept)."
    return _run_cases(RES / "gp_nystrom.csv",
                      [["--nystrom-case", str(n), str(m), str(int(exact))] for n, m, exact in cases],
                      lambda r: (int(r["n"]), r["method"], str(r["landmarks"]), str(r.get("load", ""))))   # one row per run


def run_nystrom_eval(cases):
    "cases: (n, m) pairs -> bench/results/gp_nystrom_eval.csv (rows of the same n, m and threads replaced)."
    return _run_cases(RES / "gp_nystrom_eval.csv", [["--nystrom-eval-case", str(n), str(m)] for n, m in cases],
                      lambda r: (int(r["n"]), int(r["landmarks"]), str(r["threads"])))


def run_nystrom_memory(cases):
    "cases: (n, m) pairs -> bench/results/gp_nystrom_memory.csv (rows of the same n, m and threads replaced)."
    return _run_cases(RES / "gp_nystrom_memory.csv", [["--nystrom-memory-case", str(n), str(m)] for n, m in cases],
                      lambda r: (int(r["n"]), int(r["landmarks"]), str(r["threads"])))


def run_peers(ns=(1000, 2000), names=tuple(CASES)):
    "Each (n, model) case in a fresh subprocess; rows of other (n, model) pairs already in gp.csv are kept."
    return _run_cases(RES / "gp.csv", [["--peer-case", name, str(n)] for n in ns for name in names],
                      lambda r: (int(r["n"]), r["model"]))


def report(load_note=""):
    "bench/results/gp.md from gp.csv and gp_masked.csv."
    rows = _read(RES / "gp.csv")
    masked = _read(RES / "gp_masked.csv")
    L = ["# OVKGaussianProcess vs GPyTorch's exact ICM and per-output scikit-learn GPR (issue 20)", "",
         "Generated by `python bench/bench_gp.py report` from `gp.csv` / `gp_masked.csv` / `gp_nystrom.csv` / "
         "`gp_stochastic.csv`. " + load_note, "",
         "## Exact ICM training to convergence, d = 4", "",
         "Data: `icm_data(n)` in bench_gp.py, a draw of an ICM (RBF gamma=1 on [-2, 2]^2 by 2000 random Fourier features, "
         "T* = w w^T/2 + B B^T/4, noise 0.05), 1000 held-out points. Ours: `OVKGaussianProcess()` (learned bandwidth, "
         "full-rank T, one noise; scipy L-BFGS-B, no restart). GPyTorch: `MultitaskKernel(RBFKernel, num_tasks=4, rank=4)`, "
         "zero mean, `MultitaskGaussianLikelihood(has_task_noise=False)` (one noise: the same model), float64, started at "
         "our starting point, torch L-BFGS (strong Wolfe) until the loss stops moving. scikit-learn: one "
         "`GaussianProcessRegressor(ConstantKernel() * RBF() + WhiteKernel())` per output (independent outputs). "
         "`lml`: each model's own log marginal likelihood of the training data (GPyTorch's value times n d; sklearn: the "
         "sum over its four independent GPs); `lml_ours_formula`: our exact eigenbasis formula at the fitted "
         "hyper-parameters. MSE against the noisy held-out y; NLPD: mean negative log predictive density per entry "
         "(latent variance + noise).", "",
         "| n | model | fit (s) | ours / this | LML | LML (our formula) | test MSE | NLPD | noise | peak RSS (GB) |",
         "|---|---|---|---|---|---|---|---|---|---|"]
    for n in sorted({int(r["n"]) for r in rows}):
        rs = [r for r in rows if int(r["n"]) == n]
        ours = next((float(r["fit_s"]) for r in rs if r["model"].startswith("ours")), None)
        for r in rs:
            ratio = "" if ours is None or r["model"].startswith("ours") else f"{ours / float(r['fit_s']):.2f}"
            L.append(f"| {n} | {r['model']} | {r['fit_s']} | {ratio} | {r['lml']} | {r['lml_ours_formula']} | "
                     f"{r['test_mse']} | {r['nlpd']} | {r['noise']} | {r['peak_rss_gb']} |")
    L += ["", "## The masked (missing-output) solve at scale", "",
          "`ovk_nb.linalg.masked_solve`: (P (K + lam I) P^T) a = P y on the observed entries, PCG with the masked "
          "Nystrom-separable preconditioner (`precond='nystrom'`: one eigh of the n x n Gram is out of reach at n = 20000 "
          "on this machine), tolerance 1e-8; the Gram (n x n scalar, 3.2 GB at n = 20000) is stored, never the (n d)^2 "
          "matrix. Equality with the dense masked solve (1e-8) is tested at small n (tests/test_linalg.py); here the "
          "relative residual is recomputed from scratch after the solve.", "",
          "| n | d | missing | lam | landmarks | Gram (s) | solve (s) | CG iterations | relative residual | peak RSS (GB) |",
          "|---|---|---|---|---|---|---|---|---|---|"]
    for r in masked:
        L.append(f"| {r['n']} | {r['d']} | {r['missing']} | {r['lam']} | {r['landmarks']} | {r['gram_s']} | {r['solve_s']} | "
                 f"{r['iterations']} | {r['rel_residual']} | {r['peak_rss_gb']} |")
    nys = _read(RES / "gp_nystrom.csv")
    if nys:
        L += ["", "## The Nystrom likelihood at scale (issue 31.3)", "",
              "`OVKGaussianProcess(method='nystrom', n_components=m, random_state=0)` on `icm_data(n)` (d = 4), the default "
              "ICM (learned bandwidth, full-rank T, noise per output; the profile optimizer, since issue 31.3 on a subsample "
              "then polished on all rows), against the exact fit where it runs. `method`: 'nystrom' is the collapsed bound "
              "(the default since issue 31.2; older rows without `passes` were the SoR likelihood and the old optimizer); "
              "`lml`: each fit's own objective; `eval_s`: one LML + gradient at a new bandwidth (the O(n m^2) pass); "
              "`passes`: rows of X the fit's feature passes read / n; `OVKRidge (s)`: `OVKRidge(solver='nystrom', "
              "n_components=m, random_state=0)` on the same data just before and just after ours, `ratio` = our fit / their "
              "mean; `peak_rss_gb`: the process's peak, the data included (`data_rss_gb`: the peak before the fit). Test MSE "
              "against the noisy y, NLPD with the DTC variance + noise. Threads: BLAS threads; load: the load average at the "
              "start and the end of the case.",
              "", "| n | method | landmarks | fit (s) | passes | eval (s) | OVKRidge (s) | ratio | LML | test MSE | NLPD | gamma | "
              "noise | peak RSS (GB) | before fit (GB) | threads | load |", "|" + "---|" * 17]
        for r in sorted(nys, key=lambda r: (int(r["n"]), r["method"], r["landmarks"])):
            L.append(f"| {r['n']} | {r['method']} | {r['landmarks']} | {r['fit_s']} | {r.get('passes', '')} | "
                     f"{r.get('eval_s', '')} | {r.get('ridge_s', '')} | {r.get('ratio', '')} | {r['lml']} | {r['test_mse']} | "
                     f"{r['nlpd']} | {r['gamma']} | {r['noise']} | {r['peak_rss_gb']} | {r['data_rss_gb']} | "
                     f"{r.get('threads', '')} | {r.get('load', '')} |")
    ev = _read(RES / "gp_nystrom_eval.csv")
    if ev:
        L += ["", "### One LML + gradient against its BLAS-3 floor", "",
              "`bench_gp.py nystrom-eval`: in one process, interleaved, best of 5: one SYRK `P.T @ P` of an n x m matrix "
              "(n m^2 flops: the floor issue 31.3 names), the BLAS-3 calls the evaluation makes alone on the same chunks "
              "(the blocked in-place triangular solve, the chunk's SYRK and the gradient's GEMM: 4 n m^2 flops), and one "
              "LML + gradient of the collapsed bound at a new bandwidth (RBF, d = 4).", "",
              "| n | m | chunk | threads | load | SYRK (s) | its BLAS-3 calls (s) | LML + gradient (s) | / SYRK | / its BLAS-3 |",
              "|---|---|---|---|---|---|---|---|---|---|"]
        for r in ev:
            L.append(f"| {r['n']} | {r['landmarks']} | {r['chunk']} | {r['threads']} | {r['load']} | {r['floor_syrk_s']} | "
                     f"{r['floor_blas_s']} | {r['eval_s']} | {r['eval_over_syrk']} | {r['eval_over_blas']} |")
    mem = _read(RES / "gp_nystrom_memory.csv")
    if mem:
        L += ["", "### Memory of a Nystrom fit", "",
              "`bench_gp.py nystrom-memory`: a `method='nystrom'` fit alone in a fresh process on `icm_data(n, n_test=1)`; "
              "the process's peak RSS before the fit (the data and the libraries) and after it; X and Y's own size.", "",
              "| n | m | fit (s) | passes | LML | gamma | X, Y (GB) | peak before fit (GB) | peak (GB) | threads | load |",
              "|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in mem:
            L.append(f"| {r['n']} | {r['landmarks']} | {r['fit_s']} | {r['passes']} | {r['lml']} | {r['gamma']} | "
                     f"{r['x_y_gb']} | {r['data_rss_gb']} | {r['peak_rss_gb']} | {r['threads']} | {r['load']} |")
    sto = _read(RES / "gp_stochastic.csv")
    if sto:
        L += ["", "## The stochastic masked likelihood against the exact one", "",
              "`icm_data(n)` (d = 4) with 30% of Y's entries hidden (seed 1). The estimate (`StochasticMaskedLikelihood`, 30 "
              "fixed probes: PCG data fit, SLQ log det, Hutchinson gradient) against the exact masked LML (`MaskedLikelihood`, "
              "the observed block's Cholesky) at one theta: the exact masked fit's optimum, or (where the fits are too slow "
              "here) the hyper-parameters fitted on the complete data. `grad. error`: the estimated gradient's largest "
              "error (absolute) and, after the slash, the exact gradient's largest entry (near 0 at the exact optimum). "
              "Where both fits ran: each fit's time, hyper-parameters and the "
              "exact LML at its optimum.", "",
              "| n | observed | theta | one eval: stochastic / exact (s) | PCG its | exact LML | estimate | rel. error | "
              "SLQ stderr | grad. error / grad. max | fits (s): exact / stoch. | gamma: exact / stoch. | noise: exact / stoch. | "
              "exact LML at each optimum | T rel. diff |", "|" + "---|" * 15]
        for r in sto:
            fit = r.get("exact_fit_s") not in (None, "")
            pair = (lambda a, b: f"{r[a]} / {r[b]}" if fit else "")
            L.append(f"| {r['n']} | {r['n_observed']} | {r['theta_from']} | {r['stochastic_eval_s']} / {r['exact_eval_s']} | "
                     f"{r['pcg_iterations']} | {r['exact_lml']} | {r['estimate']} | {r['rel_error']} | {r['logdet_stderr']} | "
                     f"{r['grad_abs_error']} / {r['grad_abs_max']} | {pair('exact_fit_s', 'stochastic_fit_s')} | {pair('exact_gamma', 'stochastic_gamma')} | "
                     f"{pair('exact_noise', 'stochastic_noise')} | {pair('exact_exact_lml', 'stochastic_exact_lml')} | "
                     f"{r.get('T_rel_diff', '')} |")
    ev = _read(RES / "gp_masked_eval.csv")
    if ev:
        L += ["", "## Where the exact masked likelihood stops (issue 31.4)", "",
              "The table above is the stochastic estimator before issue 31.4 (main 1fbcd0f); its fits against the exact ones "
              "since then are in `gp_masked.md`. `python bench/bench_gp_masked.py eval`: one LML + gradient of each route at "
              "the same theta (the complete-data fit on the first 300 rows) on `icm_data(n, p=4)` (d = 4), 30% of Y hidden, "
              "one BLAS thread, CPU seconds; `exact_peak_copies`: the exact route's peak memory in n_o x n_o float64 arrays. "
              "The exact route is cheaper at every size measured and its fits need fewer evaluations, so `method='auto'` "
              "stays exact while its peak (5.3 n_o^2 doubles) fits in 4 GiB: `MASKED_DENSE_MAX` = 10064 observed entries "
              "(was 4000). The derivation, and what is not shown, is in the GP notebook (*Where the exact masked likelihood "
              "stops*).", "", md_table(ev)]
    L += _eighs_section()
    (RES / "gp.md").write_text("\n".join(L) + "\n")


# ---------------------------------------------------------------- issue 31.1: the exact fit in eigh units
def eighs_case(n, repeats=2):
    """The default exact fit (surrogate search + exact polish) and the plain profile L-BFGS-B (`SURROGATE_ROWS` set past
    n: the route before issue 31) against one `eigh_psd` of the n x n Gram, interleaved in this process (best of
    `repeats`), one BLAS thread; the eighs each fit calls counted by size."""
    import ovk_nb.gp as gpm
    from ovk_nb.kernels import RBF
    from ovk_nb.linalg import eigh_psd
    X, Y, _, _ = icm_data(n)
    K = RBF(1.0)(X, X)
    sizes = []

    def counted(A, *a, **k):
        sizes.append(int(A.shape[0]))
        return eigh_psd(A, *a, **k)

    gpm.eigh_psd = counted
    rows0 = gpm.SURROGATE_ROWS
    t_e, fits = [], {"new": [], "old": []}
    load0 = os.getloadavg()[0]
    for _ in range(repeats):
        for route in ("new", "old"):
            t = time.perf_counter(); eigh_psd(K); t_e.append(time.perf_counter() - t)
            gpm.SURROGATE_ROWS = rows0 if route == "new" else 10 ** 9
            sizes.clear()
            t = time.perf_counter(); gp = gpm.OVKGaussianProcess().fit(X, Y); dt = time.perf_counter() - t
            fits[route].append((dt, gp.log_marginal_likelihood_value_, sizes.count(n), len(sizes) - sizes.count(n)))
    t = time.perf_counter(); eigh_psd(K); t_e.append(time.perf_counter() - t)
    e = min(t_e)
    new, old = min(fits["new"]), min(fits["old"])
    return {"n": n, "eigh_s": round(e, 3), "fit_new_s": round(new[0], 3), "fit_old_s": round(old[0], 3),
            "ratio_new": round(new[0] / e, 2), "ratio_old": round(old[0] / e, 2), "eighs_n_new": new[2],
            "eighs_sub_new": new[3], "eighs_n_old": old[2], "lml_new": repr(new[1]), "lml_old": repr(old[1]),
            "lml_rel_diff": f"{(new[1] - old[1]) / abs(old[1]):.2e}", "threads": 1,
            "load": f"{load0:.1f}-{os.getloadavg()[0]:.1f}", "repeats": repeats}


def run_eighs(ns=(1500,), repeats=2):
    rows = [r for r in _read(RES / "gp_eighs.csv") if int(r["n"]) not in ns]
    for n in ns:
        r = _sub([__file__, "--eighs-case", str(n), str(repeats)])
        if r:
            print(r)
            rows.append(r)
    _write(RES / "gp_eighs.csv", sorted(rows, key=lambda r: int(r["n"])))


def _eighs_section():
    rows = _read(RES / "gp_eighs.csv")
    if not rows:
        return []
    L = ["", "## The exact fit in eigh units (issue 31.1)", "",
         "`python bench/bench_gp.py eighs [--quick] [n ...]`: `OVKGaussianProcess()` on `icm_data(n)` (d = 4, learned "
         "bandwidth, full-rank T, noise) against one `eigh_psd` of the n x n Gram, interleaved in one process, best of "
         "`repeats`, one BLAS thread; `new`: the default route (the bandwidth searched on `SURROGATE_ROWS` = 500 rows, then "
         "Newton steps on the secant curvature of the exact profile), `old`: the plain profile L-BFGS-B (the route before). "
         "`eighs`: the n x n eighs each fit called (the new route's subsample eighs after the +). LML rel. diff: "
         "(new - old) / |old|.", "",
         "| n | load | eigh (s) | fit new (s) | fit / eigh | eighs | fit old (s) | fit / eigh | eighs | LML new | LML old | "
         "rel. diff |", "|" + "---|" * 12]
    for r in rows:
        L.append(f"| {r['n']} | {r['load']} | {r['eigh_s']} | {r['fit_new_s']} | {r['ratio_new']} | {r['eighs_n_new']} + "
                 f"{r['eighs_sub_new']} | {r['fit_old_s']} | {r['ratio_old']} | {r['eighs_n_old']} | {r['lml_new']} | "
                 f"{r['lml_old']} | {r['lml_rel_diff']} |")
    return L


def _write(path, rows):
    if not rows:
        return
    fields = list(dict.fromkeys(k for r in rows for k in r))          # every row's columns (older rows may lack some)
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields, restval="")
        w.writeheader(); w.writerows(rows)


if __name__ == "__main__":
    a = sys.argv[1:]
    if a[:1] == ["--masked-case"]:
        print(json.dumps(masked_case(int(a[1]))))
    elif a[:1] == ["--nystrom-case"]:
        print(json.dumps(nystrom_case(int(a[1]), int(a[2]), bool(int(a[3])))))
    elif a[:1] == ["--nystrom-eval-case"]:
        print(json.dumps(nystrom_eval_case(int(a[1]), int(a[2]))))
    elif a[:1] == ["--nystrom-memory-case"]:
        print(json.dumps(nystrom_memory_case(int(a[1]), int(a[2]))))
    elif a[:1] == ["nystrom-eval"]:    # nystrom-eval n:m ...   (BENCH_GP_THREADS=2 for two BLAS threads)
        run_nystrom_eval([(int(c.split(":")[0]), int(c.split(":")[1])) for c in a[1:]] or [(20000, 500)])
    elif a[:1] == ["nystrom-memory"]:  # nystrom-memory n:m ...
        run_nystrom_memory([(int(c.split(":")[0]), int(c.split(":")[1])) for c in a[1:]] or [(1000000, 500)])
    elif a[:1] == ["--stochastic-case"]:
        print(json.dumps(stochastic_case(int(a[1]), bool(int(a[2])))))
    elif a[:1] == ["stochastic"]:      # stochastic n[:fits] ...
        run_stochastic([(int(c.split(":")[0]), c.endswith(":fits")) for c in a[1:]] or [(1200, False)])
    elif a[:1] == ["nystrom"]:         # nystrom n:m[:exact] ...
        run_nystrom([(int(c.split(":")[0]), int(c.split(":")[1]), c.endswith(":exact")) for c in a[1:]])
    elif a[:1] == ["--peer-case"]:
        print(json.dumps(CASES[a[1]](int(a[2]))))
    elif a[:1] == ["peers"]:
        names = [x for x in a[1:] if x in CASES] or list(CASES)
        run_peers([int(x) for x in a[1:] if x.isdigit()] or (1000, 2000), names)
    elif a[:1] == ["report"]:
        report(" ".join(a[1:]))
    elif a[:1] == ["--eighs-case"]:
        print(json.dumps(eighs_case(int(a[1]), int(a[2]))))
    elif a[:1] == ["eighs"]:           # eighs [--quick] n ...: the exact fit against one eigh (issue 31.1)
        run_eighs([int(x) for x in a[1:] if x.isdigit()] or ((1500,) if "--quick" in a else (1500, 3000)),
                  1 if "--quick" in a else 3)
    elif a[:1] == ["masked"]:
        print(run_masked([int(x) for x in a[1:]] or (20000,)))
