"""numpydoc's validation over the public API (issue 23): every name of `ovk_nb.__all__`, the public names of the
floor-1 modules, and the public methods their classes define.

Checks (numpydoc codes; see `numpydoc.validate.ERROR_MSGS`), on every name:
  GL08 no docstring · SS01 no summary · PR01 a parameter (of `__init__` for a class) not documented · PR02 a documented
  parameter that does not exist · PR07 a parameter without description · RT01 returns something, no Returns section
and on the classes and functions themselves (not on methods):
  EX01 no Examples section
and on estimators (scikit-learn `BaseEstimator`) and kernels (`OVKernel`, `ScalarKernel`, `OutputOperator`):
  OVK1 no Parameters section although `__init__` takes arguments · OVK2 (estimators) no Attributes section.

`TO_DOCUMENT` lists the names that still fail, one a line. The test fails for a name that fails and is not listed (a
new or a regressed docstring) and for a listed name that passes (delete its line): the list only shrinks."""
import importlib
import inspect
import re
from pathlib import Path

import pytest

validate = pytest.importorskip("numpydoc.validate")
from numpydoc.docscrape import get_doc_object  # noqa: E402

import ovk_nb  # noqa: E402

CHECKS = {"GL08", "SS01", "PR01", "PR02", "PR07", "RT01"}
CHECKS_TOP = CHECKS | {"EX01"}
NBS = Path(__file__).resolve().parent.parent / "nbs"
FLOOR_1 = sorted("ovk_nb." + m[1] for nb in (NBS / "1_shared").glob("*.ipynb")    # their `#| default_exp`
                 if (m := re.search(r'"#\|\s*default_exp\s+([\w.]+)', nb.read_text(encoding="utf-8"))))
SKLEARN_ADDED = {f"set_{m}_request" for m in ("fit", "partial_fit", "predict", "score", "transform",
                                                "decision_function")}


def _is_kind(obj):
    "'estimator', 'kernel' or None."
    from sklearn.base import BaseEstimator
    from ovk_nb.kernels import OutputOperator, OVKernel, ScalarKernel
    if not inspect.isclass(obj): return None
    if issubclass(obj, BaseEstimator): return "estimator"
    if issubclass(obj, (OVKernel, ScalarKernel, OutputOperator)): return "kernel"
    return None


def public_api() -> list:
    "The import paths checked: top-level names, floor-1 modules' `__all__`, and the public methods of their classes."
    objs = {}
    for name in ovk_nb.__all__:
        obj = getattr(ovk_nb, name)
        objs[f"{obj.__module__}.{obj.__qualname__}" if hasattr(obj, "__qualname__") else f"ovk_nb.{name}"] = obj
    for mod in FLOOR_1:
        m = importlib.import_module(mod)
        for name in getattr(m, "__all__", []):
            obj = getattr(m, name)
            if (inspect.isclass(obj) or inspect.isfunction(obj)) and obj.__module__ == mod:
                objs[f"{mod}.{name}"] = obj
    paths = []
    for path, obj in sorted(objs.items()):
        if not (inspect.isclass(obj) or inspect.isfunction(obj)): continue
        paths.append(path)
        if inspect.isclass(obj):
            for k, v in vars(obj).items():
                if (k.startswith("_") and k != "__call__") or k in SKLEARN_ADDED: continue
                if inspect.isfunction(v) or isinstance(v, (classmethod, staticmethod)):   # properties: Attributes
                    paths.append(f"{path}.{k}")
    return paths


def problems(path: str) -> list:
    "The failed checks of `path`: `['PR01: Parameters {'kernel'} not documented', ...]`."
    res = validate.validate(path)
    obj = validate.Validator._load_obj(path)
    top = inspect.isclass(obj) or (inspect.isfunction(obj) and "." not in obj.__qualname__)
    out = [f"{c}: {m}" for c, m in res["errors"] if c in (CHECKS_TOP if top else CHECKS)]
    kind = _is_kind(obj)
    if kind:
        doc = get_doc_object(obj)
        takes = [p for p in inspect.signature(obj.__init__).parameters if p not in ("self", "args", "kwargs")]
        if takes and not doc["Parameters"]: out.append("OVK1: no Parameters section, __init__ takes " + ", ".join(takes))
        if kind == "estimator" and not doc["Attributes"]: out.append("OVK2: no Attributes section (fitted attributes)")
    return out


# The names still to document: delete a line when its docstring passes (the test says which). Never add one.
TO_DOCUMENT = """
""".split()


def test_public_api_is_found():
    paths = public_api()
    assert "ovk_nb.ridge.OVKRidge" in paths and "ovk_nb.ridge.OVKRidge.fit" in paths
    assert "ovk_nb.kernels.RBF" in paths and "ovk_nb.validation.check_X_Y" in paths
    assert len(paths) == len(set(paths)) > 100


def _bad(x, y=1):
    "no period, no parameters described, returns without a Returns section"
    return x + y


def _good(x):
    """Add one.

    Parameters
    ----------
    x : float
        A number.

    Returns
    -------
    float
        `x` + 1.

    Examples
    --------
    >>> _good(1)
    2
    """
    return x + 1


def test_the_checks_can_fail():
    bad = " ".join(problems(f"{__name__}._bad"))
    for code in ["PR01", "RT01", "EX01"]:
        assert code in bad, (code, bad)
    assert problems(f"{__name__}._good") == []
    from ovk_nb.ridge import OVKRidge
    assert _is_kind(OVKRidge) == "estimator"


def test_numpydoc_validation_of_the_public_api():
    failing = {p: probs for p in public_api() if (probs := problems(p))}
    new = {p: probs for p, probs in failing.items() if p not in TO_DOCUMENT}
    fixed = sorted(set(TO_DOCUMENT) - set(failing))
    msg = "\n".join([f"{p}: " + " | ".join(probs) for p, probs in sorted(new.items())] +
                    [f"{p}: passes now: delete its line from TO_DOCUMENT" for p in fixed])
    assert not new and not fixed, f"{len(new)} undocumented, {len(fixed)} documented since:\n{msg}"
