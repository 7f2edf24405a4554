"""Operator-valued KDE (paper 004): the O(n^3) Sylvester solve against the literal n^2 x n^2 Kronecker formula of
Proposition 1, the baselines, properties, bad inputs and scikit-learn conventions."""
import pickle
import re

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
        OVKDE(RBF(1.0), 3).fit(X, Y)
    with pytest.raises(ValueError, match="minimum of 2"):
        OVKDE(RBF(1.0), RBF(1.0)).fit(X[:1], Y[:1])
    m = OVKDE(RBF(1.0), RBF(1.0)).fit(X, Y)
    with pytest.raises(ValueError, match="features"):
        m.predict(Xt[:, :2])
    with pytest.raises(ValueError, match="candidates has 2 columns"):
        m.decision_scores(Xt, Yc[:, :2])
    Yb = Yc.copy(); Yb[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        m.predict(Xt, Yb)
    with pytest.raises(ValueError, match="output_features"):
        m.predict_embedding(Xt, np.ones((3, 2)))
    with pytest.raises(ValueError, match="n_components"):
        WestonKDE(RBF(1.0), RBF(1.0), n_components=0).fit(X, Y)
    with pytest.raises(ValueError, match="Gram matrix of shape"):
        OVKDE(lambda A, B: np.ones((2, 2)), RBF(1.0)).fit(X, Y)


def test_loss_and_rbf_loss():
    rng = np.random.default_rng(0)
    Y, P = rng.normal(size=(6, 3)), rng.normal(size=(6, 3))
    m = OVKDE(RBF(1.0), RBF(1 / (2 * 1.5 ** 2)))
    np.testing.assert_allclose(m.loss(Y, P), rbf_loss(Y, P, 1.5), atol=1e-12)
    np.testing.assert_allclose(rbf_loss(Y, Y, 1.0), 0.0)
    assert (rbf_loss(Y, P, 1.0) <= 2).all()




# ---------------------------------------------------------------- defaults that fit (issue 19, section 1)
from sklearn.utils.estimator_checks import parametrize_with_checks  # noqa: E402


@parametrize_with_checks([OVKDE(), CortesKDE(), WestonKDE()])
def test_sklearn_checks_with_no_arguments(estimator, check):
    """scikit-learn's checks on the estimators built with no argument (before: 'input_kernel must be a callable; got
    None'; WestonKDE() also failed on fewer than 50 samples)."""
    check(estimator)


def _digits(n_train=300, n_test=200):
    "Paper 004's task on the vendored 16 x 16 digits: the top half of an image -> its bottom half."
    from ovk_nb.datasets import digit_halves, load_digits16
    X, Y = digit_halves(load_digits16().images)
    idx = np.random.default_rng(0).permutation(len(X))
    return X[idx[:n_train]], Y[idx[:n_train]], X[idx[n_train:n_train + n_test]], Y[idx[n_train:n_train + n_test]]


@pytest.mark.parametrize("cls", [OVKDE, CortesKDE, WestonKDE])
def test_defaults_fit_as_well_as_the_hand_tuned_kernels(cls):
    """With no argument (RBF(gamma='scale') set from X and from Y) the held-out squared error of the predicted halves is
    within 10% of the benchmark's hand-tuned kernels (median heuristic, lam = 0.01) and well below the best constant."""
    from scipy.spatial.distance import pdist
    X, Y, Xt, Yt = _digits()
    sk, sl = float(np.median(pdist(X))), float(np.median(pdist(Y)))
    tuned = cls(RBF(1 / (2 * sk ** 2)), RBF(1 / (2 * sl ** 2)), lam=0.01).fit(X, Y)
    default = cls().fit(X, Y)
    mse = lambda P: float(((P - Yt) ** 2).sum(1).mean())
    const = Y[np.argmin(((Y - Y.mean(0)) ** 2).sum(1))]
    assert mse(default.predict(Xt)) <= 1.1 * mse(tuned.predict(Xt))
    assert mse(default.predict(Xt)) <= 0.8 * mse(np.broadcast_to(const, Yt.shape))
    g = lambda Z: 1.0 / Z.var(0).sum()             # gamma="scale": 1 / sum of per-column variances
    assert default.input_kernel_.gamma == pytest.approx(g(X)) and default.output_kernel_.gamma == pytest.approx(g(Y))
    assert default.input_kernel is None and default.output_kernel is None


def test_data_driven_kernels_are_resolved_and_the_users_objects_stay():
    X, Y, Xt, Yc = problem(2, 20)
    kx, ky = RBF(), RBF("median")
    m = OVKDE(kx, ky).fit(X, Y)
    assert kx.gamma == "scale" and ky.gamma == "median"
    assert isinstance(m.input_kernel_.gamma, float) and isinstance(m.output_kernel_.gamma, float)
    lit = OVKDE(m.input_kernel_, m.output_kernel_).fit(X, Y)
    np.testing.assert_allclose(m.decision_scores(Xt, Yc), lit.decision_scores(Xt, Yc), atol=1e-12)
    # the loss before fit needs an output kernel that needs no data
    with pytest.raises(NotFittedError):
        OVKDE().loss(Y, Y)
    with pytest.raises(ValueError, match="output_kernel"):
        OVKDE(output_kernel=RBF()).loss(Y, Y)
    np.testing.assert_allclose(m.loss(Y, Y), 0.0, atol=1e-12)
    # words: the default RBF has no meaning, and the message says which kernel to give
    with pytest.raises(ValueError, match="output_kernel=None"):
        OVKDE().fit(X[:8], ["kernel", "kernels", "operator", "vector", "matrix", "tensor", "scalar", "ridge"])


# ---------------------------------------------------------------- KDE faults (issue 19, section 3)
def test_weston_default_components_clip_to_the_samples():
    """WestonKDE()'s n_components=50 on fewer samples keeps them all, as KernelPCA clips (before: ValueError
    'n_components must be <= n_samples = 20'); n_components_ records the number used."""
    X, Y, Xt, Yc = problem(3, 20)
    w = WestonKDE(RBF(0.5), RBF(0.2), center=False).fit(X, Y)
    assert w.n_components == 50 and w.n_components_ == 20 and w.components_.shape == (20, 20)
    full = WestonKDE(RBF(0.5), RBF(0.2), n_components=20, center=False).fit(X, Y)
    np.testing.assert_allclose(w.decision_scores(Xt, Yc), full.decision_scores(Xt, Yc), atol=1e-12)
    c = WestonKDE(RBF(0.5), RBF(0.2)).fit(X, Y)               # centred: rank n - 1, the null component dropped
    assert c.n_components_ == 19 == len(c.eigenvalues_)
    assert WestonKDE(RBF(0.5), RBF(0.2), n_components=5).fit(X, Y).n_components_ == 5


def _not_psd(A, B):
    "A symmetric function whose Gram matrix on distinct points is -1 - I: not a kernel."
    return -np.ones((len(A), len(B))) - (np.eye(len(A)) if len(A) == len(B) else 0.0)


@pytest.mark.parametrize("make", [lambda k: CortesKDE(k, RBF(0.5)), lambda k: WestonKDE(k, RBF(0.5), n_components=5),
                                  lambda k: OVKDE(k, RBF(0.5)), lambda k: OVKDE(k, RBF(0.5), "identity")],
                         ids=["Cortes", "Weston", "OVKDE", "OVKDE-identity"])
def test_non_psd_input_kernel_is_refused_by_name(make):
    "Before: CortesKDE/WestonKDE ended in a raw LinAlgError ('1-th leading minor of the array is not positive definite')."
    X, Y, _, _ = problem(4, 12)
    est = make(_not_psd)
    with pytest.raises(ValueError, match="input_kernel is not positive semi-definite"):
        est.fit(X, Y)
    assert not hasattr(est, "coef_")


@pytest.mark.parametrize("make", [lambda k: WestonKDE(RBF(0.5), k, n_components=5), lambda k: OVKDE(RBF(0.5), k),
                                  lambda k: OVKDE(RBF(0.5), k, "covariance")], ids=["Weston", "OVKDE", "OVKDE-covariance"])
def test_non_psd_output_kernel_is_refused_where_it_is_factored(make):
    X, Y, _, _ = problem(4, 12)
    with pytest.raises(ValueError, match="output_kernel is not positive semi-definite"):
        make(_not_psd).fit(X, Y)


def _fault_cases():
    """(estimator, argument at fault, case, call): every argument of the KDE estimators' constructor and methods given a
    wrong type, NaN, a wrong shape or an out-of-range value. 77 of these messages named another argument before (the
    kernel's own 'X and Y', 'gamma must be ...' without the kernel, 'range() arg 3', 'Input Y' for score's y, ...)."""
    rng = np.random.default_rng(0)
    X, Y = rng.normal(size=(12, 3)), rng.normal(size=(12, 2))
    Xn, Yn = X.copy(), Y.copy()
    Xn[0, 0] = Yn[0, 0] = np.nan
    kernels = {"str": "rbf", "int": 3, "nan-gamma": RBF(np.nan), "negative-gamma": RBF(-1.0), "unknown-rule": RBF("foo"),
               "wrong-gram-shape": lambda A, B: np.ones((2, 2)), "raises": lambda A, B: np.asarray("a") + 1}
    numbers = {"str": "a", "nan": np.nan, "negative": -1.0, "zero": 0.0, "inf": np.inf, "list": [0.1], "none": None}
    cases = []
    for cls in (OVKDE, CortesKDE, WestonKDE):
        def make(cls=cls, **kw):
            base = dict(input_kernel=RBF(0.3), output_kernel=RBF(0.3), lam=0.1, **({"n_components": 5} if cls is WestonKDE else {}))
            return cls(**{**base, **kw})
        name = cls.__name__
        for arg in ("input_kernel", "output_kernel"):
            for case, v in kernels.items():
                cases.append((name, arg, case, lambda make=make, arg=arg, v=v: make(**{arg: v}).fit(X, Y)))
        for arg in ["lam"] + (["eps"] if cls is OVKDE else []) + (["n_components"] if cls is WestonKDE else []):
            for case, v in numbers.items():
                cases.append((name, arg, case, lambda make=make, arg=arg, v=v: make(**{arg: v}).fit(X, Y)))
        if cls is OVKDE:
            for case, v in {"unknown": "cov", "none": None, "int": 3}.items():
                cases.append((name, "operator", case, lambda make=make, v=v: make(operator=v).fit(X, Y)))
        if cls is WestonKDE:
            for case, v in {"str": "yes", "int": 2, "none": None}.items():
                cases.append((name, "center", case, lambda make=make, v=v: make(center=v).fit(X, Y)))
        bad_X = {"nan": Xn, "inf": X * np.inf, "3-D": X[:, :, None], "1-D": X[:, 0], "length": X[:5], "str": "abc",
                 "one-sample": X[:1], "none": None}
        for case, v in bad_X.items():
            cases.append((name, "X", f"fit-{case}", lambda make=make, v=v: make().fit(v, Y)))
        for case, v in {"nan": Yn, "inf": Y * np.inf, "3-D": Y[:, :, None], "length": Y[:5], "none": None, "scalar": 3.0}.items():
            cases.append((name, "Y", f"fit-{case}", lambda make=make, v=v: make().fit(X, v)))
        fitted = make().fit(X, Y)
        test_X = {"nan": Xn, "features": X[:, :2], "1-D": X[:, 0], "str": "abc", "3-D": X[:, :, None], "none": None}
        cand = {"nan": Yn[:4], "columns": Y[:4, :1], "3-D": Y[:4, :, None], "empty": np.zeros((0, 2)), "str": "abc",
                "scalar": 3.0}
        calls = {"predict": lambda f, x, c: f.predict(x, c), "decision_scores": lambda f, x, c: f.decision_scores(x, c),
                 "score": lambda f, x, c: f.score(x, Y, candidates=c)}
        for meth, call in calls.items():
            for case, v in test_X.items():
                cases.append((name, "X", f"{meth}-{case}", lambda f=fitted, call=call, v=v: call(f, v, None)))
            for case, v in cand.items():
                cases.append((name, "candidates", f"{meth}-{case}", lambda f=fitted, call=call, v=v: call(f, X, v)))
        for case, v in {"zero": 0, "negative": -1, "str": "a", "float": 2.5, "nan": np.nan, "none": None}.items():
            cases.append((name, "batch_size", case, lambda f=fitted, v=v: f.predict(X, batch_size=v)))
        for case, v in {"nan": Yn, "length": Y[:5], "columns": Y[:, :1], "str": "abc", "none": None}.items():
            cases.append((name, "y", f"score-{case}", lambda f=fitted, v=v: f.score(X, v)))
            cases.append((name, "Y", f"loss-{case}", lambda f=fitted, v=v: f.loss(v, Y)))
            cases.append((name, "Y_pred", f"loss-{case}", lambda f=fitted, v=v: f.loss(Y, v)))
        if cls is not WestonKDE:
            for case, v in {"nan": Yn, "rows": Y[:5], "str": "abc", "3-D": Y[:, :, None]}.items():
                cases.append((name, "output_features", case, lambda f=fitted, v=v: f.predict_embedding(X, v)))
    return cases


_FAULTS = _fault_cases()


@pytest.mark.parametrize("est, arg, case, call", _FAULTS, ids=[f"{e}-{a}-{c}" for e, a, c, _ in _FAULTS])
def test_every_bad_argument_is_named(est, arg, case, call):
    "A ValueError (or TypeError) whose message names the argument actually at fault."
    with pytest.raises((ValueError, TypeError)) as info:
        call()
    assert re.search(rf"(?<![\w.]){re.escape(arg)}(?!\w)", str(info.value)), str(info.value)


def test_a_failed_fit_changes_nothing():
    X, Y, Xt, Yc = problem(5, 15)
    est = CortesKDE(RBF(0.5), RBF(0.3)).fit(X, Y)
    before = est.decision_scores(Xt, Yc)
    with pytest.raises(ValueError, match="input_kernel"):
        est.set_params(input_kernel=_not_psd).fit(X, Y)
    np.testing.assert_array_equal(est.set_params(input_kernel=RBF(0.5)).decision_scores(Xt, Yc), before)


# ---------------------------------------------------------------- BLAS threads (issue 19, section 5)
def test_thread_limit_rule_and_the_same_fit_under_it():
    "The rules at their edges; fits and scores under them equal those on one thread, and the thread count is left as found."
    from unittest import mock
    import ovk_nb.linalg
    from threadpoolctl import threadpool_info, threadpool_limits
    from ovk_nb.kde import KDE_CHOLESKY_THREADS_MIN_N, KDE_EIGH_THREADS_MIN_N, KDE_SCORES_THREADS_MIN_WORK, _threads
    for t in (KDE_CHOLESKY_THREADS_MIN_N, KDE_EIGH_THREADS_MIN_N, KDE_SCORES_THREADS_MIN_WORK):
        with mock.patch.object(ovk_nb.linalg, "idle_cores", lambda: 2.0), mock.patch.object(ovk_nb.linalg, "blas_ceiling", lambda: 2):
            assert _threads(t - 1, t) == 1 and _threads(t, t) is None
    assert CortesKDE._fit_threads_min_n == KDE_CHOLESKY_THREADS_MIN_N and OVKDE._fit_threads_min_n == KDE_EIGH_THREADS_MIN_N
    counts = lambda: [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]
    X, Y, Xt, Yc = problem(6, 40)
    with threadpool_limits(2):
        before = counts()
        for make in (OVKDE, CortesKDE, WestonKDE):
            m = make().fit(X, Y)
            a = (m.decision_scores(Xt, Yc), m.predict(Xt, batch_size=2))
            assert counts() == before
            with threadpool_limits(1):
                m1 = make().fit(X, Y)
                b = (m1.decision_scores(Xt, Yc), m1.predict(Xt, batch_size=2))
            np.testing.assert_allclose(a[0], b[0], atol=1e-10)
            np.testing.assert_array_equal(a[1], b[1])
            assert counts() == before


def test_docstring_examples():
    import doctest
    import ovk_nb.kde
    assert doctest.testmod(ovk_nb.kde, optionflags=doctest.ELLIPSIS).failed == 0


@pytest.mark.parametrize("op", ["conditional_covariance", "covariance"])
def test_conditional_covariance_eighs_side_by_side_equal_the_one_thread_fit(monkeypatch, op):
    """Issue 34: the conditional covariance's two eighs are independent (M by a Cholesky congruence) and run side by side
    where the thread policy gives two threads (the covariance's
    two eighs too), each on one BLAS thread; the fit equals the one-thread fit up to the
    threaded products' rounding (1e-12), and a user's threadpool_limits(1) or a busy machine keeps them in turn."""
    import ovk_nb.kde as kde
    import ovk_nb.linalg as la
    from threadpoolctl import threadpool_limits
    workers, real = [], kde.side_by_side
    monkeypatch.setattr(kde, "side_by_side", lambda fn, items, k, ahead=None: (workers.append(k), real(fn, items, k, ahead))[1])
    monkeypatch.setattr(kde, "KDE_EIGH_THREADS_MIN_N", 10)
    monkeypatch.setattr(kde.OVKDE, "_fit_threads_min_n", 10)
    monkeypatch.setattr(la, "idle_cores", lambda: 2.0)                 # an idle 2-core machine
    X, Y, Xt, Yc = problem(7, 60)
    with threadpool_limits(2):
        par = OVKDE(RBF(0.5), RBF(0.3), op, lam=0.05).fit(X, Y)
        assert workers == [2]
        with threadpool_limits(1):
            one = OVKDE(RBF(0.5), RBF(0.3), op, lam=0.05).fit(X, Y)
        assert workers == [2, 1]
    scale = np.abs(one.coef_).max()
    np.testing.assert_allclose(par.coef_, one.coef_, rtol=0, atol=1e-12 * scale)
    np.testing.assert_allclose(par.decision_scores(Xt, Yc), one.decision_scores(Xt, Yc), rtol=0,
                               atol=1e-12 * np.abs(one.decision_scores(Xt, Yc)).max())
    monkeypatch.setattr(la, "idle_cores", lambda: 0.2)                 # others busy on both cores: in turn
    with threadpool_limits(2):
        OVKDE(RBF(0.5), RBF(0.3), op, lam=0.05).fit(X, Y)
    assert workers[-1] == 1
