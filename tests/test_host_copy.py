"""Issue 24: the NumPy-only estimators (the streaming learners, whose many small per-step BLAS calls do not suit a GPU, and
the rest) take PyTorch tensors by copying them to the host with a warning naming the argument, and give the NumPy results.
A CUDA tensor takes the same path (`validation.to_numpy` moves it with `.cpu()`); bench/gpu_check.py covers the device."""
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from ovk_nb.kde import OVKDE  # noqa: E402
from ovk_nb.monorma import MONORMA  # noqa: E402
from ovk_nb.movkl import MovKL  # noqa: E402
from ovk_nb.mvml import MVML  # noqa: E402
from ovk_nb.onorma import ONORMA  # noqa: E402
from ovk_nb.oskaar import OSKAAR  # noqa: E402
from ovk_nb.salami import SALAMI  # noqa: E402

r = np.random.default_rng(0)
X = r.uniform(size=(40, 3))
Y = np.column_stack([np.sin(3 * X[:, 0]), X[:, 1]])
LABELS = (Y > Y.mean(0)).astype(int)
CASES = {"ONORMA": (ONORMA, Y), "MONORMA": (MONORMA, Y), "OSKAAR": (OSKAAR, LABELS), "SALAMI": (SALAMI, LABELS),
         "MVML": (MVML, Y[:, 0]), "MovKL": (MovKL, Y), "OVKDE": (OVKDE, Y)}


def host_warnings(w):
    return [str(x.message) for x in w if "copied to the host" in str(x.message)]


@pytest.mark.parametrize("name", CASES)
def test_torch_input_is_copied_to_the_host_with_a_warning(name):
    cls, y = CASES[name]
    ref = cls().fit(X, y)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        m = cls().fit(torch.asarray(X), torch.asarray(y))
        P = m.predict(torch.asarray(X))
    msgs = host_warnings(w)
    assert msgs and all(s.split(":")[0] in ("X", "Y", "y") for s in msgs), msgs
    assert "runs on NumPy" in msgs[0]
    assert isinstance(P, (np.ndarray, list))               # NumPy results, not the input's library
    tol = 1e-9 if name == "MVML" else 0.0                   # MVML's alternation: rounding of its iterations only
    assert np.abs(np.asarray(P, dtype=float) - np.asarray(ref.predict(X), dtype=float)).max() <= tol


@pytest.mark.parametrize("name", ["ONORMA", "MONORMA", "OSKAAR", "SALAMI"])
def test_streaming_partial_fit_copies_to_the_host(name):
    "partial_fit on tensors: the warning, and the same model as on NumPy rows."
    cls, y = CASES[name]
    ref = cls().partial_fit(X[:20], y[:20]).partial_fit(X[20:], y[20:])
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        m = cls().partial_fit(torch.asarray(X[:20]), torch.asarray(y[:20])).partial_fit(torch.asarray(X[20:]),
                                                                                       torch.asarray(y[20:]))
    assert host_warnings(w)
    assert np.array_equal(np.asarray(m.predict(X), dtype=float), np.asarray(ref.predict(X), dtype=float))
