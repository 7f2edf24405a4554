"""Issue 24: the estimators and kernels on other array libraries, as scikit-learn's `check_array_api_input` does: the same
data as array-api-strict arrays and as PyTorch (CPU) tensors give the NumPy results (1e-10 in float64) for every solver of
the array-API path, for sums of kernels and along lam paths, and the outputs stay in the input's library. On a GPU,
bench/gpu_check.py runs the same on the device."""
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
import pytest

xps = pytest.importorskip("array_api_strict")
torch = pytest.importorskip("torch")

from ovk_nb.backend import XP_SOLVERS, route_of, to_numpy  # noqa: E402
from ovk_nb.kernels import (RBF, ColumnKernel, CurlFreeRBF, IntegralOperator, Laplacian, Linear, Polynomial,  # noqa: E402
                            ScaledKernel, Separable, SumKernel, linear_quadratic, paper000_J)
from ovk_nb.ridge import OVKRidge, OVKRidgeCV  # noqa: E402

LIBS = {"array-api-strict": xps.asarray, "torch": torch.asarray}
SCALARS = [RBF(1.5), Laplacian(0.7), Linear(), Polynomial(2, gamma=0.5)]
SUMS = {"commuting sum": linear_quadratic(3, 0.4),
        "non-commuting sum": SumKernel([Separable(RBF(1.0), paper000_J(3, 0.2)), Separable(Polynomial(2), np.diag([1.0, 2, 3]))],
                                       [0.7, 0.3]),
        "weighted": Separable(RBF(0.3), IntegralOperator(np.linspace(0, 1, 3)))}


def data(n=50, p=3, d=3, seed=0):
    r = np.random.default_rng(seed)
    return r.uniform(size=(n, p)), r.normal(size=(n, d)), r.uniform(size=(9, p))


def rel(P, R):
    return np.abs(to_numpy(P) - R).max() / np.abs(R).max()


def both(K, kw, lib, X, Y, Xt):
    "(NumPy fit, its predictions, array-API fit, its predictions on the host); the array-API fit raises where NumPy's does."
    a = LIBS[lib]
    try:
        ref = OVKRidge(K, **kw).fit(X, Y)
    except ValueError:
        with pytest.raises(ValueError):
            OVKRidge(K, **kw).fit(a(X.copy()), a(Y.copy()))
        return None
    m = OVKRidge(K, **kw).fit(a(X.copy()), a(Y.copy()))
    P = m.predict(a(Xt.copy()))
    assert route_of(P) == "array_api" and route_of(m.y_mean_) == "array_api"
    # iterative solvers: the count may move by one where the last residual lands within rounding of tol on another kernel
    assert m.solver_ == ref.solver_ and (m.n_iter_ == ref.n_iter_ or abs(m.n_iter_ - ref.n_iter_) <= 1)
    return ref, ref.predict(Xt), m, P


@pytest.mark.numerics
@pytest.mark.parametrize("lib", LIBS)
@pytest.mark.parametrize("solver", ["auto", *XP_SOLVERS])
@pytest.mark.parametrize("scalar", SCALARS, ids=lambda k: type(k).__name__)
def test_every_solver_equals_numpy(lib, solver, scalar):
    X, Y, Xt = data()
    out = both(Separable(scalar, paper000_J(3, 0.2)), dict(lam=0.3, solver=solver, n_components=20, random_state=1),
               lib, X, Y, Xt)
    if out is None:                                       # rff on a non-Gaussian kernel: refused on both
        assert solver == "rff" and type(scalar) is not RBF
        return
    ref, Pr, m, P = out
    assert rel(P, Pr) <= 1e-10
    if ref.coef_ is not None:
        assert rel(m.coef_, ref.coef_) <= 1e-10


@pytest.mark.parametrize("lib", LIBS)
@pytest.mark.parametrize("solver", ["auto", "dense", "cholesky", "eigen", "cg", "nystrom"])
@pytest.mark.parametrize("name", SUMS)
def test_sums_and_weights_equal_numpy(lib, solver, name):
    """Sums of Separables (commuting or not) and quadrature weights: dense, grouped Cholesky, CG and Nystrom (the block
    normal equations) in X's namespace."""
    X, Y, Xt = data()
    out = both(SUMS[name], dict(lam=0.1, solver=solver, n_components=20, random_state=0), lib, X, Y, Xt)
    if out is None:
        assert solver == "eigen" and "sum" in name or solver == "cholesky" and name == "non-commuting sum"
        return
    assert rel(out[3], out[1]) <= 1e-10
    if solver == "nystrom":
        assert out[2].n_components_ == out[0].n_components_          # the same numerical ranks


@pytest.mark.numerics
@pytest.mark.parametrize("lib", LIBS)
def test_cg_against_numpy_and_the_exact_solve(lib):
    """CG in X's namespace makes NumPy's iterations (the same count; predictions within 1e-10 of NumPy's CG, measured
    2e-12). Both stop at a relative residual tol, so against the exact solve the error is at most cond(K + lam I) tol:
    at lam = 1e-2 on the non-commuting sum cond = 2e4, a bound of 2e-6 for tol = 1e-10 (measured: 1.8e-10)."""
    X, Y, Xt = data()
    K, a = SUMS["non-commuting sum"], LIBS[lib]
    exact = OVKRidge(K, lam=1e-2, solver="dense").fit(X, Y).predict(Xt)
    cond = np.linalg.cond(K.gram(X) + 1e-2 * np.eye(X.shape[0] * 3))
    ref = OVKRidge(K, lam=1e-2, solver="cg", tol=1e-10).fit(X, Y)
    m = OVKRidge(K, lam=1e-2, solver="cg", tol=1e-10).fit(a(X.copy()), a(Y.copy()))
    P = m.predict(a(Xt.copy()))
    # the same iterations in another summation order differ by round-off amplified by the system: n_iter cond eps each
    # (2e-12 measured); a count one apart (the stopping test flipping at its boundary on another CPU) by up to 2 cond tol
    assert m.n_iter_ > 1 and abs(m.n_iter_ - ref.n_iter_) <= 1
    same = 10 * m.n_iter_ * cond * np.finfo(float).eps if m.n_iter_ == ref.n_iter_ else 2 * cond * 1e-10
    assert rel(P, ref.predict(Xt)) <= same
    assert rel(P, exact) <= cond * 1e-10
    with pytest.warns(Warning, match="CG did not reach"):
        OVKRidge(K, lam=1e-2, solver="cg", max_iter=2).fit(a(X.copy()), a(Y.copy()))
    for pre in ("jacobi", None):
        # weaker preconditioners, ~200 iterations: the rounding of the dot products (a sum of products here, BLAS's dot
        # on NumPy) moves the count by a few percent (measured 239-246 vs 247, 186 vs 179) and the predictions by up to
        # 5e-10; both stay within cond * tol of the exact solve (measured 1e-10 to 3e-10)
        ref = OVKRidge(K, lam=1e-2, solver="cg", preconditioner=pre).fit(X, Y)
        m = OVKRidge(K, lam=1e-2, solver="cg", preconditioner=pre).fit(a(X.copy()), a(Y.copy()))
        assert abs(m.n_iter_ - ref.n_iter_) <= 0.1 * ref.n_iter_ and rel(m.predict(a(Xt.copy())), exact) <= cond * 1e-10


@pytest.mark.parametrize("lib", LIBS)
@pytest.mark.parametrize("name", ["separable", "commuting sum", "non-commuting sum"])
def test_cg_nystrom_preconditioner_equals_numpy(lib, name):
    """CG's 'nystrom' preconditioner on array-API data: linalg.ov_nystrom_preconditioner (the block Grams on the landmarks
    NumPy draws, its r x r Cholesky by the shim) in X's namespace, the same CG as NumPy's. (Not the weighted kernel: there
    NumPy's own CG with this preconditioner does not converge, 1500 iterations and 1e-2 from the exact solve, measured; the
    preconditioner is not symmetric in the weights' frame. Found here, left as it is on NumPy.)"""
    X, Y, Xt = data()
    K, a = Separable(RBF(1.5), paper000_J(3, 0.2)) if name == "separable" else SUMS[name], LIBS[lib]
    kw = dict(lam=0.1, solver="cg", preconditioner="nystrom", n_components=20, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")                    # both CGs converge (a ConvergenceWarning would raise)
        ref = OVKRidge(K, **kw).fit(X, Y)
        m = OVKRidge(K, **kw).fit(a(X.copy()), a(Y.copy()))
    assert abs(m.n_iter_ - ref.n_iter_) <= max(1, 0.1 * ref.n_iter_)
    # as in test_cg_against_numpy_and_the_exact_solve: round-off through the system when the counts agree, both within
    # cond tol of the exact solve when they do not (tol read from the fit)
    cond = np.linalg.cond(K.gram(X) + kw["lam"] * np.eye(X.shape[0] * Y.shape[1]))
    same = 10 * ref.n_iter_ * cond * np.finfo(float).eps if m.n_iter_ == ref.n_iter_ else 2 * cond * ref.tol
    assert rel(m.predict(a(Xt.copy())), ref.predict(Xt)) <= max(1e-10, same)


@pytest.mark.parametrize("lib", LIBS)
@pytest.mark.parametrize("solver", ["eigen", "cholesky", "cg"])
def test_lam_paths_loo_and_std_equal_numpy(lib, solver):
    X, Y, Xt = data()
    a, lams = LIBS[lib], [1e-3, 1e-2, 0.1, 1.0]
    K = Separable(RBF(1.5), paper000_J(3, 0.2))
    ref, m = OVKRidge(K, lam=0.1, solver=solver).fit(X, Y), OVKRidge(K, lam=0.1, solver=solver).fit(a(X.copy()), a(Y.copy()))
    for P, R in ((m.coef_path(lams), ref.coef_path(lams)), (m.predict_path(a(Xt.copy()), lams), ref.predict_path(Xt, lams)),
                 (m.loo_residuals(0.1), ref.loo_residuals(0.1))):
        assert route_of(P) == "array_api" and rel(P, R) <= 1e-10
    np.testing.assert_allclose(m.loo_errors(lams), ref.loo_errors(lams), rtol=1e-10)
    (F, S), (Fr, Sr) = m.predict(a(Xt.copy()), return_std=True), ref.predict(Xt, return_std=True)
    assert route_of(S) == "array_api" and rel(S, Sr) <= 1e-10 and rel(F, Fr) <= 1e-10
    m.refit(1.0), ref.refit(1.0)
    assert rel(m.predict(a(Xt.copy())), ref.predict(Xt)) <= 1e-10


@pytest.mark.numerics
@pytest.mark.parametrize("lib", LIBS)
@pytest.mark.parametrize("cv, solver, kernel", [(3, "auto", None), (3, "cholesky", None), ("loo", "auto", None),
                                                 (3, "auto", "commuting sum")])
def test_cv_equals_numpy(lib, cv, solver, kernel):
    X, Y, Xt = data(n=40)
    a = LIBS[lib]
    K = SUMS.get(kernel)
    kw = dict(lams=(0.01, 0.1, 1.0), cv=cv, solver=solver, random_state=0)
    m, r = OVKRidgeCV(K, **kw).fit(a(X.copy()), a(Y.copy())), OVKRidgeCV(K, **kw).fit(X, Y)
    assert m.lam_ == r.lam_
    np.testing.assert_allclose(m.cv_errors_, r.cv_errors_, rtol=1e-9)
    assert rel(m.predict(a(Xt.copy())), r.predict(Xt)) <= 1e-9


@pytest.mark.parametrize("lib", LIBS)
def test_kernels_follow_x(lib):
    "The kernels' own gram, diag and apply on arrays of another library: that library back, NumPy's values (1e-12)."
    a = LIBS[lib]
    A, B, C = np.random.default_rng(5).normal(size=(30, 3)), np.random.default_rng(6).normal(size=(17, 3)), \
        np.random.default_rng(7).normal(size=(17, 3))
    for k in SCALARS + [ScaledKernel(RBF(0.2), 2.5), ColumnKernel(Laplacian(1.0), [0, 2])]:
        G = k(a(A.copy()), a(B.copy()))
        assert route_of(G) == "array_api" and rel(G, k(A, B)) <= 1e-12
        assert rel(k.diag(a(A.copy())), k.diag(A)) <= 1e-12
    for K in [Separable(RBF(0.7), paper000_J(3, 0.2)), *SUMS.values()]:
        assert rel(K.gram(a(A.copy()), a(B.copy())), K.gram(A, B)) <= 1e-12
        assert rel(K.apply(a(A.copy()), a(B.copy()), a(C.copy())), K.apply(A, B, C)) <= 1e-12
        assert rel(K.diag(a(A.copy())), K.diag(A)) <= 1e-12


def test_gram_exp_in_place_on_torch():
    "PyTorch's RBF / Laplacian Gram is exp written over its distance array (one n x n at the peak): same storage, NumPy's values."
    from ovk_nb.kernels import _exp_inplace
    D = torch.asarray(np.random.default_rng(8).normal(size=(6, 4)))
    ptr, ref = D.data_ptr(), np.exp(D.numpy().copy())
    E = _exp_inplace(torch, D)
    assert E.data_ptr() == ptr and np.abs(E.numpy() - ref).max() <= 1e-15
    S = xps.asarray(np.zeros((2, 2)))                      # a library without out=: a new array, the input untouched
    assert np.array_equal(to_numpy(_exp_inplace(xps, S)), np.ones((2, 2))) and np.array_equal(to_numpy(S), np.zeros((2, 2)))


@pytest.mark.parametrize("lib", LIBS)
def test_refusals(lib):
    X, Y, Xt = data(n=40)
    a = LIBS[lib]
    with pytest.raises(ValueError, match="array-API"):
        OVKRidge(CurlFreeRBF(1.0, 3)).fit(a(X.copy()), a(Y.copy()))
    with pytest.raises(ValueError, match="NumPy arrays only"):
        OVKRidge(lam_manifold=0.1).fit(a(X.copy()), a(Y.copy()))
    Ym = Y.copy()
    Ym[3, 1] = np.nan
    with pytest.raises(ValueError, match="NumPy arrays only"):
        OVKRidge(missing="ignore").fit(a(X.copy()), a(Ym))
    assert OVKRidge(missing="ignore").fit(a(X.copy()), a(Y.copy())).solver_ == "eigen"     # complete Y: the usual fit
    # (lam='auto', the default since issue 29: the leave-one-out lam on the eigen factor)
    fitted = OVKRidge().fit(a(X.copy()), a(Y.copy()))
    with pytest.raises(ValueError, match="library the model was fitted on"):
        fitted.predict(Xt)                                  # a NumPy X for a model fitted on another library
    with pytest.raises(ValueError, match="library the model was fitted on"):
        fitted.predict_path(Xt, [0.1])


EPS32 = float(np.finfo(np.float32).eps)


def _parts(K):
    "[(weight, scalar kernel, T matrix)] of a Separable or a SumKernel of Separables."
    if isinstance(K, SumKernel):
        w = K.weights if K.weights is not None else np.ones(len(K.kernels))
        return [(wi, *_parts(k)[0][1:]) for wi, k in zip(w, K.kernels)]
    T = K.T
    return [(1.0, K.scalar_kernel, np.asarray(getattr(T, "matrix", T), dtype=float))]


def float32_bound(K, X, lam, solver, n_components, random_state):
    """How far a float32 fit may be from the float64 one, relative to the largest prediction, from float32's eps and the
    problem's conditioning (issue 29: the former 1e-4 was one machine's 1e-5 with a margin; an AMD EPYC gave 1.23e-4 on the
    sum kernel, MKL_CBWR=COMPATIBLE here 1.2e-4).

    Rounding: X, Y and the Gram rounded to float32 and a backward-stable solve (Cholesky, eigh, LU; CG to its float32
    stop) perturb A = K + lam I by |dA| <= c eps32 |A| normwise, so the solution moves by at most cond(A) c eps32 relative
    (first order), and the predictions K_* c with it; c = 4 counts the Gram's rounding, the solve's backward error, Y's
    rounding and the prediction's product, one eps each (the n-dependent worst-case factors of the backward error bounds
    are not attained on random rounding: measured c <= 0.4 on 6 BLAS / MKL kernel choices).
    Nystrom: float32 features drop the landmark Gram's eigenpairs below eps32 * g_max (float64 keeps those above 1e-12 g_max):
    the two models' kernels differ by dK = sum_c w_c Phi_c Phi_c^T kron T_c over those dropped pairs, which moves the
    regularised solution by at most |dK| / lam relative (|(A + dA)^{-1} - A^{-1}| <= |dA| / lam^2 with |A^{-1}| <= 1 / lam)."""
    A = K.gram(X)
    bound = 4 * EPS32 * np.linalg.cond(A + lam * np.eye(A.shape[0]))
    if solver == "nystrom":
        from ovk_nb.linalg import landmark_rows
        L = X[landmark_rows(X.shape[0], n_components, random_state)]
        dK = 0.0
        for w, k, T in _parts(K):
            g, Q = np.linalg.eigh(k(L))
            drop = (g >= 1e-12 * g.max()) & (g < EPS32 * g.max())
            Phi = k(X, L) @ Q[:, drop] / np.sqrt(g[drop])
            dK += abs(w) * np.linalg.norm(Phi, 2) ** 2 * np.linalg.norm(T, 2)
        bound += dK / lam
    return bound


@pytest.mark.numerics
@pytest.mark.parametrize("solver, kernel", [("cholesky", None), ("eigen", None), ("cg", None), ("rff", None), ("nystrom", None),
                                            ("dense", "sum"), ("cg", "sum"), ("cholesky", "sum"), ("nystrom", "sum")])
def test_float32_follows_x(solver, kernel):
    """float32 in, float32 out; against the float64 fit at lam = 0.1 the predictions agree to float32_bound (4 eps32
    cond(K + lam I), plus Nystrom's truncation term |dK| / lam: about 7e-4 and 2e-3, and 1.3e-2 for the RBF's Nystrom;
    measured 3e-7 to 1.2e-4, Nystrom 1.2e-3); the notebook states the figures at smaller lam."""
    X, Y, Xt = data(n=200)
    K = linear_quadratic(3, 0.4) if kernel else Separable(RBF(1.5), paper000_J(3, 0.2))
    kw = dict(lam=0.1, solver=solver, n_components=100, random_state=0)
    f32 = lambda A: torch.asarray(A, dtype=torch.float32)                      # noqa: E731
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)   # float32 CG stops by itself (no ConvergenceWarning); the
        m = OVKRidge(K, **kw).fit(f32(X), f32(Y))          # eigen fit's cond 1.5e3 * eps32 > 1e-4 warns (issue 29.6)
    P = m.predict(f32(Xt))
    assert P.dtype == torch.float32 and (m.coef_ is None or m.coef_.dtype == torch.float32)
    assert rel(P, OVKRidge(K, **kw).fit(X, Y).predict(Xt)) <= float32_bound(K, X, 0.1, solver, 100, 0)


@pytest.mark.parametrize("lib", LIBS)
def test_linalg_follows_x(lib):
    """The one dispatch point: linalg's solvers themselves (not only through OVKRidge) take arrays of another library and
    give arrays of that library equal to their NumPy results (backend only routes to them)."""
    from ovk_nb.kernels import xp_of
    from ovk_nb.linalg import (EigenFactor, KernelParts, cg_solve, dense_solve, grouped_cholesky, landmark_rows,
                               nystrom_fit, rff_fit)
    X, Y, Xt = data()
    a = LIBS[lib]
    Xa, Ya, Xta = a(X.copy()), a(Y.copy()), a(Xt.copy())
    xp = xp_of(Xa)

    def same(P, R):
        assert route_of(P) == "array_api" and rel(P, R) <= 1e-10

    rows = landmark_rows(X.shape[0], 20, 0)
    La = xp.take(Xa, xp.asarray(rows), axis=0)
    for K in [Separable(RBF(1.5), paper000_J(3, 0.2)), *SUMS.values()]:
        P = KernelParts(K)
        if P.eig is not None:
            same(grouped_cholesky(P, Xa, Ya, 0.1), grouped_cholesky(P, X, Y, 0.1))
        if P.nc == 1:
            E, V, Vinv = P.eig
            same(EigenFactor.of(P.grams(Xa, Xa)[0], (E[0], V, Vinv), Ya).coef(0.1),
                 EigenFactor.of(P.grams(X, X)[0], (E[0], V, Vinv), Y).coef(0.1))
        same(dense_solve(K, Xa, Ya, 0.1), dense_solve(K, X, Y, 0.1))
        same(cg_solve(P, Xa, Ya, 0.1)[0], cg_solve(P, X, Y, 0.1)[0])
        same(nystrom_fit(P, Xa, Ya, 0.1, La).predict(Xta), nystrom_fit(P, X, Y, 0.1, X[rows]).predict(Xt))
    K = Separable(RBF(1.5), paper000_J(3, 0.2))
    same(rff_fit(K, Xa, Ya, 0.1, 30, 0).predict(Xta), rff_fit(K, X, Y, 0.1, 30, 0).predict(Xt))


# ---------------------------------------------------------------------------------------------------------------------
# OVKGaussianProcess on array-API data (issue 24): the exact separable route (eigh of the scalar Gram, likelihood, its
# gradient and the posterior in X's namespace; L-BFGS-B on the host) against NumPy; the other routes refused.
from ovk_nb.backend import device_of  # noqa: E402
from ovk_nb.gp import OVKGaussianProcess, SeparableLikelihood  # noqa: E402
from ovk_nb.kernels import Coregionalization  # noqa: E402

GP_FITS = {   # identifiable hyper-parameters: theta itself is compared (a full-rank W is defined up to a rotation)
    "fixed T": dict(kernel=Separable(RBF(0.7), np.eye(3) + 0.5)),
    "fixed T, normalize_y": dict(kernel=Separable(RBF(0.7), np.eye(3) + 0.5), normalize_y=True),
    "Laplacian, fixed T": dict(kernel=Separable(Laplacian(0.5), paper000_J(3, 0.2))),
    "1-D y": dict(kernel=Separable(RBF(0.7), np.eye(1)), y1d=True),
    "fixed T, objective='loo'": dict(kernel=Separable(RBF(0.7), np.eye(3) + 0.5), objective="loo"),
}


def gp_data(n=60, seed=0):
    r = np.random.default_rng(seed)
    X = r.uniform(-2, 2, (n, 2))
    F = np.c_[np.sin(X[:, 0]), np.cos(X[:, 1]), X[:, 0] * X[:, 1]]
    return X, F + 0.1 * r.normal(size=F.shape), r.uniform(-2, 2, (7, 2))


# Tolerances (issue 29): from float64's eps and the problem's conditioning, never from one machine's output. An optimized fit
# is not compared by its arguments: L-BFGS-B on two libraries sees objectives that differ in the last bits (another BLAS
# kernel, another summation order), takes other steps and stops elsewhere on a flat optimum (measured on a 2-core AMD EPYC:
# predictions 1.9e-2 apart after the optimizer; here under OPENBLAS_CORETYPE=Sandybridge the same). So the array library is
# compared with NumPy at FIXED hyper-parameters (NumPy's optimum, `at_numpy_theta`), and the optimum itself by its LML value.
EPS64 = float(np.finfo(np.float64).eps)
# scipy's L-BFGS-B stops when the relative decrease of one step is below ftol = factr * eps = 1e7 * eps (its default).
# Two runs from the same start on objectives equal to a few eps stop within a few such steps of each other: on a
# locally linear rate rho the gap left is ftol * rho / (1 - rho) relative; 100 ftol covers rho <= 0.99 (measured on this
# and the AMD machine: 2e-12 to 2.4e-9 relative). A different local optimum differs by orders of magnitude more.
LML_OPT_RTOL = 100 * 1e7 * EPS64


def gp_pair(kw, lib, X, Y):
    "(NumPy fit with the optimizer, the same estimator fitted on the array library's copies with the optimizer)."
    kw = dict(kw)
    kw.setdefault("normalize_y", False)             # the model these equalities were written for (issue 29 changed the
    kw.setdefault("noise_per_output", False)        # defaults: per-output standardisation and noise, tested in test_gp)
    if kw.pop("y1d", False):
        Y = Y[:, 0]
    a = LIBS[lib]
    return OVKGaussianProcess(**kw).fit(X, Y), OVKGaussianProcess(**kw).fit(a(X.copy()), a(Y.copy()))


def at_numpy_theta(kw, ref, lib, X, Y):
    """The estimator of `kw` fitted on the array library at the NumPy fit's learned hyper-parameters (its kernel_ and
    noise_, optimizer=None): the same problem, so the same numbers up to rounding."""
    kw = dict(kw)
    kw.setdefault("normalize_y", False)             # as gp_pair: the model these equalities were written for
    kw.setdefault("noise_per_output", False)
    if kw.pop("y1d", False):
        Y = Y[:, 0]
    kw.update(kernel=ref.kernel_, noise=ref.noise_, optimizer=None)
    a = LIBS[lib]
    return OVKGaussianProcess(**kw).fit(a(X.copy()), a(Y.copy()))


def _noise_diag(model, n, d):
    "I_n kron diag(noise_) as a vector (noise_ one shared variance or one per output)."
    return np.tile(np.broadcast_to(np.asarray(model.noise_, dtype=float), (d,)), n)


def gp_cond(model):
    """cond_2 of the training covariance the fit solves with, K(X, X) + I kron diag(noise) (n d <= 180 here: dense). For
    method='nystrom' the Nystrom Gram Phi Phi^T kron T replaces K, and Phi = K_nm L^{-T} carries the landmark Cholesky
    factor's cond(L) = cond(K_mm + jitter)^{1/2} on top: the product of the two."""
    from ovk_nb.gp import NYSTROM_JITTER
    X, Y = to_numpy(model.X_train_), to_numpy(model.y_train_)
    n, d = X.shape[0], 1 if Y.ndim == 1 else Y.shape[1]
    K = model.kernel_.gram(X)
    extra = 1.0
    if hasattr(model, "landmarks_"):
        sk, Z = model.kernel_.scalar_kernel, to_numpy(model.landmarks_)
        Kmm = sk(Z)
        Kmm[np.diag_indices_from(Kmm)] += NYSTROM_JITTER * np.mean(np.diag(Kmm))
        L = np.linalg.cholesky(Kmm)
        Phi = np.linalg.solve(L, sk(Z, X)).T
        K = np.kron(Phi @ Phi.T, np.asarray(model.output_matrix_).reshape(d, d))
        extra = np.sqrt(np.linalg.cond(Kmm))
    return np.linalg.cond(K + np.diag(_noise_diag(model, n, d))) * extra


def gp_tol(model):
    """The relative agreement two fits of the same GP at the same hyper-parameters can promise: a backward-stable solve with
    a matrix of condition number cond moves its answer by about cond * eps relative (first order: |dx|/|x| <= cond |dA|/|A|,
    with |dA|/|A| a few eps for the rounding of the Gram, its eigh or Cholesky, and the products); 16 eps for "a few"."""
    return 16 * EPS64 * gp_cond(model)


def draw_norms(model, Xt, D, F, sd):
    """|Sigma^{-1/2} (d - f)| for each of the draws D (m, d, s) about the mean F, Sigma the posterior covariance of the latent
    f at Xt (the dense reference at the model's kernel_ and noise_, in y's scale). A draw is f + A z with A A^T = Sigma, and
    A is only defined up to a rotation (numpy's multivariate_normal takes an SVD, the separable posterior T's eigenbasis:
    with a repeated eigenvalue, as T = I + 0.5, any basis of that eigenspace; their signs are a convention): two libraries
    may draw A z and A R z from the same z. This norm, |z|, is the same for both."""
    from ovk_nb.gp import gp_posterior_dense_reference
    X, Yn = to_numpy(model.X_train_), to_numpy(model.y_train_)
    Yn = Yn[:, None] if Yn.ndim == 1 else Yn
    _, S = gp_posterior_dense_reference(model.kernel_, X, Yn, model.noise_, Xt)
    D, F = to_numpy(D), to_numpy(F)
    D = D[:, None, :] if D.ndim == 2 else D
    F = F[:, None] if F.ndim == 1 else F
    E = ((D - F[:, :, None]) / sd[None, :, None]).reshape(-1, D.shape[2])        # rows i*d + o, as the reference's
    w, U = np.linalg.eigh(0.5 * (S + S.T))
    keep = w > w.max() * len(w) * EPS64                  # directions the covariance resolves above its own rounding
    return np.linalg.norm((U[:, keep].T @ E) / np.sqrt(w[keep])[:, None], axis=0), w[keep].max() / w[keep].min()


def y_scale(model, Y):
    "The per-output scale the fit divided Y by (normalize_y or not): from Y and the stored y_train_, whatever the scheme."
    Yn = to_numpy(model.y_train_)
    Yn = Yn[:, None] if Yn.ndim == 1 else Yn
    Y = Y[:, None] if Y.ndim == 1 else Y
    return Y.std(0) / Yn.std(0)


def assert_gp_equal(ref, m, Xt, Xta, more=(), Y=None):
    """A GP fitted on array-API data at NumPy's hyper-parameters (m) against its NumPy twin (ref): the LML, predictions,
    std, per-output covariance, alpha_ and the pairs in `more` to gp_tol (cond * eps), each of X's library and device;
    the draws of sample_y from the same seed by their whitened norms (see draw_norms)."""
    tol = gp_tol(ref)
    np.testing.assert_array_equal(m._theta, ref._theta)
    n, d = ref.X_train_.shape[0], ref.n_outputs_
    assert abs(m.log_marginal_likelihood_value_ - ref.log_marginal_likelihood_value_) <= tol * (
        abs(ref.log_marginal_likelihood_value_) + n * d)
    (F, S), (Fr, Sr) = m.predict(Xta, return_std=True), ref.predict(Xt, return_std=True)
    C, Cr = m.predict(Xta, return_cov=True)[1], ref.predict(Xt, return_cov=True)[1]
    D, Dr = m.sample_y(Xta, 3, random_state=1), ref.sample_y(Xt, 3, random_state=1)
    for P, R in ((F, Fr), (S, Sr), (C, Cr), (D, Dr), (m.alpha_, ref.alpha_), *more):
        assert route_of(P) == "array_api" and P.shape == R.shape and device_of(P) == device_of(Xta)
        if P is not D:
            assert rel(P, R) <= tol
    if Y is not None and not hasattr(ref, "landmarks_"):     # the exact posterior: the dense reference's covariance
        sd = y_scale(ref, Y)
        (z, cs), (zr, _) = draw_norms(m, Xt, D, F, sd), draw_norms(ref, Xt, Dr, Fr, sd)
        # the norms' relative error: the draws' (about that of the covariances, tol) times cond of Sigma's square root
        assert np.abs(z - zr).max() <= tol * np.sqrt(cs) * zr.max()
    else:                                                    # Nystrom: its draws elementwise (T's eigenbasis on the host)
        assert rel(D, Dr) <= tol


def assert_same_optimum(ref, opt):
    "The array library's own optimizer run reaches NumPy's optimum: the same LML value to LML_OPT_RTOL (not the same theta)."
    a, b = opt.log_marginal_likelihood_value_, ref.log_marginal_likelihood_value_
    assert abs(a - b) <= LML_OPT_RTOL * max(1.0, abs(b)), (a, b)


@pytest.mark.numerics
@pytest.mark.parametrize("lib", LIBS)
@pytest.mark.parametrize("name", GP_FITS)
def test_gp_fit_equals_numpy(lib, name):
    """At NumPy's learned hyper-parameters the array-library fit gives the LML, alpha, predictions, std, per-output
    covariance and sample_y of NumPy's to cond * eps (gp_tol); the fitted arrays and the outputs are of X's library and
    device; log_marginal_likelihood gives host floats and a NumPy gradient, as scikit-learn's. Its own optimizer run
    reaches the same optimum by LML value."""
    X, Y, Xt = gp_data()
    ref, opt = gp_pair(GP_FITS[name], lib, X, Y)
    assert_same_optimum(ref, opt)
    m = at_numpy_theta(GP_FITS[name], ref, lib, X, Y)
    Xta = LIBS[lib](Xt.copy())
    assert_gp_equal(ref, m, Xt, Xta, [(m.y_train_, ref.y_train_)], Y=Y[:, 0] if GP_FITS[name].get("y1d") else Y)
    assert route_of(m.X_train_) == "array_api" and m.X_train_ is not Xta
    tol = gp_tol(ref)
    assert rel(m.output_matrix_, ref.output_matrix_) <= tol
    f, g = m.log_marginal_likelihood(ref._theta, eval_gradient=True)
    fr, gr = ref.log_marginal_likelihood(ref._theta, eval_gradient=True)
    assert isinstance(f, float) and isinstance(g, np.ndarray) and abs(f - fr) <= tol * (abs(fr) + X.shape[0] * 3)


@pytest.mark.parametrize("lib", LIBS)
def test_gp_likelihood_and_gradient_equal_numpy(lib):
    """The likelihood and its gradient at given hyper-parameters (away from the optimum: a gradient of size ~10-100), for a
    learned full-rank T, the profile's kernel_grad=False and the scalar Gram's gradient itself."""
    X, Y, _ = gp_data()
    a = LIBS[lib]
    K = Separable(RBF(0.7), Coregionalization(rank=2)).resolve(X, Y)
    lik, likr = SeparableLikelihood(K, a(X.copy()), a(Y.copy())), SeparableLikelihood(K, X, Y)
    for t in (np.r_[K.theta, np.log(0.1)], np.r_[K.theta + 0.3, np.log(0.5)]):
        for kg in (True, False):
            (f, g), (fr, gr) = lik(t, True, kernel_grad=kg), likr(t, True, kernel_grad=kg)
            assert isinstance(f, float) and abs(f - fr) <= 1e-10 * abs(fr)
            assert isinstance(g, np.ndarray) and np.abs(g - gr).max() <= 1e-10 * np.abs(gr).max()
        (f, g), (fr, gr) = lik.loo(t), likr.loo(t)                 # the leave-one-out objective (measured 3e-15)
        assert isinstance(f, float) and abs(f - fr) <= 1e-10 * abs(fr)
        assert isinstance(g, np.ndarray) and np.abs(g - gr).max() <= 1e-10 * np.abs(gr).max()
    for k in (RBF(0.7), Laplacian(0.3), Linear()):
        (G, dG), (Gr, dGr) = k.gram_gradient(a(X.copy())), k.gram_gradient(X)
        assert rel(G, Gr) <= 1e-12 and len(dG) == len(dGr) and all(rel(g, h) <= 1e-12 for g, h in zip(dG, dGr))


@pytest.mark.numerics
@pytest.mark.parametrize("lib", LIBS)
@pytest.mark.parametrize("kw", [dict(), dict(normalize_y=True)], ids=["default", "normalize_y"])
def test_gp_default_kernel_matches_numpy(lib, kw):
    """The default kernel learns a full-rank W (T = W W^T + diag(kappa)), defined only up to a rotation of W: L-BFGS-B
    walks the flat directions differently after 1e-15 differences, so the optimum is compared by its LML value
    (LML_OPT_RTOL), and the fits at NumPy's hyper-parameters by their predictions, std and T (gp_tol: cond * eps)."""
    X, Y, Xt = gp_data()
    ref, opt = gp_pair(kw, lib, X, Y)
    assert_same_optimum(ref, opt)
    m = at_numpy_theta(kw, ref, lib, X, Y)
    tol = gp_tol(ref)
    (F, S), (Fr, Sr) = m.predict(LIBS[lib](Xt.copy()), return_std=True), ref.predict(Xt, return_std=True)
    assert rel(F, Fr) <= tol and rel(S, Sr) <= tol
    assert rel(m.output_matrix_, ref.output_matrix_) <= tol


def gp_float32_bounds(model, Xt):
    """Float32's reach on the posterior at the model's hyper-parameters, relative to the largest |mean| and std: the
    componentwise (Skeel) condition of the prediction, tighter than cond(A) eps and as principled. With A = K + noise,
    alpha = A^{-1} y, beta_i = A^{-1} k_i: rounding |dA| <= eps |A| and |dk_i| <= eps |k_i| entrywise moves the mean
    f_i = k_i^T alpha by at most eps (|k_i|^T |alpha| + |beta_i|^T |A| |alpha|), and the variance v_i = k_ii - k_i^T beta_i
    by eps (k_ii + 2 |k_i|^T |beta_i| + |beta_i|^T |A| |beta_i|), the std by that over 2 s_i (first order). c = 4 eps32 for
    the backward errors of the factorisation and products on top of the entries' rounding (measured c <= 1.4)."""
    X, Yn = to_numpy(model.X_train_), to_numpy(model.y_train_)
    n, d = Yn.shape
    A = model.kernel_.gram(X) + np.diag(_noise_diag(model, n, d))
    Ks, kss = model.kernel_.gram(Xt, X), np.diag(model.kernel_.gram(Xt))
    al, B = np.linalg.solve(A, Yn.ravel()), np.linalg.solve(A, Ks.T)
    dm = np.abs(Ks) @ np.abs(al) + np.abs(B).T @ (np.abs(A) @ np.abs(al))
    v = np.clip(kss - np.einsum("ij,ji->i", Ks, B), 0, None)
    dv = np.abs(kss) + 2 * np.einsum("ij,ji->i", np.abs(Ks), np.abs(B)) + np.einsum("ji,jk,ki->i", np.abs(B), np.abs(A), np.abs(B))
    s = np.sqrt(v)
    c = 4 * EPS32
    return c * dm.max() / np.abs(Ks @ al).max(), c * (dv / (2 * np.maximum(s, s.max() * np.sqrt(c)))).max() / s.max()


@pytest.mark.numerics
@pytest.mark.parametrize("kw", [GP_FITS["fixed T"], dict()], ids=["fixed T", "default"])
def test_gp_float32_follows_x(kw):
    """float32 in, float32 out. At the float64 fit's hyper-parameters the float32 posterior agrees with float64's to
    gp_float32_bounds (about 4e-4 / 6e-4 with a fixed T, 4e-3 / 1e-2 with the default learned T; measured 3e-5 / 1e-4 and
    2e-4 / 1.3e-3). The float32 optimizer's own run stops where its objective's rounding hides the remaining ascent:
    its theta, scored by the float64
    LML, is within that rounding of the float64 optimum."""
    import warnings as w
    kw = {"normalize_y": False, "noise_per_output": False, **kw}     # as gp_pair: one shared noise on raw targets
    X, Y, Xt = gp_data()
    f32 = lambda A: torch.asarray(A, dtype=torch.float32)                      # noqa: E731
    ref = OVKGaussianProcess(**kw).fit(X, Y)
    with w.catch_warnings():
        w.simplefilter("ignore")                          # float32: L-BFGS-B may stop with a ConvergenceWarning
        opt = OVKGaussianProcess(**kw).fit(f32(X), f32(Y))
    m = OVKGaussianProcess(**dict(kw, kernel=ref.kernel_, noise=ref.noise_, optimizer=None)).fit(f32(X), f32(Y))
    (F, S), (Fr, Sr) = m.predict(f32(Xt), return_std=True), ref.predict(Xt, return_std=True)
    assert F.dtype == S.dtype == m.alpha_.dtype == opt.alpha_.dtype == torch.float32
    bm, bs = gp_float32_bounds(ref, Xt)
    assert rel(F, Fr) <= bm and rel(S, Sr) <= bs
    # the float32 LML's own rounding, componentwise (first order, |dA| <= eps32 |A|): 1/2 |alpha|^T |A| |alpha| for the
    # quadratic term and 1/2 sum |A^{-1}| o |A^T| for the log-determinant; float32's L-BFGS-B cannot resolve ascent
    # below it (about 0.04 and 0.18 here; measured gaps 3e-5 and 7e-4 under MKL_CBWR=COMPATIBLE; another local optimum
    # differs by O(1))
    Yn = to_numpy(ref.y_train_)
    A = ref.kernel_.gram(X) + np.diag(_noise_diag(ref, *Yn.shape))
    al = np.linalg.solve(A, Yn.ravel())
    noise = EPS32 * (0.5 * np.abs(al) @ np.abs(A) @ np.abs(al) + 0.5 * np.sum(np.abs(np.linalg.inv(A)) * np.abs(A.T)))
    assert ref.log_marginal_likelihood(opt._theta) >= ref.log_marginal_likelihood_value_ - noise


def gp_float32_pair(kw):
    "(float32 torch fit, float64 NumPy fit, Xt, (F, S) of the first, (F, S) of the second) for OVKGaussianProcess(**kw)."
    import warnings as w
    kw = {"normalize_y": False, "noise_per_output": False, **kw}     # as gp_pair: one shared noise on raw targets
    X, Y, Xt = gp_data()
    f32 = lambda A: torch.asarray(A, dtype=torch.float32)                      # noqa: E731
    with w.catch_warnings():
        w.simplefilter("ignore")                          # float32: L-BFGS-B may stop with a ConvergenceWarning
        m = OVKGaussianProcess(**kw).fit(f32(X), f32(Y))
    ref = OVKGaussianProcess(**kw).fit(X, Y)
    return m, ref, Xt, m.predict(f32(Xt), return_std=True), ref.predict(Xt, return_std=True)


@pytest.mark.parametrize("lib", LIBS)
def test_gp_refusals(lib):
    """The routes that run on NumPy only say so (never a silent host copy): stochastic, sums of separable parts (the dense
    fallback), missing outputs (Nystrom's included); Nystrom with objective='loo' as on NumPy; a fit that fails leaves
    the estimator as it was; queries of another library than the fit's are refused."""
    X, Y, Xt = gp_data(n=30)
    a = LIBS[lib]
    Xa, Ya = a(X.copy()), a(Y.copy())
    for kw, what in [(dict(method="stochastic"), "method='stochastic'"),
                     (dict(method="stochastic", objective="loo"), "method='stochastic'"),
                     (dict(kernel=SUMS["commuting sum"]), "SumKernel"),
                     (dict(kernel=SUMS["commuting sum"], method="nystrom"), "SumKernel"),
                     (dict(kernel=SUMS["commuting sum"], objective="loo"), "SumKernel")]:
        with pytest.raises(ValueError, match="NumPy arrays only") as e:
            OVKGaussianProcess(**kw).fit(Xa, Ya)
        assert what in str(e.value)
    Ym = Y.copy()
    Ym[3, 1] = np.nan
    for kw in (dict(), dict(method="nystrom")):
        with pytest.raises(ValueError, match="missing='ignore'.*NumPy arrays only"):
            OVKGaussianProcess(missing="ignore", **kw).fit(Xa, a(Ym))
    for data in ((X, Y), (Xa, Ya)):                                   # no leave-one-out form: refused on both
        with pytest.raises(ValueError, match="objective='loo'.*NystromLikelihood"):
            OVKGaussianProcess(method="nystrom", objective="loo").fit(*data)
    assert route_of(OVKGaussianProcess(method="nystrom", n_components=8).fit(Xa, Ya).landmarks_) == "array_api"
    assert OVKGaussianProcess(missing="ignore").fit(Xa, Ya).n_outputs_ == 3        # complete Y: the usual fit
    with pytest.raises(ValueError, match="Y must be an array of X's library"):
        OVKGaussianProcess().fit(Xa, Y)
    fitted = OVKGaussianProcess(optimizer=None).fit(Xa, Ya)
    theta = fitted._theta.copy()
    with pytest.raises(ValueError, match="NumPy arrays only"):
        fitted.set_params(method="stochastic").fit(Xa, Ya)
    assert np.array_equal(fitted._theta, theta) and route_of(fitted.alpha_) == "array_api"
    fitted.set_params(method="auto")
    for q in (Xt, torch.asarray(Xt) if lib != "torch" else xps.asarray(Xt)):
        with pytest.raises(ValueError, match="library the model was fitted on"):
            fitted.predict(q)
    with pytest.raises(ValueError, match="library the model was fitted on"):
        OVKGaussianProcess(optimizer=None).fit(X, Y).predict(a(Xt.copy()))
    with pytest.raises(ValueError, match="features"):
        fitted.predict(a(Xt[:, :1].copy()))


# ---------------------------------------------------------------------------------------------------------------------
# method='nystrom' on array-API data: Phi = K_nm L^{-T}, its products and the gradient's pass over X in X's namespace, the
# m x m algebra on the host (the gp notebook's "The Nystrom route on array libraries") against NumPy.
from ovk_nb.gp import NystromLikelihood, _NystromPosterior, nystrom_landmarks  # noqa: E402

GP_NYSTROM_FITS = {   # well-conditioned landmark Grams: with 20-30 RBF landmarks cond(K_mm) ~ 1e9-1e11 and NumPy's own
    # learned theta moves 1e-10 when X is scaled by 1 + 1e-15 (the notebook), so the RBF's are few, or start-only
    "Laplacian, fixed T": dict(kernel=Separable(Laplacian(0.5), paper000_J(3, 0.2)), n_components=25),
    "Laplacian, normalize_y": dict(kernel=Separable(Laplacian(0.5), np.eye(3) + 0.5), n_components=20, normalize_y=True),
    "RBF, 1-D y": dict(kernel=Separable(RBF(0.7), np.eye(1)), n_components=10, y1d=True),
    "RBF, fixed T and noise": dict(kernel=Separable(RBF(0.7), np.eye(3) + 0.5), n_components=10, noise=0.05,
                                   noise_bounds="fixed"),
    "RBF, fixed T, optimizer=None": dict(kernel=Separable(RBF(0.7), np.eye(3) + 0.5), n_components=20, optimizer=None),
    "default kernel, optimizer=None": dict(n_components=20, optimizer=None, normalize_y=True),
}


@pytest.mark.numerics
@pytest.mark.parametrize("lib", LIBS)
@pytest.mark.parametrize("name", GP_NYSTROM_FITS)
def test_gp_nystrom_fit_equals_numpy(lib, name):
    """method='nystrom' on array-API data: its own optimizer run reaches NumPy's optimum (by LML value); at NumPy's
    hyper-parameters the LML, the LML and gradient at another theta, predictions, std, per-output covariance, sample_y,
    alpha_ and landmarks_ equal NumPy's to cond * eps (gp_tol, with the landmark factor's cond); the fitted arrays and the
    outputs are of X's library and device."""
    X, Y, Xt = gp_data()
    kw = dict(GP_NYSTROM_FITS[name], method="nystrom_sor", random_state=0)
    ref, opt = gp_pair(kw, lib, X, Y)
    assert_same_optimum(ref, opt)
    m = at_numpy_theta(kw, ref, lib, X, Y)
    Xta = LIBS[lib](Xt.copy())
    assert_gp_equal(ref, m, Xt, Xta, [(m.landmarks_, ref.landmarks_)])
    assert isinstance(m._lik, NystromLikelihood) and m._lik._cache is None        # Phi (n x m) not kept by the fit
    t, tol = ref._theta + 0.3, gp_tol(ref)                                        # away from the optimum
    (f, g), (fr, gr) = m.log_marginal_likelihood(t, eval_gradient=True), ref.log_marginal_likelihood(t, eval_gradient=True)
    assert isinstance(f, float) and isinstance(g, np.ndarray) and abs(f - fr) <= tol * (abs(fr) + X.shape[0] * 3)
    assert np.abs(g - gr).max() <= tol * np.abs(gr).max()


@pytest.mark.parametrize("lib", LIBS)
def test_gp_nystrom_likelihood_and_posterior_equal_numpy(lib):
    """NystromLikelihood at given hyper-parameters, in chunks of 7 rows (the chunked passes: Phi and the gradient's),
    with a learned rank-2 T, the profile's kernel_grad=False, an RBF, a Laplacian and a Linear (no parameter) kernel; the
    posterior's mean, variance, covariances and landmark coefficients at those hyper-parameters. All to 1e-10 of NumPy's
    (measured 1e-16 to 1e-12); the landmarks may be given as a host array."""
    X, Y, Xt = gp_data()
    a = LIBS[lib]
    Xa, Ya, Xta = a(X.copy()), a(Y.copy()), a(Xt.copy())
    idx = nystrom_landmarks(Xa, 15, random_state=0)
    assert np.array_equal(idx, nystrom_landmarks(X, 15, random_state=0))
    for k in (RBF(0.7), Laplacian(0.3), Linear()):
        K = Separable(k, Coregionalization(rank=2)).resolve(X, Y)
        lik, likr = NystromLikelihood(K, Xa, Ya, X[idx], chunk=7), NystromLikelihood(K, X, Y, X[idx], chunk=7)
        assert route_of(lik.Z) == "array_api"
        for t in (np.r_[K.theta, np.log(0.1)], np.r_[K.theta + 0.3, np.log(0.5)]):
            for kg in (True, False):
                (f, g), (fr, gr) = lik(t, True, kernel_grad=kg), likr(t, True, kernel_grad=kg)
                assert isinstance(f, float) and abs(f - fr) <= 1e-10 * abs(fr)
                assert isinstance(g, np.ndarray) and np.abs(g - gr).max() <= 1e-10 * np.abs(gr).max()
            p, pr = _NystromPosterior(lik, t), _NystromPosterior(likr, t)
            for P, R in ((p.mean(Xta), pr.mean(Xt)), (p.var(Xta), pr.var(Xt)), (p.cov(Xta), pr.cov(Xt)),
                         (p.alpha, pr.alpha)):
                # (Linear: K_mm has rank p = 2, alpha is free along its null space (measured 8e-6), the mean is not)
                assert route_of(P) == "array_api" and (P is p.alpha and isinstance(k, Linear) or rel(P, R) <= 1e-10)


@pytest.mark.numerics
@pytest.mark.parametrize("lib", LIBS)
def test_gp_nystrom_default_kernel_matches_numpy(lib):
    """The default kernel learns a full-rank W (defined up to a rotation: theta not compared): the optimum by its LML
    value (LML_OPT_RTOL; measured on an AMD EPYC 2.4e-9 relative, over the former 1e-9), the fits at NumPy's
    hyper-parameters by predictions and std to cond * eps (gp_tol with the landmark factor's cond)."""
    X, Y, Xt = gp_data()
    kw = dict(method="nystrom", n_components=25, random_state=0)
    ref, opt = gp_pair(kw, lib, X, Y)
    assert_same_optimum(ref, opt)
    m = at_numpy_theta(kw, ref, lib, X, Y)
    tol = gp_tol(ref)
    (F, S), (Fr, Sr) = m.predict(LIBS[lib](Xt.copy()), return_std=True), ref.predict(Xt, return_std=True)
    assert route_of(F) == "array_api" and rel(F, Fr) <= tol and rel(S, Sr) <= tol


@pytest.mark.numerics
@pytest.mark.parametrize("name", ["Laplacian, fixed T", "RBF, fixed T and noise"], ids=["Laplacian", "RBF"])
def test_gp_nystrom_float32_follows_x(name):
    """float32 in, float32 out (Phi and the passes in float32, the m x m algebra in float64 on the host). At the float64
    fit's hyper-parameters the posterior agrees with float64's to 4 eps32 gp_cond (the normwise first-order bound with
    the landmark factor's cond(L): about 5e-3 for the Laplacian; for the RBF on 10 landmarks, cond(K_mm) ~ 1e9, it
    exceeds 1: float32 promises nothing there and the test then checks the types and finiteness). Measured: Laplacian
    6e-7 / 2e-6 (1.7e-5 on std with MKL_ENABLE_INSTRUCTIONS=SSE4_2, over the former 1e-5 from one machine); RBF 1e-5.
    The float32 optimizer's theta, scored by the float64 LML, is within the same bound's rounding of the LML of the
    float64 optimum (eps32 gp_cond (|LML| + n d))."""
    kw = dict(GP_NYSTROM_FITS[name], method="nystrom_sor", random_state=0, normalize_y=False, noise_per_output=False)
    opt, ref, Xt, _, _ = gp_float32_pair(kw)
    X, Y, _ = gp_data()
    f32 = lambda A: torch.asarray(A, dtype=torch.float32)                      # noqa: E731
    m = OVKGaussianProcess(**dict(kw, kernel=ref.kernel_, noise=ref.noise_, optimizer=None)).fit(f32(X), f32(Y))
    (F, S), (Fr, Sr) = m.predict(f32(Xt), return_std=True), ref.predict(Xt, return_std=True)
    C = m.predict(f32(Xt), return_cov=True)[1]
    assert F.dtype == S.dtype == C.dtype == m.alpha_.dtype == m.landmarks_.dtype == opt.alpha_.dtype == torch.float32
    assert np.isfinite(to_numpy(F)).all() and np.isfinite(to_numpy(S)).all()
    cond = gp_cond(ref)
    assert rel(F, Fr) <= 4 * EPS32 * cond and rel(S, Sr) <= 4 * EPS32 * cond
    best = ref.log_marginal_likelihood_value_
    assert ref.log_marginal_likelihood(opt._theta) >= best - EPS32 * cond * (abs(best) + Y.size)


# issue 29.6: the array-API exact solvers warn as NumPy's do (duplicated rows, lam = 1e-12), and stay silent at lam = 0.1
@pytest.mark.parametrize("lib", list(LIBS))
@pytest.mark.parametrize("solver", ["dense", "eigen", "cholesky"])
def test_ill_conditioned_system_warns_on_array_api(lib, solver):
    from ovk_nb.linalg import IllConditionedWarning
    X = np.random.default_rng(0).normal(size=(15, 2))
    Xd, a = np.vstack([X, X]), LIBS[lib]
    with pytest.warns(IllConditionedWarning, match=r"lam=1e-12, estimated condition number"):
        OVKRidge(lam=1e-12, solver=solver).fit(a(Xd), a(np.sin(Xd)))
    with warnings.catch_warnings():
        warnings.simplefilter("error", IllConditionedWarning)
        OVKRidge(lam=0.1, solver=solver).fit(a(X), a(np.sin(X)))
