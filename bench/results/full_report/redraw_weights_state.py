"""Redraw paper_001/movkl_finger/weights_state.png from the weights table on paper_001/index.md.

The paper-001 full run ran on the lent device machine, which returns at most 8 files: this figure did not come back. Its
data are the table printed above it on the page (4 significant digits); this script draws it with the experiment's own
figure function and the report's `tidy_figure` + 110 dpi, so the page's link resolves. Run from the repository root:

    python bench/results/full_report/redraw_weights_state.py
"""
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from ovk_nb.experiments.core import tidy_figure
from ovk_nb.experiments.paper001 import _weights_figure

HERE = Path(__file__).resolve().parent / "paper_001"
lines = (HERE / "index.md").read_text().splitlines()
start = lines.index("**Learned kernel weights d_k for each r (movement state)**")
head = [c.strip() for c in lines[start + 2].strip("|").split("|")]
rows = []
for line in lines[start + 4:]:
    if not line.startswith("|"):
        break
    rows.append([c.strip() for c in line.strip("|").split("|")])
names = [r[0] for r in rows]
fits = {lab: SimpleNamespace(weights_=np.array([float(r[j]) for r in rows])) for j, lab in enumerate(head) if j}
fig = _weights_figure(fits, names, "Kernel weights, movement state")
tidy_figure(fig)
fig.savefig(HERE / "movkl_finger" / "weights_state.png", dpi=110, bbox_inches="tight")
print(f"{len(names)} kernels, columns {head[1:]}: written {HERE / 'movkl_finger' / 'weights_state.png'}")
