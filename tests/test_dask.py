"""The Dask paths against their single-machine twins, on a real LocalCluster (2 worker processes, no mocks): OVKRidge's Nystrom
and exact CG fits, KDE pre-images over a Dask candidate set, block Nystrom features."""
import numpy as np
import pytest

pytest.importorskip("dask.array")
distributed = pytest.importorskip("dask.distributed")
import dask.array as da  # noqa: E402

from ovk_nb.distributed import (dask_argmin, dask_block_nystrom, dask_block_nystrom_normal_equations,  # noqa: E402
                                dask_cg_fit)
from ovk_nb.kde import OVKDE, CortesKDE, WestonKDE  # noqa: E402
from ovk_nb.kernels import RBF, IntegralOperator, Separable, gaussian_times_J, linear_quadratic  # noqa: E402
from ovk_nb.linalg import BlockNystrom, KernelParts  # noqa: E402
from ovk_nb.ridge import OVKRidge  # noqa: E402


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                       silence_logs=40)
    c = distributed.Client(cluster)
    try:
        yield c
    finally:
        c.close()
        cluster.close()


def data(n=2000, p=5, d=3, seed=0):
    r = np.random.default_rng(seed)
    X = r.random((n, p))
    Y = np.sin(3 * X[:, :d]) + 0.1 * r.normal(size=(n, d))
    return X, Y


@pytest.mark.parametrize("kernel", [gaussian_times_J(3, gamma=1.0), linear_quadratic(3, 0.3)], ids=["separable", "sum"])
def test_dask_equals_single_machine(client, kernel):
    X, Y = data()
    ref = OVKRidge(kernel, lam=0.1, solver="nystrom", n_components=100, random_state=0).fit(X, Y)
    Xd = da.from_array(X, chunks=(300, 5))                  # 7 row blocks, the last one short
    Yd = da.from_array(Y, chunks=(300, 3))
    m = OVKRidge(kernel, lam=0.1, n_components=100, random_state=0).fit(Xd, Yd)
    assert m.solver_ == "nystrom"
    np.testing.assert_array_equal(m.landmarks_, ref.landmarks_)
    np.testing.assert_allclose(m.predict(X), ref.predict(X), rtol=0, atol=1e-10)
    F = m.predict(Xd)
    assert isinstance(F, da.Array) and F.chunks[0] == Xd.chunks[0]
    np.testing.assert_allclose(F.compute(), ref.predict(X), rtol=0, atol=1e-10)
    assert client.run(lambda: 1)                            # the work ran on the 2 workers of the cluster
    assert len(client.scheduler_info()["workers"]) == 2


def test_dask_1d_numpy_targets_and_refusals(client):
    X, Y = data(n=600, d=1)
    Xd = da.from_array(X, chunks=200)
    k = gaussian_times_J(1, gamma=1.0)
    m = OVKRidge(k, lam=0.1, n_components=50, random_state=1).fit(Xd, Y[:, 0])
    ref = OVKRidge(k, lam=0.1, solver="nystrom", n_components=50, random_state=1).fit(X, Y[:, 0])
    assert m.predict(Xd).shape == (600,)
    np.testing.assert_allclose(m.predict(Xd).compute(), ref.predict(X), rtol=0, atol=1e-10)
    with pytest.raises(ValueError, match="solver='nystrom'"):
        OVKRidge(k, lam=0.1, solver="cholesky").fit(Xd, Y[:, 0])
    bad = X.copy(); bad[10, 0] = np.inf
    with pytest.raises(ValueError, match="NaN or infinity"):
        OVKRidge(k, lam=0.1, n_components=50).fit(da.from_array(bad, chunks=200), Y[:, 0])


CG_KERNELS = [gaussian_times_J(3, gamma=1.0), linear_quadratic(3, 0.3), Separable(RBF(1.0), IntegralOperator(np.linspace(0, 1, 3)))]


@pytest.mark.parametrize("kernel", CG_KERNELS, ids=["separable", "sum", "weighted"])
def test_dask_cg_equals_single_machine_cg(client, kernel):
    "solver='cg' on a Dask X: the matvec on the row blocks (Gram rows cached on the workers), the same answer as on one machine."
    X, Y = data(n=500)
    ref = OVKRidge(kernel, lam=0.5, solver="cg", tol=1e-12).fit(X, Y)
    Xd = da.from_array(X, chunks=(130, 5))                  # 4 row blocks, the last one short
    m = OVKRidge(kernel, lam=0.5, solver="cg", tol=1e-12).fit(Xd, da.from_array(Y, chunks=(130, 3)))
    assert m.solver_ == "cg" and m.n_iter_ > 1
    np.testing.assert_allclose(m.coef_, ref.coef_, rtol=0, atol=1e-10 * np.abs(ref.coef_).max())
    np.testing.assert_allclose(m.predict(X[:100]), ref.predict(X[:100]), rtol=0, atol=1e-10)
    F = m.predict(da.from_array(X[:100], chunks=40))
    assert isinstance(F, da.Array)
    np.testing.assert_allclose(F.compute(), ref.predict(X[:100]), rtol=0, atol=1e-10)


def test_dask_cg_recomputed_grams_and_refusals(client):
    "cache_grams=False recomputes the Gram rows at each product: same iterates; the separable preconditioner is refused."
    X, Y = data(n=400)
    K = linear_quadratic(3, 0.3)
    ref = OVKRidge(K, lam=0.5, solver="cg", tol=1e-12, preconditioner="jacobi").fit(X, Y)
    Xd = da.from_array(X, chunks=(150, 5))
    C, info, Xn = dask_cg_fit(KernelParts(K), Xd, Y, 0.5, tol=1e-12, cache_grams=False)
    assert info["converged"] and not info["cache_grams"] and info["iterations"] > 1
    np.testing.assert_allclose(C, ref.coef_, rtol=0, atol=1e-10 * np.abs(ref.coef_).max())
    np.testing.assert_array_equal(Xn, X)
    with pytest.raises(ValueError, match="preconditioner='separable'"):
        OVKRidge(K, lam=0.5, solver="cg", preconditioner="separable").fit(Xd, Y)
    bad = X.copy(); bad[5, 2] = np.nan
    with pytest.raises(ValueError, match="NaN or infinity"):
        OVKRidge(K, lam=0.5, solver="cg").fit(da.from_array(bad, chunks=150), Y)


@pytest.mark.parametrize("est", [OVKDE(RBF(1.0), RBF(1.0), "conditional_covariance", lam=0.1),
                                 CortesKDE(RBF(1.0), RBF(0.5), lam=0.1), WestonKDE(RBF(1.0), RBF(0.5), lam=0.1, n_components=20)],
                         ids=["ovkde", "cortes", "weston"])
def test_kde_dask_candidates_equal_numpy_candidates(client, est):
    "A Dask candidate set is scored blockwise on the workers: the same pre-images as on the numpy candidates."
    r = np.random.default_rng(3)
    X, Y = data(n=150, d=2)
    cand = r.normal(size=(2300, 2))
    est.fit(X, Y)
    Xt = r.random((70, 5))
    want = est.predict(Xt, cand)
    got = est.predict(Xt, da.from_array(cand, chunks=(500, 2)), batch_size=16)
    assert isinstance(got, np.ndarray)
    np.testing.assert_array_equal(got, want)
    y1 = OVKDE(RBF(1.0), RBF(1.0), lam=0.1).fit(X, Y[:, 0])
    np.testing.assert_array_equal(y1.predict(Xt, da.from_array(cand[:, 0], chunks=700)), y1.predict(Xt, cand[:, 0]))


def test_dask_argmin_ties_and_blocks(client):
    "The first block holding the minimum wins, so ties go to the lowest index as with np.argmin."
    r = np.random.default_rng(4)
    cand = np.round(r.normal(size=(333, 2)), 1)
    cand[200:] = cand[:133]                                  # exact duplicates in later blocks
    Q = r.normal(size=(41, 2))
    score = lambda b, q: ((q[:, None, :] - b[None, :, :]) ** 2).sum(-1)  # noqa: E731
    np.testing.assert_array_equal(dask_argmin(score, da.from_array(cand, chunks=50), Q, batch_size=9),
                                  np.argmin(score(cand, Q), axis=1))


def test_dask_block_nystrom_equals_block_nystrom(client):
    X, Y = data(n=900)
    bn = BlockNystrom([RBF(1.0), RBF(0.2)], X[:60])
    Xd = da.from_array(X, chunks=(250, 5))
    Z = dask_block_nystrom(bn, Xd)
    assert isinstance(Z, da.Array) and Z.chunks[0] == Xd.chunks[0]
    np.testing.assert_allclose(Z.compute(), bn(X), rtol=0, atol=1e-12)
    G, B = dask_block_nystrom_normal_equations(bn, Xd, Y)
    G0, B0 = bn.normal_equations(X, Y)
    np.testing.assert_allclose(G, G0, rtol=1e-12, atol=1e-10)
    np.testing.assert_allclose(B, B0, rtol=1e-12, atol=1e-10)
