"""Kernel hyper-parameters are searched like any other: GridSearchCV over a kernel hyper-parameter, for every estimator.

Each case names a grid over a nested kernel parameter (`kernel__scalar_kernel__gamma`, `input_kernel__gamma`, ...) or,
for the learners that take a list of kernels (MONORMA, MovKL), over the list itself. The search must run (scikit-learn
clones the estimator and calls `set_params` with the nested names), and the hyper-parameter must reach the fit: the
candidates get different cross-validation scores."""
import numpy as np
import pytest
from sklearn.model_selection import GridSearchCV, KFold

from ovk_nb.decoding import Squared
from ovk_nb.kde import CortesKDE, OVKDE, WestonKDE
from ovk_nb.kernels import RBF, IntegralOperator, Linear, Separable, paper000_J
from ovk_nb.monorma import MONORMA
from ovk_nb.movkl import FunctionalKRR, MovKL
from ovk_nb.mvml import MVML, MVMLClassifier
from ovk_nb.onorma import ONORMA
from ovk_nb.oskaar import OSKAAR
from ovk_nb.ridge import OVKRidge, OVKRidgeCV
from ovk_nb.salami import SALAMI

GAMMAS = [0.05, 2.0]


def _data(n=40, d=2, seed=0):
    r = np.random.default_rng(seed)
    X = r.normal(size=(n, 3))
    Y = np.column_stack([np.sin(X[:, 0] * 2), np.cos(X[:, 1])])[:, :d] + 0.05 * r.normal(size=(n, d))
    return X, Y


def _curves(n=40, m=6, seed=0):
    r = np.random.default_rng(seed)
    X = r.normal(size=(n, 2))
    t = np.linspace(0, 1, m)
    return X, np.sin(2 * X[:, :1] + t[None]) + 0.05 * r.normal(size=(n, m)), t


def _views(n=40, seed=0):
    X, Y = _data(n, 1, seed)
    return X, Y[:, 0]


def _seps(gamma):
    return [Separable(Linear(), np.eye(2)), Separable(RBF(gamma), np.eye(2))]


def _pairs(t, gamma):
    return [(RBF(gamma), IntegralOperator(t)), (Linear(), IntegralOperator(t))]


def cases():
    X, Y = _data()
    Xc, Yc, t = _curves()
    Xv, yv = _views()
    return {
        "OVKRidge": (OVKRidge(Separable(RBF(1.0), paper000_J(2)), lam=0.1), {"kernel__scalar_kernel__gamma": GAMMAS}, X, Y),
        "OVKRidge T": (OVKRidge(Separable(RBF(0.5), np.eye(2)), lam=0.1),
                       {"kernel__T": [np.eye(2), np.ones((2, 2))]}, X, Y),
        "OVKRidgeCV": (OVKRidgeCV(Separable(RBF(1.0), np.eye(2)), lams=(0.01, 0.1), cv=2),
                       {"kernel__scalar_kernel__gamma": GAMMAS}, X, Y),
        "ONORMA": (ONORMA(Separable(RBF(1.0), np.eye(2)), lam=0.01, eta=0.5), {"kernel__scalar_kernel__gamma": GAMMAS}, X, Y),
        "MONORMA": (MONORMA(_seps(1.0), lam=0.01, eta=0.5), {"kernels": [_seps(g) for g in GAMMAS]}, X, Y),
        "FunctionalKRR": (FunctionalKRR(RBF(1.0), IntegralOperator(t), lam=0.1),
                          {"kernel__gamma": GAMMAS}, Xc, Yc),
        "FunctionalKRR operator": (FunctionalKRR(RBF(0.5), IntegralOperator(t), lam=0.1),
                                   {"operator__weights": ["trapezoid", "uniform"]}, Xc, Yc),
        "MovKL": (MovKL(_pairs(t, 1.0), lam=0.1), {"kernels": [_pairs(t, g) for g in GAMMAS]}, Xc, Yc),
        "OVKDE": (OVKDE(RBF(1.0), RBF(0.5), lam=0.1), {"input_kernel__gamma": GAMMAS}, X, Y),
        "CortesKDE": (CortesKDE(RBF(1.0), RBF(0.5), lam=0.1), {"input_kernel__gamma": GAMMAS}, X, Y),
        "WestonKDE": (WestonKDE(RBF(1.0), RBF(0.5), lam=0.1, n_components=5), {"input_kernel__gamma": GAMMAS}, X, Y),
        "MVML": (MVML(kernel=RBF(1.0), n_components=0.5, random_state=0), {"kernel__gamma": GAMMAS}, Xv, yv),
        "MVMLClassifier": (MVMLClassifier(kernel=RBF(1.0), n_components=0.5, random_state=0), {"kernel__gamma": GAMMAS},
                           Xv, (yv > np.median(yv)).astype(int)),
        "OSKAAR": (OSKAAR(RBF(1.0), lam=0.1, decoder=Squared()), {"kernel__gamma": GAMMAS}, X, Y),
        "SALAMI": (SALAMI(RBF(1.0), lam=0.1, decoder=Squared(), eta=0.5), {"kernel__gamma": GAMMAS}, X, Y),
    }


@pytest.mark.parametrize("name", sorted(cases()))
def test_grid_search_over_a_kernel_hyper_parameter(name):
    est, grid, X, Y = cases()[name]
    search = GridSearchCV(est, grid, cv=KFold(3, shuffle=True, random_state=0), error_score="raise").fit(X, Y)
    (key, values), = grid.items()
    assert any(search.best_params_[key] is v for v in values), name
    scores = search.cv_results_["mean_test_score"]
    assert np.isfinite(scores).all(), (name, scores)
    assert abs(scores[0] - scores[1]) > 1e-9, (name, scores)      # the hyper-parameter reached the fit
    best = search.best_estimator_.get_params(deep=False)[key.split("__")[0]]
    assert best is not est.get_params(deep=False)[key.split("__")[0]], name   # cloned, the user's kernel left alone
    assert np.shape(search.predict(X[:3]))[0] == 3, name


def test_search_leaves_the_users_kernel_unchanged():
    K = Separable(RBF(0.7), np.eye(2))
    X, Y = _data()
    GridSearchCV(OVKRidge(K, lam=0.1), {"kernel__scalar_kernel__gamma": GAMMAS}, cv=2).fit(X, Y)
    assert K.scalar_kernel.gamma == 0.7
