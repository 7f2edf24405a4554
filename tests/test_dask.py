"""OVKRidge on Dask arrays against the single-machine Nystrom solver, on a real LocalCluster (2 worker processes)."""
import numpy as np
import pytest

pytest.importorskip("dask.array")
distributed = pytest.importorskip("dask.distributed")
import dask.array as da  # noqa: E402

from ovk_nb.kernels import gaussian_times_J, linear_quadratic  # noqa: E402
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
        OVKRidge(k, lam=0.1, solver="cg").fit(Xd, Y[:, 0])
    bad = X.copy(); bad[10, 0] = np.inf
    with pytest.raises(ValueError, match="NaN or infinity"):
        OVKRidge(k, lam=0.1, n_components=50).fit(da.from_array(bad, chunks=200), Y[:, 0])
