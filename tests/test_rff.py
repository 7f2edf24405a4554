"""Operator-valued random Fourier features (issue 21.2): feature maps, the primal solve, the D^{-1/2} rate, Dask, contract."""
import pickle

import numpy as np
import pytest

from ovk_nb.kernels import RBF, CurlFreeRBF, DivFreeRBF, Laplacian, Separable, paper000_J
from ovk_nb.linalg import RandomFourierFeatures, rff_fit
from ovk_nb.ridge import OVKRidge

KERNELS = [Separable(RBF(0.8), paper000_J(3, 0.3)), Separable(RBF(0.8), np.diag([1.0, 2.0, 3.0, 4.0, 5.0])[:3, :3] + 0.1),
           CurlFreeRBF(0.8, 3), DivFreeRBF(0.8, 3)]


@pytest.mark.parametrize("kernel", KERNELS)
def test_features_approximate_the_kernel_and_the_solver_is_exact_on_them(kernel):
    rng = np.random.default_rng(0)
    X, Y = rng.uniform(-1, 1, size=(30, 3)), rng.normal(size=(30, 3))
    F = RandomFourierFeatures(kernel, 3, 20000, random_state=0)(X[:6])
    G = kernel.gram(X[:6])
    assert np.abs(np.einsum("iam,jbm->iajb", F, F).reshape(18, 18) - G).max() < 0.05 * np.abs(G).max()
    f = RandomFourierFeatures(kernel, 3, 25, random_state=1, center=X.mean(0))
    Phi = f(X)
    Kt = np.einsum("iam,jbm->iajb", Phi, Phi).reshape(90, 90)
    C = np.linalg.solve(Kt + 0.1 * np.eye(90), Y.ravel())
    np.testing.assert_allclose(f.solve(*f.terms(X, Y), 0.1).predict(X), (Kt @ C).reshape(30, 3), atol=1e-9)
    np.testing.assert_allclose(rff_fit(kernel, X, Y, 0.1, 25, 1, chunk=7).predict(X), f.solve(*f.terms(X, Y), 0.1).predict(X),
                               atol=1e-10)


@pytest.mark.parametrize("kernel", [CurlFreeRBF(), DivFreeRBF(), Separable(RBF(), None)])
def test_error_against_the_exact_fit_falls_like_D_to_the_minus_half(kernel):
    from ovk_nb.vector_fields import synthetic_flow
    X, Y, _, _ = synthetic_flow(200, noise=0.05, seed=2)
    g = np.linspace(-2, 2, 15)
    Xt = np.c_[np.repeat(g, 15), np.tile(g, 15)]
    exact = OVKRidge(kernel, lam=1.0, solver="dense").fit(X, Y).predict(Xt)
    err = [np.sqrt(np.mean([(np.linalg.norm(OVKRidge(kernel, lam=1.0, solver="rff", n_components=D, random_state=s)
                                            .fit(X, Y).predict(Xt) - exact) / np.linalg.norm(exact)) ** 2 for s in range(3)]))
           for D in (100, 400, 1600)]
    r1, r2 = err[0] / err[1], err[1] / err[2]
    assert 1.4 < r1 < 3.0 and 1.4 < r2 < 3.0, err                 # 2 per 4x D
    assert 2.6 < err[0] / err[2] < 7.0, err                        # 4 per 16x D


def test_estimator_route_attributes_pickle_and_bad_kernels():
    rng = np.random.default_rng(1)
    X, Y = rng.normal(size=(80, 2)), rng.normal(size=(80, 2))
    m = OVKRidge(CurlFreeRBF(), solver="rff", n_components=50, random_state=3).fit(X, Y)
    assert m.solver_ == "rff" and m.coef_ is None and m.n_components_ == 50
    np.testing.assert_array_equal(m.predict(X), OVKRidge(CurlFreeRBF(), solver="rff", n_components=50, random_state=3)
                                  .fit(X, Y).predict(X))
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(m)).predict(X), m.predict(X))
    for bad in (Separable(Laplacian(1.0), None), Separable(RBF(1.0), np.eye(2), weights=np.ones(2))):
        with pytest.raises(ValueError, match="Gaussian kernel"):
            OVKRidge(bad, solver="rff").fit(X, Y)


def test_dask_X_gives_the_numpy_fit():
    da = pytest.importorskip("dask.array")
    rng = np.random.default_rng(2)
    X, Y = rng.normal(size=(300, 3)), rng.normal(size=(300, 3))
    for K in (DivFreeRBF(0.5, 3), Separable(RBF(0.5), paper000_J(3, 0.2))):
        m = OVKRidge(K, lam=0.1, solver="rff", n_components=40, random_state=0).fit(X, Y)
        md = OVKRidge(K, lam=0.1, solver="rff", n_components=40, random_state=0).fit(da.from_array(X, chunks=70), Y)
        assert md.solver_ == "rff"
        np.testing.assert_allclose(md.predict(da.from_array(X, chunks=70)).compute(), m.predict(X), atol=1e-9)
        np.testing.assert_allclose(md.predict(X), m.predict(X), atol=1e-9)


def test_check_estimator_with_rff():
    from sklearn.utils.estimator_checks import check_estimator
    check_estimator(OVKRidge(solver="rff", n_components=30, random_state=0))
