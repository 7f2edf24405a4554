"""JointQuantileRegressor (issue 21, part 3): the dual QP's optimum equals the primal (duality) and the literal dense
reference; held-out coverage at n = 1000; non-crossing; scikit-learn's estimator checks; bad inputs; the optional
dependency."""
import pickle
import sys

import numpy as np
import pytest
from sklearn.utils.estimator_checks import check_estimator

from ovk_nb.kernels import RBF, Separable
from ovk_nb.quantile import (JointQuantileRegressor, check_probs, gram_factor, heteroscedastic_sine, level_matrix,
                             pinball_loss, primal_objective, quantile_qp_factored, quantile_qp_reference)

pytest.importorskip("clarabel")
LEVELS = (0.1, 0.5, 0.9)


@pytest.mark.parametrize("non_crossing", [False, True])
def test_factored_qp_equals_reference_and_primal(non_crossing):
    X, y = heteroscedastic_sine(150, random_state=3)
    t, lam = check_probs(LEVELS), 1e-3
    K = Separable(RBF(6.0), level_matrix(t, 10.0))
    G = K.gram(X)
    c, b, v, _ = quantile_qp_reference(G, y, t, lam, non_crossing)
    c2, b2, v2, info = quantile_qp_factored(gram_factor(K, X), y, t, lam, non_crossing)
    assert info["rank"] < 150 * 3 / 2
    np.testing.assert_allclose(v2, v, rtol=1e-7)
    np.testing.assert_allclose(b2, b, atol=1e-5)
    # strong duality: primal objective (1) at (h = G c, b = equality multipliers) is -lam times the dual optimum
    for cc, bb, vv in [(c, b, v), (c2, b2, v2)]:
        F = (G @ cc.ravel()).reshape(-1, 3) + bb
        np.testing.assert_allclose(primal_objective(F, y, t, lam, cc, G), -lam * vv, rtol=1e-6)


@pytest.mark.parametrize("non_crossing", [False, True])
def test_estimator_objective_equals_dense_reference(non_crossing):
    X, y = heteroscedastic_sine(200, random_state=4)
    m = JointQuantileRegressor(non_crossing=non_crossing).fit(X, y)
    assert m.solver_ == "factored"
    d = JointQuantileRegressor(non_crossing=non_crossing, solver="dense").fit(X, y)
    v = quantile_qp_reference(m.kernel_.gram(X), y, m.probs_, m.lam, non_crossing)[2]
    np.testing.assert_allclose([m.dual_objective_, d.dual_objective_], v, rtol=1e-7)
    np.testing.assert_allclose(m.predict_quantiles(X), d.predict_quantiles(X), atol=1e-4)


def test_heldout_coverage_n1000():
    X, y = heteroscedastic_sine(1000, random_state=0)
    Xt, yt, Qt = heteroscedastic_sine(5000, random_state=1, return_quantiles=LEVELS)
    m = JointQuantileRegressor(LEVELS).fit(X, y)
    Q = m.predict_quantiles(Xt)
    cov = (yt[:, None] <= Q).mean(axis=0)
    assert np.abs(cov - np.array(LEVELS)).max() <= 0.03, cov
    # close to the true quantiles' loss (the Bayes risk), far better than a constant per level
    loss = pinball_loss(yt, Q, LEVELS).mean()
    assert loss < 1.03 * pinball_loss(yt, Qt, LEVELS).mean()
    assert loss < 0.6 * pinball_loss(yt, np.quantile(y, LEVELS)[None].repeat(len(yt), 0), LEVELS).mean()
    assert np.diff(Q, axis=1).min() >= 0


def test_non_crossing_on_heldout_and_crossing_without():
    levels = (0.4, 0.45, 0.5, 0.55, 0.6)                  # close levels, independent outputs: curves cross
    X, y = heteroscedastic_sine(300, random_state=0)
    grid = np.linspace(0, 1.5, 1000)[:, None]
    free = JointQuantileRegressor(levels, gamma_tau=np.inf, non_crossing=False).fit(X, y)
    assert (np.diff(free.predict_quantiles(grid), axis=1) < -1e-4).any(axis=1).mean() > 0.02
    assert np.diff(free.predict_quantiles(X), axis=1).min() < -1e-4
    tied = JointQuantileRegressor(levels, gamma_tau=np.inf, non_crossing=True).fit(X, y)
    assert np.diff(tied.predict_quantiles(X), axis=1).min() >= -1e-6          # guaranteed on the training points
    assert np.diff(tied.predict_quantiles(grid), axis=1).min() >= -1e-6       # and on 1000 held-out points here


def test_single_level_is_a_kernel_quantile_regression():
    X, y = heteroscedastic_sine(200, random_state=5)
    m = JointQuantileRegressor(probs=0.3).fit(X, y)
    assert m.predict(X).shape == (200,)
    assert abs((y <= m.predict(X)).mean() - 0.3) <= 0.02
    np.testing.assert_allclose(m.score(X, y), -pinball_loss(y, m.predict(X), 0.3)[0])


def test_given_kernel_identity_means_independent_levels():
    X, y = heteroscedastic_sine(120, random_state=6)
    a = JointQuantileRegressor(kernel=Separable(RBF(5.0), T=None), non_crossing=False).fit(X, y)
    b = JointQuantileRegressor(kernel=Separable(RBF(5.0), np.eye(3)), non_crossing=False).fit(X, y)
    np.testing.assert_allclose(a.kernel_.T, np.eye(3))
    np.testing.assert_allclose(a.predict_quantiles(X), b.predict_quantiles(X), atol=1e-6)
    for j, tau in enumerate(LEVELS):                 # independent levels = one kernel quantile regression per level
        s = JointQuantileRegressor(probs=tau, kernel=Separable(RBF(5.0), np.eye(1))).fit(X, y)
        np.testing.assert_allclose(s.predict(X), a.predict_quantiles(X)[:, j], atol=1e-4)


def test_check_estimator_one_level():
    check_estimator(JointQuantileRegressor(probs=0.5))


@pytest.mark.parametrize("probs", [(0.1, 0.5, 0.9), (0.25, 0.75)])
def test_check_estimator_several_levels(probs):
    # issue 30: predict returned one column per level and check_regressors_train failed; predict now has y's shape
    check_estimator(JointQuantileRegressor(probs=probs))


@pytest.mark.parametrize("probs,level", [((0.1, 0.5, 0.9), 0.5), ((0.25, 0.75), 0.25), ((0.1, 0.3, 0.8), 0.3), (0.9, 0.9)])
def test_predict_is_the_level_nearest_the_median(probs, level):
    X, y = heteroscedastic_sine(40, random_state=0)
    m = JointQuantileRegressor(probs=probs).fit(X, y)
    Q = m.predict_quantiles(X)
    assert Q.shape == (40, np.size(probs)) and m.predict(X).shape == (40,)
    assert m.probs_[m.level_index_] == level
    np.testing.assert_array_equal(m.predict(X), Q[:, m.level_index_])


@pytest.mark.parametrize("k", [-600, 511])
def test_scale_of_y_is_the_same_qp(k):
    # issue 30: fit(X, y * 1e154) raised clarabel's raw RuntimeError (DualInfeasible). (2^k y, 2^-k lam) is the same
    # problem scaled, solved as the same QP: 2^k times the same bits
    X, y = heteroscedastic_sine(60, random_state=0)
    m = JointQuantileRegressor().fit(X, y)
    big = JointQuantileRegressor(lam=1e-3 * 2.0 ** -k).fit(X, y * 2.0 ** k)
    np.testing.assert_array_equal(big.predict_quantiles(X), m.predict_quantiles(X) * 2.0 ** k)
    assert np.isfinite(JointQuantileRegressor().fit(X, y * 1e154).predict_quantiles(X)).all()


def test_out_of_range_lam_names_lam_and_y():
    X, y = heteroscedastic_sine(30, random_state=0)
    with pytest.raises(ValueError, match="lam.*y"):
        JointQuantileRegressor(lam=1e-300).fit(X, y * 1e-100)


def test_solver_failure_is_a_named_error_or_a_convergence_warning(monkeypatch):
    from sklearn.exceptions import ConvergenceWarning
    X, y = heteroscedastic_sine(30, random_state=0)
    with pytest.warns(ConvergenceWarning, match="max_iter"):
        m = JointQuantileRegressor(max_iter=2).fit(X, y)
    assert np.isfinite(m.predict(X)).all()
    import clarabel
    real = clarabel.DefaultSolver

    class Failing:                               # the statuses clarabel reports on a numerical failure
        def __init__(self, *a):
            self.res = real(*a).solve()

        def solve(self):
            return type("R", (), dict(status="NumericalError", iterations=3, x=self.res.x, z=self.res.z))()
    monkeypatch.setattr(clarabel, "DefaultSolver", Failing)
    before = m.coef_.copy()
    with pytest.raises(ValueError, match="NumericalError.*scale of y"):
        m.fit(X, y)
    np.testing.assert_array_equal(m.coef_, before)


@pytest.mark.parametrize("probs", [(0.0, 0.5), (0.5, 1.0), (-0.1,), (1.2,), (0.9, 0.1), (0.5, 0.5), (), "a", (np.nan,)])
def test_bad_probs_name_the_argument(probs):
    X, y = heteroscedastic_sine(20, random_state=0)
    with pytest.raises(ValueError, match="probs"):
        JointQuantileRegressor(probs=probs).fit(X, y)


@pytest.mark.parametrize("name,value", [("lam", 0), ("lam", -1.0), ("gamma_tau", -1.0), ("solver", "cd"),
                                        ("non_crossing", "yes"), ("tol", 0.0)])
def test_bad_parameters_name_the_argument(name, value):
    X, y = heteroscedastic_sine(20, random_state=0)
    with pytest.raises(ValueError, match=name):
        JointQuantileRegressor(**{name: value}).fit(X, y)


def test_bad_data_and_kernel():
    X, y = heteroscedastic_sine(20, random_state=0)
    with pytest.raises(ValueError, match="output_dim"):
        JointQuantileRegressor(kernel=Separable(RBF(1.0), np.eye(2))).fit(X, y)
    with pytest.raises(ValueError, match="y"):
        JointQuantileRegressor().fit(X, np.c_[y, y])
    with pytest.raises(ValueError, match="rows"):
        JointQuantileRegressor().fit(X, y[:-1])


def test_failed_fit_leaves_estimator_unchanged():
    X, y = heteroscedastic_sine(50, random_state=0)
    m = JointQuantileRegressor().fit(X, y)
    before = m.predict(X)
    m.set_params(lam=-1.0)
    with pytest.raises(ValueError, match="lam"):
        m.fit(X[:30], y[:30])
    np.testing.assert_array_equal(m.predict(X), before)
    assert len(m.X_fit_) == 50


def test_pickle_round_trip():
    X, y = heteroscedastic_sine(60, random_state=0)
    m = JointQuantileRegressor().fit(X, y)
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(m)).predict(X), m.predict(X))


def test_missing_solver_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "clarabel", None)      # import clarabel now raises ImportError
    X, y = heteroscedastic_sine(20, random_state=0)
    with pytest.raises(ImportError, match=r"ovk_nb\[quantile\]"):
        JointQuantileRegressor().fit(X, y)
