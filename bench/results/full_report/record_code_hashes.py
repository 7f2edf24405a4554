"""Record which code produced the committed full-size results: for every experiment, the hash of its code
(`ovk_nb.experiments.core.experiment_hashes`) at the commit that committed its folder, into code_hashes.json.
Run from the repository root: python bench/results/full_report/record_code_hashes.py"""
import json
import subprocess
from pathlib import Path

from ovk_nb.experiments.core import experiment_hashes

HERE = Path(__file__).parent
# folder -> the modules whose experiments it holds
FOLDERS = {"papers_000_004": ("paper000", "paper004"), "paper_001": ("paper001",), "paper_001_lag": ("paper001",),
           "paper_001_real": ("paper001",), "paper_003": ("paper003",), "paper_002": ("paper002",)}


def git(*a):
    return subprocess.run(["git", *a], capture_output=True, text=True, check=True).stdout


out = {}
for folder, modules in FOLDERS.items():
    commit = git("log", "-1", "--format=%H", "--", str(HERE / folder)).strip()
    done = {p.name for p in (HERE / folder).iterdir() if p.is_dir()}
    for m in modules:
        for name, h in experiment_hashes(git("show", f"{commit}:ovk_nb/experiments/{m}.py")).items():
            if name in done:
                out[name] = {"hash": h, "commit": commit[:12], "folder": folder}
(HERE / "code_hashes.json").write_text(json.dumps(dict(sorted(out.items())), indent=1) + "\n")
print(len(out), "experiments recorded")
