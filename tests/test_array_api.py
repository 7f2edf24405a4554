"""Issue 24: the estimators on other array libraries, as scikit-learn's `check_array_api_input` does: the same data as
array-api-strict arrays and as PyTorch (CPU) tensors give the NumPy results (1e-10 in float64) for every solver of the
array-API path, and the outputs stay in the input's library. On a GPU, bench/gpu_check.py runs the same on the device."""
import numpy as np
import pytest

xps = pytest.importorskip("array_api_strict")
torch = pytest.importorskip("torch")

from ovk_nb.backend import XP_SOLVERS, route_of, to_numpy  # noqa: E402
from ovk_nb.kernels import RBF, Laplacian, Linear, Polynomial, Separable, paper000_J  # noqa: E402
from ovk_nb.ridge import OVKRidge, OVKRidgeCV  # noqa: E402

LIBS = {"array-api-strict": xps.asarray, "torch": torch.asarray}


def data(n=50, p=3, d=3, seed=0):
    r = np.random.default_rng(seed)
    return r.uniform(size=(n, p)), r.normal(size=(n, d)), r.uniform(size=(9, p))


@pytest.mark.parametrize("lib", LIBS)
@pytest.mark.parametrize("solver", ["auto", *XP_SOLVERS])
@pytest.mark.parametrize("scalar", [RBF(1.5), Laplacian(0.7), Linear(), Polynomial(2, gamma=0.5)], ids=lambda k: type(k).__name__)
def test_every_solver_equals_numpy(lib, solver, scalar):
    X, Y, Xt = data()
    K = Separable(scalar, paper000_J(3, 0.2))
    kw = dict(lam=0.3, solver=solver, n_components=20, random_state=1)
    ref = OVKRidge(K, **kw).fit(X, Y)
    m = OVKRidge(K, **kw).fit(LIBS[lib](X.copy()), LIBS[lib](Y.copy()))
    P = m.predict(LIBS[lib](Xt.copy()))
    assert route_of(P) == "array_api" and route_of(m.y_mean_) == "array_api"
    assert m.solver_ == ref.solver_
    Pr = ref.predict(Xt)
    assert np.abs(to_numpy(P) - Pr).max() <= 1e-10 * np.abs(Pr).max()


@pytest.mark.parametrize("lib", LIBS)
def test_defaults_cv_and_refusals(lib):
    X, Y, Xt = data(n=40)
    a = LIBS[lib]
    m = OVKRidgeCV(lams=(0.01, 0.1, 1.0), cv=3, random_state=0).fit(a(X.copy()), a(Y.copy()))
    r = OVKRidgeCV(lams=(0.01, 0.1, 1.0), cv=3, random_state=0).fit(X, Y)
    assert m.lam_ == r.lam_
    np.testing.assert_allclose(m.cv_errors_, r.cv_errors_, rtol=1e-9)
    np.testing.assert_allclose(to_numpy(m.predict(a(Xt.copy()))), r.predict(Xt), rtol=1e-9, atol=1e-12)
    with pytest.raises(ValueError, match="NumPy"):
        OVKRidge(solver="cg").fit(a(X.copy()), a(Y.copy()))
    with pytest.raises(ValueError, match="NumPy"):
        OVKRidge(solver="rff").fit(a(X.copy()), a(Y.copy()))
    fitted = OVKRidge().fit(a(X.copy()), a(Y.copy()))
    with pytest.raises(ValueError, match="library the model was fitted on"):
        fitted.predict(Xt)                                  # a NumPy X for a model fitted on another library


def test_float32_follows_x():
    X, Y, Xt = data()
    m = OVKRidge(lam=0.1).fit(torch.asarray(X, dtype=torch.float32), torch.asarray(Y, dtype=torch.float32))
    P = m.predict(torch.asarray(Xt, dtype=torch.float32))
    assert P.dtype == torch.float32 and m.coef_.dtype == torch.float32
    ref = OVKRidge(lam=0.1).fit(X, Y).predict(Xt)
    assert np.abs(P.numpy() - ref).max() <= 1e-3 * np.abs(ref).max()
