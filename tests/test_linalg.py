"""ovk_nb.linalg, the one linear-algebra layer: every route (eigen factor, grouped Cholesky, PCG with each preconditioner,
Nystrom) against the literal dense solve of (K + lam I) vec(C) = vec(Y), on the kernel families the estimators use."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from ovk_nb.kernels import (RBF, IntegralOperator, Laplacian, Polynomial, Separable, SumKernel, gaussian_times_J,
                            linear_quadratic, paper000_J)
from ovk_nb.linalg import (EigenFactor, KernelParts, NystromFeatures, eigh_psd, group_columns, grouped_cholesky,
                           jacobi_preconditioner, kernel_matvec, nystrom_fit, pcg, separable_preconditioner,
                           symmetric_operator)


def dense(kernel, X, Y, lam):
    "The literal solve with the nd x nd Gram (test reference)."
    G = kernel.gram(X)
    return np.linalg.solve(G + lam * np.eye(len(G)), Y.reshape(-1)).reshape(Y.shape)


def rel(A, B):
    return np.linalg.norm(A - B) / np.linalg.norm(B)


def data(n=25, p=3, d=3, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, p)), rng.normal(size=(n, d))


KERNELS = {
    "separable": gaussian_times_J(3, 0.4),
    "weighted": Separable(RBF(0.3), IntegralOperator(np.linspace(0, 1, 3))),
    "sum": SumKernel([gaussian_times_J(3, 0.2), Separable(Laplacian(0.5), np.eye(3))], [0.6, 0.4]),
    "linear_quadratic": linear_quadratic(3, 0.3),
    "noncommuting": SumKernel([Separable(RBF(0.5), np.diag([1.0, 2.0, 3.0])), Separable(Polynomial(2), np.ones((3, 3)) + np.eye(3))]),
}


def test_eigh_psd_clips_or_cuts():
    Z = np.random.default_rng(1).normal(size=(8, 3))
    A = Z @ Z.T
    s, U = eigh_psd(A)
    assert s.shape == (8,) and (s >= 0).all()
    np.testing.assert_allclose((U * s) @ U.T, A, atol=1e-10)
    s, U = eigh_psd(A, rcond=1e-10)
    assert U.shape == (8, 3) and (s > 0).all()
    np.testing.assert_allclose((U * s) @ U.T, A, atol=1e-10)
    np.testing.assert_allclose(eigh_psd(A)[0], np.clip(np.linalg.eigh(A)[0], 0, None), rtol=0, atol=1e-12)   # same routine; numpy and scipy may link different LAPACKs


@pytest.mark.parametrize("name", ["separable", "weighted"])
def test_eigen_factor_coef_path_and_solve(name):
    K = KERNELS[name]
    X, Y = data()
    f = EigenFactor.of(K.scalar_kernel(X), K.T_eig(), Y)
    for lam in (0.05, 1.0):
        C = dense(K, X, Y, lam)
        assert rel(f.coef(lam), C) < 1e-10
        assert rel(f.solve(Y, lam), C) < 1e-10
        assert rel(f.smoothed(lam), C @ K.T.T) < 1e-10
    P = f.predict_path(K.scalar_kernel(X[:4], X), [0.05, 1.0])
    assert rel(P[1], K.apply(X[:4], X, dense(K, X, Y, 1.0))) < 1e-10
    np.testing.assert_allclose(f.coef_path([0.05, 1.0])[0], f.coef(0.05))


def test_eigen_factor_loo_equals_refits():
    K = KERNELS["weighted"]
    X, Y = data(15)
    f = EigenFactor.of(K.scalar_kernel(X), K.T_eig(), Y)
    R = np.array([Y[i] - K.apply(X[i:i + 1], np.delete(X, i, 0), dense(K, np.delete(X, i, 0), np.delete(Y, i, 0), 0.1))[0]
                  for i in range(len(X))])
    assert rel(f.loo_residuals(0.1), R) < 1e-9


def test_eigen_factor_truncate_keeps_the_largest_eigenvalues():
    K = KERNELS["separable"]
    X, Y = data()
    f = EigenFactor.of(K.scalar_kernel(X), K.T_eig(), Y)
    ft = f.truncate(1)
    assert (ft.e > 0).sum() == 1 and ft.e.max() == f.e.max()
    Tp = (f.V * ft.e) @ f.Vinv
    assert rel(ft.coef(0.1), dense(Separable(K.scalar_kernel, Tp), X, Y, 0.1)) < 1e-9
    assert f.truncate(None) is f


def test_eigen_factor_low_rank_solve_sees_lam_on_the_complement():
    Z = np.random.default_rng(2).normal(size=(10, 3))
    A, T = Z @ Z.T, np.diag([1.0, 2.0])
    s, U = eigh_psd(A, rcond=1e-10)                       # rank 3 of 10
    R = np.random.default_rng(3).normal(size=(10, 2))
    X = EigenFactor(s, U, np.diag(T), np.eye(2), np.eye(2), scale=2.0).solve(R, 0.5)
    np.testing.assert_allclose(2.0 * A @ X @ T + 0.5 * X, R, atol=1e-10)


@pytest.mark.parametrize("name", ["separable", "weighted", "sum", "linear_quadratic"])
def test_grouped_cholesky_matches_dense(name):
    K = KERNELS[name]
    X, Y = data()
    P = KernelParts(K)
    assert P.eig is not None
    assert rel(grouped_cholesky(P, X, Y, 0.1), dense(K, X, Y, 0.1)) < 1e-10


def test_grouped_cholesky_needs_commuting_parts():
    P = KernelParts(KERNELS["noncommuting"])
    assert P.eig is None and P.separable


@pytest.mark.parametrize("name", list(KERNELS))
@pytest.mark.parametrize("pc", ["separable", "jacobi", None])
def test_pcg_matches_dense_with_each_preconditioner(name, pc):
    K = KERNELS[name]
    X, Y = data()
    P = KernelParts(K)
    G = P.grams(X, X)
    M = {"separable": lambda: separable_preconditioner(P, G, 0.1), "jacobi": lambda: jacobi_preconditioner(P, X, 0.1),
         None: lambda: None}[pc]()
    Z, info = pcg(kernel_matvec(P, X, 0.1, G), Y * P.s, M, tol=1e-12)
    assert info["converged"] and info["history"][-1] <= 1e-12 and len(info["history"]) == info["iterations"] + 1
    assert rel(Z / P.s, dense(K, X, Y, 0.1)) < 1e-8


def test_pcg_warm_start_and_zero_right_hand_side():
    K = KERNELS["sum"]
    X, Y = data()
    P = KernelParts(K)
    mv = kernel_matvec(P, X, 0.1)
    C = dense(K, X, Y, 0.1)
    Z, info = pcg(mv, Y, X0=C, tol=1e-8)
    assert info["iterations"] == 0 and rel(Z, C) < 1e-12
    Z, info = pcg(mv, np.zeros_like(Y))
    assert info["iterations"] == 0 and not Z.any()
    Z, info = pcg(mv, Y, max_iter=2, tol=1e-14)
    assert info["iterations"] == 2 and not info["converged"]


@pytest.mark.parametrize("name", ["separable", "weighted", "sum", "linear_quadratic", "noncommuting"])
def test_nystrom_with_every_point_as_landmark_is_exact(name):
    K = KERNELS[name]
    X, Y = data(20)
    model = nystrom_fit(KernelParts(K), X, Y, 0.1, X, chunk=7)          # chunks smaller than n
    assert rel(model.predict(X[:6], chunk=4), K.apply(X[:6], X, dense(K, X, Y, 0.1))) < 1e-6


def test_nystrom_is_exact_ridge_for_the_approximate_kernel():
    K = KERNELS["separable"]
    X, Y = data(30)
    L = X[:8]
    z = NystromFeatures(K.scalar_kernel, L)
    Zf = z(X)
    C = np.linalg.solve(np.kron(Zf @ Zf.T, K.T) + 0.1 * np.eye(90), Y.reshape(-1)).reshape(Y.shape)
    model = nystrom_fit(KernelParts(K), X, Y, 0.1, L)
    assert rel(model.predict(X[:5]), (z(X[:5]) @ Zf.T) @ C @ K.T.T) < 1e-8
    assert z.rank <= 8


def test_symmetric_operator_and_grouping_rule():
    op = IntegralOperator(np.linspace(0, 1, 6))
    Ts = symmetric_operator(op.matrix, op.weights)
    np.testing.assert_array_equal(Ts, Ts.T)
    np.testing.assert_allclose(np.sort(np.linalg.eigvalsh(Ts)), np.sort(op.eig()[0]), atol=1e-10)
    e = np.linalg.eigvalsh(paper000_J(5, 0.3))[None, :]
    assert sorted(len(i) for _, i in group_columns(e)) == [1, 4]


def test_kernel_parts_surface_is_methods():
    P = KernelParts(KERNELS["linear_quadratic"])
    for name in ("grams", "apply_grams", "quad_diag", "inner", "apply"):       # real methods of the class (used by streaming)
        assert name in vars(KernelParts) and vars(KernelParts)[name].__name__ == name
    X, Y = data()
    C = np.random.default_rng(4).normal(size=(len(X), 3))
    np.testing.assert_allclose(P.apply(X[:5], X, C), KERNELS["linear_quadratic"].apply(X[:5], X, C), atol=1e-10)
    np.testing.assert_allclose(P.quad_diag(X, C), np.einsum("nij,nj,ni->n", KERNELS["linear_quadratic"].diag(X), C, C), atol=1e-10)


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), lam=st.floats(1e-3, 10.0), mu=st.floats(0.0, 1.0))
def test_all_routes_agree_on_random_commuting_sums(seed, lam, mu):
    "The floor-1 solver agreement: eigen factor (one part), grouped Cholesky, PCG and Nystrom (p = n) give one solution."
    K = SumKernel([gaussian_times_J(3, 0.3), Separable(RBF(0.7), paper000_J(3, mu))], [0.5, 0.5])
    X, Y = data(18, seed=seed)
    C = dense(K, X, Y, lam)
    P = KernelParts(K)
    assert rel(grouped_cholesky(P, X, Y, lam), C) < 1e-8
    Z, _ = pcg(kernel_matvec(P, X, lam), Y, separable_preconditioner(P, P.grams(X, X), lam), tol=1e-13)
    assert rel(Z, C) < 1e-7
    assert rel(nystrom_fit(P, X, Y, lam, X).predict(X), K.apply(X, X, C)) < 1e-5


@pytest.mark.parametrize("precond", ["separable", "nystrom", None])
@pytest.mark.parametrize("kind", ["separable", "sum"])
def test_masked_solve_equals_the_dense_masked_solve(kind, precond):
    "Issue 20: the masked system (P (K + lam I) P^T) a = P y by PCG equals the literal dense masked solve to 1e-8."
    from ovk_nb.kernels import Linear
    from ovk_nb.linalg import masked_solve, masked_solve_dense
    rng = np.random.default_rng(7)
    X, Y = rng.normal(size=(50, 3)), rng.normal(size=(50, 4))
    Y[rng.random(Y.shape) < 0.3] = np.nan
    Y[[3, 17]] = np.nan                                    # whole rows missing
    k = (Separable(RBF(0.4), np.cov(rng.normal(size=(4, 9)))) if kind == "separable" else
         SumKernel([Separable(RBF(0.4), np.eye(4)), Separable(Linear(), np.ones((4, 4)))]))
    Cd = masked_solve_dense(k, X, Y, 1e-2)
    C, info = masked_solve(KernelParts(k), X, Y, 1e-2, tol=1e-13, precond=precond, n_landmarks=25)
    assert info["converged"] and info["n_observed"] == int((~np.isnan(Y)).sum())
    assert (C[np.isnan(Y)] == 0).all()
    assert np.abs(C - Cd).max() <= 1e-8 * np.abs(Cd).max()
    C0, _ = masked_solve(KernelParts(k), X, np.where(np.isnan(Y), 0.0, Y), 1e-2, tol=1e-13)
    assert np.abs(C0 - C).max() > 1e-3                      # the mask matters (a zero is not a missing entry)


def test_masked_solve_no_missing_is_the_ridge_solve_and_bad_inputs():
    from ovk_nb.linalg import masked_solve
    rng = np.random.default_rng(8)
    X, Y = rng.normal(size=(30, 2)), rng.normal(size=(30, 3))
    k = Separable(RBF(0.5), np.eye(3) + 0.5)
    C, info = masked_solve(KernelParts(k), X, Y, 0.1, tol=1e-13)
    assert info["iterations"] <= 2                         # the preconditioner is the exact inverse here
    np.testing.assert_allclose(C, dense(k, X, Y, 0.1), atol=1e-10)
    with pytest.raises(ValueError, match="Y"):
        masked_solve(KernelParts(k), X, np.where(Y > 1, np.inf, Y), 0.1)
    with pytest.raises(ValueError, match="Y"):
        masked_solve(KernelParts(k), X, Y[:, :2], 0.1)
    with pytest.raises(ValueError, match="lam"):
        masked_solve(KernelParts(k), X, Y, 0.0)
    with pytest.raises(ValueError, match="precond"):
        masked_solve(KernelParts(k), X, Y, 0.1, precond="ilu")
    C, _ = masked_solve(KernelParts(k), X, np.full_like(Y, np.nan), 0.1)
    assert (C == 0).all()


def test_masked_logdet_slq_accuracy():
    """Stochastic Lanczos quadrature is approximate: on a 40 x 4 masked system (30% and one row missing) with 60 probes the
    estimate lies within 4 standard errors of the exact slogdet (measured relative errors 1-3%, standard error ~2)."""
    from ovk_nb.linalg import masked_logdet_slq
    rng = np.random.default_rng(3)
    X, Y = rng.normal(size=(40, 3)), rng.normal(size=(40, 4))
    M = rng.random(Y.shape) >= 0.3
    M[5] = False
    k = Separable(RBF(0.3), np.cov(rng.normal(size=(4, 9))))
    K = k.gram(X)[np.ix_(M.ravel(), M.ravel())] + 0.05 * np.eye(int(M.sum()))
    exact = np.linalg.slogdet(K)[1]
    est, se = masked_logdet_slq(KernelParts(k), X, M, 0.05, n_probes=60)
    assert 0 < se < 0.05 * abs(exact)
    assert abs(est - exact) <= 4 * se
    full, _ = masked_logdet_slq(KernelParts(k), X, np.ones_like(M), 0.05, n_probes=60)
    assert abs(full - exact) > 4 * se                      # the mask is what is estimated


# ---- the thread policy (issue 34): our own work is not load; the user's limit is the ceiling ----
def _idle_over(p, s, n=2):
    "idle_cores over one window from CPU sample p to s on n CPUs, the 1-minute load average at 2 (what our own fit left)."
    import os
    from unittest import mock
    import ovk_nb.linalg as la
    la._IDLE.clear()
    la._IDLE["sample"] = p
    with mock.patch.object(la, "_cpu_sample", lambda: s), mock.patch.object(la, "_n_cpus", lambda: n), \
         mock.patch.object(os, "getloadavg", lambda: (2.0, 2.0, 2.0)):
        try:
            return la.idle_cores()
        finally:
            la._IDLE.clear()


def test_idle_cores_does_not_count_our_own_work():
    """A fit of ours that kept both cores busy (load average 2) leaves them idle for the next fit; another process's
    work does count, and a share of a core is a share."""
    assert _idle_over((0.0, 100.0, 10.0), (1.0, 102.0, 12.0)) == 2.0       # all the busy time was ours
    assert _idle_over((0.0, 100.0, 10.0), (1.0, 102.0, 10.0)) == 0.0       # all of it another process's
    assert abs(_idle_over((0.0, 100.0, 10.0), (2.0, 102.0, 11.0)) - 1.5) < 1e-12  # 1 of 2 busy-seconds ours over 2 s
    assert _idle_over((0.0, 100.0, 10.0), (1.0, 100.0, 10.5)) == 2.0       # tick rounding: never more idle than CPUs


def test_idle_cores_cache_window_and_fallback():
    """A measurement is reused for IDLE_CACHE_S; a stale previous sample is replaced by a fresh short window; without
    /proc/stat every CPU counts as idle."""
    from unittest import mock
    import ovk_nb.linalg as la
    la._IDLE.clear()
    try:
        samples = iter([(100.0, 50.0, 1.0), (100.05, 50.1, 1.0)])        # a fresh window: 0.1 busy-s of others in 0.05 s
        with mock.patch.object(la, "_cpu_sample", lambda: next(samples)), mock.patch.object(la, "_n_cpus", lambda: 2), \
             mock.patch.object(la.time, "sleep", lambda s: None), mock.patch.object(la.time, "monotonic", lambda: 100.05):
            first = la.idle_cores()
            again = la.idle_cores()                                       # within IDLE_CACHE_S: no sample read
        assert abs(first) < 1e-9 and again == first
        la._IDLE.clear()
        with mock.patch.object(la, "_cpu_sample", lambda: None), mock.patch.object(la, "_n_cpus", lambda: 3):
            assert la.idle_cores() == 3.0
    finally:
        la._IDLE.clear()


def test_factor_threads_policy_and_user_ceiling():
    """1 below min_size; from it one thread per idle core (1.5 idle cores start a second), at most the threads BLAS has:
    under the user's threadpool_limits(1) a large routine stays on one thread on an idle machine."""
    from unittest import mock
    from threadpoolctl import threadpool_info, threadpool_limits
    import ovk_nb.linalg as la
    with mock.patch.object(la, "blas_ceiling", lambda: 2):
        for idle, want in ((0.0, 1), (1.49, 1), (1.5, None), (2.0, None)):
            with mock.patch.object(la, "idle_cores", lambda: idle):
                assert la.factor_threads(10 ** 6, 1000) == want and la.factor_threads(999, 1000) == 1
    with mock.patch.object(la, "blas_ceiling", lambda: 16), mock.patch.object(la, "idle_cores", lambda: 5.2):
        assert la.factor_threads(10 ** 6, 1000) == 5
    with threadpool_limits(1), mock.patch.object(la, "idle_cores", lambda: 64.0):
        assert la.blas_ceiling() == 1
        with la.blas_threads(la.factor_threads(10 ** 6, 1000)):
            assert {p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"} == {1}


def test_factor_threads_ceiling_read_before_a_callers_own_limit():
    """A caller that holds blas_threads(1) for its small work (MVML's fit) passes the ceiling it read before: the idle
    cores up to that ceiling, one thread when the others are busy, the user's 1 when that was the ceiling."""
    from unittest import mock
    import ovk_nb.linalg as la
    with la.blas_threads(1), mock.patch.object(la, "idle_cores", lambda: 2.0):
        assert la.factor_threads(10 ** 6, 1000) is None                # the caller's own 1 read as the ceiling
        assert la.factor_threads(10 ** 6, 1000, ceiling=4) == 2        # the 2 idle cores of a 4-thread BLAS
        assert la.factor_threads(10 ** 6, 1000, ceiling=2) is None     # all of them: the ceiling itself
        assert la.factor_threads(10 ** 6, 1000, ceiling=1) is None and la.factor_threads(999, 1000, ceiling=4) == 1
    with mock.patch.object(la, "idle_cores", lambda: 0.3):
        assert la.factor_threads(10 ** 6, 1000, ceiling=4) == 1


def test_blas_ceiling_reads_the_environment():
    "OPENBLAS_NUM_THREADS=1 set before start is the ceiling, whatever the machine has."
    import os, subprocess, sys
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    out = subprocess.run([sys.executable, "-c", "import ovk_nb.linalg as la; print(la.blas_ceiling(), "
                          "la.factor_threads(10**9, 1))"], env=env, capture_output=True, text=True, check=True).stdout
    assert out.split() == ["1", "None"]


def test_idle_cores_after_fork_does_not_use_the_parents_sample():
    "A sample taken by another process (a forked parent: its CPU time, not ours) starts a fresh window."
    from unittest import mock
    import ovk_nb.linalg as la
    la._IDLE.clear()
    la._IDLE["sample"] = (99.0, 50.0, 40.0, -1)                          # the parent's: 40 CPU seconds we never used
    samples = iter([(100.0, 52.0, 0.5, 7), (100.05, 52.0, 0.5, 7)])     # ours: nothing busy in a fresh 0.05 s window
    try:
        with mock.patch.object(la, "_cpu_sample", lambda: next(samples)), mock.patch.object(la, "_n_cpus", lambda: 2), \
             mock.patch.object(la.time, "sleep", lambda s: None):
            assert la.idle_cores() == 2.0
    finally:
        la._IDLE.clear()


# --- issue 34: one Cholesky for the shifted groups of a single Gram, the others by PCG on its factor ---------------------

from ovk_nb import linalg as _linalg  # noqa: E402


@pytest.mark.parametrize("d", [2, 4, 10])
@pytest.mark.parametrize("lam", [0.1, 1e-3])
def test_grouped_cholesky_pcg_shifts_match_dense(d, lam):
    "Every non-factored group by PCG (6)-(7): the dense solution to the accuracy the Cholesky route is held to."
    K = Separable(RBF(0.5), paper000_J(d))
    X, Y = data(40, d=d, seed=d)
    C = dense(K, X, Y, lam)
    Z = grouped_cholesky(KernelParts(K), X, Y, lam, shift_solve="pcg")
    assert rel(Z, C) < 1e-10
    assert rel(Z, grouped_cholesky(KernelParts(K), X, Y, lam, shift_solve="cholesky")) < 1e-10
    G = K.gram(X)                                         # the residual is as small as a direct solve's
    r = np.linalg.norm((G + lam * np.eye(len(G))) @ Z.reshape(-1) - Y.reshape(-1)) / np.linalg.norm(Y)
    assert r < 1e3 * np.finfo(float).eps * len(G)


def test_grouped_cholesky_pcg_three_groups_and_a_zero_column():
    "T with three distinct eigenvalues and a zero one: the zero column is Y / lam, the others agree with dense."
    Q = np.linalg.qr(np.random.default_rng(0).normal(size=(4, 4)))[0]
    T = Q @ np.diag([0.0, 0.5, 1.0, 3.0]) @ Q.T
    K = Separable(RBF(0.7), T)
    X, Y = data(30, d=4, seed=3)
    P = KernelParts(K)
    assert len(group_columns(P.eig[0])) == 4
    import warnings
    from ovk_nb.linalg import IllConditionedWarning
    with warnings.catch_warnings():                       # (9): a well-conditioned problem does not warn
        warnings.simplefilter("error", IllConditionedWarning)
        Z = grouped_cholesky(P, X, Y, 0.05, shift_solve="pcg")
    assert rel(Z, dense(K, X, Y, 0.05)) < 1e-10


def test_shift_plan_follows_the_flop_count():
    "(8): for J, d = 4 the 3-column group is factored and the 1-column one goes by PCG once n > 6 w (m + 1)."
    s = [1e-3 / 0.9, 1e-3 / 1.3]
    m = _linalg._pcg_iterations(1.3 / 0.9)
    edge = 6 * _linalg.BLAS2_PENALTY * (m + 1)
    assert _linalg._shift_plan(s, [3, 1], int(edge) + 1) == (0, [1])
    assert _linalg._shift_plan(s, [3, 1], int(edge) - 1) == (0, [])
    assert _linalg._shift_plan(s, [1, 3], 5000) == (1, [0])            # the larger group is factored
    assert _linalg._shift_plan([1.0, 2.0, 4.0], [1, 1, 1], 10 ** 5)[0] == 1   # the middle shift
    assert _linalg._shift_plan(s, [3, 1], 10 ** 6, "cholesky") == (0, [])
    assert _linalg._pcg_iterations(1.0) == 1 and _linalg._pcg_iterations(4.0) > _linalg._pcg_iterations(2.0)


def test_grouped_cholesky_auto_uses_pcg_at_large_n(monkeypatch):
    "At n past (8)'s edge 'auto' runs PCG, and its answer equals the one-Cholesky-per-group answer."
    calls = []
    orig = _linalg._shifted_pcg
    monkeypatch.setattr(_linalg, "_shifted_pcg", lambda *a: calls.append(a[2].shape) or orig(*a))
    K = gaussian_times_J(4, 0.3)
    X, Y = data(1300, p=4, d=4, seed=5)
    P = KernelParts(K)
    Z = grouped_cholesky(P, X, Y, 0.1)
    assert calls == [(1300, 1)]
    assert rel(Z, grouped_cholesky(P, X, Y, 0.1, shift_solve="cholesky")) < 1e-10


def test_grouped_cholesky_pcg_falls_back_to_a_cholesky(monkeypatch):
    "A PCG that breaks down or reaches its cap (None) leaves the group to its own Cholesky: still the dense answer."
    monkeypatch.setattr(_linalg, "_shifted_pcg", lambda *a: None)
    K = Separable(RBF(0.5), paper000_J(3))
    X, Y = data(30, seed=1)
    assert rel(grouped_cholesky(KernelParts(K), X, Y, 0.1, shift_solve="pcg"), dense(K, X, Y, 0.1)) < 1e-10


def test_shifted_pcg_stops_at_its_cap():
    "With a cap of 2 m + 2 the bound's iterations for a far too small rho, CG returns None rather than an iterate."
    rng = np.random.default_rng(0)
    A = rng.normal(size=(60, 60)); A = A @ A.T + 1e-3 * np.eye(60)
    U = np.linalg.cholesky(A).T
    assert _linalg._shifted_pcg(U, 50.0, rng.normal(size=(60, 2)), np.abs(A).sum(0).max(), 1.0, 1.0) is None
    X = _linalg._shifted_pcg(U, 50.0, B := rng.normal(size=(60, 2)), np.abs(A).sum(0).max(), 1e8, 5e4)
    assert rel(X, np.linalg.solve(A + 50.0 * np.eye(60), B)) < 1e-12


def test_grouped_cholesky_pcg_warns_when_ill_conditioned():
    "Duplicated rows at lam = 1e-12: the factored and the PCG groups' conditions are large, the warning is issued."
    from ovk_nb.linalg import IllConditionedWarning
    K = Separable(RBF(0.5), paper000_J(3))
    X, Y = data(20, seed=2)
    X = np.vstack([X, X])
    Y = np.vstack([Y, Y])
    with pytest.warns(IllConditionedWarning):
        grouped_cholesky(KernelParts(K), X, Y, 1e-12, shift_solve="pcg")


def test_grouped_cholesky_rejects_an_unknown_shift_solve():
    with pytest.raises(ValueError, match="shift_solve"):
        grouped_cholesky(KernelParts(KERNELS["separable"]), *data(), 0.1, shift_solve="lanczos")


def test_shift_plan_with_a_shift_ratio_beyond_cg_factors_every_group():
    "A ratio of shifts so large that the Chebyshev rate rounds to 1 (an OVKRidgeCV lam path met it) means a Cholesky each."
    from ovk_nb.linalg import PCG_NEVER, _pcg_iterations, _shift_plan
    for rho in (1e40, float("inf"), float("nan")):
        assert _pcg_iterations(rho) == PCG_NEVER
    f, pcg_groups = _shift_plan([1e-20, 1e30], [1, 3], 3000)
    assert pcg_groups == []
