"""The one full-size report (issue 32): one run of every experiment from one commit, in one index with the whole tally.
Run from the repository root, after the run's folders are in place: python bench/results/full_report/build_report.py

The run: `ovk-nb reproduce --out DIR` at the papers' sizes, from a clean checkout of one commit, in two processes side by
side on the 2-core machine (`FOLDERS`: paper 001's LOCO search in one, every other experiment in the other). Each folder
is that process's own report (index.html with the evidence: tables, figures; summary.csv, provenance.csv, code_hashes.json).
The verdicts are the run's own, computed by `ovk_nb.experiments.core.judge` when it ran; nothing is re-judged here.

This script writes, beside the folders:
* summary.csv: every line of the folders once, with its folder (the rules are checked again: `verdict_problems`);
* code_hashes.json: {experiment: {hash, commit, folder}} from the runs' own code_hashes.json, and stale.json: the
  experiments whose `code_hash` today differs (tests/test_report_rules.py fails when the two disagree with today's code);
* index.md / index.html: the one commit (refused if the folders ran from different commits or a dirty tree), the versions,
  what a run records, the stale results by name, the whole tally, every paper's lines linked to their evidence.
"""
import ast
import csv
import json
import subprocess
from pathlib import Path

from ovk_nb.experiments.core import _module_path, code_hash, experiment_hashes, ovk_imports, rows_to_csv, rows_to_markdown, verdict_kind, verdict_problems
from ovk_nb.reproduce import PAPER_SOURCES, PAPERS, dead_links, load_experiments, provenance, tally

HERE = Path(__file__).parent
ROOT = HERE.parent.parent.parent
# the run's folders: the process that ran them (`ovk-nb reproduce --only ...`), in the order of the page
FOLDERS = {"papers_000_002_003_004": "every experiment but paper 001's", "paper_001": "paper 001's three experiments"}
STARTED = "2026-11-29 03:59 UTC"    # both processes' launch (a report's own `date` is read when it is written, at the end)
LOAD = ("this 2-core machine, nothing else of the project's running at first; from about 04:20 two helper agents' "
        "tests and benchmarks ran beside it at a lower scheduling priority (load average 2-7)")


def _read(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def runs():
    "Per folder: its provenance row (provenance.csv) and its code hashes (code_hashes.json)."
    return {f: (_read(HERE / f / "provenance.csv")[0], json.loads((HERE / f / "code_hashes.json").read_text())) for f in FOLDERS}


def one_commit(rs):
    """The commit every folder ran from, and the fields all share. ValueError if they ran from different commits or
    versions, from a tree with uncommitted changes, or at reduced sizes: such folders are not one report."""
    provs = [p for p, _ in rs.values()]
    for key in ("commit", "python", "numpy", "scipy", "scikit-learn", "threadpoolctl", "blas", "seed", "sizes", "package"):
        vals = {p.get(key, "") for p in provs}
        if len(vals) != 1:
            raise ValueError(f"the folders disagree on {key}: {sorted(vals)}")
    p = {**provs[0], "date": "; ".join(f"{f}: {q['date']}" for f, (q, _) in rs.items())}
    if "uncommitted" in p["commit"] or not p["sizes"].startswith("full"):
        raise ValueError(f"not a clean full-size run: {p['commit']!r}, {p['sizes']!r}")
    return p


def rows():
    "Every line of the folders, with its folder; the not-run lines of a paper once."
    out, seen = [], set()
    for folder in FOLDERS:
        for r in _read(HERE / folder / "summary.csv"):
            key = (r["paper_id"], r["quantity"]) if r["experiment"].endswith("_not_run") else (folder, r["experiment"], r["quantity"])
            if key not in seen:
                seen.add(key)
                out.append({"folder": folder, **r})
    return out


def hashes(rs):
    "{experiment: {hash, commit, folder}}: the `code_hash` each run recorded, with its commit and folder."
    return {name: {"hash": h, "commit": prov["commit"], "folder": folder}
            for folder, (prov, hs) in rs.items() for name, h in sorted(hs.items())}


def stale(recorded):
    "The experiments whose `code_hash` today differs from the recorded one."
    reg = load_experiments()
    return sorted(k for k, r in recorded.items() if code_hash(k, reg[k].module) != r["hash"])


def _git_source(commit):
    "`source_of(path)` for `code_hash` and `ovk_imports`: the file's text at `commit` (OSError if it is not there)."
    def source_of(p):
        r = subprocess.run(["git", "show", f"{commit}:{p}"], cwd=ROOT, capture_output=True, text=True)
        if r.returncode:
            raise OSError(p)
        return r.stdout
    return source_of


def stale_rows(recorded, names):
    """Each stale experiment by name: its folder, the commit of its run, its hash then and today, and what changed since:
    its own function, and each ovk_nb module it imports whose code (unparsed by `ast`: comments do not count) differs."""
    reg, here = load_experiments(), lambda p: (ROOT / p).read_text()
    out = []
    for name in names:
        rec, module = recorded[name], reg[name].module
        then = _git_source(rec["commit"])
        text = lambda src, m: ast.unparse(ast.parse(src(_module_path(m, src)))) if _module_path(m, src) else None
        changed = [f"{name} itself"] if (experiment_hashes(then(_module_path(module, then))).get(name)
                                          != experiment_hashes(here(_module_path(module, here)))[name]) else []
        changed += [m.replace("ovk_nb.", "") for m in sorted(set(ovk_imports(module, then)) | set(ovk_imports(module)))
                    if m != module and text(then, m) != text(here, m)]
        out.append({"experiment": name, "folder": rec["folder"], "run from": rec["commit"], "hash at the run": rec["hash"],
                    "hash when this page was built": code_hash(name, module), "changed since the run": ", ".join(changed)})
    return out


# what a run writes beside its results (`ovk_nb.reproduce.provenance`, `write_report`), field by field
RUN_FIELDS = {"package": "the ovk_nb version", "commit": "the one commit of the tree it ran from (12 hex digits); from a tree "
              "with uncommitted changes in ovk_nb/, ' + uncommitted.diff (sha256 ...)' and that diff beside the report "
              "(untracked modules there are refused)", "date": "when its report was written (the end of the run)", "seed": "the seed of every experiment",
              "sizes": "quick or full", "machine": "architecture, cores, system",
              "python": "Python's version", "numpy": "numpy's version", "scipy": "scipy's version",
              "scikit-learn": "scikit-learn's version", "threadpoolctl": "threadpoolctl's version",
              "blas": "the BLAS threadpoolctl finds: its API, version, threading layer and threads"}


def run_field_rows(prov):
    "The provenance fields a run records (the keys of `provenance()`), this run's value of each, then the files beside them."
    rows = [{"field": k, "a run records": RUN_FIELDS.get(k, "(see `ovk_nb.reproduce.provenance`)"), "this run": prov.get(k, "")}
            for k in provenance(quick=True)]
    return rows + [{"field": "code_hashes.json", "a run records": "`code_hash` of every experiment it ran: the experiment's "
                    "function and every ovk_nb module its module imports (the staleness check compares it with today's)",
                    "this run": "in each folder; merged here"},
                   {"field": "uncommitted.diff", "a run records": "the diff of ovk_nb/ against the commit, when the tree "
                    "was not clean", "this run": "none: the tree was clean"}]


def _cells(r, link=False):
    t = r.get("tol")
    res = (r["experiment"], f"{r['folder']}/index.html{r['evidence']}") if link and r.get("evidence") else r["experiment"]
    return {"result": res, "quantity": r["quantity"], "ours": r["ours"], "paper": r.get("paper") or "",
            "verdict": r["verdict"], "tolerance": "" if t in (None, "") else f"{float(t):.3g} {r.get('tol_unit', '')} ({r.get('tol_from', '')})",
            "folder": r["folder"]}


def experiment_rows():
    "Every experiment the run did: its paper, folder and time, read from its folder's page (`## name: ...` then `Time: Xs`)."
    import re
    out = []
    for folder in FOLDERS:
        page = (HERE / folder / "index.md").read_text()
        for name, paper, secs in re.findall(r"^## (\w+): .*\n\nPaper (\w+)\. Time: ([\d.]+)s", page, flags=re.M):
            out.append({"experiment": name, "paper": paper, "folder": folder, "time (s)": float(secs),
                        "failed": "yes" if "**FAILED**" in page.split(f"## {name}:")[1].split("\n## ")[0] else ""})
    return out


def index(summ, prov, stale_list, stale_table, exps):
    """index.md and index.html: the one commit and its versions, the experiments and their times, what a run records, the
    stale results by name, the whole tally, every paper's lines (in the HTML linked to their evidence)."""
    from ovk_nb.reproduce import _STYLE, _html_table
    t = tally(summ)
    total = sum(e["time (s)"] for e in exps)
    head = ["# ovk_nb full-size reproduction report (one run, one index)", "",
            f"**One run from one commit**: every registered experiment at the papers' sizes, run by `ovk-nb reproduce` from a "
            f"clean checkout of commit `{prov['commit']}` (seed {prov['seed']}), started {STARTED} on {LOAD}, in "
            f"{len(FOLDERS)} processes side by side ({'; '.join(f'`{f}/`: {w}' for f, w in FOLDERS.items())}); {len(exps)} experiments, "
            f"{sum(bool(e['failed']) for e in exps)} failed, {total:.0f} s of experiment time in all. Each verdict is the "
            "run's own, computed from its evidence by `ovk_nb.experiments.core.judge`; each folder's page holds the evidence "
            "(tables, figures) that the lines below link to.", "",
            f"**Stale**: {len(stale_list)} of {len(exps)} experiments (their code, or an ovk_nb module they import, changed "
            "since the run: `stale.json`, named under *Stale results*).", "",
            "**Versions**: " + "; ".join(f"{k} {prov[k]}" for k in ("python", "numpy", "scipy", "scikit-learn", "threadpoolctl", "blas")
                                        ) + f"; machine: {prov['machine']}.", ""]
    rec = "What the run recorded in its provenance.csv and on its pages, field by field:"
    st_intro = (f"{len(stale_list)} experiments whose `code_hash` today differs from the one their run recorded "
                "(`code_hashes.json`), with what changed since. `tests/test_report_rules.py` fails when this list and "
                "today's hashes disagree, and warns with every name while it is not empty. A rerun of these empties it.")
    md = head + ["## What the run records", "", rec, "", rows_to_markdown(run_field_rows(prov)), "",
                 "## The experiments", "", rows_to_markdown(exps), "", "## Stale results, by name", "", st_intro, "",
                 rows_to_markdown(stale_table) if stale_table else "None.", "",
                 "## Verdicts per paper (the whole run)", "", rows_to_markdown(t), ""]
    html = ["<h1>ovk_nb full-size reproduction report (one run, one index)</h1>"] + [f"<p>{x}</p>" for x in head[2:] if x] + \
           ["<h2>What the run records</h2>", f"<p>{rec}</p>", _html_table(run_field_rows(prov)),
            "<h2>The experiments</h2>", _html_table(exps), '<h2 id="stale">Stale results, by name</h2>', f"<p>{st_intro}</p>",
            _html_table(stale_table) if stale_table else "<p>None.</p>",
            '<h2 id="tally">Verdicts per paper (the whole run)</h2>', _html_table(t).replace("<table>", '<table class="tally">', 1)]
    for paper in sorted({r["paper_id"] for r in summ}):
        st, au = PAPER_SOURCES.get(paper, ("", ""))
        rs = [r for r in summ if r["paper_id"] == paper]
        md += [f"## Paper {paper}: {PAPERS.get(paper, '')}", "", f"*{st}*, {au}.", "", rows_to_markdown([_cells(r) for r in rs]), ""]
        html += [f'<h2 id="paper-{paper}">Paper {paper}: {PAPERS.get(paper, "")}</h2>', f"<p><em>{st}</em>, {au}.</p>",
                 _html_table([{**c, "verdict": (verdict_kind(c["verdict"]).replace(" ", "-"), c["verdict"])}
                              for c in map(lambda r: _cells(r, link=True), rs)], links=("result",))]
    (HERE / "index.md").write_text("\n".join(md) + "\n")
    (HERE / "index.html").write_text("<!DOCTYPE html><html><head><meta charset='utf-8'><title>ovk_nb full-size report</title>"
                                     f"<style>{_STYLE}</style></head><body>\n" + "\n".join(html) + "\n</body></html>\n")


def main():
    rs = runs()
    prov = one_commit(rs)
    recorded = hashes(rs)
    (HERE / "code_hashes.json").write_text(json.dumps(recorded, indent=1, sort_keys=True) + "\n")
    st = stale(recorded)
    (HERE / "stale.json").write_text(json.dumps(st, indent=1) + "\n")
    summ = rows()
    bad = [f"{r['experiment']}: {r['quantity']}: {p}" for r in summ for p in verdict_problems(r)]
    if bad:
        raise SystemExit("lines break the rules:\n" + "\n".join(bad))
    (HERE / "summary.csv").write_text(rows_to_csv(summ))
    (HERE / "provenance.csv").write_text(rows_to_csv([prov]))
    index(summ, prov, st, stale_rows(recorded, st), experiment_rows())
    dead = dead_links(HERE)
    if dead:
        raise SystemExit(f"dead links in index.html: {dead[:10]}")
    print(len(summ), "lines;", {k: sum(r["kind"] == k for r in summ) for k in dict.fromkeys(r["kind"] for r in summ)},
          f"; stale {len(st)} of {len(recorded)}")


if __name__ == "__main__":
    main()
