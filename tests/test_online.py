"""ONORMA / MONORMA (paper 000) against Algorithms 1 and 2 written literally, on random streams."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from sklearn.exceptions import NotFittedError

from ovk_nb.kernels import (RBF, BlockKernel, IntegralOperator, Laplacian, Linear, Polynomial, Separable, SumKernel,
                            gaussian_times_J, linear_quadratic)
from ovk_nb.monorma import MONORMA, monorma_reference as ref_monorma
from ovk_nb.onorma import ONORMA, onorma_reference as ref_onorma
from ovk_nb.streaming import budget, check_truncation, step_sizes

def RONORMA(*a, **k):
    "ONORMA keeping its per-step records (record_errors=True), as these checks read them."
    return ONORMA(*a, **{"record_errors": True, **k})


def RMONORMA(*a, **k):
    return MONORMA(*a, **{"record_errors": True, **k})



def rel(a, b):
    return float(np.abs(np.asarray(a) - np.asarray(b)).max() / max(1.0, np.abs(b).max()))


def _T(rng, d):
    A = rng.normal(size=(d, d))
    return A @ A.T / d


def make_kernel(kind, d, rng):
    T = _T(rng, d)
    return {
        "gaussian": Separable(RBF(0.7), T),
        "laplacian": Separable(Laplacian(0.5), T),
        "polynomial": Separable(Polynomial(2, coef0=1.0, gamma=0.3), T),
        "mu-kernel": linear_quadratic(d, 0.3),
        "sum-noncommuting": SumKernel([Separable(RBF(0.5), T), Separable(Linear(), np.eye(d) + 0.5)], [1.0, 0.2]),
        "nested-sum": SumKernel([linear_quadratic(d, 0.6), Separable(RBF(2.0), np.eye(d))], [0.5, 1.0]),
        "block": BlockKernel(lambda x, y: np.exp(-np.sum((x - y) ** 2)) * T + 0.1 * (x @ y) * np.eye(d), d),
    }[kind]


KINDS = ["gaussian", "laplacian", "polynomial", "mu-kernel", "sum-noncommuting", "nested-sum", "block"]
TRUNCS = [None, 1, 5, (3, 0.3), (6, 0.1)]


def feed(est, X, Y, cuts, **kw):
    for a, b in zip([0] + cuts, cuts + [len(X)]):
        if b > a:
            est.partial_fit(X[a:b], Y[a:b], **kw)
    return est


# ---------------------------------------------------------------- ONORMA == Algorithm 1
@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), kind=st.sampled_from(KINDS), trunc=st.sampled_from(TRUNCS),
       block=st.sampled_from([1, 2, 3, 7, 256]), cuts=st.lists(st.integers(1, 33), max_size=4),
       schedule=st.sampled_from(["invsqrt", "constant", "callable"]))
def test_onorma_matches_algorithm_1(seed, kind, trunc, block, cuts, schedule):
    rng = np.random.default_rng(seed)
    n, d = 34, 3
    X, Y = rng.normal(size=(n, 3)) / 2, rng.normal(size=(n, d))
    K = make_kernel(kind, d, rng)
    sched = (lambda t: 0.8 / (1 + 0.1 * t)) if schedule == "callable" else schedule
    eta = 0.8 if schedule != "constant" else 0.3
    etas = step_sizes(sched, eta, np.arange(1, n + 1))
    s = None if trunc is None else budget(check_truncation(trunc), np.arange(1, n + 1))
    xs, al, errs = ref_onorma(K, X, Y, 0.2, etas, s)
    est = RONORMA(K, lam=0.2, eta=eta, schedule=sched, truncation=trunc)
    est._block_size = block
    feed(est, X, Y, sorted(set(cuts)))
    assert est.n_seen_ == n
    assert rel(est.errors_, errs) < 1e-10
    assert abs(est.cumulative_error_ - errs.mean()) <= 1e-10 * max(1, errs.mean())
    Xt = rng.normal(size=(7, 3)) / 2
    assert rel(est.predict(Xt), K.apply(Xt, xs, al)) < 1e-10
    live = np.abs(al).sum(1) > 0
    assert rel(est.coef_[-live.sum():], al[live]) < 1e-10 if live.any() else True


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), kind=st.sampled_from(["gaussian", "mu-kernel", "block"]),
       trunc=st.sampled_from(TRUNCS), block=st.sampled_from([1, 4, 256]))
def test_onorma_margin_matches_algorithm_1(seed, kind, trunc, block):
    rng = np.random.default_rng(seed)
    n, d = 30, 3
    X, lab = rng.normal(size=(n, 3)), rng.integers(0, d, n)
    K = make_kernel(kind, d, rng)
    etas = step_sizes("invsqrt", 1.0, np.arange(1, n + 1))
    s = None if trunc is None else budget(check_truncation(trunc), np.arange(1, n + 1))
    xs, al, errs = ref_onorma(K, X, lab, 0.1, etas, s, loss="margin")
    est = RONORMA(K, lam=0.1, truncation=trunc, loss="margin")
    est._block_size = block
    feed(est, X, lab, [11, 12], classes=[0, 1, 2])
    np.testing.assert_array_equal(est.errors_, errs)
    assert rel(est.decision_function(X), K.apply(X, xs, al)) < 1e-10
    np.testing.assert_array_equal(est.predict(X), K.apply(X, xs, al).argmax(1))


def test_onorma_quadrature_weights_use_the_weighted_norm():
    rng = np.random.default_rng(0)
    t = np.linspace(0, 1, 5)
    K = Separable(RBF(1.0), IntegralOperator(t))
    X, Y = rng.normal(size=(25, 2)), rng.normal(size=(25, 5))
    etas = step_sizes("invsqrt", 1.0, np.arange(1, 26))
    xs, al, errs = ref_onorma(K, X, Y, 0.1, etas, w=K.weights)
    est = RONORMA(K, lam=0.1).fit(X, Y)
    assert rel(est.errors_, errs) < 1e-10
    assert rel(est.predict(X), K.apply(X, xs, al)) < 1e-10
    A = al.ravel()
    direct = A @ (np.kron(np.eye(25), np.diag(K.weights)) @ K.gram(xs)) @ A
    assert abs(est.rkhs_norm2_ - direct) < 1e-10 * max(1, direct)


@pytest.mark.parametrize("kind", ["gaussian", "mu-kernel", "block"])
@pytest.mark.parametrize("trunc", [None, 4])
def test_onorma_rkhs_norm_is_the_direct_norm(kind, trunc):
    rng = np.random.default_rng(3)
    X, Y = rng.normal(size=(40, 3)) / 2, rng.normal(size=(40, 3))
    K = make_kernel(kind, 3, rng)
    est = RONORMA(K, lam=0.1, truncation=trunc)
    est._block_size = 9
    est.fit(X, Y)
    A, S = est.coef_, est.support_
    direct = A.ravel() @ K.gram(S) @ A.ravel()
    assert abs(est.rkhs_norm2_ - direct) < 1e-10 * max(1, direct)


def test_lazy_scale_renormalises_without_changing_results():
    "eta_t lam = 0.9 for 400 steps: D_t = 0.1^400 would underflow; the scale is folded in and results are unchanged."
    rng = np.random.default_rng(1)
    X, Y = rng.normal(size=(400, 2)), rng.normal(size=(400, 2))
    K = Separable(RBF(1.0), np.eye(2))
    etas = np.full(400, 0.9)
    xs, al, errs = ref_onorma(K, X, Y, 1.0, etas)
    est = RONORMA(K, lam=1.0, eta=0.9, schedule="constant").fit(X, Y)
    assert rel(est.errors_, errs) < 1e-10
    assert rel(est.predict(X[:20]), K.apply(X[:20], xs, al)) < 1e-10
    assert 1e-60 < est._D <= 1.0


def test_truncation_keeps_memory_bounded():
    rng = np.random.default_rng(2)
    est = RONORMA(gaussian_times_J(2), truncation=20)
    for _ in range(60):
        est.partial_fit(rng.normal(size=(100, 3)), rng.normal(size=(100, 2)))
    assert est.n_seen_ == 6000 and est.coef_.shape == (20, 2)
    assert len(est._X) < 6000 / 2          # old inputs were dropped, not kept


# ---------------------------------------------------------------- MONORMA == Algorithm 2
@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10_000), trunc=st.sampled_from([None, 1, 4, (3, 0.3)]),
       block=st.sampled_from([1, 3, 256]), r=st.sampled_from([1, 2, 3.5]),
       kset=st.sampled_from(["gaussians", "synthetic", "mixed"]), cuts=st.lists(st.integers(1, 24), max_size=3))
def test_monorma_matches_algorithm_2(seed, trunc, block, r, kset, cuts):
    rng = np.random.default_rng(seed)
    n, d = 25, 3
    X, Y = rng.normal(size=(n, 3)) / 2, rng.normal(size=(n, d))
    Ks = {"gaussians": [gaussian_times_J(d, g) for g in (0.1, 1.0, 10.0)],
          "synthetic": [Separable(Linear(), np.ones((d, d))), Separable(Polynomial(2, coef0=0.0), np.eye(d))],
          "mixed": [make_kernel("gaussian", d, rng), make_kernel("mu-kernel", d, rng), make_kernel("block", d, rng)]}[kset]
    etas = step_sizes("invsqrt", 0.5, np.arange(1, n + 1))
    s = None if trunc is None else budget(check_truncation(trunc), np.arange(1, n + 1))
    xs, al, errs, deltas, gams = ref_monorma(Ks, X, Y, 0.1, etas, r, s)
    est = RMONORMA(Ks, lam=0.1, eta=0.5, r=r, truncation=trunc)
    est._block_size = block
    feed(est, X, Y, sorted(set(cuts)))
    assert rel(est.errors_, errs) < 1e-10
    assert rel(est.gammas_, gams[-1]) < 1e-10     # eq. (6) (+ truncation downdate) == the RKHS norm
    # step 2.2 is ill-conditioned where some gamma^j is tiny: d delta / delta = d gamma / ((r + 1) gamma), and eq. (6) gives
    # gamma to rounding of the largest norm, so the weights agree to 1e-10 only while max gamma / gamma^j stays moderate
    # (e.g. seed=1464, trunc=1, r=2, 'synthetic': gamma^1 = 1.8e-9 next to 1.4e-3 at t = 23, weights off by 2e-10)
    spread = float(np.max(gams.max(1, keepdims=True) / np.maximum(gams, 1e-300), initial=1.0))
    assert rel(est.weights_history_, deltas) < min(1e-6, 1e-10 * max(1.0, spread))   # relative error of gamma^j <= eps * spread
    F = np.tensordot(deltas[-1], np.stack([K.apply(X, xs, al) for K in Ks]), axes=1)
    assert rel(est.predict(X), F) < 1e-10
    assert abs(np.sum(est.weights_ ** r) - 1) < 1e-10


# ---------------------------------------------------------------- API, validation (pickling and river: tests/test_streaming.py)
def test_sklearn_api():
    rng = np.random.default_rng(0)
    X, Y = rng.uniform(size=(120, 5)), rng.normal(size=(120, 2))
    est = RONORMA(gaussian_times_J(2), lam=0.05)
    with pytest.raises(NotFittedError):
        est.predict(X)
    assert est.get_params()["lam"] == 0.05 and est.set_params(lam=0.05) is est
    est.fit(X, Y)
    assert est.n_seen_ == 120 and est.n_features_in_ == 5
    assert np.isfinite(est.score(X, Y))
    est.fit(X[:50], Y[:50])                        # fit forgets the previous pass
    assert est.n_seen_ == 50
    y1 = Y[:, 0]
    assert RONORMA(Separable(RBF(1.0), np.eye(1))).fit(X, y1).predict(X).shape == (120,)
    with pytest.raises(NotFittedError):
        RMONORMA([gaussian_times_J(2)]).predict(X)


def test_margin_loss_classifies():
    from sklearn.datasets import load_iris
    X, y = load_iris(return_X_y=True)
    X = (X - X.mean(0)) / X.std(0)
    perm = np.random.default_rng(0).permutation(len(X))
    X, y = X[perm], y[perm]
    names = np.array(["setosa", "versicolor", "virginica"])[y]
    est = RONORMA(gaussian_times_J(3, gamma=0.2), loss="margin").fit(X[:100], names[:100])
    assert set(est.predict(X[100:])) <= set(names)
    assert est.score(X[100:], names[100:]) > 0.85
    assert est.cumulative_error_ < 0.3            # online mistake rate


@pytest.mark.parametrize("kwargs, X, Y, match", [
    ({"lam": 2.0}, None, None, "eta_t \\* lam must stay below 1"),
    ({"lam": -1.0}, None, None, "lam"),
    ({"eta": 0.0}, None, None, "eta"),
    ({"schedule": "linear"}, None, None, "schedule"),
    ({"schedule": lambda t: -1.0}, None, None, "eta_t > 0"),
    ({"truncation": 0}, None, None, "truncation"),
    ({"truncation": (5, 0.5)}, None, None, "eps"),
    ({"loss": "hinge"}, None, None, "loss"),
    ({}, "nan", None, "NaN"),
    ({}, None, "inf", "Y contains infinity"),
    ({}, None, "wide", "Y must have 2 columns"),
    ({}, "empty", None, "(0 sample|at least one sample)"),
])
def test_onorma_bad_input(kwargs, X, Y, match):
    rng = np.random.default_rng(0)
    Xv, Yv = rng.normal(size=(10, 3)), rng.normal(size=(10, 2))
    if X == "nan": Xv[3, 1] = np.nan
    if X == "empty": Xv, Yv = Xv[:0], Yv[:0]
    if Y == "inf": Yv[2, 0] = np.inf
    if Y == "wide": Yv = rng.normal(size=(10, 3))
    with pytest.raises(ValueError, match=match):
        RONORMA(gaussian_times_J(2), **kwargs).fit(Xv, Yv)


def test_more_bad_input():
    rng = np.random.default_rng(0)
    X, Y = rng.normal(size=(10, 3)), rng.normal(size=(10, 2))
    with pytest.raises(ValueError, match="features"):
        RONORMA(gaussian_times_J(2)).fit(X, Y).partial_fit(X[:, :2], Y)
    with pytest.raises(ValueError, match="kernel must be an instance of OVKernel"):
        RONORMA("gaussian").fit(X, Y)                 # (a scalar kernel is accepted since issue 29: k I)
    with pytest.raises(ValueError, match="classes"):
        RONORMA(gaussian_times_J(2), loss="margin").partial_fit(X, np.arange(10) % 2)
    with pytest.raises(ValueError, match="number of classes"):
        RONORMA(gaussian_times_J(2), loss="margin").fit(X, np.arange(10) % 3)
    with pytest.raises(ValueError, match="not in classes"):
        RONORMA(gaussian_times_J(2), loss="margin").partial_fit(X, np.arange(10) % 2, classes=[0, 1]).partial_fit(X, np.full(10, 7))
    with pytest.raises(ValueError, match="r must be"):
        RMONORMA([gaussian_times_J(2)], r=0.5).fit(X, Y)
    with pytest.raises(ValueError, match="kernels must"):
        RMONORMA([]).fit(X, Y)
    with pytest.raises(ValueError, match="output_dim"):
        RMONORMA([gaussian_times_J(2), gaussian_times_J(3)]).fit(X, Y)
    with pytest.raises(ValueError, match="below 1"):
        RMONORMA([gaussian_times_J(2)], eta=2.0, lam=0.6, schedule="constant").fit(X, Y)


def test_divergence_is_reported():
    rng = np.random.default_rng(0)
    X, Y = rng.uniform(size=(300, 20)) * 3, rng.normal(size=(300, 4))
    with pytest.warns(RuntimeWarning, match="diverged"):
        RONORMA(linear_quadratic(4, 0.5), lam=0.01).fit(X, Y)


# ---------------------------------------------------------------- hyper-parameters between partial_fit calls
def _direct_norm2(est, K):
    A, S = est.coef_, est.support_
    return float(A.ravel() @ K.gram(S) @ A.ravel()) if len(S) else 0.0


def test_lam_changed_between_calls_drives_decay_and_risk_alike():
    "set_params(lam=...) mid-stream: the decay, the errors and the reported risk all use the new lam from the next step."
    rng = np.random.default_rng(4)
    n = 30
    X, Y = rng.normal(size=(n, 3)) / 2, rng.normal(size=(n, 2))
    K = gaussian_times_J(2, 0.5)
    lams = np.r_[np.full(12, 0.1), np.full(n - 12, 0.4)]
    etas = step_sizes("invsqrt", 1.0, np.arange(1, n + 1))
    xs, al, errs = ref_onorma(K, X, Y, lams, etas)
    est, norms = RONORMA(K, lam=0.1), []
    for t in range(n):
        if t == 12:
            est.set_params(lam=0.4)
        norms.append(_direct_norm2(est, K) if t else 0.0)          # ||f_{t-1}||^2, directly from the expansion
        est.partial_fit(X[t:t + 1], Y[t:t + 1])
    assert rel(est.errors_, errs) < 1e-10
    assert rel(est.predict(X), K.apply(X, xs, al)) < 1e-10
    risk = float(np.mean(0.5 * errs + 0.5 * lams * np.array(norms)))
    assert abs(est.cumulative_risk_ - risk) < 1e-10 * max(1.0, risk)
    assert abs(est.rkhs_norm2_ - _direct_norm2(est, K)) < 1e-10


def test_hyper_parameters_are_validated_at_every_call():
    rng = np.random.default_rng(0)
    X, Y = rng.normal(size=(10, 3)), rng.normal(size=(10, 2))
    est = RONORMA(gaussian_times_J(2)).fit(X, Y)
    with pytest.raises(ValueError, match="lam must be"):
        est.set_params(lam=-0.1).partial_fit(X, Y)
    with pytest.raises(ValueError, match="eta_t \\* lam must stay below 1"):
        est.set_params(lam=5.0).partial_fit(X, Y)
    n = est.n_seen_
    est.set_params(lam=0.01).partial_fit(X, Y)                     # a refused call left the state as it was
    assert est.n_seen_ == n + 10
    with pytest.raises(ValueError, match="r must be"):
        RMONORMA([gaussian_times_J(2)]).fit(X, Y).set_params(r=0.5).partial_fit(X, Y)


@pytest.mark.parametrize("make, change", [
    (lambda: RONORMA(gaussian_times_J(2), truncation=5), {"truncation": 6}),
    (lambda: RONORMA(gaussian_times_J(2)), {"truncation": 5}),
    (lambda: RONORMA(gaussian_times_J(2)), {"kernel": gaussian_times_J(2)}),
    (lambda: RMONORMA([gaussian_times_J(2)]), {"kernels": [gaussian_times_J(2, 2.0)]}),
])
def test_a_frozen_hyper_parameter_cannot_change_mid_stream(make, change):
    rng = np.random.default_rng(0)
    X, Y = rng.normal(size=(10, 3)), rng.normal(size=(10, 2))
    est = make().fit(X, Y)
    (name,) = change
    with pytest.raises(ValueError, match=f"(?s){name} was .* cannot change mid-stream"):
        est.set_params(**change).partial_fit(X, Y)
    assert est.fit(X, Y).n_seen_ == 10                             # fit starts afresh with the new value


def test_equivalent_truncation_forms_are_not_a_change():
    rng = np.random.default_rng(0)
    X, Y = rng.normal(size=(10, 3)), rng.normal(size=(10, 2))
    est = RONORMA(gaussian_times_J(2), truncation=(3, 0.25)).fit(X, Y)
    est.set_params(truncation=[3, 0.25]).partial_fit(X, Y)
    assert est.n_seen_ == 20


# ---------------------------------------------------------------- issue 19: compute, then commit (every in-place buffer)
import pickle  # noqa: E402

from ovk_nb.kernels import ScalarKernel  # noqa: E402


class _Boom(ScalarKernel):
    "A linear kernel that raises (a RuntimeError, not a ValueError) when it meets an input marked by x_0 = 999."
    def _gram(self, X, Y):
        if (X[:, 0] == 999).any() or (Y[:, 0] == 999).any():
            raise RuntimeError("kernel failed")
        return X @ Y.T
    def _diag(self, X):
        return (X * X).sum(1)


def _snapshot(est):
    return {k: (v.copy() if isinstance(v, np.ndarray) else pickle.dumps(v)) for k, v in est.__dict__.items()}


def _assert_unchanged(est, snap, ids):
    assert set(est.__dict__) == set(snap)
    for k, v in snap.items():
        w = est.__dict__[k]
        if isinstance(v, np.ndarray):
            assert id(w) == ids[k], k                          # the same array object, and
            assert w.dtype == v.dtype and w.shape == v.shape and np.array_equal(w, v, equal_nan=True), k   # bit-identical
        else:
            assert pickle.dumps(w) == v, k


FAIL_CASES = {
    # the repro: compaction (chunk 100, window 50) inside the batch, rows of 1e200 at its end overflow the kernel
    "onorma-compaction": (lambda: ONORMA(Separable(Linear(), np.eye(2)), lam=.01, eta=.01, truncation=50, record_errors=True),
                          300, 260, "huge"),
    # rescaling: a constant step with eta lam = 0.9 drives D below 1e-50 every ~50 steps, then the kernel raises mid-pass
    "onorma-rescale-constant": (lambda: ONORMA(Separable(_Boom(), np.eye(2)), lam=0.9, eta=1.0, schedule="constant",
                                               truncation=100, record_errors=True), 150, 190, "boom"),
    "onorma-invsqrt": (lambda: ONORMA(Separable(_Boom(), np.eye(2)), lam=0.01, eta=0.05, truncation=100, record_errors=True),
                       150, 190, "boom"),
    "onorma-untruncated": (lambda: ONORMA(Separable(_Boom(), np.eye(2)), lam=0.9, eta=1.0, schedule="constant"),
                           150, 190, "boom"),
    "onorma-margin": (lambda: ONORMA(Separable(_Boom(), np.eye(2)), lam=0.9, eta=1.0, schedule="constant", loss="margin",
                                     truncation=50, record_errors=True), 150, 190, "boom"),
    "monorma": (lambda: MONORMA([Separable(_Boom(), np.eye(2)), Separable(RBF(1.0), np.eye(2))], lam=0.9, eta=1.0,
                                schedule="constant", truncation=50, record_errors=True), 150, 190, "boom"),
    "monorma-compaction": (lambda: MONORMA([Separable(Linear(), np.eye(2)), Separable(RBF(1.0), np.eye(2))], lam=.01,
                                           eta=.01, truncation=50, record_errors=True), 300, 260, "huge"),
}


@pytest.mark.parametrize("name", sorted(FAIL_CASES))
def test_a_failed_partial_fit_leaves_every_buffer_bit_identical(name):
    make, n0, n1, how = FAIL_CASES[name]
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n0 + n1, 3)) / 2
    margin = name.endswith("margin")
    Y = rng.integers(0, 2, n0 + n1) if margin else rng.normal(size=(n0 + n1, 2))
    kw = {"classes": [0, 1]} if margin else {}
    est = make()
    est._chunk, est._block_size = 100, 10                 # compaction and rescaling happen inside the failing batch
    est.partial_fit(X[:n0], Y[:n0], **kw)
    X1 = X[n0:].copy()
    if how == "huge":
        X1[-5:] = 1e200                                   # finite rows: the kernel overflows on them, late in the batch
    else:
        X1[n1 - 10, 0] = 999                              # the kernel raises at row n0 + n1 - 10
    before = est.predict(X[:40]) if not margin else est.decision_function(X[:40])
    snap, ids = _snapshot(est), {k: id(v) for k, v in est.__dict__.items() if isinstance(v, np.ndarray)}
    with pytest.raises((ValueError, RuntimeError)):
        est.partial_fit(X1, Y[n0:])
    _assert_unchanged(est, snap, ids)
    after = est.predict(X[:40]) if not margin else est.decision_function(X[:40])
    np.testing.assert_array_equal(after, before)
    # and the learner goes on as if the call had never happened
    ref = make(); ref._chunk, ref._block_size = 100, 10
    ref.partial_fit(X[:n0], Y[:n0], **kw)
    good = X[n0:n0 + 30]
    est.partial_fit(good, Y[n0:n0 + 30]); ref.partial_fit(good, Y[n0:n0 + 30])
    np.testing.assert_array_equal(est.predict(X[:40]), ref.predict(X[:40]))


def test_a_failed_learn_one_leaves_the_learner_unchanged():
    rng = np.random.default_rng(1)
    X, Y = rng.normal(size=(80, 3)) / 2, rng.normal(size=(80, 2))
    est = ONORMA(Separable(_Boom(), np.eye(2)), lam=0.9, eta=1.0, schedule="constant", truncation=20, record_errors=True)
    for x, y in zip(X[:60], Y[:60]):
        est.learn_one(x, y)
    snap, ids = _snapshot(est), {k: id(v) for k, v in est.__dict__.items() if isinstance(v, np.ndarray)}
    bad = X[60].copy(); bad[0] = 999
    with pytest.raises(RuntimeError):
        est.learn_one(bad, Y[60])
    _assert_unchanged(est, snap, ids)


# ---------------------------------------------------------------- issue 19: budgeted streams stay bounded
@pytest.mark.parametrize("make", [lambda: ONORMA(truncation=100), lambda: MONORMA(truncation=100),
                                  lambda: ONORMA(truncation=(50, 0.1), loss="margin")], ids=["onorma", "monorma", "margin"])
def test_a_budgeted_stream_keeps_O_budget_memory(make):
    rng = np.random.default_rng(3)
    est, sizes = make(), []
    kw = {"classes": [0, 1]} if est.get_params().get("loss") == "margin" else {}
    for i in range(0, 6000, 5):
        X = rng.normal(size=(5, 3))
        y = (X[:, 0] > 0).astype(int) if kw else np.sin(X[:, 0])
        est.partial_fit(X, y, **(kw if i == 0 else {}))
        sizes.append(max(v.shape[0] for v in est.__dict__.values() if isinstance(v, np.ndarray) and v.ndim >= 1))
    window = len(est.coef_)
    assert est.n_seen_ == 6000 and max(sizes) <= 4 * (window + 5)   # nothing grows with the stream (it grew to 6144)
    assert len(pickle.dumps(est)) < 100 * 1024
    with pytest.raises(AttributeError, match="record_errors=True"):
        est.errors_
    assert np.isfinite(est.cumulative_error_)


def test_recorded_errors_are_an_opt_in_and_history_bounds_them():
    rng = np.random.default_rng(4)
    X, Y = rng.normal(size=(300, 3)), rng.normal(size=300)
    a = ONORMA(truncation=10, record_errors=True).fit(X, Y)
    b = ONORMA(truncation=10).fit(X, Y)
    assert a.errors_.shape == (300,) and a.cumulative_error_ == pytest.approx(a.errors_.mean(), rel=1e-12)
    assert b.cumulative_error_ == pytest.approx(a.cumulative_error_, rel=1e-12) and b._errs.size == 0
    np.testing.assert_array_equal(a.predict(X), b.predict(X))
    with pytest.raises(ValueError, match="record_errors was"):
        b.set_params(record_errors=True).partial_fit(X, Y)


# ---------------------------------------------------------------- issue 19: defaults that fit, scikit-learn's contract
def test_default_learners_fit_and_keep_their_kernels():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(300, 4)) * 5 + 10                   # unscaled inputs: the bandwidth comes from the data
    Y = np.column_stack([np.sin(X[:, 0] / 5), np.cos(X[:, 1] / 5)])
    on, mo = ONORMA().fit(X, Y), MONORMA().fit(X, Y)
    assert on.kernel is None and on.kernel_.output_dim == 2
    np.testing.assert_allclose(on.kernel_.T, np.eye(2))
    assert on.kernel_.scalar_kernel.gamma == pytest.approx(1 / X.var(0).sum())
    assert mo.kernels is None and len(mo.kernels_) == 3
    gammas = sorted(k.scalar_kernel.gamma for k in mo.kernels_)
    np.testing.assert_allclose(gammas, np.array([0.1, 1, 10]) / X.var(0).sum())
    assert on.score(X, Y) > 0.5 and mo.score(X, Y) > 0.5
    clf = ONORMA(loss="margin").fit(X, np.where(X[:, 0] > 10, "a", "b"))
    assert clf.kernel_.output_dim == 2 and list(clf.classes_) == ["a", "b"]


def test_more_passes_in_fit_continue_the_schedule():
    rng = np.random.default_rng(6)
    X, y = rng.normal(size=(100, 3)), rng.normal(size=100)
    a = ONORMA(n_passes=3).fit(X, y)
    b = ONORMA().fit(X, y).partial_fit(X, y).partial_fit(X, y)
    assert a.n_seen_ == 300
    np.testing.assert_allclose(a.predict(X), b.predict(X), rtol=1e-12, atol=1e-12)


def test_the_margin_loss_is_a_classifier_contract():
    rng = np.random.default_rng(7)
    X = rng.normal(size=(60, 3))
    with pytest.raises(ValueError, match="Unknown label type"):
        ONORMA(loss="margin").fit(X, rng.normal(size=60))
    with pytest.raises(ValueError, match="at least 2 classes"):
        ONORMA(loss="margin").fit(X, np.zeros(60))
    est = ONORMA(loss="margin").fit(X, np.arange(60) % 4)
    assert est.decision_function(X).shape == (60, 4)


def _check_estimator_failures(est):
    from sklearn.utils.estimator_checks import check_estimator
    res = check_estimator(est, on_fail=None)
    return [(r["check_name"], str(r["exception"])[:200]) for r in res if r["status"] == "failed"]


@pytest.mark.parametrize("est", [ONORMA(), MONORMA(), ONORMA(loss="margin")], ids=["onorma", "monorma", "onorma-margin"])
def test_check_estimator_with_the_defaults(est):
    assert _check_estimator_failures(est) == []
