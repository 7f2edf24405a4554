"""Issue 29 (5): every estimator's predictions follow y's shape as scikit-learn's regressors do: y of shape (n,) ->
predict (m,); (n, 1) -> (m, 1); (n, k) -> (m, k); on `fit`, on `partial_fit` in two batches and on `learn_one` row by row
(a number per row for a 1-D y, a row of k numbers otherwise; `predict_one` then gives a number or a row of k)."""
import warnings

import numpy as np
import pytest

from ovk_nb import (MONORMA, MVML, ONORMA, OSKAAR, SALAMI, CortesKDE, FunctionalKRR, MovKL, OVKDE, OVKGaussianProcess,
                    OVKRidge, OVKRidgeCV, Squared, WestonKDE)

N, M = 30, 7
ESTIMATORS = {
    "OVKRidge": OVKRidge, "OVKRidgeCV": OVKRidgeCV, "ONORMA": ONORMA, "MONORMA": MONORMA, "FunctionalKRR": FunctionalKRR,
    "MovKL": MovKL, "OVKDE": OVKDE, "CortesKDE": CortesKDE, "WestonKDE": WestonKDE, "MVML": MVML,
    "OVKGaussianProcess": OVKGaussianProcess,
    "OSKAAR(Squared)": lambda: OSKAAR(decoder=Squared()), "SALAMI(Squared)": lambda: SALAMI(decoder=Squared(), eta=0.1),
}
SHAPES = [(N,), (N, 1), (N, 3)]


def _data(shape):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(N, 3))
    Y = np.sin(X[:, :1]) + X[:, 1:2] * np.arange(1, 1 + (shape[1] if len(shape) == 2 else 1))
    return X, Y.reshape(shape), rng.normal(size=(M, 3))


def _expected(shape):
    return (M,) if len(shape) == 1 else (M, shape[1])


PATHS = [(name, path) for name, make in ESTIMATORS.items() for path in ("fit", "partial_fit", "learn_one")
         if hasattr(make(), path)]                       # every way the estimator has to learn


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("name,path", PATHS)
def test_predict_follows_y_shape(name, path, shape):
    est = ESTIMATORS[name]()
    X, Y, Xt = _data(shape)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")                   # convergence and conditioning warnings of tiny problems
        if path == "fit":
            est.fit(X, Y)
        elif path == "partial_fit":
            est.partial_fit(X[:N // 2], Y[:N // 2]).partial_fit(X[N // 2:], Y[N // 2:])
        else:
            for x, y in zip(X, Y):
                est.learn_one(x, y)                       # a number for a 1-D y, a row otherwise
        P = est.predict(Xt)
    assert np.shape(P) == _expected(shape), f"{name}.{path} on y of shape {shape} predicted shape {np.shape(P)}"
    assert np.isfinite(P).all()
    if path == "learn_one":
        assert np.shape(est.predict_one(Xt[0])) == _expected(shape)[1:]
