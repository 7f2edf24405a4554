"""The verdict rules of issue 22 (ovk_nb.experiments.core.verdict_problems) over the pinned quick summary, the report's
paper lists (every paper result has a line), and the committed full-size results against today's code."""
import csv
import json
from pathlib import Path

import pytest

from ovk_nb.experiments.core import NOT_ATTEMPTED, experiment_hashes, verdict_kind, verdict_problems
from ovk_nb.reproduce import load_experiments

ROOT = Path(__file__).parent.parent
PINNED = ROOT / "tests" / "pins" / "quick_summary.csv"
FULL = ROOT / "bench" / "results" / "full_report"


def _rows(path):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    for r in rows:
        r["paper"] = None if r.get("paper", "") == "" else float(r["paper"])
        r["vs_trivial"] = None if r.get("vs_trivial", "") in ("", None) else float(r["vs_trivial"])
    return rows


@pytest.mark.parametrize("bad, rule", [
    ({"verdict": "reproduced: within 2 points", "standin": "simulated data", "tolerance": "2 points"}, "no 'reproduced'"),
    ({"verdict": "shape holds: B below A", "standin": "simulated data", "tolerance": "gap > 0", "paper": 84.7}, "not comparable"),
    ({"verdict": "shape holds: B below A", "standin": "simulated data"}, "tolerance"),
    ({"verdict": "reproduced: close", "tolerance": "1.5x", "vs_trivial": 0.97}, "nothing learns much"),
    ({"verdict": "figure only: an image"}, "is no verdict"),
    ({"verdict": "differs: a gap"}, "because"),
    ({"verdict": "own check: within 0.000 of each other"}, "odd text"),
    ({"verdict": "own check: 97.3 ± 0.00"}, "odd text"),
])
def test_each_rule_can_fail(bad, rule):
    assert any(rule in p for p in verdict_problems(bad)), verdict_problems(bad)


def test_the_pinned_quick_summary_obeys_the_rules():
    rows = _rows(PINNED)
    bad = [f"{r['experiment']}: {r['quantity']}: {p}" for r in rows for p in verdict_problems(r)]
    assert not bad, "\n".join(bad)
    kinds = {verdict_kind(r["verdict"]) for r in rows}
    assert "figure only" not in kinds and "shape holds" in kinds


def test_no_reproduced_on_stand_in_data_in_the_pinned_summary():
    # the two rows the review found "reproduced by coincidence" on stand-in data
    rows = {(r["experiment"], r["quantity"]): r for r in _rows(PINNED)}
    for key in [("movkl_finger", "Table 1 LCR (%), MovKL l_2"), ("movkl_finger", "Table 1 LCR (%), MovKL l_1"),
                ("kde_digits", "RBF loss, Weston (16x16 digits, the paper's sigma_k, lam and sigma_l)")]:
        r = rows[key]
        assert r["standin"] and r["paper"] is None and verdict_kind(r["verdict"]) != "reproduced", r


def test_every_unattempted_paper_result_has_a_line():
    want = {"000": ["CPU performance data", "School", "second MONORMA curve"],
            "001": ["Table 1", "Table 2"],
            "003": ["Flower17 (6/12/24", "uWaveGesture", "SARCOS", "Fig. 3"],
            "004": ["USPS"]}
    for paper, parts in want.items():
        lines = [res for (p, res) in NOT_ATTEMPTED if p == paper]
        for part in parts:
            assert any(part in x for x in lines), (paper, part, lines)
    for row in NOT_ATTEMPTED.values():
        assert verdict_problems(row) == [] and row["note"].startswith("would need: ")


def test_full_size_results_carry_the_code_they_came_from():
    """Decision (issue 22, section 4): each committed full-size result records the hash of its experiment's code at the
    commit that produced it (code_hashes.json, by record_code_hashes.py). Where today's code differs, the result must be
    listed in stale.json (shown in the README), not silently trusted; a listed result whose code is unchanged fails too,
    so the list stays true. CI does not fail merely because a full rerun (hours) is pending."""
    recorded = json.loads((FULL / "code_hashes.json").read_text())
    stale = json.loads((FULL / "stale.json").read_text())
    modules = {e.module for e in load_experiments().values()}
    now = {}
    for m in modules:
        now.update(experiment_hashes((ROOT / (m.replace(".", "/") + ".py")).read_text()))
    assert recorded, "no recorded hashes"
    changed = {k for k, r in recorded.items() if k in now and now[k] != r["hash"]}
    assert changed == set(stale), (f"changed but not listed as stale: {sorted(changed - set(stale))}; "
                                   f"listed but unchanged: {sorted(set(stale) - changed)}")
    readme = (FULL / "README.md").read_text()
    assert all(f"`{k}`" in readme for k in stale), "the README lists every stale result"


def test_mlkr_has_verdict_rows_not_a_not_reproducible_line():
    "Issue 22: paper 003's MLKR column is run (mvml_table1) and judged on the stand-in data by its shape only."
    rows = [r for r in _rows(PINNED) if r["experiment"] == "mvml_table1" and "MLKR" in r["quantity"]]
    assert {"UCI mfeat", "BasicMotions"} <= {d for r in rows for d in ("UCI mfeat", "BasicMotions") if d in r["quantity"]}
    for r in rows:
        assert r["standin"] and r["paper"] is None and verdict_kind(r["verdict"]) in ("shape holds", "differs"), r
    assert not any("MLKR" in res for (p, res) in NOT_ATTEMPTED if p == "003")


def test_the_committed_full_size_summary_obeys_the_rules():
    "Issue 22, section 4: the committed full-size results (bench/results/full_report/summary.csv) obey the verdict rules too."
    rows = _rows(FULL / "summary.csv")
    assert len({r["folder"] for r in rows}) >= 4
    bad = [f"{r['folder']}: {r['experiment']}: {r['quantity']}: {p}" for r in rows for p in verdict_problems(r)]
    assert not bad, "\n".join(bad)
