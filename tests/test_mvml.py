"""MVML (paper 003): the literal reference, the kernel-ridge identities, PSD metrics, monotone objective, conventions."""
import pickle

import numpy as np
import pytest
import scipy.linalg as sla
from hypothesis import given, settings, strategies as st
from sklearn.kernel_ridge import KernelRidge

from ovk_nb.kernels import RBF, ColumnKernel
from ovk_nb.linalg import BlockNystrom
from ovk_nb.mvml import MVML, MVMLClassifier, MultiViewKernel, mvml_dense_reference, stack_views

VIEWS = [[0, 1], [2, 3, 4]]


def _data(seed=3, n=30):
    r = np.random.default_rng(seed)
    X = r.normal(size=(n, 5))
    return X, np.sin(X[:, 0]) + X[:, 3] * X[:, 4] + 0.1 * r.normal(size=n)


@pytest.mark.parametrize("nc", [12, 1.0])
@pytest.mark.parametrize("metric,learn_w", [("learned", False), ("learned", True), ("sparse", False), ("sparse", True)])
def test_literal_reference(nc, metric, learn_w):
    X, y = _data()
    m = MVML(VIEWS, RBF(0.5), lam=0.1, eta=0.5, metric=metric, learn_w=learn_w, n_components=nc, mu=0.05, max_iter=3,
             tol=0, random_state=0, rcond=1e-6).fit(X, y)
    assert all(t == 0.05 for t in m.steps_)
    o = m.features_.offsets
    Z = m.features_(X)
    Zs = [Z[:, o[l]:o[l + 1]] for l in range(2)]
    A, g, w = mvml_dense_reference(Zs, y, 0.1, 0.5, sla.block_diag(*[Zl.T @ Zl for Zl in Zs]), [0.5, 0.5], n_iter=3,
                                   mu=0.05, learn_w=learn_w, sparse=metric == "sparse")
    np.testing.assert_allclose(m.A_, A, atol=2e-5 * np.abs(A).max())
    np.testing.assert_allclose(m.g_, g, atol=1e-6 * np.abs(g).max())
    np.testing.assert_allclose(m.w_, w, atol=1e-7)


@pytest.mark.parametrize("metric", ["identity", "cov"])
def test_kernel_ridge_identities(metric):
    X, y = _data()
    Xt = np.random.default_rng(9).normal(size=(7, 5))
    K = [ColumnKernel(RBF(0.5), c)(X) for c in VIEWS]
    Kt = [ColumnKernel(RBF(0.5), c)(Xt, X) for c in VIEWS]
    if metric == "identity":
        G, Gt = sum(0.25 * k for k in K), sum(0.25 * k for k in Kt)
    else:
        S = sum(0.5 * k for k in K)
        G, Gt = S @ S, sum(0.5 * k for k in Kt) @ S
    m = MVML(VIEWS, RBF(0.5), lam=0.1, metric=metric, random_state=0, rcond=1e-14).fit(X, y)
    kr = KernelRidge(alpha=0.1, kernel="precomputed").fit(G, y)
    np.testing.assert_allclose(m.predict(X), kr.predict(G), atol=1e-6)
    np.testing.assert_allclose(m.predict(Xt), kr.predict(Gt), atol=1e-6)
    assert m.n_iter_ == 0


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10 ** 6), eta=st.sampled_from([0.0, 0.5, 1.0, 5.0, 20.0]),
       metric=st.sampled_from(["learned", "sparse"]), a_steps=st.integers(1, 6), learn_w=st.booleans())
def test_metric_psd_and_objective_monotone(seed, eta, metric, a_steps, learn_w):
    r = np.random.default_rng(seed)
    X, y = r.normal(size=(20, 4)), r.normal(size=20)
    m = MVML([[0], [1, 2], [3]], RBF(1.0), lam=10 ** r.uniform(-3, 0), eta=eta, metric=metric, learn_w=learn_w,
             n_components=r.choice([6, 20]), a_steps=a_steps, max_iter=5, tol=0, random_state=seed).fit(X, y)
    A = m.A_
    assert np.allclose(A, A.T, atol=1e-12 * np.abs(A).max())
    assert np.linalg.eigvalsh(A).min() >= -1e-10 * np.abs(A).max()
    J = np.array(m.objective_)
    assert np.all(np.diff(J) <= 1e-10 * J[:-1])
    assert np.isfinite(m.predict(X)).all()


def test_multiview_kernel_apply_matches_gram():
    r = np.random.default_rng(0)
    X = r.normal(size=(10, 5))
    bn = BlockNystrom([ColumnKernel(RBF(0.3), c) for c in VIEWS], X[:6])
    R = r.normal(size=(bn.offsets[-1],) * 2)
    k = MultiViewKernel(bn, R @ R.T)
    C = r.normal(size=(10, 2))
    np.testing.assert_allclose(k.apply(X[:4], X, C), (k.gram(X[:4], X) @ C.reshape(-1)).reshape(4, 2), atol=1e-9)


def test_pickle_failed_fit_and_bad_input():
    X, y = _data()
    m = MVML(VIEWS, RBF(0.5), n_components=0.5, random_state=1).fit(X, y)
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(m)).predict(X), m.predict(X))
    coef = m.coef_
    with pytest.raises(ValueError, match="lam"):
        m.set_params(lam=0).fit(X, y)
    assert m.coef_ is coef
    for kw, word in ((dict(views=[[0, 1], [2, 3]]), "partition"), (dict(views=[[0, 1, 2, 3, 4], []]), "no column"),
                     (dict(eta=2.0, mu=0.3), "mu \\* eta"), (dict(eta=-1.0), "eta"), (dict(n_components=31), "n_components")):
        with pytest.raises(ValueError, match=word):
            MVML(**{"views": VIEWS, **kw}).fit(X, y)
    with pytest.raises(ValueError, match="two classes"):
        MVMLClassifier(VIEWS).fit(X, np.ones(len(X)))


def test_classifier_one_vs_all():
    r = np.random.default_rng(1)
    Xc = np.vstack([r.normal(loc=c, size=(20, 4)) for c in (-2, 0, 2)])
    Xs, vs = stack_views([Xc[:, :2], Xc[:, 2:]])
    yc = np.repeat([3, 5, 7], 20)
    c = MVMLClassifier(vs, n_components=0.5, random_state=0).fit(Xs, yc)
    assert c.score(Xs, yc) > 0.9 and c.decision_function(Xs).shape == (60, 3)
    assert set(c.predict(Xs)) <= {3, 5, 7}


@pytest.mark.parametrize("seed", range(6))
def test_lowrank_alternation_follows_eigen_form(seed):
    from ovk_nb.mvml import LowRankMetric, _initial_metric, _Problem, alternate, objective
    r = np.random.default_rng(seed)
    X, y = r.normal(size=(40, 5)), r.normal(size=40)
    kw = dict(lam=10 ** r.uniform(-3, 0), eta=float(r.choice([0.0, 0.3, 1.0, 5.0])), learn_w=bool(seed % 2),
              a_steps=int(r.integers(1, 4)), max_iter=6, tol=0)
    m = MVML(VIEWS, RBF(0.5), n_components=int(r.choice([15, 40])), random_state=seed, **kw).fit(X, y)
    G, B = m.features_.normal_equations(X, y)
    o = m.features_.offsets
    P = _Problem(G, B[:, 0], float(y @ y), o, kw["lam"], kw["eta"])
    ref = alternate(P, _initial_metric("learned", G, o, 1e-12), [0.5, 0.5], True, kw["learn_w"], m._mu(), kw["a_steps"],
                    6, 0.0)
    assert isinstance(m.metric_, LowRankMetric) and m.steps_ == ref.steps
    np.testing.assert_allclose(m.objective_, ref.objective, rtol=1e-5)
    np.testing.assert_allclose(m.A_, ref.M.dense(), atol=1e-4 * np.abs(ref.M.dense()).max())
    assert objective(P, m.metric_, m.w_, m.g_) == pytest.approx(m.objective_[-1], rel=1e-9)
