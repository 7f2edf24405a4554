#!/usr/bin/env bash
# Issue 24's GPU check, in one call on a lent GPU machine (run from the repository root):
#   bash bench/gpu_check.sh            -> bench/results/gpu_table.md and bench/results/gpu.csv (copied to $OUT when set)
# The lent machines (see the device tool's KINDS.md) have python3 with torch (CUDA), cupy-cuda13x, numpy, scipy,
# scikit-learn, matplotlib and threadpoolctl, and no network: the two pure-Python packages they lack travel as wheels,
# fetched beforehand on the development machine into .whl/ (git-ignored) and carried with the call:
#   python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#     --platform manylinux_2_28_x86_64 -d .whl "fastcore<2" "array-api-compat>=1.9" "array-api-extra>=0.7" "scikit-learn==1.9.1"
# GPU_CHECK_DEADLINE=SECONDS skips the sections that would start after that many seconds (a lease is short).
# On a machine with a registry and no such image, GPU_CHECK_PIP=1 installs torch and cupy-cuda12x into a venv instead.
# Then bench/gpu_check.py: equality against NumPy and times for n = 5000, 20000, 40000 (exact separable ridge, fp64, T = I:
# one Cholesky), CG on a sum of two non-commuting separable kernels at n = 5000, OVKGaussianProcess at n = 2000 (against
# NumPy) and 5000, and n = 1e6 Nystrom (p = 2000), the CPU times of the same machine beside them. `--dry-run`: toy sizes,
# CPU; GPU_CHECK_RESULTS=/tmp/gc writes gpu_table.md / gpu.csv there instead of bench/results.
set -euo pipefail
cd "$(dirname "$0")/.."
export PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONUNBUFFERED=1
if [ "${GPU_CHECK_PIP:-0}" = 1 ]; then
  python3 -m venv /tmp/ovk-gpu-venv && . /tmp/ovk-gpu-venv/bin/activate
  pip install -q torch cupy-cuda12x "array-api-compat>=1.9" "array-api-extra>=0.7" numpy scipy scikit-learn matplotlib threadpoolctl "fastcore<2"
elif [ -d .whl ]; then                                     # scikit-learn's wheel only where the image's is older than 1.6
  WHEELS=$(ls .whl/*.whl | grep -v scikit_learn || true)
  python3 -c "import sklearn, sys; sys.exit(tuple(map(int, sklearn.__version__.split('.')[:2])) < (1, 6))" 2>/dev/null \
    || WHEELS="$WHEELS $(ls .whl/scikit_learn*.whl 2>/dev/null || true)"
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site $WHEELS
  export PYTHONPATH=/tmp/site
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"       # the package from this checkout, no install needed
python3 bench/gpu_check.py "$@"
RES="${GPU_CHECK_RESULTS:-bench/results}"                  # GPU_CHECK_RESULTS=/tmp/gc: write the results there instead
if [ -n "${OUT:-}" ] && [ -f "$RES"/gpu_table.md ] && [ "$(realpath "$RES")" != "$(realpath "$OUT")" ]; then cp "$RES"/gpu_table.md "$RES"/gpu.csv "$OUT"/; fi
