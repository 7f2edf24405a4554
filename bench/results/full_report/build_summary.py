"""Concatenate the folders' summary.csv into bench/results/full_report/summary.csv, with a first column `folder`.
Run from the repository root after copying a full run in: python bench/results/full_report/build_summary.py"""
import csv
from pathlib import Path

HERE = Path(__file__).parent
FOLDERS = ("papers_000_004", "paper_001", "paper_001_lag", "paper_001_real", "paper_003", "paper_002")

rows, cols = [], ["folder"]
for folder in FOLDERS:
    with open(HERE / folder / "summary.csv", newline="") as f:
        for r in csv.DictReader(f):
            rows.append({"folder": folder, **r})
            cols += [c for c in r if c not in cols]
with open(HERE / "summary.csv", "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=cols)
    w.writeheader()
    w.writerows(rows)
print(len(rows), "rows")
