#!/usr/bin/env bash
# Recreate the peer venv for scikit-multimodallearn (the authors' MVML, ported), used by bench/bench_mvml.py through a
# subprocess:   bash bench/peers/multimodallearn_venv.sh      -> bench/.venv-multimodallearn
# scikit-multimodallearn 0.1.0 (PyPI) needs numpy >= 1.24, scikit-learn >= 1.2.1, scipy, cvxopt and six; it runs on the
# machine's Python 3. Never commit the venv or the peer's code: this script is the recipe.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
PY="${PY:-python3}"
rm -rf "$here/.venv-multimodallearn"
"$PY" -m venv "$here/.venv-multimodallearn"
. "$here/.venv-multimodallearn/bin/activate"
pip install -q --upgrade pip
pip install -q "scikit-multimodallearn==0.1.0" "numpy<2.3" "scikit-learn<1.7" threadpoolctl
python -c "import multimodal, sklearn, numpy; print('scikit-multimodallearn', multimodal.__version__, 'sklearn', sklearn.__version__, 'numpy', numpy.__version__)"
