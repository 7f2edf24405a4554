"""river's habits on every online learner (issue 19): learn_one on a fast path gives partial_fit's model to 1e-12, dict
targets and predictions, pandas DataFrames in learn_many / predict_many; a changed parameter is still validated."""
import numpy as np
import pytest

from ovk_nb.decoding import Hamming
from ovk_nb.kernels import RBF, gaussian_times_J
from ovk_nb.monorma import MONORMA
from ovk_nb.onorma import ONORMA
from ovk_nb.oskaar import OSKAAR
from ovk_nb.salami import SALAMI

pd = pytest.importorskip("pandas")

MAKERS = {
    "onorma": lambda: ONORMA(gaussian_times_J(3, 1.0), lam=0.01),
    "onorma-trunc": lambda: ONORMA(gaussian_times_J(3, 1.0), lam=0.01, truncation=20),
    "onorma-margin": lambda: ONORMA(gaussian_times_J(3, 1.0), loss="margin"),
    "monorma": lambda: MONORMA([gaussian_times_J(3, g) for g in (0.5, 2.0)], eta=0.5),
    "oskaar": lambda: OSKAAR(RBF(0.5), lam=0.3, decoder=Hamming()),
    "salami": lambda: SALAMI(RBF(0.5), lam=0.3, decoder=Hamming(), lifetime=2),
    "oskaar-budget": lambda: OSKAAR(RBF(0.5), lam=0.3, decoder=Hamming(), budget=15),      # one-row primal rounds
    "salami-budget": lambda: SALAMI(RBF(0.5), lam=0.3, decoder=Hamming(), lifetime=4, budget=10),
}


def data(name, n=120, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4)) / 2
    if name.startswith(("oskaar", "salami")):
        return X, (X[:, :3] + 0.3 * rng.normal(size=(n, 3)) > 0).astype(int), {}
    if name.endswith("margin"):
        return X, rng.integers(0, 3, n), {"classes": [0, 1, 2]}
    return X, np.column_stack([np.sin(X[:, 0]), X[:, 1] * X[:, 2], np.cos(X[:, 3])]), {}


def scores(est, X):
    if hasattr(est, "decision_function") and getattr(est, "loss", "") == "margin":
        return est.decision_function(X)
    if hasattr(est, "_feature_estimates"):
        return est._feature_estimates(X)
    return est.predict(X)


@pytest.mark.parametrize("name", sorted(MAKERS))
def test_learn_one_gives_the_partial_fit_model(name):
    X, Y, kw = data(name)
    a = MAKERS[name]().partial_fit(X, Y, **kw)
    b = MAKERS[name]()
    for i, (x, y) in enumerate(zip(X, Y)):
        b.learn_one(x, y, **(kw if i == 0 else {}))
    assert b.n_seen_ == a.n_seen_ == len(X)
    sa, sb = scores(a, X[:30]), scores(b, X[:30])
    assert np.abs(sa - sb).max() <= 1e-12 * max(1.0, np.abs(sa).max())
    assert b.cumulative_error_ == pytest.approx(a.cumulative_error_, rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("name", ["onorma", "monorma"])
def test_dict_rows_and_dict_targets(name):
    X, Y, _ = data(name, 60)
    a = MAKERS[name]().partial_fit(X, Y)
    b = MAKERS[name]()
    for x, y in zip(X, Y):
        b.learn_one({f"f{j}": v for j, v in enumerate(x)}, {"u": y[0], "v": y[1], "w": y[2]})
    assert list(b.feature_names_in_) == ["f0", "f1", "f2", "f3"] and b.output_names_ == ["u", "v", "w"]
    np.testing.assert_allclose(b.predict(X), a.predict(X), rtol=1e-12, atol=1e-12)
    p = b.predict_one({"f3": X[0, 3], "f1": X[0, 1], "f0": X[0, 0], "f2": X[0, 2]})     # any key order
    assert isinstance(p, dict) and list(p) == ["u", "v", "w"]
    np.testing.assert_allclose([p["u"], p["v"], p["w"]], b.predict(X[:1])[0], rtol=0, atol=0)
    with pytest.raises(ValueError, match="x must have the features"):
        b.learn_one({"f0": 1.0}, {"u": 0.0, "v": 0.0, "w": 0.0})
    with pytest.raises(ValueError, match="y must have the outputs"):
        b.learn_one({f"f{j}": 0.0 for j in range(4)}, {"u": 0.0})
    with pytest.raises(ValueError, match="NaN"):
        b.learn_one(np.array([0.0, np.nan, 0.0, 0.0]), Y[0])
    with pytest.raises(ValueError, match="Y must have 3 columns"):
        b.learn_one(X[0], Y[0, :2])
    assert b.n_seen_ == 60                                     # refused rows changed nothing


def test_a_changed_parameter_is_validated_at_the_next_row():
    X, Y, _ = data("onorma", 20)
    est = MAKERS["onorma"]()
    for x, y in zip(X[:10], Y[:10]):
        est.learn_one(x, y)
    est.set_params(lam=-1.0)
    with pytest.raises(ValueError, match="lam must be"):
        est.learn_one(X[10], Y[10])
    est.set_params(lam=0.2)
    est.learn_one(X[10], Y[10])
    assert est._lam == 0.2 and est.n_seen_ == 11
    est.set_params(truncation=5)
    with pytest.raises(ValueError, match="truncation was"):
        est.learn_one(X[11], Y[11])


@pytest.mark.parametrize("name", ["onorma", "monorma", "oskaar"])
def test_dataframes_in_learn_many_and_predict_many(name):
    X, Y, _ = data(name, 80)
    cols = ["a", "b", "c", "d"]
    dX = pd.DataFrame(X, columns=cols, index=np.arange(100, 180))
    dY = pd.DataFrame(Y, columns=["u", "v", "w"])
    est = MAKERS[name]()
    est.learn_many(dX.iloc[:50], dY.iloc[:50])
    est.learn_many(dX.iloc[50:, ::-1], dY.iloc[50:, ::-1])     # columns matched by name, not position
    ref = MAKERS[name]().partial_fit(X, Y)
    out = est.predict_many(dX.iloc[:10])
    assert isinstance(out, pd.DataFrame) and list(out.index) == list(range(100, 110))
    assert list(out.columns) == ["u", "v", "w"]
    np.testing.assert_allclose(out.to_numpy(dtype=float), np.asarray(ref.predict(X[:10]), dtype=float),
                               rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="X must have the features"):
        est.predict_many(dX.rename(columns={"a": "z"}))


def test_series_target_and_one_output():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(50, 2))
    y = pd.Series(np.sin(X[:, 0]), name="target")
    est = ONORMA()
    est.learn_many(pd.DataFrame(X, columns=["p", "q"]), y)
    out = est.predict_many(pd.DataFrame(X[:5], columns=["p", "q"]))
    assert out.shape == (5, 1)
    assert isinstance(est.predict_one({"p": 0.1, "q": 0.2}), float)


def test_one_row_pieces_match_the_block_route():
    "The one-row step's pieces (issue 19.2): Gram rows, the in-place triangular solves, a bordered row of the factor."
    from scipy.linalg import solve_triangular

    from ovk_nb.kernels import Linear, Separable
    from ovk_nb.linalg import KernelParts
    from ovk_nb.oskaar import KAARFactor, _trsv
    from ovk_nb.streaming import gram_rows
    rng = np.random.default_rng(3)
    X = rng.normal(size=(70, 4))
    for kern in (gaussian_times_J(3, 0.7), Separable(Linear(), np.eye(2))):
        P = KernelParts(kern)
        for a, b in zip(gram_rows(P.scalars, X[:1], X[1:]), P.grams(X[:1], X[1:])):
            np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-14)
    with pytest.raises(ValueError, match="non-finite"):
        gram_rows([Linear()], np.full((1, 4), 1e200), np.full((3, 4), 1e200))
    K = RBF(0.5)(X) + 0.3 * np.eye(70)
    L = np.linalg.cholesky(K)
    buf = np.zeros((128, 128)); buf[:70, :70] = L           # L in the corner of a larger buffer (a strided view)
    v = rng.normal(size=70)
    np.testing.assert_allclose(_trsv(buf, 70, v, False), solve_triangular(L, v, lower=True), rtol=1e-12)
    np.testing.assert_allclose(_trsv(buf, 70, v, True), solve_triangular(L, v, lower=True, trans=1), rtol=1e-12)
    f, Kr = KAARFactor(0.3), RBF(0.5)(X)
    for t in range(70):                                      # one row at a time: the KAAR weights of dense solves
        W, f = f.extend(Kr[t:t + 1, :t], Kr[t:t + 1, t:t + 1])
        if t:
            ref = np.linalg.solve(Kr[:t + 1, :t + 1] + 0.3 * np.eye(t + 1), Kr[:t + 1, t])[:t]
            np.testing.assert_allclose(W[0, :t], ref, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(f.L @ f.L.T, K, rtol=1e-12, atol=1e-12)


def test_learn_one_puts_the_blas_threads_back():
    """The one-row step runs with one BLAS thread (`_BlasLimit`, OpenBLAS called directly in the main thread) and puts the
    user's setting back, also after a failed row."""
    threadpoolctl = pytest.importorskip("threadpoolctl")
    from ovk_nb.streaming import _BlasLimit
    X, Y, _ = data("onorma", 30)
    est = MAKERS["onorma"]()
    with threadpoolctl.threadpool_limits(limits=2, user_api="blas"):
        before = [i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"]
        with _BlasLimit(1):
            inside = [i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"]
        for x, y in zip(X, Y):
            est.learn_one(x, y)
        with pytest.raises(ValueError):
            est.learn_one(X[0], np.array([np.nan, 0.0, 0.0]))
        after = [i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"]
    assert inside == [1] * len(before) and after == before


def test_dict_rows_are_read_by_name_whatever_their_key_order():
    "A dict row is matched by feature name: keys in another order give the same model (they were swapped by position)."
    import warnings
    from ovk_nb.kernels import RBF, Separable
    from ovk_nb.onorma import ONORMA
    r = np.random.default_rng(0)
    X, Y = r.normal(size=(30, 3)), r.normal(size=(30, 2))
    a, b = ONORMA(Separable(RBF(0.5), np.eye(2))), ONORMA(Separable(RBF(0.5), np.eye(2)))
    for i, (x, y) in enumerate(zip(X, Y)):
        d = {"a": x[0], "b": x[1], "c": x[2]}
        a.learn_one(d if i % 2 == 0 else {"c": x[2], "a": x[0], "b": x[1]}, y)
        b.learn_one(d, y)
    assert list(a.feature_names_in_) == ["a", "b", "c"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.testing.assert_array_equal(a.predict(X), b.predict(X))


def test_one_row_steps_skip_the_blas_limit_only_below_openblas_serial_size():
    """ONORMA's one-row squared-loss step skips `_BlasLimit` while its row-times-window products stay below OpenBLAS's
    serial gemv size (w d < 9216 entries), and limits the threads again once the window is that wide."""
    from ovk_nb.kernels import RBF, Separable
    from ovk_nb.onorma import ONORMA
    from ovk_nb.streaming import _SERIAL_GEMV
    rng = np.random.default_rng(0)
    X, Y = rng.normal(size=(60, 3)), rng.normal(size=(60, 4))
    small = ONORMA(Separable(RBF(0.5), np.eye(4)), truncation=20).partial_fit(X, Y)
    assert not small._one_row_may_thread()                       # 21 x 4 entries
    wide = ONORMA(Separable(RBF(0.5), np.eye(4))).partial_fit(X, Y)
    wide._lo, wide.n_seen_ = 0, _SERIAL_GEMV // 4                # a window of 2304 rows x 4 outputs: at the threshold
    assert wide._one_row_may_thread()
    assert ONORMA(loss="margin").fit(X, np.sign(Y[:, 0]))._one_row_may_thread()   # the margin step: always limited


def test_oskaar_rounds_skip_the_blas_limit_only_below_openblas_serial_sizes():
    """A `learn_one` round of OSKAAR skips `_BlasLimit` only while none of its BLAS calls can thread: an exact round with a
    Gaussian kernel (its row by cdist; two dtrsv, never threaded) while the KAAR weights times the label features stay
    below `_SERIAL_GEMV` entries (label ids: a bincount), a primal round while R L_h stays at most `_SERIAL_GEMM`
    multiply-adds and its row products below `_SERIAL_GEMV`. The switch to the primal state, another kernel's own Gram row
    and wide label features are limited as before. SALAMI's round (one OSKAAR round per live expert) by the same sizes,
    with n the stored points and every budgeted expert's primal state at most m x m (issue 30: it was always limited)."""
    from ovk_nb.decoding import ZeroOne
    from ovk_nb.kernels import Linear
    from ovk_nb.oskaar import _SERIAL_GEMM
    from ovk_nb.streaming import _SERIAL_GEMV
    X, Y, _ = data("oskaar-budget", 80)
    est = MAKERS["oskaar-budget"]()
    for x, y in zip(X[:15], Y[:15]):
        est.learn_one(x, y)
        assert not est._one_row_may_thread() or est.n_seen_ == 15    # exact rounds (3 x 2 features), then the switch
    assert est._one_row_may_thread()                                # round 15 builds the primal state
    est.learn_one(X[15], Y[15])
    assert not est._one_row_may_thread()                            # a 15 x 15 primal state
    r = est._primal["nf"].proj.shape[1]
    assert r ** 3 <= _SERIAL_GEMM
    big = dict(est._primal, S=np.zeros((r, 10_000)))                # label features this wide: v S may thread
    est._primal, small = big, est._primal
    assert est._one_row_may_thread()
    est._primal = small
    exact = OSKAAR(RBF(0.5), lam=0.3, decoder=Hamming()).partial_fit(X, Y)
    assert not exact._one_row_may_thread()                          # 81 x 6 entries
    exact.n_seen_ = _SERIAL_GEMV // 6                               # 1536 + 1 weights x 6 features: may thread
    assert exact._one_row_may_thread()
    assert OSKAAR(Linear(), lam=0.3, decoder=Hamming()).partial_fit(X, Y)._one_row_may_thread()    # its own Gram row
    assert not OSKAAR(RBF(0.5), decoder=ZeroOne()).partial_fit(X, Y[:, 0])._one_row_may_thread()  # one bincount
    sal = MAKERS["salami-budget"]().partial_fit(X, Y)
    assert not sal._one_row_may_thread()                            # at most 81 stored points x 6 features, 10 x 10 primal states
    sal._n_in = _SERIAL_GEMV // 6                                   # as many stored points as the exact OSKAAR above
    assert sal._one_row_may_thread()
    assert SALAMI(Linear(), lam=0.3, decoder=Hamming()).partial_fit(X, Y)._one_row_may_thread()    # its own Gram row


def test_a_failing_primal_round_leaves_budgeted_oskaar_as_it_was():
    """learn_one on the primal state that overflows (a linear kernel on a row of 1e200) is refused by name, and the learner
    is byte for byte as before (records' free rows included); the stream then goes on as its twin's."""
    from ovk_nb.kernels import Linear
    from test_oskaar import state_bytes
    X, Y, _ = data("oskaar-budget", 60)
    est, twin = (OSKAAR(Linear(), lam=0.3, decoder=Hamming(), budget=5) for _ in range(2))
    for x, y in zip(X[:20], Y[:20]):
        est.learn_one(x, y); twin.learn_one(x, y)
    assert est._primal is not None
    before = state_bytes(vars(est))
    with pytest.raises(ValueError, match="budgeted state overflows"):
        est.learn_one(np.full(4, 1e200), Y[20])
    assert state_bytes(vars(est)) == before
    for x, y in zip(X[20:], Y[20:]):
        est.learn_one(x, y); twin.learn_one(x, y)
    np.testing.assert_array_equal(est.surrogate_losses_, twin.surrogate_losses_)
    np.testing.assert_array_equal(est._feature_estimates(X), twin._feature_estimates(X))


@pytest.mark.parametrize("kind", ["zeroone", "squared"])
def test_budgeted_oskaar_learn_one_with_other_decoders(kind):
    """learn_one of budgeted OSKAAR gives partial_fit's model with label ids that keep arriving after the switch (the
    primal round pads S; ZeroOne's own surrogate) and with real-valued outputs (the base surrogate from the round's
    features); the records match too."""
    from ovk_nb.decoding import Squared, ZeroOne
    rng = np.random.default_rng(5)
    X = rng.normal(size=(90, 3)) / 2
    if kind == "zeroone":
        dec, Y = ZeroOne(), np.minimum(np.arange(90) // 12, 6)          # a new label every 12 rounds, after round 10 too
    else:
        dec, Y = Squared(), np.column_stack([np.sin(X[:, 0]), X[:, 1] * X[:, 2]])
    a = OSKAAR(RBF(0.5), lam=0.3, decoder=dec, budget=10, history="all").partial_fit(X, Y)
    b = OSKAAR(RBF(0.5), lam=0.3, decoder=dec, budget=10, history="all")
    for x, y in zip(X, Y):
        b.learn_one(x, y)
    ga, gb = a._feature_estimates(X), b._feature_estimates(X)
    assert np.abs(ga - gb).max() <= 1e-12 * max(1.0, np.abs(ga).max())
    np.testing.assert_allclose(b.surrogate_losses_, a.surrogate_losses_, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(np.asarray(b.decisions_, float), np.asarray(a.decisions_, float), rtol=1e-12, atol=1e-12)


def test_fast_checks_issue_30_same_model_and_the_full_path_for_what_they_do_not_accept(monkeypatch):
    """The cheaper row and target checks (issue 30: one Python sum for a dict's values, one reduction for an array, the
    stored names as a tuple) take every ordinary row, dict or array, to the same step, and send anything else to the full
    checks: the model equals partial_fit's to 1e-14 whatever the rows' form."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(80, 5)) / 3
    Y = np.column_stack([np.sin(X[:, 0]), X[:, 1] * X[:, 2], X[:, 3]])
    make = lambda: ONORMA(gaussian_times_J(3, 1.0), lam=0.01, truncation=20)
    ref = make().partial_fit(X, Y)
    calls = []
    real = ONORMA.partial_fit
    monkeypatch.setattr(ONORMA, "partial_fit", lambda self, *a, **k: calls.append(1) or real(self, *a, **k))
    forms = [lambda i: (X[i], Y[i]),                                                    # arrays
             lambda i: (dict(zip("abcde", X[i].tolist())), dict(zip("uvw", Y[i].tolist()))),   # river's dicts
             lambda i: (np.asfortranarray(np.c_[X[i], X[i]])[:, 0], list(Y[i]))]           # a strided x, a list y
    for k, form in enumerate(forms):
        est, calls[:] = make(), []
        for i in range(len(X)):
            est.learn_one(*form(i))
        assert len(calls) == 1, (k, len(calls))                 # the first row only: every other row took the fast path
        np.testing.assert_allclose(est.predict(X[:20]), ref.predict(X[:20]), rtol=0, atol=1e-14)
    # what the fast checks refuse goes to the full path: the same model (a finite row whose sum overflows) or its message
    big = make()
    for i in range(3):
        big.learn_one(X[i], Y[i])
    calls[:] = []
    with pytest.raises(ValueError, match="NaN"):
        big.learn_one(X[3] * np.nan, Y[3])
    with pytest.raises(ValueError):
        big.learn_one(X[3], {"u": "a", "v": 0.0, "w": 0.0})
    with pytest.raises(ValueError, match="x"):
        make().learn_one({"a": np.nan, "b": 0.0, "c": 0.0, "d": 0.0, "e": 0.0}, dict(zip("uvw", Y[0])))
    assert big.n_seen_ == 3
    # a refused first dict row or dict target leaves no names behind (they were stored before the checks failed)
    assert "output_names_" not in big.__dict__
    fresh = make()
    with pytest.raises(ValueError):
        fresh.learn_one({"a": np.nan, "b": 0.0, "c": 0.0, "d": 0.0, "e": 0.0}, dict(zip("uvw", Y[0])))
    assert "feature_names_in_" not in fresh.__dict__ and "output_names_" not in fresh.__dict__


def test_values_past_float64_and_other_numbers_on_the_fast_path():
    """A dict row's values are read by `math.fsum` and `np.fromiter` (issue 30): a Python int past float64 (10**400) or a
    Decimal that rounds to inf is refused by name, by learn_one, partial_fit, predict_one and a hyper-parameter alike
    (numpy's raw OverflowError before), never learned as inf; Decimal, Fraction, bool and numpy scalars are learned as
    their float values, as the full checks learn them; the learner is unchanged after each refusal."""
    from decimal import Decimal
    from fractions import Fraction
    make = lambda: ONORMA(gaussian_times_J(2, 1.0), lam=0.01)
    est = make()
    est.learn_one({"a": 0.1, "b": 0.2}, {"u": 0.5, "v": -0.5})
    before = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in est.__dict__.items()}
    for x, y, who in [({"a": 10 ** 400, "b": 0.2}, {"u": 0.5, "v": 0.5}, "x"),
                      ({"a": 0.1, "b": 0.2}, {"u": 10 ** 400, "v": 0.5}, "Y"),
                      ({"a": Decimal("1e400"), "b": 0.2}, {"u": 0.5, "v": 0.5}, "x"),
                      ({"a": 0.1, "b": 0.2}, {"u": 0.5, "v": Decimal("-1e400")}, "Y")]:
        with pytest.raises(ValueError, match=who):
            est.learn_one(x, y)
        with pytest.raises(ValueError, match=who):
            make().learn_one(x, y)                        # the first call: the full checks
    assert est.n_seen_ == 1 and all(np.array_equal(est.__dict__[k], v) if isinstance(v, np.ndarray) else True
                                    for k, v in before.items())
    with pytest.raises(ValueError, match="too large for float64"):
        est.learn_one(np.array([0.1, 0.2]), [10 ** 400, 0.0])
    with pytest.raises(ValueError, match="too large for float64"):
        est.predict_one({"a": 10 ** 400, "b": 0.2})
    with pytest.raises(ValueError, match="lam"):
        ONORMA(lam=10 ** 400).partial_fit([[0.1, 0.2]], [[0.5, 0.5]])
    # other real numbers: the same model as their floats
    twin = make()
    twin.learn_one({"a": 0.1, "b": 0.2}, {"u": 0.5, "v": -0.5})
    odd = [({"a": Decimal("0.25"), "b": Fraction(1, 3)}, {"u": True, "v": np.float32(0.5)}),
           ({"a": np.int64(1), "b": 0.75}, {"u": Fraction(-1, 4), "v": Decimal("2")})]
    for x, y in odd:
        est.learn_one(x, y)
        twin.learn_one({k: float(v) for k, v in x.items()}, {k: float(v) for k, v in y.items()})
    np.testing.assert_array_equal(est.predict([[0.3, -0.2]]), twin.predict([[0.3, -0.2]]))


@pytest.mark.parametrize("make", [lambda: OSKAAR(RBF(0.5), lam=0.3, decoder=Hamming()),
                                  lambda: SALAMI(RBF(0.5), lam=0.3, decoder=Hamming(), lifetime=3)])
@pytest.mark.parametrize("n_before", [16, 64])           # 64: the records and the buffers full (the round grows them)
def test_a_failing_exact_round_leaves_the_learner_byte_for_byte_as_it_was(make, n_before):
    """The one-round undo point (read by index, issue 30) writes back what an exact round wrote before it failed: a
    Linear kernel on a row of 1e200 overflows the factor after the round stored its input and code, and is refused by
    name; every buffer, free rows included, is then byte for byte as before, and the stream goes on as its twin's."""
    from ovk_nb.kernels import Linear
    from test_oskaar import state_bytes
    X, Y, _ = data("oskaar", n_before + 20)
    est, twin = make().set_params(kernel=Linear()), make().set_params(kernel=Linear())
    for x, y in zip(X[:n_before], Y[:n_before]):
        est.learn_one(x, y); twin.learn_one(x, y)
    before = state_bytes(vars(est))
    with pytest.raises(ValueError, match="scale the inputs"):
        est.learn_one(np.full(4, 1e200), Y[n_before])
    assert state_bytes(vars(est)) == before
    for x, y in zip(X[n_before:], Y[n_before:]):
        est.learn_one(x, y); twin.learn_one(x, y)
    np.testing.assert_array_equal(est._feature_estimates(X), twin._feature_estimates(X))


@pytest.mark.parametrize("truncation", [None, 20])
def test_onorma_lean_route_commits_only_a_finished_step(monkeypatch, truncation):
    """issue 30: ONORMA's squared-loss `learn_one` on one Gaussian kernel times T takes the lean route (computed, then
    committed: no `_run_one`, no undo point) except where the general route is needed (full buffers), and gives
    partial_fit's model and running error to 1e-12, rows as arrays, dicts or numbers; a refused row (a NaN or infinite
    target, an infinite input) is refused by name on the general route, and leaves every buffer byte for byte."""
    from test_oskaar import state_bytes
    from ovk_nb.streaming import KernelStream
    X, Y, _ = data("onorma", 150)
    make = lambda: ONORMA(gaussian_times_J(3, 1.0), lam=0.01, truncation=truncation)
    ref = make().partial_fit(X, Y)
    est = make()
    est.learn_one(X[0], Y[0])
    calls, run_one = [], KernelStream._run_one
    monkeypatch.setattr(KernelStream, "_run_one", lambda self, A, T: (calls.append(len(A)), run_one(self, A, T))[1])
    for i in range(1, len(X)):
        est.learn_one(X[i], Y[i])
    assert 0 < len(calls) <= 4                                   # only when the buffers fill (64, 128 rows, ...)
    np.testing.assert_allclose(est.predict(X), ref.predict(X), rtol=1e-12, atol=1e-12)
    assert est.cumulative_error_ == pytest.approx(ref.cumulative_error_, rel=1e-12)
    if truncation is None:
        assert est.rkhs_norm2_ == pytest.approx(ref.rkhs_norm2_, rel=1e-12)
        assert est.cumulative_risk_ == pytest.approx(ref.cumulative_risk_, rel=1e-12)
    before = state_bytes(vars(est))
    for x, y in [(X[0], np.array([np.nan, 0.0, 0.0])), (X[0], np.array([np.inf, 0.0, 0.0])),
                 (np.array([np.inf, 0, 0, 0]), Y[0])]:
        with pytest.raises(ValueError, match="NaN|infinity|finite"):
            est.learn_one(x, y)
        assert state_bytes(vars(est)) == before
    one = ONORMA(gaussian_times_J(1, 1.0), lam=0.01, truncation=truncation)     # one output: numbers as targets
    one1 = ONORMA(gaussian_times_J(1, 1.0), lam=0.01, truncation=truncation).partial_fit(X, Y[:, 0])
    for x, y in zip(X, Y[:, 0]):
        one.learn_one(x, float(y))
    np.testing.assert_allclose(one.predict(X), one1.predict(X), rtol=1e-12, atol=1e-12)


def test_one_solve_round_matches_the_two_solve_round_and_dense_kaar():
    """issue 30: a round by one triangular solve (`KAARFactor._round1`: g = lam / delta^2 l^T E, E = L^{-1} Phi kept with the
    factor) gives the two-solve round's g (weights, then W Phi) and the dense KAAR's, to a tolerance from eps and cond(L);
    the factor is bordered by the same row; E is rebuilt once after a block and pickled with the factor."""
    import pickle
    from ovk_nb.oskaar import KAARFactor
    rng = np.random.default_rng(5)
    X = rng.normal(size=(90, 4))
    Phi = rng.normal(size=(90, 6))
    K = RBF(0.5)(X)
    lam = 1e-3                                                 # a poorly conditioned K + lam I
    cond = np.linalg.cond(K + lam * np.eye(90))
    tol = 90 * np.finfo(float).eps * cond
    one, two = KAARFactor(lam), KAARFactor(lam)
    for t in range(90):
        if t == 40:                                             # a block in between: E must be rebuilt (from Phi)
            _, one = one.extend(K[40:50, :40], K[40:50, 40:50])
            _, two = two.extend(K[40:50, :40], K[40:50, 40:50])
        if 40 <= t < 50:
            continue
        if t == 70:
            one = pickle.loads(pickle.dumps(one))
            assert one._E.shape == (70, 6)
        G1, one = one._round1(K[t, :t], K[t, t], Phi[t:t + 1], lambda: Phi[:t])
        W, two = two.extend(K[t:t + 1, :t], K[t:t + 1, t:t + 1])
        G2 = W @ Phi[:t + 1]
        ref = np.linalg.solve(K[:t, :t] + lam * np.eye(t), K[:t, t]) if t else np.zeros(0)
        s = lam / (K[t, t] + lam - K[:t, t] @ ref) if t else 1.0
        Gd = s * ref @ Phi[:t]
        scale = max(1.0, np.abs(Gd).max())
        assert np.abs(G1[0] - G2[0]).max() <= tol * scale and np.abs(G1[0] - Gd).max() <= tol * scale
        np.testing.assert_array_equal(one.L, two.L)             # the same bordered row (the same dtrsv)
    np.testing.assert_allclose(one._E[:90], np.linalg.solve(one.L, Phi), rtol=0, atol=tol * np.abs(Phi).max())


@pytest.mark.parametrize("history,budget", [(None, None), (7, None), (None, 15), ("all", 15)])
def test_oskaar_lean_round_is_taken_and_writes_the_general_rounds_bytes(monkeypatch, history, budget):
    """issue 30: OSKAAR's `learn_one` (exact rounds, and a budgeted learner's primal rounds) takes the lean route
    (computed, then written: no undo point, no `_run_one`) where it applies, and leaves every buffer byte for byte as the
    general route does; refused rows change nothing."""
    from test_oskaar import state_bytes
    X, Y, _ = data("oskaar", 150)
    make = lambda: OSKAAR(RBF(0.5), lam=0.3, decoder=Hamming(), history=history, budget=budget)
    lean, general = make(), make()
    calls = []
    monkeypatch.setattr(OSKAAR, "_run_one", (lambda run: lambda self, X, T: (calls.append(self), run(self, X, T))[1])(
        OSKAAR._run_one))
    for x, y in zip(X, Y):
        lean.learn_one(x, y)
    n_general_in_lean = sum(c is lean for c in calls)
    assert n_general_in_lean <= (10 if history in (None, "all") and budget is None else 25)   # the first round, the
    # buffers' growth (history=7: records of 16 rows, regrown every 8; a budget of 15 keeps 15 rounds) and the switch
    monkeypatch.setattr(OSKAAR, "_learn_lean", lambda self, x1, y: False)
    for x, y in zip(X, Y):
        general.learn_one(x, y)
    assert state_bytes(vars(lean)) == state_bytes(vars(general))
    before = state_bytes(vars(lean))
    monkeypatch.undo()
    with pytest.raises(ValueError):
        lean.learn_one(X[0], np.array([0, 1]))                  # 2 labels, not 3
    with pytest.raises(ValueError, match="NaN"):
        lean.learn_one(np.array([0.0, np.nan, 0.0, 0.0]), Y[0])
    assert state_bytes(vars(lean)) == before


def test_solve_into_is_trsv_on_every_buffer_and_forgets_dead_buffers():
    """issue 30: `_solve_into` (the factor's addresses read once per buffer) gives `_trsv`'s bits, on buffers of several
    sizes and on a C-ordered corner; a buffer's cached addresses go with it; other buffers take `_trsv`'s own route."""
    import gc
    from scipy.linalg import solve_triangular
    from ovk_nb.oskaar import _BUF_BLAS, _solve_into, _trsv
    rng = np.random.default_rng(7)
    for size, n in ((64, 1), (64, 50), (300, 257)):
        A = rng.normal(size=(n, n))
        buf = np.zeros((size, size))
        buf[:n, :n] = np.linalg.cholesky(A @ A.T / n + np.eye(n))
        k = rng.normal(size=n)
        l = _solve_into(buf, n, k)
        np.testing.assert_array_equal(l, _trsv(buf, n, k, transpose=False))
        np.testing.assert_allclose(l, solve_triangular(buf[:n, :n], k, lower=True), rtol=1e-12, atol=1e-12)
        key = id(buf)
        assert key in _BUF_BLAS
        del buf, l
        gc.collect()
        assert key not in _BUF_BLAS
    F = np.asfortranarray(np.tril(rng.normal(size=(20, 20))) + 5 * np.eye(20))   # not C-ordered: `_trsv`'s route
    k = rng.normal(size=20)
    np.testing.assert_allclose(_solve_into(F, 20, k), solve_triangular(F, k, lower=True), rtol=1e-12)


@pytest.mark.parametrize("make", [lambda: OSKAAR(RBF(0.5), lam=0.3, decoder=Hamming()),
                                  lambda: SALAMI(RBF(0.5), lam=0.3, decoder=Hamming(), lifetime=3),
                                  lambda: SALAMI(RBF(0.5), lam=0.3, decoder=Hamming(), lifetime=2, budget=6)])
def test_exact_factors_free_rows_stay_zero(monkeypatch, make):
    """issue 30: the one-round undo point zeroes the exact factors' free rows back (`_FreeRowsZero`), and the records',
    inputs' and codes' free rows: right because a free row (of L's buffer or of E's, of a record, of the stored inputs
    and codes) is zeros whatever the calls, blocks, rounds, failed rounds and pickles before. A round
    made to fail after the factors' rows are written (in `_record`) leaves the learner byte for byte as it was."""
    import pickle
    from test_oskaar import state_bytes
    X, Y, _ = data("oskaar", 160)
    est = make()
    est.partial_fit(X[:30], Y[:30])
    record = OSKAAR._record

    def failing(self, *a, **k):
        raise RuntimeError("injected")
    for i in range(30, 160):
        if i % 37 == 0:
            est.partial_fit(X[i:i + 5], Y[i:i + 5])
        elif i % 23 == 0:
            est = pickle.loads(pickle.dumps(est))
        if i % 11 == 0:                                      # the general route, failing after the factors' rows
            before = state_bytes(vars(est))
            monkeypatch.setattr(OSKAAR, "_learn_lean", lambda self, x1, y: False)
            monkeypatch.setattr(OSKAAR, "_record", failing)
            with pytest.raises(RuntimeError, match="injected"):
                est.learn_one(X[i], Y[i])
            monkeypatch.setattr(OSKAAR, "_record", record)
            monkeypatch.undo()
            assert state_bytes(vars(est)) == before
        est.learn_one(X[i], Y[i])
        for f in est._exact_factors():
            assert not f.buf[f.n:].any()
            E = f.__dict__.get("_E")
            assert E is None or not E[f.n:].any()
        r = est.n_seen_ - est._rec0                          # the records' free rows, the inputs' and codes' (issue 30,
        for k in est._records():                             # learn6: the one-round undo point zeroes them back too)
            assert not (np.asarray(getattr(est, k)[r:]) != 0).any(), k
        if est._primal is None:
            assert not est._X[est._n_in:].any() and not (np.asarray(est._codes[est._n_in:]) != 0).any()


def test_inverse_form_round_is_the_factor_round():
    """issue 30: a budgeted OSKAAR primal round on the inverse form (M = A^{-1}, Sherman-Morrison: `_inverse_step1`) gives
    the factor round's g (`_primal_step1`) and its new state (A = R R^T, M = A^{-1}, the same S), to eps times cond(A);
    the round after a refresh (`_INV_EVERY` rounds) too. A failed inverse round returns None and changes nothing."""
    from ovk_nb.oskaar import _INV_EVERY, _factor_form, _inverse_refresh, _inverse_step1, _primal_step1
    X, Y, _ = data("oskaar-budget", 60)
    est = MAKERS["oskaar-budget"]().partial_fit(X, Y)
    P, dec = est._primal, est.decoder_
    assert "R" in P                                                 # partial_fit keeps the factor
    rng = np.random.default_rng(3)
    Q = _inverse_refresh(P, np.asfortranarray(P["R"] @ P["R"].T))
    eps, cond = np.finfo(float).eps, np.linalg.cond(P["R"] @ P["R"].T)
    for t in range(_INV_EVERY + 3):                                 # through a refresh
        x = rng.normal(size=(1, 4)) / 2
        F = P["nf"](x)
        phi = dec.features(*est._fast_target(x, (rng.random(3) > 0.5).astype(int)))
        before = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in Q.items()}
        G1, P = _primal_step1(P, F, phi)
        G2, Q = _inverse_step1(Q, F[0], phi)
        tol = 50 * eps * cond
        assert np.abs(G1 - G2).max() <= tol * max(1.0, np.abs(G1).max())
        A = P["R"] @ P["R"].T
        assert np.abs(Q["A"] - A).max() <= 50 * eps * np.abs(A).max()
        assert np.abs(Q["M"] @ A - np.eye(len(A))).max() <= tol
        np.testing.assert_array_equal(Q["M"], Q["M"].T)             # symmetric to the last bit
        np.testing.assert_allclose(Q["S"], P["S"], rtol=0, atol=50 * eps * np.abs(P["S"]).max())
    assert Q["left"] == 2 * _INV_EVERY - (_INV_EVERY + 3)           # refreshed once
    np.testing.assert_allclose(_factor_form(Q)["R"], P["R"], rtol=0, atol=1e3 * eps * cond * np.abs(P["R"]).max())
    f_big = np.full(len(F[0]), 1e200)                               # an overflow: None, the state as it was
    before = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in Q.items()}
    assert _inverse_step1(Q, f_big, phi) is None
    assert all(np.array_equal(before[k], v) if isinstance(v, np.ndarray) else before[k] == v for k, v in Q.items())


def test_budgeted_oskaar_learn_one_and_partial_fit_mixed_and_pickled():
    """learn_one keeps the inverse form, partial_fit the factor: a stream fed by both in turns (and pickled between) gives
    partial_fit's model to 1e-12; predictions read either form; an ill-conditioned state keeps the factor for good."""
    import pickle
    X, Y, _ = data("oskaar-budget", 300)
    ref = MAKERS["oskaar-budget"]().partial_fit(X, Y)
    est = MAKERS["oskaar-budget"]()
    for a, b in ((0, 100), (100, 130), (130, 240), (240, 300)):
        if a in (0, 130):
            for x, y in zip(X[a:b], Y[a:b]):
                est.learn_one(x, y)
            assert "M" in est._primal and "R" not in est._primal     # learn_one's primal rounds: the inverse form
            est = pickle.loads(pickle.dumps(est))
        else:
            est.partial_fit(X[a:b], Y[a:b])
            assert "R" in est._primal and "M" not in est._primal
    ga, gb = ref._feature_estimates(X), est._feature_estimates(X)
    assert np.abs(ga - gb).max() <= 1e-12 * max(1.0, np.abs(ga).max())
    assert est.cumulative_error_ == pytest.approx(ref.cumulative_error_, rel=1e-12, abs=1e-12)
    ill = OSKAAR(RBF(0.01), lam=1e-8, decoder=Hamming(), budget=15)   # nearly collinear features: cond(A) > _INV_COND
    for x, y in zip(X[:40], Y[:40]):
        ill.learn_one(x, y)
    assert "R" in ill._primal and ill._primal.get("no_inverse")


def test_onorma_lean_step_both_product_branches_give_partial_fits_model(monkeypatch):
    """issue 30: the truncated lean step's window product by two SciPy `dgemv` (below `_SERIAL_GEMV`, no numpy error state)
    and by numpy's `ndarray.dot` (above it, where `_BlasLimit` limits numpy's BLAS) give partial_fit's model to 1e-12,
    with no warning on ordinary rows."""
    import warnings
    import ovk_nb.onorma as onorma_mod
    X, Y, _ = data("onorma", 150)
    make = lambda: ONORMA(gaussian_times_J(3, 1.0), lam=0.01, truncation=20)
    ref = make().partial_fit(X, Y)
    fits = []
    for serial in (onorma_mod._SERIAL_GEMV, 0):                  # 0: every window "above the serial size"
        monkeypatch.setattr(onorma_mod, "_SERIAL_GEMV", serial)
        est = make()
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            for x, y in zip(X, Y):
                est.learn_one(x, y)
        np.testing.assert_allclose(est.predict(X), ref.predict(X), rtol=1e-12, atol=1e-12)
        assert est.cumulative_error_ == pytest.approx(ref.cumulative_error_, rel=1e-12)
        fits.append(est.predict(X))
    assert np.abs(fits[0] - fits[1]).max() <= 1e-12 * max(1.0, np.abs(fits[0]).max())


def test_onorma_wide_window_step_limits_numpys_blas_and_puts_it_back(monkeypatch):
    """issue 30 (learn6): ONORMA's lean step past OpenBLAS's serial gemv size sets the thread limit by its C calls
    (`_limit_on` / `_limit_off`, no context object): one thread inside the step, the user's count after it, also after a
    step that raises; the model is partial_fit's."""
    threadpoolctl = pytest.importorskip("threadpoolctl")
    from ovk_nb.kernels import RBF, Separable
    from ovk_nb.onorma import ONORMA
    from ovk_nb.streaming import _SERIAL_GEMV
    rng = np.random.default_rng(1)
    n = _SERIAL_GEMV // 8 + 40                                   # the window passes w d = 9216 entries with d = 8
    X, Y = rng.normal(size=(n, 3)) / 3, rng.normal(size=(n, 8))
    make = lambda: ONORMA(Separable(RBF(0.5), np.eye(8)), lam=0.01)
    ref = make().partial_fit(X, Y)
    est = make().partial_fit(X[:n - 20], Y[:n - 20])
    est._reserve(20)
    seen, step = [], ONORMA._lean_step

    def spy(self, *a):
        seen.append([i["num_threads"] for i in threadpoolctl.threadpool_info() if i["internal_api"] == "openblas"
                     and "numpy" in i["filepath"]])
        return step(self, *a)
    monkeypatch.setattr(ONORMA, "_lean_step", spy)
    with threadpoolctl.threadpool_limits(limits=2, user_api="blas"):
        before = [i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"]
        for x, y in zip(X[n - 20:], Y[n - 20:]):
            est.learn_one(x, y)
        monkeypatch.setattr(ONORMA, "_lean_step", lambda self, *a: 1 / 0)
        with pytest.raises(ZeroDivisionError):
            est.learn_one(X[0], Y[0])
        after = [i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"]
    assert len(seen) == 20 and all(s == [1] for s in seen) and after == before
    assert est.n_seen_ == n
    np.testing.assert_allclose(est.predict(X[:50]), ref.predict(X[:50]), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("offset", [0.0, 30.0])
def test_onorma_wide_window_distances_by_the_expansion_only_where_it_is_accurate(monkeypatch, offset):
    """issue 30 (learn7): past the serial size the lean step reads -gamma ||x - x_i||^2 as gamma (2 x_i.x - ||x||^2 -
    ||x_i||^2) with the window's scaled norms cached in the lean plan (one gemv instead of cdist's loop), where
    gamma (||x||^2 + max ||x_i||^2)(p + 2) <= 1e-13 / eps; inputs far from the origin (offset 30: gamma ||x||^2 about
    5e3, where the expansion would cancel some 12 digits) keep the differences. Either way partial_fit's model to 1e-12; a refused row leaves the cache (and every buffer) byte for byte."""
    from test_oskaar import state_bytes
    import ovk_nb.onorma as onorma_mod
    monkeypatch.setattr(onorma_mod, "_SERIAL_GEMV", 0)           # every window "wide" (the expansion's branch)
    rng = np.random.default_rng(3)
    X, Y = offset + rng.normal(size=(150, 6)) / 4, rng.normal(size=(150, 2))
    make = lambda: ONORMA(gaussian_times_J(2, 1.0), lam=0.01)
    ref = make().partial_fit(X, Y)
    est = make()
    est.learn_one(X[0], Y[0])
    calls, dist = [], est._lean_plan()[5]
    monkeypatch.setattr(onorma_mod, "_sqeuclidean", lambda: (lambda a, b: (calls.append(len(b)), dist(a, b))[1]))
    est._lean = None                                             # the plan rebuilt with the counting distances
    for x, y in zip(X[1:], Y[1:]):
        est.learn_one(x, y)
    np.testing.assert_allclose(est.predict(X), ref.predict(X), rtol=1e-12, atol=1e-12)
    assert est.cumulative_error_ == pytest.approx(ref.cumulative_error_, rel=1e-12)
    assert est.rkhs_norm2_ == pytest.approx(ref.rkhs_norm2_, rel=1e-12)
    c = est._lean[7]
    assert c[0]() is est._X and c[2] == est.n_seen_ - est._base       # the cache follows the committed rows
    np.testing.assert_allclose(c[1][:c[2]], (est._X[:c[2]] ** 2).sum(1), rtol=1e-14)
    if offset == 0.0:
        assert calls == []                                       # the expansion: no cdist call on the lean route
    else:
        assert len(calls) >= 100                                 # large inputs: the differences
    before = state_bytes(vars(est))
    with pytest.raises(ValueError, match="NaN|finite"):
        est.learn_one(X[0], np.array([np.nan, 0.0]))
    assert state_bytes(vars(est)) == before


@pytest.mark.parametrize("numpy_only", [False, True])
def test_blas_limit_in_and_outside_the_main_thread_sets_and_puts_back(numpy_only):
    """`_BlasLimit` through the module's one implementation (`_main_blas_ops`, `_limit_on`, `_limit_off`; learn7): in the
    main thread numpy's library alone with `numpy_only`, every library otherwise; in another thread threadpoolctl's
    controllers (whose OpenBLAS rule applies there); the counts put back on exit in both, also after an exception."""
    import threading
    threadpoolctl = pytest.importorskip("threadpoolctl")
    from ovk_nb.streaming import _BlasLimit

    def counts():
        return [(i["filepath"], i["num_threads"]) for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"]

    def inside(out):
        before = counts()
        with pytest.raises(ZeroDivisionError), _BlasLimit(1, numpy_only=numpy_only):
            out.append(counts())
            1 / 0
        out.append(before == counts())

    with threadpoolctl.threadpool_limits(limits=2, user_api="blas"):
        if all(n == 1 for _, n in counts()):
            pytest.skip("one BLAS thread here: nothing to limit")
        main, other = [], []
        inside(main)
        t = threading.Thread(target=inside, args=(other,))
        t.start()
        t.join()
    numpys = lambda path: "numpy" in path
    assert main[1] and other[1]                                  # put back, in both threads
    assert all(n == (1 if numpys(p) or not numpy_only else 2) for p, n in main[0])


def test_hamming_label_rows_are_memoised_and_checked_as_before():
    """issue 30 (learn8): OSKAAR's `learn_one` keeps a checked Hamming label row's codes (read-only) for the next equal
    row; the model is partial_fit's, a bad row is still refused by name, and a row of another dtype is its own key."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(60, 5)) / 2
    Y = (X[:, :4] > 0).astype(int)
    a = OSKAAR(RBF(0.5), lam=0.3, decoder=Hamming())
    b = OSKAAR(RBF(0.5), lam=0.3, decoder=Hamming()).partial_fit(X, Y)
    for x, y in zip(X, Y):
        a.learn_one(x, y)
    np.testing.assert_allclose(a._feature_estimates(X), b._feature_estimates(X), rtol=0, atol=1e-12)
    t1, t2 = a._fast_target(X[:1], Y[0].copy()), a._fast_target(X[:1], Y[0].copy())
    assert t1[0] is t2[0] and not t1[0].flags.writeable and t1[1] is a._reg     # the memo's entry, read-only
    np.testing.assert_array_equal(t1[0], Y[:1])
    t3 = a._fast_target(X[:1], Y[0].astype(np.int32))
    assert t3[0] is not t1[0] and t3[0].dtype == np.int64
    n = a.n_seen_
    with pytest.raises(ValueError, match="symbols"):
        a.learn_one(X[0], np.array([0, 2, 1, 0]))                     # 2 is not a binary symbol
    with pytest.raises(ValueError):
        a.learn_one(X[0], np.array([0, 1, 1]))                        # three labels, not four
    assert a.n_seen_ == n
