"""Curl-free and divergence-free Gaussian kernels (issue 21.1): closed form, finite-difference Hessian, structured CG,
structure of the fits, the Helmholtz split."""
import numpy as np
import pytest

from ovk_nb.kernels import RBF, CurlFreeRBF, DivFreeRBF, Separable, SumKernel
from ovk_nb.ridge import OVKRidge, ridge_dense_reference
from ovk_nb.vector_fields import helmholtz_kernel, helmholtz_parts, synthetic_flow


def hessian_fd(f, x, h=1e-4):
    p = len(x); E = np.eye(p) * h
    return np.array([[(f(x + E[a] + E[b]) - f(x + E[a] - E[b]) - f(x - E[a] + E[b]) + f(x - E[a] - E[b])) / (4 * h * h)
                      for b in range(p)] for a in range(p)])


def jacobian_fd(predict, X, h=1e-5):
    return np.stack([(predict(X + h * e) - predict(X - h * e)) / (2 * h) for e in np.eye(X.shape[1])], axis=2)


@pytest.mark.parametrize("p", [2, 3])
def test_gram_equals_closed_form_and_fd_hessian(p):
    rng = np.random.default_rng(p)
    X, Y, g = rng.normal(size=(5, p)), rng.normal(size=(4, p)), 0.6
    psi = lambda d: np.exp(-g * d @ d)
    Gc, Gd = CurlFreeRBF(g, p).gram(X, Y), DivFreeRBF(g, p).gram(X, Y)
    for i in range(5):
        for j in range(4):
            d = X[i] - Y[j]; r2 = d @ d
            H = hessian_fd(psi, d)
            bc, bd = Gc[p*i:p*i+p, p*j:p*j+p], Gd[p*i:p*i+p, p*j:p*j+p]
            np.testing.assert_allclose(bc, 2 * g * psi(d) * (np.eye(p) - 2 * g * np.outer(d, d)), atol=1e-13)
            np.testing.assert_allclose(bd, 2 * g * psi(d) * (2 * g * np.outer(d, d) + (p - 1 - 2 * g * r2) * np.eye(p)),
                                       atol=1e-13)
            np.testing.assert_allclose(bc, -H, atol=1e-6)
            np.testing.assert_allclose(bd, H - np.trace(H) * np.eye(p), atol=1e-6)
    C = rng.normal(size=(4, p))
    for K in (CurlFreeRBF(g, p), DivFreeRBF(g, p)):
        np.testing.assert_allclose(K.apply(X, Y, C).ravel(), K.gram(X, Y) @ C.ravel(), atol=1e-12)


@pytest.mark.parametrize("kernel", [CurlFreeRBF(0.5), DivFreeRBF(0.5), helmholtz_kernel(0.5, (1.0, 0.4))])
def test_cg_equals_the_dense_reference(kernel):
    X, Y, _, _ = synthetic_flow(520, noise=0.05, seed=0)           # n p = 1040 > 1000: 'auto' is CG
    m = OVKRidge(kernel, lam=1e-3, center_y=False, n_components=100, random_state=0).fit(X, Y)
    assert m.solver_ == "cg" and m.n_iter_ < 60, (m.solver_, m.n_iter_)
    C = ridge_dense_reference(m.kernel_, X, Y, 1e-3)
    np.testing.assert_allclose(m.coef_, C, atol=1e-6 * np.abs(C).max())
    plain = OVKRidge(kernel, lam=1e-3, center_y=False, solver="cg", preconditioner=None).fit(X, Y)
    assert plain.n_iter_ > 3 * m.n_iter_                            # the Nystrom preconditioner helps
    assert OVKRidge(kernel, lam=1e-3).fit(X[:100], Y[:100]).solver_ == "dense"


def test_fits_are_curl_free_and_divergence_free():
    X, Y, _, _ = synthetic_flow(120, noise=0.05, seed=1)
    Xq = np.random.default_rng(2).uniform(-2, 2, size=(15, 2))
    for solver in ("dense", "cg", "rff"):
        Jc = jacobian_fd(OVKRidge(CurlFreeRBF(), lam=1e-3, solver=solver, random_state=0).fit(X, Y).predict, Xq)
        Jd = jacobian_fd(OVKRidge(DivFreeRBF(), lam=1e-3, solver=solver, random_state=0).fit(X, Y).predict, Xq)
        assert np.abs(Jc - Jc.transpose(0, 2, 1)).max() < 1e-6 * np.abs(Jc).max(), solver
        assert np.abs(np.trace(Jd, axis1=1, axis2=2)).max() < 1e-6 * np.abs(Jd).max(), solver
    Js = jacobian_fd(OVKRidge(Separable(RBF(), None), lam=1e-3).fit(X, Y).predict, Xq)
    assert np.abs(Js - Js.transpose(0, 2, 1)).max() > 1e-2 * np.abs(Js).max()


def test_helmholtz_split_recovers_the_parts():
    X, Y, _, _ = synthetic_flow(300, noise=0.05, seed=2)
    Xt, _, Tcf, Tdf = synthetic_flow(400, seed=7, box=1.5)
    m = OVKRidge(helmholtz_kernel(0.7), lam=1e-2).fit(X, Y)
    cf, df = helmholtz_parts(m, Xt)
    np.testing.assert_allclose(cf + df, m.predict(Xt), atol=1e-12)
    assert np.linalg.norm(cf - Tcf) / np.linalg.norm(Tcf) < 0.12
    assert np.linalg.norm(df - Tdf) / np.linalg.norm(Tdf) < 0.12


def test_bad_inputs():
    X, Y, _, _ = synthetic_flow(30, seed=0)
    with pytest.raises(ValueError, match="dim must be an integer >= 2"):
        OVKRidge(DivFreeRBF(1.0)).fit(X[:, :1], Y[:, 0])
    m = OVKRidge(CurlFreeRBF()).fit(X, Y)
    with pytest.raises(ValueError, match="features"):
        m.predict(np.c_[X, X])
    with pytest.raises(ValueError, match="3 columns"):
        OVKRidge(CurlFreeRBF(1.0, 3)).fit(np.c_[X, X[:, 0]], Y)
    with pytest.raises(ValueError, match="SumKernel of CurlFreeRBF"):
        helmholtz_parts(m, X)
    K = CurlFreeRBF().resolve(X)
    assert K.gamma == pytest.approx(1 / X.var(0).sum()) and K.dim == 2
    assert SumKernel([CurlFreeRBF(0.5, 2), DivFreeRBF(0.5, 2)]).output_dim == 2


def test_dim_disagreeing_with_X_blames_the_kernel_and_gram_infers_dim():
    "Issue 30: CurlFreeRBF(dim=3) on 2 columns names the kernel's dim and X (it blamed Y); gram(X) takes dim from X."
    X, Y, _, _ = synthetic_flow(20, seed=0)
    for K in (CurlFreeRBF(0.5, dim=3), DivFreeRBF(0.5, dim=3)):
        with pytest.raises(ValueError, match=r"dim=3.*X has 2 columns"):
            OVKRidge(K).fit(X, Y)
    for cls in (CurlFreeRBF, DivFreeRBF):
        np.testing.assert_array_equal(cls(0.5).gram(X), cls(0.5, 2).gram(X))
        np.testing.assert_array_equal(cls(0.5).diag(X), cls(0.5, 2).diag(X))
        C = np.ones_like(X)
        np.testing.assert_array_equal(cls(0.5).apply(X, X, C), cls(0.5, 2).apply(X, X, C))
