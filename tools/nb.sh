#!/usr/bin/env bash
# Developer helper: round-trip a notebook through py:percent for editing (needs `pip install jupytext`).
#   tools/nb.sh topy nbs/00_kernels.ipynb   -> /tmp/nbsrc/00_kernels.py
#   tools/nb.sh tonb /tmp/nbsrc/00_kernels.py nbs/00_kernels.ipynb
set -euo pipefail
case "$1" in
  topy) mkdir -p /tmp/nbsrc; jupytext --to py:percent -o "/tmp/nbsrc/$(basename "${2%.ipynb}").py" "$2" ;;
  tonb) jupytext --to ipynb --set-kernel python3 -o "$3" "$2" ;;
  *) echo "usage: tools/nb.sh topy NB | tonb PY NB" >&2; exit 2 ;;
esac
