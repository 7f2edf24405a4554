#!/usr/bin/env bash
# Recreate the peer venv for operalib (needs old numpy / scikit-learn), used by bench/*.py through a subprocess.
#   bash bench/peers/operalib_venv.sh      -> bench/.venv-operalib
# operalib 0.2b27 (2018) imports sklearn internals removed after scikit-learn 0.22; it runs on Python 3.8 with
# numpy 1.23-ish. The machine's pyenv has Python 3.8 (/root/.pyenv/versions/3.8.*); set PY38 to use another one.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
PY38="${PY38:-$(ls -d /root/.pyenv/versions/3.8.*/bin/python3.8 2>/dev/null | head -1)}"
[ -x "${PY38:-}" ] || { echo "need a Python 3.8 (set PY38=/path/to/python3.8)" >&2; exit 1; }
rm -rf "$here/.venv-operalib"
"$PY38" -m venv "$here/.venv-operalib"
. "$here/.venv-operalib/bin/activate"
pip install -q --upgrade "pip<24"
pip install -q "numpy==1.23.5" "scipy==1.9.3" "scikit-learn==0.22.2.post1" "cython<3" wheel "setuptools<60"
pip install -q --no-build-isolation "operalib==0.2b27"
python -c "import operalib, sklearn, numpy; print('operalib', operalib.__version__, 'sklearn', sklearn.__version__, 'numpy', numpy.__version__)"
