"""ovk_nb: learning with operator-valued kernels. The estimators, kernels and decoders are importable from here
(`from ovk_nb import OVKRidge, Separable, RBF`); each lives in the module that explains it (ovk_nb.ridge, ovk_nb.kernels, ...).

Decision (a hand-kept `__init__.py`, loaded lazily). nbdev 2 exports notebooks to modules and never writes the
package's `__init__.py` (only `nbdev_bump_version` rewrites its `__version__` line, in place); a notebook exporting to
`__init__.py` would overwrite that line on every export. So this file is kept by hand, and `tests/test_face.py` checks that
every public estimator, kernel and decoder of the modules below is named here and that each name imports. Names load on
first use (PEP 562 `__getattr__`): `import ovk_nb` and `ovk-nb --version` do not import scikit-learn and scipy.
"""
__version__ = "0.1.0"
import importlib

_EXPORTS = {
    "ridge": ["OVKRidge", "OVKRidgeCV"],
    "onorma": ["ONORMA"],
    "monorma": ["MONORMA"],
    "movkl": ["FunctionalKRR", "MovKL"],
    "kde": ["OVKDE", "CortesKDE", "WestonKDE"],
    "mvml": ["MVML", "MVMLClassifier", "MultiViewKernel"],
    "oskaar": ["OSKAAR"],
    "salami": ["SALAMI"],
    "gp": ["OVKGaussianProcess"],
    "quantile": ["JointQuantileRegressor"],
    "vector_fields": ["helmholtz_kernel", "helmholtz_parts"],
    "kernels": ["RBF", "Linear", "Polynomial", "Laplacian", "ColumnKernel", "ScaledKernel", "Separable", "SumKernel",
                "BlockKernel", "Coregionalization", "CurlFreeRBF", "DivFreeRBF", "OutputOperator", "IdentityOperator", "MultiplicationOperator", "IntegralOperator"],
    "decoding": ["Hamming", "ZeroOne", "Squared", "Spearman", "CandidateSet"],
}
_WHERE = {name: mod for mod, names in _EXPORTS.items() for name in names}
__all__ = ["__version__", *_WHERE]


def __getattr__(name):
    if name in _WHERE:
        value = getattr(importlib.import_module(f".{_WHERE[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_WHERE))
