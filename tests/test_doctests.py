"""The Examples sections of the docstrings run (issue 23): every module's doctests, as `python -m doctest` would run them."""
import doctest
import importlib
import os

import pytest

MODULES = ["validation", "kernels", "linalg", "backend", "streaming", "weights", "decoding", "metrics", "datasets",
           "distributed", "ridge", "onorma", "monorma", "movkl", "kde", "mvml", "oskaar", "salami", "gp", "quantile",
           "vector_fields"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name):
    if name == "distributed":
        pytest.importorskip("dask")
    if name == "quantile":
        pytest.importorskip("clarabel")
    mod = importlib.import_module(f"ovk_nb.{name}")
    res = doctest.testmod(mod, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False)
    assert res.failed == 0, f"{res.failed} of {res.attempted} examples of ovk_nb.{name} failed (see the output above)"
    assert res.attempted > 0 or name in ("metrics",), f"ovk_nb.{name} has no example"
