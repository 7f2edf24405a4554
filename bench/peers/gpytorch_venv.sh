#!/usr/bin/env bash
# Recreate the peer venv for GPyTorch (exact ICM: MultitaskGaussianProcess with MultitaskKernel/IndexKernel), used by
# bench/bench_gp.py through a subprocess.
#   bash bench/peers/gpytorch_venv.sh      -> bench/.venv-gpytorch   (never committed)
# torch==2.13.0 is pinned: pip takes the CPU wheel that lies on this machine's disk (a plain 'torch' would pull a CUDA
# build of several GB). gpytorch then installs with the torch already there (linear_operator, jaxtyping, ...).
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
PY="${PY:-python3.11}"
rm -rf "$here/.venv-gpytorch"
"$PY" -m venv "$here/.venv-gpytorch"
. "$here/.venv-gpytorch/bin/activate"
pip install -q --upgrade pip
pip install -q "torch==2.13.0"
pip install -q gpytorch numpy scipy
python -c "import torch, gpytorch; print('torch', torch.__version__, 'gpytorch', gpytorch.__version__, 'threads', torch.get_num_threads())"
