"""Kernels: Gram symmetric PSD and `apply` == `gram @ vec(C)` for every kernel kind (hypothesis), bad inputs."""
import inspect
import pickle

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra.numpy import arrays

from ovk_nb.kernels import (RBF, BlockKernel, ColumnKernel, IdentityOperator, IntegralOperator, Laplacian, Linear,
                            MultiplicationOperator, OutputOperator, Polynomial, ScaledKernel, Separable, SumKernel,
                            check_psd, gaussian_times_J, grid_weights, linear_quadratic, paper000_J)

finite = st.floats(-3, 3, allow_nan=False, allow_infinity=False)


def random_psd(rng, d, rank=None):
    A = rng.normal(size=(d, rank or d))
    return A @ A.T


def kernel_kinds(d, rng):
    T = random_psd(rng, d)
    t = np.linspace(0, 1, d)
    return {
        "sep_rbf": Separable(RBF(0.7), T),
        "sep_laplacian": Separable(Laplacian(0.3), T),
        "sep_poly_lowrank": Separable(Polynomial(2, 1.0), random_psd(rng, d, 1)),
        "gaussian_J": gaussian_times_J(d, gamma=0.5),
        "linear_quadratic": linear_quadratic(d, mu=0.3),
        "sum": SumKernel([Separable(RBF(2.0), T), Separable(Linear(), np.eye(d))], [0.5, 1.5]),
        "block": BlockKernel(lambda x, y: np.exp(-((x - y) ** 2).sum()) * T, d),
        "integral_uniform": Separable(RBF(1.0), IntegralOperator(t, weights="uniform")) if d > 1 else Separable(RBF(1.0), T),
    }


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 6), m=st.integers(1, 5), p=st.integers(1, 4), d=st.integers(1, 4), seed=st.integers(0, 10**6))
def test_gram_symmetric_psd_and_apply_matches_gram(n, m, p, d, seed):
    rng = np.random.default_rng(seed)
    X, Y = rng.normal(size=(n, p)), rng.normal(size=(m, p))
    C = rng.normal(size=(m, d))
    for name, K in kernel_kinds(d, rng).items():
        G = K.gram(X)
        assert G.shape == (n * d, n * d), name
        np.testing.assert_allclose(G, G.T, atol=1e-10, err_msg=name)
        ev = np.linalg.eigvalsh((G + G.T) / 2)
        assert ev.min() >= -1e-8 * max(1.0, np.abs(ev).max()), (name, ev.min())
        np.testing.assert_allclose(K.apply(X, Y, C).ravel(), K.gram(X, Y) @ C.ravel(), rtol=1e-10, atol=1e-10,
                                   err_msg=name)
        D = K.diag(X)
        for i in range(n):
            np.testing.assert_allclose(D[i], G[i * d:(i + 1) * d, i * d:(i + 1) * d], atol=1e-12, err_msg=name)


@settings(max_examples=20, deadline=None)
@given(X=arrays(float, (5, 3), elements=finite), gamma=st.floats(0.01, 5))
def test_scalar_kernels_symmetric_psd(X, gamma):
    for k in [Linear(), Polynomial(3, 1.0), RBF(gamma), Laplacian(gamma)]:
        G = k(X)
        np.testing.assert_allclose(G, G.T, atol=1e-9 * max(1, np.abs(G).max()))
        assert np.linalg.eigvalsh(G).min() >= -1e-7 * max(1.0, np.abs(G).max())
        np.testing.assert_allclose(k.diag(X), np.diag(G), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("rule", ["trapezoid", "uniform"])
def test_weighted_operators_are_self_adjoint_and_psd(rule):
    t = np.linspace(-1, 1, 17)
    for op in [IdentityOperator(t, rule), MultiplicationOperator(t, weights=rule), IntegralOperator(t, weights=rule)]:
        W = np.diag(op.weights)
        np.testing.assert_allclose(W @ op.matrix, (W @ op.matrix).T, atol=1e-12)
        assert np.linalg.eigvalsh(W @ op.matrix).min() > -1e-12
        e, V, Vinv = op.eig()
        np.testing.assert_allclose(V @ np.diag(e) @ Vinv, op.matrix, atol=1e-10)
        assert np.all(np.diff(e) <= 1e-12)          # descending
        K = Separable(RBF(0.5), op)
        X = np.random.default_rng(0).normal(size=(4, 2))
        G = K.gram(X)
        WG = np.kron(np.eye(4), W) @ G               # (I x W) K is symmetric PSD
        np.testing.assert_allclose(WG, WG.T, atol=1e-12)
        assert np.linalg.eigvalsh(WG).min() > -1e-10


def test_integral_operator_converges_to_the_integral():
    t = np.linspace(0, 2, 401)
    y = np.sin(t)[None]
    # int_0^2 exp(-|t-s|) sin(s) ds at t = 1, by a fine reference quadrature
    s = np.linspace(0, 2, 200001)
    f = np.exp(-np.abs(1 - s)) * np.sin(s)
    ref = float(((f[1:] + f[:-1]) / 2 * np.diff(s)).sum())      # the trapezoid rule (np.trapezoid needs numpy 2)
    assert abs(IntegralOperator(t)(y)[0, 200] - ref) < 1e-5


def test_truncated_pinv_is_a_projection_inverse():
    t = np.linspace(0, 1, 50)
    op = IntegralOperator(t)
    P = op.pinv(10) @ op.matrix            # projection onto the 10 leading eigenfunctions
    np.testing.assert_allclose(P @ P, P, atol=1e-8)
    assert abs(np.trace(P) - 10) < 1e-8
    with pytest.raises(ValueError, match="n_components"):
        op.pinv(0)


def test_bad_inputs_raise_clear_errors():
    # constructors store their arguments (scikit-learn's clone and set_params need that); a bad one fails at use
    with pytest.raises(ValueError, match="symmetric"):
        Separable(RBF(1.0), [[1.0, 1.0], [0.0, 1.0]]).output_dim
    with pytest.raises(ValueError, match="positive semi-definite"):
        Separable(RBF(1.0), np.diag([1.0, -1.0])).gram(np.ones((1, 2)))
    with pytest.raises(ValueError, match="gamma"):
        RBF(-1)(np.ones((2, 2)))
    with pytest.raises(ValueError, match="gamma"):
        Separable(RBF(-1), np.eye(2)).output_dim        # what an estimator reads first at fit
    with pytest.raises(ValueError, match="degree"):
        Polynomial(0).diag(np.ones((2, 2)))
    with pytest.raises(ValueError, match="NaN or inf"):
        RBF(1.0)(np.array([[np.nan, 1.0]]))
    with pytest.raises(ValueError, match="same number of features"):
        RBF(1.0)(np.ones((2, 3)), np.ones((2, 4)))
    K = gaussian_times_J(3)
    with pytest.raises(ValueError, match="C must have shape"):
        K.apply(np.ones((2, 2)), np.ones((4, 2)), np.ones((4, 2)))
    with pytest.raises(ValueError, match="output_dim"):
        SumKernel([gaussian_times_J(3), gaussian_times_J(2)]).output_dim
    with pytest.raises(ValueError, match="mu"):
        linear_quadratic(3, mu=1.5)
    with pytest.raises(ValueError, match="weights"):
        SumKernel([K, K], [1.0, -1.0]).apply(np.ones((2, 2)), np.ones((2, 2)), np.ones((2, 3)))
    with pytest.raises(ValueError, match="positive semi-definite"):
        check_psd(-np.eye(2))
    with pytest.raises(ValueError, match="non-negative"):
        MultiplicationOperator(np.linspace(0, 1, 4), func=lambda t: t - 0.5).eig()
    with pytest.raises(ValueError, match="scale"):
        ScaledKernel(RBF(1.0), scale=0.0)(np.ones((2, 2)))
    with pytest.raises(ValueError, match="columns"):
        ColumnKernel(RBF(1.0), [-1])(np.ones((2, 2)))
    with pytest.raises(ValueError, match="ScalarKernel"):
        Separable(gaussian_times_J(2), np.eye(2)).output_dim


def all_kernels():
    "One of every kernel and operator kind, each with a hyper-parameter to search."
    t = np.linspace(0, 1, 6)
    from ovk_nb.linalg import BlockNystrom
    from ovk_nb.mvml import MultiViewKernel
    feats = BlockNystrom([ColumnKernel(RBF(0.5), [0]), ColumnKernel(RBF(0.5), [1])], np.eye(3)[:2])
    return {
        "rbf": RBF(0.5), "laplacian": Laplacian(0.3), "linear": Linear(), "polynomial": Polynomial(3, 1.0, 0.5),
        "column": ColumnKernel(RBF(0.5), [0, 2]), "scaled": ScaledKernel(Laplacian(0.5), 2.0),
        "separable": Separable(RBF(0.5), paper000_J(3)), "separable_operator": Separable(RBF(0.5), IntegralOperator(t)),
        "sum": linear_quadratic(3, 0.3), "block": BlockKernel(_block_func, 3),
        "identity_op": IdentityOperator(t), "multiplication_op": MultiplicationOperator(t),
        "integral_op": IntegralOperator(t, weights="uniform"),
        "output_op": OutputOperator(t, IntegralOperator(t).matrix, IntegralOperator(t).weights),
        "multiview": MultiViewKernel(feats, np.eye(feats.offsets[-1])),
    }


def _block_func(x, y):
    return np.exp(-((x - y) ** 2).sum()) * paper000_J(3)


@pytest.mark.parametrize("name", sorted(all_kernels()))
def test_kernels_are_scikit_learn_parameters(name):
    from sklearn.base import clone
    K = all_kernels()[name]
    shallow, deep = K.get_params(deep=False), K.get_params(deep=True)
    assert set(shallow) == set(inspect.signature(type(K)).parameters), name
    assert set(shallow) <= set(deep) and all(k.split("__")[0] in shallow for k in deep), name
    K2 = clone(K)                                   # sklearn checks each argument comes back as the object passed
    assert K2 is not K and type(K2) is type(K), name
    assert repr(K2) == repr(K) or " object at " in repr(K), name          # BlockNystrom features have no repr of their own
    for key in deep:                                 # every advertised name can be set, and set_params returns the kernel
        assert K2.set_params(**{key: deep[key]}) is K2, (name, key)
    X = np.random.default_rng(0).normal(size=(4, 3))
    if hasattr(K, "gram"):
        np.testing.assert_array_equal(K2.gram(X), K.gram(X))
    elif isinstance(K, OutputOperator):
        np.testing.assert_array_equal(K2.matrix, K.matrix)
    else:
        np.testing.assert_array_equal(K2(X), K(X))
    with pytest.raises(ValueError, match="Invalid parameter"):
        K.set_params(no_such_parameter=1)


def test_set_params_changes_what_the_kernel_computes():
    X = np.random.default_rng(1).normal(size=(5, 2))
    K = Separable(RBF(0.5), paper000_J(2))
    G = K.gram(X)
    K.set_params(scalar_kernel__gamma=2.0)
    np.testing.assert_allclose(K.gram(X), Separable(RBF(2.0), paper000_J(2)).gram(X), rtol=0, atol=0)
    assert not np.allclose(G, K.gram(X))
    K.set_params(T=np.eye(3))                        # the derived output matrix and its eigendecomposition follow
    assert K.output_dim == 3 and np.allclose(K.T_eig()[0], 1.0)
    t = np.linspace(0, 1, 7)
    Ko = Separable(RBF(1.0), IntegralOperator(t))
    w0 = Ko.weights.copy()
    Ko.set_params(T__weights="uniform")              # nested in the operator: the kernel's weights follow
    np.testing.assert_allclose(Ko.weights, grid_weights(t, "uniform"))
    assert not np.allclose(w0, Ko.weights)
    S = linear_quadratic(2, 0.3).set_params(weights=[1.0, 0.0])
    np.testing.assert_allclose(S.gram(X), Separable(Linear(), np.ones((2, 2))).gram(X))


def test_fit_leaves_kernel_hash_unchanged():
    "Caches filled at use are not part of a kernel's state as pickle (and so joblib.hash, clone) sees it."
    K = Separable(RBF(0.5), IntegralOperator(np.linspace(0, 1, 5)))
    before = pickle.dumps(K)
    K.gram(np.ones((2, 1))); K.T_eig()
    assert pickle.dumps(K) == before


def test_kernels_pickle():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(4, 3))
    for K in kernel_kinds(3, rng).values():
        if isinstance(K, BlockKernel):
            continue                       # holds a lambda
        K2 = pickle.loads(pickle.dumps(K))
        np.testing.assert_array_equal(K2.gram(X), K.gram(X))


def test_paper000_J_spectrum():
    for d in (2, 4, 10):
        ev = np.linalg.eigvalsh(paper000_J(d))
        np.testing.assert_allclose(ev, [0.9] * (d - 1) + [0.9 + 0.1 * d], atol=1e-12)


def test_estimators_holding_any_kernel_clone():
    from sklearn.base import clone
    from ovk_nb.ridge import OVKRidge
    rng = np.random.default_rng(2)
    for name, K in kernel_kinds(3, rng).items():
        assert set(K.get_params(deep=False)) <= set(type(K).__init__.__code__.co_varnames), name
        est = clone(OVKRidge(kernel=K, lam=0.5))
        assert est.lam == 0.5 and type(est.kernel) is type(K), name
        np.testing.assert_array_equal(est.kernel.gram(np.eye(3)), K.gram(np.eye(3)))


# ---- hyper-parameters as a flat log-space vector (issue 20) ----
from ovk_nb.kernels import Coregionalization, resolve_kernel  # noqa: E402


def _fd(f, theta, h=1e-6):
    out = []
    for j in range(len(theta)):
        e = np.zeros(len(theta)); e[j] = h
        out.append((f(theta + e) - f(theta - e)) / (2 * h))
    return np.array(out)


def test_theta_layout_and_round_trip():
    rng = np.random.default_rng(0)
    X, Y = rng.normal(size=(10, 2)), rng.normal(size=(10, 3))
    K = resolve_kernel(Separable(RBF("scale"), Coregionalization(rank=1)), X, Y)
    assert K.hyperparameter_names == ["scalar_kernel__gamma", "T__W[0,0]", "T__W[1,0]", "T__W[2,0]",
                                      "T__kappa[0]", "T__kappa[1]", "T__kappa[2]"]
    assert K.bounds.shape == (7, 2) and np.isinf(K.bounds[1:4]).all() and np.isfinite(K.bounds[[0, 4, 5, 6]]).all()
    np.testing.assert_allclose(K.theta[0], np.log(1 / X.var(0).sum()))
    K2 = K.clone_with_theta(K.theta + 0.3)
    np.testing.assert_allclose(K2.theta, K.theta + 0.3)
    assert K2.scalar_kernel.gamma == pytest.approx(K.scalar_kernel.gamma * np.exp(0.3))
    np.testing.assert_allclose(K.clone_with_theta(K.theta).gram(X), K.gram(X), rtol=1e-14)
    S = SumKernel([K, Separable(RBF(1.0), np.eye(3))])
    assert S.n_dims == 8 and S.hyperparameter_names[-1] == "kernels[1]__scalar_kernel__gamma"
    assert Linear().n_dims == 0 and Separable(Linear(), np.eye(2)).theta.shape == (0,)


def test_gradients_against_finite_differences():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(9, 3))
    for k in [RBF(0.3), Laplacian(0.8)]:
        K, dK = k.gram_gradient(X)
        np.testing.assert_allclose(K, k(X))
        fd = _fd(lambda t: k.clone_with_theta(t)(X), k.theta)
        assert np.abs(dK - fd).max() < 1e-7
    C = Coregionalization(3, 2, rng.normal(size=(3, 2)), [0.2, 0.5, 1.0])
    fd = _fd(lambda t: C.clone_with_theta(t).matrix, C.theta)
    assert np.abs(C.matrix_gradient() - fd).max() < 1e-7
    G = rng.normal(size=(3, 3))
    np.testing.assert_allclose(C.theta_gradient(G), np.einsum("ij,tij->t", G, C.matrix_gradient()), rtol=1e-12)


def test_coregionalization_is_an_output_matrix_and_a_parameter():
    C = Coregionalization(2, 2, [[1.0, 0.0], [0.5, 1.0]], [0.1, 0.1])
    K = Separable(RBF(1.0), C)
    np.testing.assert_allclose(K.T, [[1.1, 0.5], [0.5, 1.35]])
    assert K.weights is None and K.output_dim == 2
    K.set_params(T__kappa=[1.0, 1.0])                  # the derived T follows set_params
    np.testing.assert_allclose(np.diag(K.T), [2.0, 2.25])
    from sklearn.base import clone
    assert np.array_equal(clone(K).T, K.T)
    assert np.array_equal(pickle.loads(pickle.dumps(K)).gram(np.eye(2)), K.gram(np.eye(2)))


@pytest.mark.parametrize("bad, match", [
    (lambda: RBF("scale").theta, "resolve"),
    (lambda: Coregionalization(2).matrix, "resolve"),
    (lambda: Coregionalization(2, 3, np.ones((2, 3)), [1, 1]).matrix, "rank"),
    (lambda: Coregionalization(2, 1, np.ones((3, 1)), [1, 1]).matrix, "W must"),
    (lambda: Coregionalization(2, 1, np.ones((2, 1)), [1, -1]).matrix, "kappa"),
    (lambda: Coregionalization(2, 1, np.ones((2, 1)), [1, 1], kappa_bounds=(0, 1)).theta, "kappa_bounds"),
    (lambda: RBF(1.0).clone_with_theta([1.0, 2.0]), "theta"),
    (lambda: RBF(1.0).clone_with_theta([np.nan]), "theta"),
    (lambda: Coregionalization().resolve(np.zeros((3, 1))), "resolve"),
])
def test_hyperparameter_bad_inputs(bad, match):
    with pytest.raises(ValueError, match=match):
        bad()


# ---- scalar kernels and KernelRidge's names wherever a kernel is expected (issue 29.4) ----
def _ov_estimators():
    import ovk_nb
    return {"OVKRidge": lambda k: ovk_nb.OVKRidge(k), "OVKRidgeCV": lambda k: ovk_nb.OVKRidgeCV(k, lams=[0.1, 1.0], cv=2, random_state=0),
            "ONORMA": lambda k: ovk_nb.ONORMA(k),
            "OVKGaussianProcess": lambda k: ovk_nb.OVKGaussianProcess(k, optimizer=None),
            "JointQuantileRegressor": lambda k: ovk_nb.JointQuantileRegressor(kernel=k)}


@pytest.mark.parametrize("est", list(_ov_estimators()))
@pytest.mark.parametrize("given, means", [(RBF(0.5), Separable(RBF(0.5), None)), ("rbf", Separable(RBF(), None)),
                                          ("laplacian", Separable(Laplacian(), None)), ("linear", Separable(Linear(), None)),
                                          ("poly", Separable(Polynomial(3, 1.0, 1 / 3), None))])
def test_scalar_kernels_and_names_accepted_where_an_ovkernel_is_expected(est, given, means):
    "RBF(0.5) means Separable(RBF(0.5), I) at fit, 'rbf' etc. KernelRidge's kernels: the same predictions, bit for bit."
    import warnings
    make = _ov_estimators()[est]
    r = np.random.default_rng(0)
    X = r.normal(size=(30, 3)); Y = np.c_[np.sin(X[:, 0]), X[:, 1] ** 2]
    y = Y[:, 0] if est == "JointQuantileRegressor" else Y
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a, b = make(given).fit(X, y), make(means).fit(X, y)
    np.testing.assert_array_equal(a.predict(X[:5]), b.predict(X[:5]))
    assert a.get_params()["kernel"] is given                                   # the user's argument is kept as given


@pytest.mark.parametrize("est", ["FunctionalKRR", "OSKAAR"])
def test_names_accepted_where_a_scalar_kernel_is_expected(est):
    "Where a scalar kernel is expected (resolved with kind=ScalarKernel) a name means its scalar kernel."
    import ovk_nb
    r = np.random.default_rng(0)
    X = r.normal(size=(30, 3)); Y = np.c_[np.sin(X[:, 0]), X[:, 1] ** 2, X[:, 2]]
    cls = getattr(ovk_nb, est)
    y = Y if est == "FunctionalKRR" else np.where(X[:, 0] > 0, "a", "b")
    np.testing.assert_array_equal(cls(kernel="rbf").fit(X, y).predict(X[:5]), cls(kernel=RBF()).fit(X, y).predict(X[:5]))


def test_bad_kernel_names_and_objects_are_refused_by_name():
    import ovk_nb
    X, Y = np.zeros((4, 2)), np.zeros((4, 2))
    for bad in ("gaussian", 5, np.eye(2)):
        with pytest.raises(ValueError, match="kernel must be an instance of OVKernel or a ScalarKernel"):
            ovk_nb.OVKRidge(kernel=bad).fit(X, Y)
    with pytest.raises(ValueError, match="kernel must be"):
        resolve_kernel("gaussian", X, Y)


@pytest.mark.parametrize("given, means", [("rbf", RBF()), ("laplacian", Laplacian()), (RBF(0.5), RBF(0.5))])
def test_monorma_and_mvml_take_names_and_scalar_kernels(given, means):
    "MONORMA's dictionary and MVML's per-view kernels take the same forms as the others: the same predictions, bit for bit."
    import ovk_nb
    r = np.random.default_rng(0)
    X = r.normal(size=(30, 4)); Y = np.c_[np.sin(X[:, 0]), X[:, 1] ** 2]
    a = ovk_nb.MONORMA(kernels=[given, RBF(2.0)]).fit(X, Y).predict(X[:5])
    b = ovk_nb.MONORMA(kernels=[Separable(means, None), Separable(RBF(2.0), None)]).fit(X, Y).predict(X[:5])
    np.testing.assert_array_equal(a, b)
    for kernel in (given, [given, given]):
        m = ovk_nb.MVML(views=[[0, 1], [2, 3]], kernel=kernel, random_state=0).fit(X, Y[:, 0])
        np.testing.assert_array_equal(m.predict(X[:5]),
                                      ovk_nb.MVML(views=[[0, 1], [2, 3]], kernel=means, random_state=0).fit(X, Y[:, 0]).predict(X[:5]))
    for bad in (["gaussian"], ["rbf", 3]):
        with pytest.raises(ValueError, match="kernels must be"):
            ovk_nb.MONORMA(kernels=bad).fit(X, Y)
    with pytest.raises(ValueError, match="kernel must be"):
        ovk_nb.MVML(kernel="gaussian").fit(X, Y[:, 0])
