"""The masked Nystrom preconditioner (issue 31.4): exact at r = n, fewer PCG iterations than the unmasked ones."""
import numpy as np
import pytest

from ovk_nb.gp import MaskedNystromPreconditioner, StochasticMaskedLikelihood
from ovk_nb.kernels import RBF, Separable
from ovk_nb.linalg import KernelParts, masked_solve, masked_solve_dense

EPS = np.finfo(float).eps


def _case(n, d=4, frac=0.3, seed=0, patterns=None):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-3, 3, (n, 3))
    W = rng.normal(size=(d, d))
    T = W @ W.T / d + 0.1 * np.eye(d)
    Y = np.sin(X @ rng.normal(size=(3, d))) + 0.1 * rng.normal(size=(n, d))
    if patterns is None:
        Y[rng.random(Y.shape) < frac] = np.nan
    else:                                                   # each row one of the given patterns (True = observed)
        Y[~np.asarray(patterns)[rng.integers(len(patterns), size=n)]] = np.nan
    Y[:3] = np.nan
    return X, Y, T


@pytest.mark.parametrize("patterns", [None, [[True, True, False], [False, True, True]]])   # per output / per pattern
@pytest.mark.parametrize("noise", [0.1, [0.1, 0.3, 0.05]])
def test_full_rank_is_the_exact_inverse(patterns, noise):
    "r = n: (D_o + P (K_x kron T) P^T)^{-1} and its log-determinant, against the dense observed block."
    X, Y, T = _case(40, d=3, patterns=patterns)
    M = ~np.isnan(Y)
    D = np.broadcast_to(np.asarray(noise, float), (3,))
    Ko = Separable(RBF(0.5), T).gram(X)[np.ix_(M.ravel(), M.ravel())] + np.diag(np.tile(D, 40)[M.ravel()])
    pc = MaskedNystromPreconditioner(RBF(0.5), T, X, M, noise, n_landmarks=40, rcond=1e-14)
    R = np.where(M, np.random.default_rng(3).normal(size=M.shape), 0.0)
    ref = np.linalg.solve(Ko, R[M])
    cond = np.linalg.cond(Ko)
    assert np.abs(pc(R)[M] - ref).max() <= 1e3 * EPS * cond * np.abs(ref).max()
    assert np.all(pc(R)[~M] == 0)
    assert abs(pc.logdet_ - np.linalg.slogdet(Ko)[1]) <= 1e3 * EPS * cond * len(Ko)
    S = np.stack([R, 2 * R], 1)                             # an (n, N, d) stack: each slice on its own
    np.testing.assert_allclose(pc(S)[:, 1], 2 * pc(R), rtol=0, atol=1e3 * EPS * cond * np.abs(ref).max())


def test_masked_solve_with_it_equals_dense_and_needs_fewer_iterations():
    """masked_solve with the masked preconditioner (r = n/2) equals the dense masked solve and needs at most 60% of the
    iterations of the unmasked eigen-solve (measured here: 21 against 74; at n = 2000, r = 1000: 20 against 78)."""
    X, Y, T = _case(400)
    K = Separable(RBF(0.5), T)
    P = KernelParts(K)
    ref = masked_solve_dense(K, X, Y, 0.1)
    pc = MaskedNystromPreconditioner(RBF(0.5), T, X, ~np.isnan(Y), 0.1, n_landmarks=200)
    C, info = masked_solve(P, X, Y, 0.1, tol=1e-10, precond=pc)
    _, info0 = masked_solve(P, X, Y, 0.1, tol=1e-10, precond="separable")
    assert info["converged"]
    np.testing.assert_allclose(C, ref, atol=1e-8 * np.abs(ref).max())
    assert info["iterations"] <= 0.6 * info0["iterations"]


def test_default_rank_and_bad_noise():
    "The default r: at most half the rows (never the n d x n d system); a noise <= 0 or NaN is a ValueError naming it."
    X, Y, T = _case(30)
    M = ~np.isnan(Y)
    assert MaskedNystromPreconditioner(RBF(0.5), T, X, M, 0.1).rank_ <= 15
    for bad in (0.0, -1.0, np.nan, [0.1, 0.1, 0.1, -0.1]):
        with pytest.raises(ValueError, match="noise"):
            MaskedNystromPreconditioner(RBF(0.5), T, X, M, bad)


def test_stochastic_likelihood_uses_it_and_pickles():
    "The stochastic likelihood's PCG is preconditioned by it; the likelihood pickles (the operator dropped) and agrees."
    import pickle
    X, Y, T = _case(60, d=3)
    K = Separable(RBF(0.5), T)
    lik = StochasticMaskedLikelihood(K, X, Y, n_probes=4, random_state=0)
    theta = np.r_[K.theta, np.log(0.1)]
    f = lik(theta, False)
    assert isinstance(lik.operator(theta)[4], MaskedNystromPreconditioner)
    assert pickle.loads(pickle.dumps(lik))(theta, False) == pytest.approx(f, rel=1e-10)
