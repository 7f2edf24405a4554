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


def test_the_command_line_face():
    "`ovk-nb --version` prints the version, `--seed` is explained, `reproduce --list` says each paper once (in its heading)."
    cli = [sys.executable, "-c", "import sys; from ovk_nb.cli import main; sys.exit(main())"]   # what the `ovk-nb` script runs
    run = lambda *a: subprocess.run(cli + list(a), capture_output=True, text=True)
    r = run("--version")
    assert r.returncode == 0 and r.stdout.strip() == f"ovk-nb {ovk_nb.__version__}"
    r = run("reproduce", "--help")
    assert r.returncode == 0 and "--seed N" in r.stdout and "the same seed gives the same report" in " ".join(r.stdout.split())
    r = run("reproduce", "--list")
    lines = r.stdout.splitlines()
    assert r.returncode == 0 and "paper 000:" in lines and "paper 004:" in lines
    entries = [ln for ln in lines if ln.startswith("  ")]
    assert len(entries) >= 20 and not any("(paper " in ln for ln in entries), [ln for ln in entries if "(paper " in ln]
