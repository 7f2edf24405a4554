"""One check suite over every learner built on the streaming core (`ovk_nb.streaming.KernelStream`), in the manner of
river's `check_estimator`: clone, pickling mid-stream, river's learn_one / predict_one, splits of the stream, validation."""
import pickle

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from sklearn.base import clone
from sklearn.exceptions import NotFittedError

from ovk_nb.kernels import gaussian_times_J, linear_quadratic
from ovk_nb.monorma import MONORMA
from ovk_nb.onorma import ONORMA
from ovk_nb.streaming import KernelStream

def RONORMA(*a, **k):
    "ONORMA keeping its per-step records (record_errors=True), as these checks read them."
    return ONORMA(*a, **{"record_errors": True, **k})


def RMONORMA(*a, **k):
    return MONORMA(*a, **{"record_errors": True, **k})


LEARNERS = {
    "onorma": lambda: RONORMA(gaussian_times_J(3), lam=0.05),
    "onorma-trunc": lambda: RONORMA(linear_quadratic(3, 0.2), lam=0.05, truncation=(5, 0.2)),
    "onorma-margin": lambda: RONORMA(gaussian_times_J(3), loss="margin"),
    "monorma": lambda: RMONORMA([gaussian_times_J(3, g) for g in (0.5, 2.0)], eta=0.5),
    "monorma-trunc": lambda: RMONORMA([gaussian_times_J(3), linear_quadratic(3, 0.3)], eta=0.5, truncation=10),
}
NAMES = sorted(LEARNERS)


def stream(name, n=60, seed=5):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4)) / 2
    Y = rng.integers(0, 3, n) if name.endswith("margin") else rng.normal(size=(n, 3))
    return X, Y, ({"classes": [0, 1, 2]} if name.endswith("margin") else {})


def out(est, X):
    return est.decision_function(X) if getattr(est, "loss", "") == "margin" else est.predict(X)


@pytest.mark.parametrize("name", NAMES)
def test_is_a_kernel_stream_and_clones_unfitted(name):
    est = LEARNERS[name]()
    assert isinstance(est, KernelStream)
    X, Y, kw = stream(name)
    est.partial_fit(X, Y, **kw)
    c = clone(est)
    assert c.get_params(deep=False).keys() == est.get_params(deep=False).keys()
    assert not hasattr(c, "n_seen_")
    with pytest.raises(NotFittedError):
        c.predict(X)
    with pytest.raises(NotFittedError):
        c.predict_one(X[0])


@pytest.mark.parametrize("name", NAMES)
def test_pickle_mid_stream_resumes_bit_identically(name):
    X, Y, kw = stream(name, 200)
    a, b = LEARNERS[name](), LEARNERS[name]()
    a.partial_fit(X[:77], Y[:77], **kw)
    b = pickle.loads(pickle.dumps(b.partial_fit(X[:77], Y[:77], **kw)))
    a.partial_fit(X[77:], Y[77:])
    b.partial_fit(X[77:], Y[77:])
    np.testing.assert_array_equal(a.errors_, b.errors_)
    np.testing.assert_array_equal(out(a, X[:10]), out(b, X[:10]))
    c = pickle.loads(pickle.dumps(a))
    np.testing.assert_array_equal(out(c, X[:10]), out(a, X[:10]))
    assert len(c._X) == len(a.coef_)                     # only the live window is written


@pytest.mark.parametrize("name", NAMES)
def test_learn_one_follows_partial_fit(name):
    X, Y, kw = stream(name)
    a = LEARNERS[name]().partial_fit(X, Y, **kw)
    b, c = LEARNERS[name](), LEARNERS[name]()
    for x, y in zip(X, Y):
        assert b.learn_one(x, y, **kw) is None            # river: learn_one returns nothing
        c.learn_one({f"f{j}": v for j, v in enumerate(x)}, y, **kw)
    np.testing.assert_allclose(b.errors_, a.errors_, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(b.errors_, c.errors_)   # dict features: the same steps
    np.testing.assert_allclose(out(b, X), out(a, X), rtol=1e-10, atol=1e-12)
    for x in X[:3]:
        np.testing.assert_array_equal(np.asarray(b.predict_one(x)), np.asarray(b.predict(x[None])[0]))
    np.testing.assert_array_equal(c.predict_one({f"f{j}": v for j, v in enumerate(X[0])}), b.predict_one(X[0]))
    with pytest.raises(ValueError, match="x must have the features"):
        c.predict_one({"other": 1.0})


@settings(max_examples=10, deadline=None)
@given(name=st.sampled_from(NAMES), cuts=st.lists(st.integers(1, 59), max_size=5), block=st.sampled_from([1, 7, 256]))
def test_any_split_of_the_stream_gives_the_same_learner(name, cuts, block):
    X, Y, kw = stream(name)
    whole = LEARNERS[name]()
    whole.fit(X, Y) if not kw else whole.partial_fit(X, Y, **kw)
    est = LEARNERS[name]()
    est._block_size = block
    for a, b in zip([0] + sorted(set(cuts)), sorted(set(cuts)) + [len(X)]):
        est.learn_many(X[a:b], Y[a:b], **kw)
    np.testing.assert_allclose(est.errors_, whole.errors_, rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(est.predict_many(X), est.predict(X))
    np.testing.assert_allclose(out(est, X), out(whole, X), rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize("name", NAMES)
def test_every_declared_constraint_is_checked_naming_the_argument(name):
    X, Y, kw = stream(name)
    cons = {}
    for cls in type(LEARNERS[name]()).__mro__:
        cons.update(getattr(cls, "_parameter_constraints", {}))
    assert {"lam", "eta", "schedule", "truncation"} <= set(cons)
    for param in cons:
        est = LEARNERS[name]().set_params(**{param: object()})
        with pytest.raises(ValueError, match=f"{param} must be"):
            est.partial_fit(X, Y, **kw)
    with pytest.raises(ValueError, match="0 sample"):
        LEARNERS[name]().partial_fit(X[:0], Y[:0], **kw)


# --- learners on the core's StreamLearner that are not decayed kernel expansions (paper 002) ---------------------------
from ovk_nb.decoding import Hamming, ZeroOne  # noqa: E402
from ovk_nb.kernels import RBF  # noqa: E402
from ovk_nb.oskaar import OSKAAR  # noqa: E402
from ovk_nb.salami import SALAMI  # noqa: E402
from ovk_nb.streaming import StreamLearner  # noqa: E402

STRUCTURED = {
    "oskaar": lambda: OSKAAR(RBF(0.5), lam=0.3, decoder=Hamming()),
    "oskaar-budget": lambda: OSKAAR(RBF(0.5), lam=0.3, decoder=Hamming(), budget=15),
    "oskaar-zeroone": lambda: OSKAAR(RBF(0.5), lam=0.3, decoder=ZeroOne()),
    "salami": lambda: SALAMI(RBF(0.5), lam=0.3, decoder=Hamming(), lifetime=2),
    "salami-zeroone": lambda: SALAMI(RBF(0.5), lam=0.3, decoder=ZeroOne()),
}
SNAMES = sorted(STRUCTURED)


def sstream(name, n=60, seed=5):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4)) / 2
    Y = rng.integers(0, 3, n) if name.endswith("zeroone") else (X[:, :3] + 0.3 * rng.normal(size=(n, 3)) > 0).astype(int)
    return X, Y


@pytest.mark.parametrize("name", SNAMES)
def test_structured_learner_clones_unfitted(name):
    est = STRUCTURED[name]()
    assert isinstance(est, StreamLearner) and not isinstance(est, KernelStream)
    X, Y = sstream(name)
    c = clone(est.partial_fit(X, Y))
    assert c.get_params(deep=False).keys() == est.get_params(deep=False).keys() and not hasattr(c, "n_seen_")
    with pytest.raises(NotFittedError):
        c.predict_one(X[0])


@pytest.mark.parametrize("name", SNAMES)
def test_structured_pickle_mid_stream_resumes_bit_identically(name):
    X, Y = sstream(name, 120)
    a = STRUCTURED[name]().partial_fit(X[:47], Y[:47])
    b = pickle.loads(pickle.dumps(a))
    a.partial_fit(X[47:], Y[47:]); b.partial_fit(X[47:], Y[47:])
    np.testing.assert_array_equal(a.surrogate_losses_, b.surrogate_losses_)
    np.testing.assert_array_equal(np.asarray(a.predict(X[:10])), np.asarray(b.predict(X[:10])))


@pytest.mark.parametrize("name", SNAMES)
def test_structured_learn_one_follows_partial_fit(name):
    X, Y = sstream(name)
    a = STRUCTURED[name]().partial_fit(X, Y)
    b, c = STRUCTURED[name](), STRUCTURED[name]()
    for x, y in zip(X, Y):
        assert b.learn_one(x, y) is None
        c.learn_one({f"f{j}": v for j, v in enumerate(x)}, y)
    np.testing.assert_allclose(b.surrogate_losses_, a.surrogate_losses_, rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(b.surrogate_losses_, c.surrogate_losses_)
    np.testing.assert_array_equal(np.asarray(b.predict_one(X[0])), np.asarray(b.predict_many(X[:1])[0]))


@pytest.mark.parametrize("name", SNAMES)
def test_structured_constraints_are_checked_naming_the_argument(name):
    X, Y = sstream(name)
    cons = {}
    for cls in reversed(type(STRUCTURED[name]()).__mro__):   # the effective declaration, merged as validation merges it
        cons.update(getattr(cls, "_parameter_constraints", {}) or {})
    params = set(STRUCTURED[name]().get_params(deep=False))
    assert params <= set(cons), "every hyper-parameter has a declared constraint"
    for param in sorted(params):
        with pytest.raises(ValueError, match=f"{param} must be"):
            STRUCTURED[name]().set_params(**{param: object()}).partial_fit(X, Y)
    with pytest.raises(ValueError, match="0 sample"):
        STRUCTURED[name]().partial_fit(X[:0], Y[:0])


# --- per-step records: every step, or the last `history` steps in bounded memory ----------------------------------------
@pytest.mark.parametrize("name", ["onorma", "monorma", "oskaar", "salami"])
def test_history_keeps_the_last_steps_in_bounded_memory(name):
    make = {"onorma": lambda **k: LEARNERS["onorma"]().set_params(**k),
            "monorma": lambda **k: LEARNERS["monorma"]().set_params(**k),
            "oskaar": lambda **k: STRUCTURED["oskaar"]().set_params(**k),
            "salami": lambda **k: STRUCTURED["salami"]().set_params(**k)}[name]
    if name in ("onorma", "monorma"):
        X, Y, kw = stream(name)
    else:
        (X, Y), kw = sstream(name), {}
    full = make().partial_fit(X, Y, **kw)
    k = 7
    short = make(history=k)
    sizes = []
    for i in range(len(X)):
        short.partial_fit(X[i:i + 1], Y[i:i + 1], **kw)
        sizes.append(max(len(getattr(short, r)) for r in short._step_records))
    assert max(sizes) <= 2 * (k + 1)                      # bounded whatever the stream length
    rec = {"onorma": "errors_", "monorma": "weights_history_", "oskaar": "losses_", "salami": "losses_"}[name]
    np.testing.assert_allclose(getattr(short, rec), getattr(full, rec)[-k:], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(short.cumulative_error_ if hasattr(short, "cumulative_error_") else 0.0,
                               full.cumulative_error_ if hasattr(full, "cumulative_error_") else 0.0, rtol=1e-9)
    if hasattr(full, "cumulative_loss_"):                 # a running sum: every round, whatever history keeps
        assert short.cumulative_loss_ == pytest.approx(full.cumulative_loss_, rel=1e-12)
    again = pickle.loads(pickle.dumps(short))             # resumes with the kept steps only
    np.testing.assert_array_equal(getattr(again, rec), getattr(short, rec))
    assert len(make(history=0).partial_fit(X, Y, **kw).__getattribute__(rec)) == 0
