"""The package's face: `from ovk_nb import OVKRidge` and the other estimators, kernels and decoders; a light `import ovk_nb`."""
import importlib
import inspect
import subprocess
import sys

import pytest
from sklearn.base import BaseEstimator

import ovk_nb
from ovk_nb.kernels import OutputOperator, OVKernel, ScalarKernel

MODULES = ["ridge", "onorma", "monorma", "movkl", "kde", "mvml", "oskaar", "salami", "kernels", "decoding"]


def _public_classes(mod):
    m = importlib.import_module(f"ovk_nb.{mod}")
    from ovk_nb.decoding import Decoder
    for name in m.__all__:
        obj = getattr(m, name)
        if not inspect.isclass(obj) or obj.__module__ != m.__name__ or inspect.isabstract(obj):
            continue
        if (issubclass(obj, BaseEstimator) and hasattr(obj, "fit")) or issubclass(obj, (ScalarKernel, OVKernel, OutputOperator)) \
                or (issubclass(obj, Decoder) and obj is not Decoder):
            if obj not in (ScalarKernel, OVKernel):
                yield name, obj


@pytest.mark.parametrize("mod", MODULES)
def test_every_estimator_kernel_and_decoder_is_at_the_top(mod):
    for name, obj in _public_classes(mod):
        assert name in ovk_nb.__all__, f"ovk_nb.{mod}.{name} is not exported by ovk_nb/__init__.py"
        assert getattr(ovk_nb, name) is obj


def test_readme_import_works_and_fits_with_defaults():
    from ovk_nb import OVKRidge, RBF, Separable  # noqa: F401
    import numpy as np
    X = np.random.default_rng(0).normal(size=(20, 3))
    Y = np.column_stack([X[:, 0], X[:, 1] ** 2])
    est = OVKRidge().fit(X, Y)                       # a Gaussian kernel with the identity output matrix of Y's width
    assert est.predict(X).shape == (20, 2) and est.score(X, Y) > 0.5
    with pytest.raises(AttributeError, match="no attribute"):
        ovk_nb.NoSuchThing


def test_import_ovk_nb_is_light():
    code = "import sys, ovk_nb; print(ovk_nb.__version__, 'sklearn' in sys.modules, 'scipy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == [ovk_nb.__version__, "False", "False"]
