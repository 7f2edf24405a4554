#!/usr/bin/env bash
# The declared minimum versions (settings.ini `requirements`) hold: a fresh venv with exactly those versions of the run-time
# dependencies, the package installed without its dependencies, and the fast tests (everything but the notebooks, the
# docs/browser checks, Dask, the report pins and the extras' data).   bash tools/min_versions.sh   (about 4 minutes)
# .ci/run calls it after the main suite. Keep MIN below equal to settings.ini's lower bounds.
set -euo pipefail
cd "$(dirname "$0")/.."
MIN="numpy==1.25.2 scipy==1.13.1 matplotlib==3.7.5 scikit-learn==1.6.0 fastcore==1.5.29 threadpoolctl==3.1.0"
declared=$(grep '^requirements' settings.ini | sed 's/requirements = //')
for spec in $MIN; do                     # each pin must be the lower bound settings.ini declares
  name=${spec%%==*}; ver=${spec##*==}
  echo "$declared" | tr ' ' '\n' | grep -q "^$name>=${ver%.*}" || { echo "ERROR: $name>=${ver%.*} is not what settings.ini declares: $declared" >&2; exit 1; }
done
VENV=${MIN_VENV:-.venv-min}
rm -rf "$VENV"
python3 -m venv "$VENV"
. "$VENV/bin/activate"
export PIP_DISABLE_PIP_VERSION_CHECK=1 OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 MPLBACKEND=Agg
pip install -q $MIN "pytest>=7" "pytest-xdist>=3" "hypothesis>=6"
pip install -q --no-deps -e .
python -c "import numpy, scipy, sklearn, matplotlib; print('minimum versions:', numpy.__version__, scipy.__version__, sklearn.__version__, matplotlib.__version__)"
pytest -q -p no:cacheprovider tests/test_kernels.py tests/test_linalg.py tests/test_weights.py tests/test_streaming.py \
  tests/test_ridge.py tests/test_online.py tests/test_learn_one.py tests/test_kde.py tests/test_movkl.py tests/test_mvml.py \
  tests/test_oskaar.py tests/test_salami.py tests/test_gp.py tests/test_reliability.py tests/test_sklearn_contract.py \
  tests/test_fuzz.py tests/test_architecture.py
