"""Issue 34 for the GP's Nystrom route: its pass over X runs its chunks side by side on the thread policy's threads, the
rest of the fit on one thread (as installed on 2 cores, the whole fit on two BLAS threads took 17-20 s against 8.8-10 s on
one: the m x m work and the small per-chunk products thrashed)."""
import numpy as np
import pytest
from threadpoolctl import threadpool_limits

import ovk_nb.gp as G
from ovk_nb.kernels import RBF
from ovk_nb.linalg import blas_ceiling as _blas      # the threads every BLAS library reports now


def _data(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, size=(n, 3))
    Y = np.c_[np.sin(2 * X[:, 0]), np.cos(X[:, 1]) * X[:, 2], X[:, 0] * X[:, 1]] + 0.1 * rng.normal(size=(n, 3))
    return X, Y


@pytest.mark.parametrize("grad", [True, False])
def test_pass_side_by_side_equals_one_pass(grad):
    """The chunks side by side on two or three threads, their sums added in chunk order, give the one-thread pass's sums
    to the bit: (Phi^T Phi, Phi^T Y, E, F)."""
    X, Y = _data(5000)
    Z = X[:: 50]
    sk = RBF(0.7)
    K = sk(Z, Z) + 1e-8 * np.eye(len(Z))
    L = np.linalg.cholesky(K)
    rows = [slice(i, min(i + 256, len(X))) for i in range(0, len(X), 256)]
    with threadpool_limits(1):
        one = G._bandwidth_pass(X, Y, Z, sk, L, rows, grad=grad)
    for workers in (2, 3):
        many = G._bandwidth_pass(X, Y, Z, sk, L, rows, grad=grad, workers=workers)
        for a, b in zip(one, many):
            if a is None:
                assert b is None
            else:
                assert np.array_equal(a, b)


def test_nystrom_fit_threads_only_its_pass(monkeypatch):
    """With the policy's threads (an idle machine, a ceiling of 2), the pass gets 2 workers of one BLAS thread each and the
    rest of the fit one thread; the fit equals the one-thread fit (LML to 1e-10, predictions to 1e-8), the workers are
    not kept after the fit, and a user's threadpool_limits(1) keeps the whole fit on one worker."""
    X, Y = _data()
    seen = {"workers": set(), "sums": set(), "rest": set()}
    bp, sums, state = G._bandwidth_pass, G._bandwidth_sums, G.NystromLikelihood.state

    def pass_spy(*a, workers=1, **k):
        seen["workers"].add(workers)
        return bp(*a, workers=workers, **k)

    def sums_spy(*a, **k):
        seen["sums"].add(_blas())
        return sums(*a, **k)

    def state_spy(self, *a, **k):
        seen["rest"].add(_blas())
        return state(self, *a, **k)

    ref = G.OVKGaussianProcess(method="nystrom", n_components=60, random_state=0)
    with threadpool_limits(1):
        ref.fit(X, Y)
    monkeypatch.setattr(G, "_bandwidth_pass", pass_spy)
    monkeypatch.setattr(G, "_bandwidth_sums", sums_spy)
    monkeypatch.setattr(G.NystromLikelihood, "state", state_spy)
    monkeypatch.setattr(G, "factor_threads", lambda *a, **k: None)          # an idle machine: the ceiling
    monkeypatch.setattr(G, "blas_ceiling", lambda: 2)
    monkeypatch.setattr(G, "ONE_THREAD_N", 50)
    gp = G.OVKGaussianProcess(method="nystrom", n_components=60, random_state=0).fit(X, Y)
    assert seen["workers"] == {2} and seen["sums"] == {1} and seen["rest"] == {1}, seen
    assert gp._lik.__dict__.get("_pass_workers") is None
    assert abs(gp.log_marginal_likelihood_value_ - ref.log_marginal_likelihood_value_) <= 1e-10 * abs(
        ref.log_marginal_likelihood_value_)
    Xt = X[:50] + 0.01
    np.testing.assert_allclose(gp.predict(Xt), ref.predict(Xt), rtol=1e-8, atol=1e-10)
    monkeypatch.setattr(G, "factor_threads", lambda *a, **k: 1)             # a user's cap (or a busy machine): one
    seen["workers"].clear()
    G.OVKGaussianProcess(method="nystrom", n_components=60, random_state=0).fit(X, Y)
    assert seen["workers"] == {1}, seen
