"""Issue 31.1: the exact fit in a few factorizations. The exact profile's curvature in the eigenbasis
(`_profile_curvature`) against differences of the exact profile gradient, and the surrogate route's count of n x n
eighs with its optimum compared by objective to the plain profile L-BFGS-B."""
import sys
from pathlib import Path

import numpy as np
import pytest

import ovk_nb.gp as gpm
from ovk_nb.gp import OVKGaussianProcess

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from bench_gp import icm_data  # noqa: E402  (the benchmark's own draw, as tests/test_real_data.py imports bench_real)


def _icm(n, seed):
    "An ICM-like draw: 4 correlated outputs of smooth functions of 2 inputs, noise 0.1."
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, (n, 2))
    Y = np.sin(X @ rng.normal(size=(2, 4))) @ rng.normal(size=(4, 4)) + 0.1 * rng.normal(size=(n, 4))
    return X, Y


def _profile_at(n, seed):
    "The likelihood, bounds and profile functions of the default fit's first steps on _icm(n, seed)."
    est = OVKGaussianProcess()
    X, Y = _icm(n, seed)
    X, Y, Yn, y1d, mu, sd, kernel, lik, v = gpm._fit_data(est, X, Y)
    theta, bounds, n_noise, more = gpm._start(est, X, kernel, lik, v)
    inner, outer, reset = gpm._profile(lik, bounds)
    reset(theta)
    return lik, bounds, inner, outer


@pytest.mark.parametrize("seed", [0, 1])
def test_profile_curvature_against_differences(seed):
    """F' from the kept eigenbasis equals the Gram-contracting gradient at the same theta (to the truncation the
    eigenvectors with s e / lam <= CURVATURE_TAU make: |dF'| <= tau/2 sum_l e_l sum_a |P_aa|, bounded by n max|Kx'|); F''
    equals central differences of the exact profile gradient (the inner optimum re-solved at x +- dx) to their error."""
    lik, bounds, inner, outer = _profile_at(300, seed)
    x = 0.1                                              # a bandwidth near the optimum
    t = np.r_[x, inner(np.array([x]))]
    g_exact = -lik(t, True)[1][0]
    Fp, Fpp = gpm._profile_curvature(lik, t, bounds)
    s, U, e, *_, dKx = lik.state(t)
    bound = 0.5 * gpm.CURVATURE_TAU * e.sum() * len(s) * np.abs(dKx[0]).max() + 1e3 * np.finfo(float).eps * abs(g_exact)
    assert abs(Fp - g_exact) <= bound
    dx = 1e-2                                            # the inner optimum's tolerance over dx stays below 1e-3 of F''
    outer(np.array([x]))
    gp_, gm_ = outer(np.array([x + dx]))[1][0], outer(np.array([x - dx]))[1][0]
    fd = (gp_ - gm_) / (2 * dx)
    assert Fpp > 0
    assert Fpp == pytest.approx(fd, rel=2e-2)           # the subsample's L-BFGS-B secant, the first curvature before, was 28-43% off


def _route_against_plain(monkeypatch, X, Y):
    """(LML of the plain profile L-BFGS-B, LML of the surrogate route with SURROGATE_ROWS = 200, the orders of the eighs
    the route called)."""
    sizes, eigh = [], gpm.eigh_psd

    def counted(A, *a, **k):
        sizes.append(A.shape[0])
        return eigh(A, *a, **k)

    monkeypatch.setattr(gpm, "eigh_psd", counted)
    monkeypatch.setattr(gpm, "SURROGATE_ROWS", 10 ** 9)
    one = gpm._one_bandwidth
    monkeypatch.setattr(gpm, "_one_bandwidth", lambda lik, bounds: False)   # the plain profile L-BFGS-B
    ref = OVKGaussianProcess().fit(X, Y)
    sizes.clear()
    monkeypatch.setattr(gpm, "_one_bandwidth", one)
    monkeypatch.setattr(gpm, "SURROGATE_ROWS", 200)
    gp = OVKGaussianProcess().fit(X, Y)
    return ref.log_marginal_likelihood_value_, gp.log_marginal_likelihood_value_, sizes


def test_exact_fit_two_eighs_same_optimum(monkeypatch):
    """The subsample's search then one exact Newton step on the exact curvature: 2 eighs of the n x n Gram (the step's
    point and its check; 7 before on this draw), the same optimum as the plain profile L-BFGS-B by objective (1e-6 relative)."""
    lr, lg, sizes = _route_against_plain(monkeypatch, *_icm(600, 0))
    assert lg >= lr - 1e-6 * abs(lr)
    assert sizes.count(600) <= 2, sizes


def test_exact_fit_threads_only_its_n_by_n_work(monkeypatch):
    """Issue 34: with the policy's threads (here: every BLAS thread the user allows), the exact route's optimizer runs on one
    thread and only the eigh per bandwidth and the gradient's n^3 products get the threads (at n = 1000 the whole fit on two
    threads took 1.8x its one-thread time on the idle machine: the inner loop's small products thrashed)."""
    import ovk_nb.gp as G
    import ovk_nb.linalg as la
    from threadpoolctl import threadpool_limits

    blas = la.blas_ceiling                                          # the threads every BLAS library reports now

    seen = {"eigh": set(), "tail": set()}
    eigh, tail = G.eigh_psd, G.SeparableLikelihood._tail

    def eigh_spy(*a, **k):
        seen["eigh"].add(blas())
        return eigh(*a, **k)

    def tail_spy(self, *a, **k):
        seen["tail"].add(blas())
        return tail(self, *a, **k)

    monkeypatch.setattr(G, "eigh_psd", eigh_spy)
    monkeypatch.setattr(G.SeparableLikelihood, "_tail", tail_spy)
    monkeypatch.setattr(G, "factor_threads", lambda *a, **k: None)     # an idle machine: the ceiling
    monkeypatch.setattr(la, "idle_cores", lambda: 2.0)                 # (the policy's own view of it, for the n x n work)
    monkeypatch.setattr(G, "ONE_THREAD_N", 50)
    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, size=(120, 2))
    Y = np.c_[np.sin(X[:, 0]), np.cos(X[:, 1])] + 0.1 * rng.normal(size=(120, 2))
    with threadpool_limits(2):                                     # (the test session runs on one BLAS thread)
        G.OVKGaussianProcess().fit(X, Y)
        assert blas() == 2                                         # the user's threads are back after the fit
    assert seen["eigh"] == {2} and seen["tail"] == {1}, seen


@pytest.mark.parametrize("seed", [0, 2])
def test_exact_fit_benchmark_draws_two_eighs(monkeypatch, seed):
    """Issue 31.1 on every draw: draws of the benchmark's kind (bench_gp.icm_data) at n = 600 with SURROGATE_ROWS = 200
    (so that the surrogate route runs, with its default SURROGATE_LANDMARKS = 200 landmarks) reach the plain profile
    L-BFGS-B's optimum (by objective, 1e-6 relative) with at most 2 eighs of the n x n Gram. On these two draws the
    500-row-subsample surrogate (the route before, here 200 rows) took 3: its optimum was too far for one Newton step."""
    X, Y, _, _ = icm_data(600, seed=seed)
    lr, lg, sizes = _route_against_plain(monkeypatch, X, Y)
    assert lg >= lr - 1e-6 * abs(lr)
    assert sizes.count(600) <= 2, sizes


def test_profile_curvature_need_stops_after_the_gradient():
    """`need(F')` sees the full call's F' (the same bits: the same products, only the order of independent steps moved)
    and, answering False, ends the call there with F'' = nan (the n^2 r products of the curvature skipped)."""
    lik, bounds, inner, outer = _profile_at(300, 0)
    t = np.r_[0.1, inner(np.array([0.1]))]
    Fp, Fpp = gpm._profile_curvature(lik, t, bounds)
    seen = []
    Fp2, Fpp2 = gpm._profile_curvature(lik, t, bounds, need=lambda g: seen.append(g) or False)
    assert seen == [Fp] and Fp2 == Fp and np.isnan(Fpp2) and np.isfinite(Fpp)
    assert gpm._profile_curvature(lik, t, bounds, need=lambda g: True) == (Fp, Fpp)


def test_exact_fit_far_start_skips_the_curvature(monkeypatch):
    """Where the surrogate's start is too far for one Newton step to end the polish (scikit-learn's digits, 600 rows, a
    200-row subsample: the trace check refuses the Nystrom bound), the exact curvature is not computed (`LANDING_KAPPA`),
    and the fit still reaches the plain profile L-BFGS-B's optimum by objective (1e-6 relative)."""
    from bench_gp_exact4 import digits_data
    X, Y = digits_data()
    idx = np.linspace(0, len(X) - 1, 600).astype(int)
    answers, curv = [], gpm._profile_curvature

    def spy(*a, need=None, **k):
        return curv(*a, need=(lambda g: answers.append(need(g)) or answers[-1]) if need else None, **k)
    monkeypatch.setattr(gpm, "_profile_curvature", spy)
    lr, lg, sizes = _route_against_plain(monkeypatch, X[idx], Y[idx])
    assert answers == [False]
    assert lg >= lr - 1e-6 * abs(lr)


def test_profile_curvature_products_on_the_fits_threads(monkeypatch):
    """Issue 34: the curvature's O(n^2 r) products run on the policy's threads for the n x n work (`_big_threads`), as the
    eigh and the gradient's products do; (F', F'') equal to the one-thread call's to the products' rounding: their
    blocking changes with the threads, and F'''s central differences in (T, noise) (h = 1e-5) divide that by h (measured
    at n = 2000: F' 2.4e-11, F'' 4.9e-8 relative; the fit's first step length only)."""
    from threadpoolctl import threadpool_limits
    lik, bounds, inner, outer = _profile_at(300, 1)
    t = np.r_[0.1, inner(np.array([0.1]))]
    with threadpool_limits(1):
        one = gpm._profile_curvature(lik, t, bounds)
    limits, bt = [], gpm.blas_threads

    def spy(limit):
        limits.append(limit)
        return bt(limit)
    monkeypatch.setattr(gpm, "blas_threads", spy)
    monkeypatch.setattr(gpm, "big_work_threads", lambda size, min_size: 2)   # the policy gives the n x n work two threads
    two = gpm._profile_curvature(lik, t, bounds)
    assert limits.count(2) >= 2, limits
    tol = 1e4 * np.finfo(float).eps / 1e-5                   # 1e4 terms' rounding over the differences' step
    assert two[0] == pytest.approx(one[0], rel=tol) and two[1] == pytest.approx(one[1], rel=tol)


def test_exact_fit_last_point_needs_no_gradient_products(monkeypatch):
    """The polish checks each Newton step by its value first (`_trusted_step`): on the benchmark's draw (icm_data 600, seed
    0, SURROGATE_ROWS = 200) the step on the exact curvature is accepted by its measured gain, so the fit evaluates no
    n x n gradient (kernel_grad: its n^3 products; 1 before) and still reaches the plain optimum (1e-6 relative)."""
    full, call = [], gpm.SeparableLikelihood.__call__

    def spy(self, theta, eval_gradient=True, kernel_grad=True):
        if eval_gradient and kernel_grad and self.X.shape[0] == 600:
            full.append(1)
        return call(self, theta, eval_gradient, kernel_grad)
    X, Y, _, _ = icm_data(600, seed=0)
    monkeypatch.setattr(gpm, "SURROGATE_ROWS", 10 ** 9)
    one = gpm._one_bandwidth
    monkeypatch.setattr(gpm, "_one_bandwidth", lambda lik, bounds: False)   # the plain profile L-BFGS-B
    ref = OVKGaussianProcess().fit(X, Y).log_marginal_likelihood_value_
    monkeypatch.setattr(gpm.SeparableLikelihood, "__call__", spy)
    monkeypatch.setattr(gpm, "_one_bandwidth", one)
    monkeypatch.setattr(gpm, "SURROGATE_ROWS", 200)
    lml = OVKGaussianProcess().fit(X, Y).log_marginal_likelihood_value_
    assert full == []
    assert lml >= ref - 1e-6 * abs(ref)


@pytest.mark.parametrize("kernel", ["rbf", "laplacian"])
def test_grams_from_kept_distances_same_bits(monkeypatch, kernel):
    """The exact route's Grams from X's distances kept for the fit (`_gram_gradient`): the kernel's own gram_gradient bit for
    bit, on one thread and by row blocks side by side on two (element-wise work); Kx'' (`_gram_second`, exact) against
    central differences of the kernel's dKx in log gamma (their error ~ h^2 |K''''|: 1e-8 relative here)."""
    from ovk_nb.kernels import RBF, Laplacian, Separable
    rng = np.random.default_rng(0)
    X, Y = rng.uniform(-2, 2, (257, 3)), rng.normal(size=(257, 2))
    sk = (RBF if kernel == "rbf" else Laplacian)(0.7)
    lik = gpm.SeparableLikelihood(Separable(sk, np.eye(2)), X, Y)
    K0, dK0 = sk.gram_gradient(X)
    for threads in (1, 2):
        monkeypatch.setattr(gpm, "big_work_threads", lambda size, min_size: threads)
        K, dK = lik._gram_gradient(sk)
        assert np.array_equal(K, K0) and np.array_equal(dK, dK0)
    h = 1e-4
    fd = (type(sk)(0.7 * np.exp(h)).gram_gradient(X)[1][0] - type(sk)(0.7 * np.exp(-h)).gram_gradient(X)[1][0]) / (2 * h)
    K2 = lik._gram_second(sk, dK0[0])
    assert np.abs(K2 - fd).max() <= 1e-7 * np.abs(K2).max()


def test_fit_keeps_no_distances():
    "The n x n distances kept for the fit's Grams are dropped at its end: the fitted estimator (and its pickle) holds none."
    import pickle
    X, Y = _icm(120, 0)
    gp = OVKGaussianProcess().fit(X, Y)
    assert gp._lik._D is None
    lik = pickle.loads(pickle.dumps(gp))._lik
    assert lik._D is None and lik(np.r_[gp.kernel_.theta, np.log(gp.noise_)], False) == pytest.approx(
        gp.log_marginal_likelihood_value_, rel=1e-12)
    gp.log_marginal_likelihood(gp.kernel_.theta + 0.1)               # a new bandwidth's Gram: its distances not kept
    assert gp._lik._D is None


def test_surrogate_inner_solves_keep_40_corrections(monkeypatch):
    """The surrogate route's inner solves keep INNER_OPTIONS' 40 L-BFGS-B corrections: on the benchmark's draw (icm_data
    600, seed 0, SURROGATE_ROWS = 200) the Nystrom search takes 254 evaluations (441 with SciPy's 10: the first, far
    bandwidth's inner solve crawled), and the fit still reaches the plain profile's optimum by objective (1e-6 relative)."""
    calls, call = [], gpm.NystromLikelihood.__call__

    def spy(self, *a, **k):
        calls.append(1)
        return call(self, *a, **k)
    X, Y, _, _ = icm_data(600, seed=0)
    monkeypatch.setattr(gpm, "SURROGATE_ROWS", 10 ** 9)
    one = gpm._one_bandwidth
    monkeypatch.setattr(gpm, "_one_bandwidth", lambda lik, bounds: False)   # the plain profile L-BFGS-B
    ref = OVKGaussianProcess().fit(X, Y).log_marginal_likelihood_value_
    monkeypatch.setattr(gpm.NystromLikelihood, "__call__", spy)
    monkeypatch.setattr(gpm, "_one_bandwidth", one)
    monkeypatch.setattr(gpm, "SURROGATE_ROWS", 200)
    lml = OVKGaussianProcess().fit(X, Y).log_marginal_likelihood_value_
    assert len(calls) <= 350, len(calls)
    assert lml >= ref - 1e-6 * abs(ref)


def test_polish_slopes_from_the_eigenbasis(monkeypatch):
    """The polish's later points take F' from the kept eigenbasis (`_profile_slope`, O(n^2 r)), not the n^3 gradient
    contraction: on the far-start digits draw (600 rows, SURROGATE_ROWS = 200, three exact eighs) no n x n gradient is
    evaluated (one before), the optimum is the plain profile L-BFGS-B's (1e-6 relative), and `_profile_slope` is the
    curvature's F' bit for bit and the Gram-contracting gradient's to the truncation bound."""
    from bench_gp_exact4 import digits_data
    X, Y = digits_data()
    idx = np.linspace(0, len(X) - 1, 600).astype(int)
    full, call = [], gpm.SeparableLikelihood.__call__

    def spy(self, theta, eval_gradient=True, kernel_grad=True):
        if eval_gradient and kernel_grad and self.X.shape[0] == 600:
            full.append(1)
        return call(self, theta, eval_gradient, kernel_grad)
    monkeypatch.setattr(gpm, "SURROGATE_ROWS", 10 ** 9)
    one = gpm._one_bandwidth
    monkeypatch.setattr(gpm, "_one_bandwidth", lambda lik, bounds: False)   # the plain profile L-BFGS-B
    ref = OVKGaussianProcess().fit(X[idx], Y[idx]).log_marginal_likelihood_value_
    monkeypatch.setattr(gpm.SeparableLikelihood, "__call__", spy)
    monkeypatch.setattr(gpm, "_one_bandwidth", one)
    monkeypatch.setattr(gpm, "SURROGATE_ROWS", 200)
    lml = OVKGaussianProcess().fit(X[idx], Y[idx]).log_marginal_likelihood_value_
    assert full == []
    assert lml >= ref - 1e-6 * abs(ref)
    monkeypatch.setattr(gpm.SeparableLikelihood, "__call__", call)
    lik, bounds, inner, outer = _profile_at(300, 0)
    t = np.r_[0.1, inner(np.array([0.1]))]
    g = gpm._profile_slope(lik, t)
    assert g == gpm._profile_curvature(lik, t, bounds)[0]
    s, U, e, *_, dKx = lik.state(t)
    bound = 0.5 * gpm.CURVATURE_TAU * e.sum() * len(s) * np.abs(dKx[0]).max() + 1e3 * np.finfo(float).eps * abs(g)
    assert abs(g - (-lik(t, True)[1][0])) <= bound


def test_eigh32_within_its_rounding():
    """`_eigh32` (the scouts' float32 eigh): float64 arrays, eigenvalues within SCOUT_FLOOR roundings eps_32 s_max of
    float64's (those under it exactly 0), eigenvectors orthonormal to float32's level and reconstructing K to it."""
    X, _ = _icm(300, 1)
    K = np.exp(-np.sum((X[:, None] - X[None]) ** 2, axis=-1))
    s, U = gpm._eigh32(K)
    s64 = np.linalg.eigvalsh(K)
    u = np.finfo(np.float32).eps * s64[-1]
    assert s.dtype == U.dtype == np.float64
    assert np.all(np.abs(s - s64) <= gpm.SCOUT_FLOOR * u + 1e-300)
    assert np.all(s[s64 <= 0.5 * u] == 0.0) and np.all(s >= 0.0)
    tol = 10 * np.sqrt(len(s)) * np.finfo(np.float32).eps
    assert np.abs(U.T @ U - np.eye(len(s))).max() <= tol
    assert np.abs((U * s) @ U.T - K).max() <= tol * s64[-1] + gpm.SCOUT_FLOOR * u


def test_scalar_scouts_only_where_the_rounding_allows():
    """`SeparableLikelihood._scalar` with `_scout` = e_max: a float32 eigh where eps_32 (largest row sum) e_max <=
    SCOUT_ROUNDING, float64 above it; the cache serves a scout from a float64 eigh, never the reverse."""
    lik, bounds, inner, outer = _profile_at(200, 0)
    calls, e32, e64 = [], gpm._eigh32, gpm.eigh_psd
    tk = np.array([0.1])
    try:
        gpm._eigh32 = lambda K: calls.append(32) or e32(K)
        gpm.eigh_psd = lambda K, *a, **k: calls.append(64) or e64(K, *a, **k)
        lik._scout = 1.0
        lik._scalar(tk)
        lik._scalar(tk)                                    # cached
        lik._scout = 0.0
        lik._scalar(tk)                                    # an exact request: float64
        lik._scout = 1.0
        lik._scalar(tk)                                    # a float64 eigh serves a scout
        lik._scout = 1e9                                   # rounding far above SCOUT_ROUNDING: float64
        lik._scalar(np.array([0.2]))
    finally:
        gpm._eigh32, gpm.eigh_psd, lik._scout = e32, e64, 0.0
    assert calls == [32, 64, 64]
    assert lik._key == ((0.2,), False)


def test_scouted_polish_ends_on_an_exact_point():
    """`_secant_polish` with `exact` (the exact polish's scouts) on F(x) = (x - 1)^2 + (x - 1)^3 / 3 with scouts whose F is off by 0.05 and F' by 1%: every point
    a step cannot end at is a scout, the end is exact and meets the test there; a scout-to-exact step that overshot by
    more than twice the way is refused by its gradients."""
    F = lambda x: (x - 1) ** 2 + (x - 1) ** 3 / 3 + 10
    dF = lambda x: 2 * (x - 1) + (x - 1) ** 2
    seen = []

    def scout(x):
        seen.append(("s", x))
        return F(x) + 0.05, 1.01 * dF(x)

    def exact(x):
        seen.append(("e", x))
        return F(x), dF(x)

    def lands(f, g, c):
        return 0.5 * abs(g / c) ** 2 <= np.sqrt(2 * 1e-10 * max(1, abs(f)) / c)
    x, done, c, f = gpm._secant_polish(lambda a: scout(float(a[0])), 0.0, -5.0, 5.0, 1.0, lambda x: (*scout(x), np.nan),
                                       tol=1e-10, exact=lambda a: exact(float(a[0])), lands=lands)
    assert done and seen[-1] == ("e", x) and f == F(x)
    assert 0.5 * dF(x) ** 2 / c <= 1e-10 * abs(f)
    assert abs(x - 1) < 1e-4
    assert all(k == "s" for k, _ in seen[:2])               # the far points were scouts
    # an overshoot between a scout and an exact point: refused, the curvature quadrupled, no step taken
    seen.clear()
    out = gpm._secant_polish(lambda a: (F(a[0]), dF(a[0])), 0.9, -5.0, 5.0, 0.01, lambda x: (F(x), dF(x), np.nan),
                             tol=1e-14, steps=1, exact=lambda a: exact(float(a[0])), lands=lambda f, g, c: True)
    assert out[0] == 0.9 and out[2] == 0.04 and not out[1]


def test_exact_fit_scouts_where_a_step_cannot_end(monkeypatch):
    """Issue 31.1 on digits (600 rows, SURROGATE_ROWS = 200: the far start): the points before the end are float32
    scouts, one float64 eigh of the n x n Gram ends the fit (3 float64 eighs before), at the plain profile L-BFGS-B's
    optimum by objective (1e-6 relative); on _icm(600, 0), whose rounding eps_32 s_max e_max is 0.075, no scout."""
    from bench_gp_exact4 import digits_data
    X, Y = digits_data()
    idx = np.linspace(0, len(X) - 1, 600).astype(int)
    scouts, e32 = [], gpm._eigh32
    monkeypatch.setattr(gpm, "_eigh32", lambda K: scouts.append(K.shape[0]) or e32(K))
    lr, lg, sizes = _route_against_plain(monkeypatch, X[idx], Y[idx])
    assert lg >= lr - 1e-6 * abs(lr)
    assert sizes.count(600) == 1 and scouts.count(600) >= 1, (sizes, scouts)
    scouts.clear()
    lr, lg, sizes = _route_against_plain(monkeypatch, *_icm(600, 0))
    assert scouts == [] and sizes.count(600) <= 2 and lg >= lr - 1e-6 * abs(lr)


def test_small_fit_secant_starts(monkeypatch):
    """Below the surrogate route a fit of one bandwidth runs `_secant_start` from each of its three starts (n <=
    RESTARTS_AUTO_N): on _icm(400, 1) at most half the n x n eighs of the L-BFGS-B starts (each outer evaluation an eigh),
    no n^3 gradient contraction, and an LML at least the L-BFGS-B starts' to 1e-6 relative."""
    X, Y = _icm(400, 1)
    sizes, eigh = [], gpm.eigh_psd
    full, call = [], gpm.SeparableLikelihood.__call__

    def spy(self, theta, eval_gradient=True, kernel_grad=True):
        if eval_gradient and kernel_grad and self.X.shape[0] == 400:
            full.append(1)
        return call(self, theta, eval_gradient, kernel_grad)
    monkeypatch.setattr(gpm, "eigh_psd", lambda A, *a, **k: sizes.append(A.shape[0]) or eigh(A, *a, **k))
    monkeypatch.setattr(gpm, "_one_bandwidth", lambda lik, bounds: False)      # the L-BFGS-B starts, as before
    ref = OVKGaussianProcess().fit(X, Y).log_marginal_likelihood_value_
    n_ref = sizes.count(400)
    sizes.clear()
    monkeypatch.undo()
    monkeypatch.setattr(gpm, "eigh_psd", lambda A, *a, **k: sizes.append(A.shape[0]) or eigh(A, *a, **k))
    monkeypatch.setattr(gpm.SeparableLikelihood, "__call__", spy)
    lml = OVKGaussianProcess().fit(X, Y).log_marginal_likelihood_value_
    assert lml >= ref - 1e-6 * abs(ref)
    assert full == [] and sizes.count(400) <= n_ref / 2, (sizes.count(400), n_ref)


def test_exact_curvature_far_from_the_surrogates_is_not_trusted(monkeypatch):
    """A tiny noise (1e-3 on smooth functions, n = 1300): the exact F'' at the surrogate's optimum came out 10^5-10^8
    times the true curvature (the inner Hessian's central differences), its Newton step ended the polish at the first
    point, 10.8 nats below the optimum. F'' is now used only within CURVATURE_TRUST of the surrogate's secant: the fit
    reaches the plain profile L-BFGS-B's optimum by objective (1e-6 relative)."""
    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, (1300, 3))
    Y = np.c_[np.sin(X[:, 0]), np.cos(X[:, 1] * X[:, 2])] + 1e-3 * rng.normal(size=(1300, 2))
    lml = OVKGaussianProcess().fit(X, Y).log_marginal_likelihood_value_
    monkeypatch.setattr(gpm, "CURVATURE_TRUST", np.inf)
    trusted = OVKGaussianProcess().fit(X, Y).log_marginal_likelihood_value_
    monkeypatch.setattr(gpm, "SURROGATE_ROWS", 10 ** 9)
    monkeypatch.setattr(gpm, "_one_bandwidth", lambda lik, bounds: False)     # the plain profile L-BFGS-B
    ref = OVKGaussianProcess().fit(X, Y).log_marginal_likelihood_value_
    assert lml >= ref - 1e-6 * abs(ref) and trusted < ref - 5.0, (lml, trusted, ref)
