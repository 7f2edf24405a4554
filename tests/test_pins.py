"""Behaviour pinned across the house move: every estimator's predictions on fixed seeds, recorded before the
restructure (tests/pins/record.py), must not change. Where the arithmetic is unchanged they agree to 1e-12."""
import sys
from pathlib import Path

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).parent / "pins"))
import record  # noqa: E402

PINNED = dict(np.load(record.PINS))
CASES = record.cases()
# Where merging two copies of a routine changed the arithmetic on purpose, the tolerance is named here.
TOL = {
    # CG stops at a relative residual of 1e-10: the stable distance formula of ovk_nb.kernels.sq_distances (no
    # cancellation, house step 2) changes round-off, and the iterate moves within the solver's tolerance.
    "ridge/ncsum/cg": 1e-9,
}


def test_every_pin_still_has_a_case():
    assert {k.replace("__", "/") for k in PINNED} <= set(CASES)


@pytest.mark.parametrize("name", sorted(k.replace("__", "/") for k in PINNED))
def test_pinned_prediction(name):
    with threadpool_limits(1):
        got = np.asarray(CASES[name](), dtype=float)
    want = PINNED[name.replace("/", "__")]
    assert got.shape == want.shape
    tol = TOL.get(name, 1e-12)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * max(1.0, np.abs(want).max()))
