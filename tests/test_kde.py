"""Operator-valued KDE (paper 004): the O(n^3) Sylvester solve against the literal n^2 x n^2 Kronecker formula of
Proposition 1, the baselines, properties, bad inputs and scikit-learn conventions."""
import pickle

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from sklearn.base import clone
from sklearn.exceptions import NotFittedError

from ovk_nb.kde import (OPERATORS, CortesKDE, OVKDE, WestonKDE, kde_scores_literal, one_hot_positions,
                        position_match_kernel, proposition1_T, sylvester_coef)
from ovk_nb.metrics import rbf_loss
from ovk_nb.kernels import RBF, Laplacian, Linear, Polynomial


def problem(seed, n, p=3, d=4, n_test=5, n_cand=7):
    rng = np.random.default_rng(seed)
    return (rng.normal(size=(n, p)), rng.normal(size=(n, d)), rng.normal(size=(n_test, p)), rng.normal(size=(n_cand, d)))


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(2, 25), op=st.sampled_from(OPERATORS),
       lam=st.floats(1e-2, 10.0), eps=st.floats(1e-2, 10.0), gx=st.floats(0.05, 2.0), gy=st.floats(0.05, 2.0))
def test_fast_matches_literal_kronecker(seed, n, op, lam, eps, gx, gy):
    X, Y, Xt, Yc = problem(seed, n)
    kx, ky = RBF(gx), Laplacian(gy)
    S = kde_scores_literal(kx(X), ky(Y), kx(X, Xt), ky(Y, Yc), lam, op, eps)
    m = OVKDE(kx, ky, operator=op, lam=lam, eps=eps).fit(X, Y)
    C = m.decision_scores(Xt, Yc)
    np.testing.assert_allclose(C, 1.0 - 2.0 * S, atol=1e-8 * max(1.0, np.abs(S).max()), rtol=0)
    # the predicted candidate is the minimiser of the literal criterion (unless two criteria tie to 1e-8)
    lit = 1.0 - 2.0 * S
    pred = m.predict(Xt, Yc)
    for t in range(len(Xt)):
        j = int(np.flatnonzero((Yc == pred[t]).all(1))[0])
        assert lit[t, j] <= lit[t].min() + 1e-8


def test_sylvester_coef_solves_the_equation():
    X, Y, _, _ = problem(3, 20)
    k, L = RBF(0.4)(X), RBF(0.3)(Y)
    n, lam, eps = 20, 0.07, 0.3
    for op in OPERATORS:
        M = proposition1_T(k, L, op, eps) / n
        Q = sylvester_coef(k, L, op, lam, eps)
        A = np.linalg.solve(M, Q) if op != "identity" else Q       # Q = M A
        if op == "identity":
            np.testing.assert_allclose(A @ k + lam * A, np.eye(n), atol=1e-9)
        else:
            np.testing.assert_allclose(M @ A @ k + lam * A, np.eye(n), atol=1e-6)


def test_conditional_T_is_nonsymmetric_but_has_real_nonnegative_spectrum():
    X, Y, _, _ = problem(5, 18)
    k, L = RBF(0.4)(X), RBF(0.3)(Y)
    T = proposition1_T(k, L, "conditional_covariance", 0.2)
    assert np.abs(T - T.T).max() > 1e-3
    ev = np.linalg.eigvals(T)
    assert np.abs(ev.imag).max() < 1e-8 and ev.real.min() > -1e-8
    # L T is symmetric: C_{Y|X} is self-adjoint in the output RKHS
    np.testing.assert_allclose(L @ T, (L @ T).T, atol=1e-10)


@pytest.mark.parametrize("seed", range(4))
def test_cortes_equals_identity_operator(seed):
    X, Y, Xt, Yc = problem(seed, 30)
    c = CortesKDE(RBF(0.5), RBF(0.2), lam=0.03).fit(X, Y)
    o = OVKDE(RBF(0.5), RBF(0.2), operator="identity", lam=0.03).fit(X, Y)
    np.testing.assert_allclose(c.decision_scores(Xt, Yc), o.decision_scores(Xt, Yc), atol=1e-10)
    np.testing.assert_array_equal(c.predict(Xt), o.predict(Xt))
    np.testing.assert_array_equal(c.predict(Xt, Yc), o.predict(Xt, Yc))


def test_identity_literal_uses_n_identity():
    "In Proposition 1's normalisation the identity operator is T = n I with the n lam ridge."
    X, Y, Xt, Yc = problem(8, 12)
    k, L = RBF(0.5)(X), RBF(0.2)(Y)
    S = kde_scores_literal(k, L, RBF(0.5)(X, Xt), RBF(0.2)(Y, Yc), 0.1, "identity")
    ref = (RBF(0.2)(Y, Yc).T @ np.linalg.solve(k + 0.1 * np.eye(12), RBF(0.5)(X, Xt))).T
    np.testing.assert_allclose(S, ref, atol=1e-10)


def test_weston_all_components_uncentred_equals_cortes():
    X, Y, Xt, Yc = problem(1, 25)
    w = WestonKDE(RBF(0.5), RBF(0.2), lam=0.05, n_components=25, center=False).fit(X, Y)
    c = CortesKDE(RBF(0.5), RBF(0.2), lam=0.05).fit(X, Y)
    np.testing.assert_allclose(w.decision_scores(Xt, Yc), c.decision_scores(Xt, Yc), atol=1e-8)


def test_weston_centred_is_feature_space_distance():
    rng = np.random.default_rng(2)
    X, F, Xt, Fc = rng.normal(size=(30, 3)), rng.normal(size=(30, 6)), rng.normal(size=(4, 3)), rng.normal(size=(9, 6))
    w = WestonKDE(RBF(0.5), Linear(), lam=0.05, n_components=4).fit(X, F)
    mu = F.mean(0)
    _, V = np.linalg.eigh((F - mu).T @ (F - mu))
    V = V[:, ::-1][:, :4]
    c = ((F - mu) @ V).T @ np.linalg.solve(RBF(0.5)(X) + 0.05 * np.eye(30), RBF(0.5)(X, Xt))
    g = mu + (V @ c).T
    D = ((g[:, None] - Fc[None]) ** 2).sum(-1)
    C = w.decision_scores(Xt, Fc)
    np.testing.assert_allclose(D - D[:, :1], C - C[:, :1], atol=1e-8)


def test_fewer_weston_components_change_the_model():
    X, Y, Xt, Yc = problem(4, 30)
    a = WestonKDE(RBF(0.5), RBF(0.2), lam=0.05, n_components=2).fit(X, Y).decision_scores(Xt, Yc)
    b = WestonKDE(RBF(0.5), RBF(0.2), lam=0.05, n_components=30).fit(X, Y).decision_scores(Xt, Yc)
    assert np.abs(a - b).max() > 1e-3


def test_large_eps_gives_the_covariance_operator():
    X, Y, Xt, Yc = problem(6, 20)
    cov = OVKDE(RBF(0.5), RBF(0.2), "covariance", lam=0.05).fit(X, Y).decision_scores(Xt, Yc)
    cond = OVKDE(RBF(0.5), RBF(0.2), "conditional_covariance", lam=0.05, eps=1e9).fit(X, Y).decision_scores(Xt, Yc)
    np.testing.assert_allclose(cond, cov, atol=1e-6)
    small = OVKDE(RBF(0.5), RBF(0.2), "conditional_covariance", lam=0.05, eps=1e-2).fit(X, Y).decision_scores(Xt, Yc)
    assert np.abs(small - cov).max() > 1e-4


def test_training_order_does_not_matter():
    X, Y, Xt, Yc = problem(7, 22)
    perm = np.random.default_rng(0).permutation(22)
    for op in OPERATORS:
        a = OVKDE(RBF(0.5), RBF(0.2), op, lam=0.1, eps=0.2).fit(X, Y).decision_scores(Xt, Yc)
        b = OVKDE(RBF(0.5), RBF(0.2), op, lam=0.1, eps=0.2).fit(X[perm], Y[perm]).decision_scores(Xt, Yc)
        np.testing.assert_allclose(a, b, atol=1e-9)


def test_embedding_matches_criterion_for_linear_output_kernel():
    rng = np.random.default_rng(9)
    X, F, Xt, Fc = rng.normal(size=(20, 3)), rng.normal(size=(20, 5)), rng.normal(size=(6, 3)), rng.normal(size=(8, 5))
    for op in OPERATORS:
        m = OVKDE(RBF(0.5), Linear(), op, lam=0.1, eps=0.3).fit(X, F)
        G = m.predict_embedding(Xt)
        C = (Fc ** 2).sum(1)[None] - 2 * G @ Fc.T
        np.testing.assert_allclose(m.decision_scores(Xt, Fc), C, atol=1e-9)


def test_default_candidates_are_training_outputs_and_fit_is_recovered():
    X, Y, _, _ = problem(10, 25)
    m = OVKDE(RBF(2.0), RBF(0.2), "covariance", lam=1e-4).fit(X, Y)
    np.testing.assert_allclose(m.decision_scores(X), m.decision_scores(X, Y), atol=1e-12)
    # with a sharp input kernel and a tiny ridge every training input gets its own output back
    np.testing.assert_array_equal(m.predict(X), Y)
    assert m.score(X, Y) == pytest.approx(0.0, abs=1e-12)


def test_structured_outputs_through_a_user_kernel():
    words = ["kernel", "kernels", "operator", "vector", "matrix", "tensor", "scalar", "ridge"] * 2
    codes = [[ord(c) - 97 for c in w] for w in words]
    rng = np.random.default_rng(0)
    X, Xt = rng.normal(size=(len(words), 3)), rng.normal(size=(5, 3))
    for op in OPERATORS:
        ms = OVKDE(RBF(0.5), position_match_kernel, op, lam=0.1).fit(X, words)
        mf = OVKDE(RBF(0.5), Linear(), op, lam=0.1).fit(X, one_hot_positions(codes, 8))
        np.testing.assert_allclose(ms.decision_scores(Xt), mf.decision_scores(Xt), atol=1e-10)
        pred = ms.predict(Xt)
        assert isinstance(pred, list) and set(pred) <= set(words)
        assert ms.predict(Xt, ["vector", "matrix"])[0] in ("vector", "matrix")


@pytest.mark.parametrize("make", [lambda: OVKDE(RBF(0.5), RBF(0.2), "conditional_covariance", 0.1, 0.2),
                                  lambda: CortesKDE(RBF(0.5), RBF(0.2), 0.1),
                                  lambda: WestonKDE(RBF(0.5), RBF(0.2), 0.1, n_components=5)])
def test_sklearn_conventions(make):
    X, Y, Xt, Yc = problem(11, 20)
    est = make()
    with pytest.raises(NotFittedError):
        est.predict(Xt)
    with pytest.raises(NotFittedError):
        est.decision_scores(Xt, Yc)
    est.fit(X, Y)
    again = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(again.predict(Xt, Yc), est.predict(Xt, Yc))
    np.testing.assert_array_equal(again.decision_scores(Xt), est.decision_scores(Xt))
    cl = clone(est)
    assert cl.get_params()["lam"] == est.get_params()["lam"] and not hasattr(cl, "coef_")
    np.testing.assert_allclose(cl.fit(X, Y).decision_scores(Xt), est.decision_scores(Xt))
    assert est.set_params(lam=0.5).lam == 0.5


@pytest.mark.parametrize("kwargs, match", [(dict(lam=0.0), "lam"), (dict(lam=-1.0), "lam"), (dict(lam=np.nan), "lam"),
                                           (dict(eps=0.0), "eps"), (dict(eps=-0.1), "eps"), (dict(lam="a"), "lam"),
                                           (dict(operator="cov"), "operator"), (dict(operator=None), "operator")])
def test_bad_hyper_parameters(kwargs, match):
    X, Y, _, _ = problem(0, 10)
    with pytest.raises(ValueError, match=match):
        OVKDE(RBF(1.0), RBF(1.0), **kwargs).fit(X, Y)


def test_bad_inputs():
    X, Y, Xt, Yc = problem(0, 10)
    with pytest.raises(ValueError, match="same number of samples"):
        OVKDE(RBF(1.0), RBF(1.0)).fit(X, Y[:4])
    Xn = X.copy(); Xn[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        OVKDE(RBF(1.0), RBF(1.0)).fit(Xn, Y)
    Yi = Y.copy(); Yi[1, 1] = np.inf
    with pytest.raises(ValueError, match="(NaN|inf)"):
        OVKDE(RBF(1.0), RBF(1.0)).fit(X, Yi)
    with pytest.raises(ValueError, match="input_kernel"):
        OVKDE("rbf", RBF(1.0)).fit(X, Y)
    with pytest.raises(ValueError, match="output_kernel"):
        OVKDE(RBF(1.0), None).fit(X, Y)
    with pytest.raises(ValueError, match="minimum of 2"):
        OVKDE(RBF(1.0), RBF(1.0)).fit(X[:1], Y[:1])
    m = OVKDE(RBF(1.0), RBF(1.0)).fit(X, Y)
    with pytest.raises(ValueError, match="features"):
        m.predict(Xt[:, :2])
    with pytest.raises(ValueError, match="features"):
        m.decision_scores(Xt, Yc[:, :2])
    Yb = Yc.copy(); Yb[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        m.predict(Xt, Yb)
    with pytest.raises(ValueError, match="output_features"):
        m.predict_embedding(Xt, np.ones((3, 2)))
    with pytest.raises(ValueError, match="n_components"):
        WestonKDE(RBF(1.0), RBF(1.0), n_components=0).fit(X, Y)
    with pytest.raises(ValueError, match="n_components"):
        WestonKDE(RBF(1.0), RBF(1.0), n_components=11).fit(X, Y)
    with pytest.raises(ValueError, match="Gram matrix of shape"):
        OVKDE(lambda A, B: np.ones((2, 2)), RBF(1.0)).fit(X, Y)


def test_loss_and_rbf_loss():
    rng = np.random.default_rng(0)
    Y, P = rng.normal(size=(6, 3)), rng.normal(size=(6, 3))
    m = OVKDE(RBF(1.0), RBF(1 / (2 * 1.5 ** 2)))
    np.testing.assert_allclose(m.loss(Y, P), rbf_loss(Y, P, 1.5), atol=1e-12)
    np.testing.assert_allclose(rbf_loss(Y, Y, 1.0), 0.0)
    assert (rbf_loss(Y, P, 1.0) <= 2).all()


