"""The one full-size report (issue 32): one run of every experiment, every result the output of one commit's code, in one
index with the whole tally. Run from the repository root, after the run's folders are in place:
python bench/results/full_report/build_report.py

The run: `ovk-nb reproduce --out DIR` at the papers' sizes, from a clean checkout of one commit, in processes side by side
on the 2-core machine (`FOLDERS`). Each folder is that process's own report (index.html with the evidence: tables, figures;
summary.csv, provenance.csv, code_hashes.json). The verdicts are the run's own, computed by
`ovk_nb.experiments.core.judge` when it ran; nothing is re-judged here.

A rerun of what a code change marked stale is a later folder: its experiments replace the same experiments of the earlier
folders, and the report's commit is the rerun's. An experiment kept from an earlier commit is accepted only where its
`code_hash` at the report's commit (its function and every ovk_nb module its module imports, read with `git show`) equals
the hash its run recorded: then the report's commit runs exactly the code that produced it. Anything else is refused
(`one_code`): a folder from a commit that is not an ancestor of the report's, a clean-tree or size or version mismatch, an
old result whose code changed, a folder none of whose results is kept.

This script writes, beside the folders:
* summary.csv: every kept line once, with its folder (the rules are checked again: `verdict_problems`);
* code_hashes.json: {experiment: {hash, commit, folder}} from the runs' own code_hashes.json, and stale.json: the
  experiments whose `code_hash` today differs (tests/test_report_rules.py fails when the two disagree with today's code);
* index.md / index.html: the report's commit and each folder's, the versions, what a run records, the stale results by
  name, the whole tally, every paper's lines linked to their evidence.
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
# the run's folders, oldest first: what each process ran, when it started, the load beside it. A later folder's
# experiments replace the same experiments of an earlier one (`owners`).
_LOAD_A = ("one process (paper 001's three experiments), started 15:33 UTC; beside it until 16:15 a second process (paper 000's, "
           "then 003's, then 002 and 004's), and the lead's short tests (load average 2.9-3.3), then alone")
_LOAD_B = ("the second of two processes (paper 000's experiments from 15:34 UTC, paper 003's from 15:57, papers 002 and 004's "
           "from 16:11), beside paper 001's, with the lead's short tests (load average 2.9-3.3)")
_WHY = "after the change to validation (issue 30: a Python int past float64 refused by name), which every experiment imports"
FOLDERS = {"paper_000": {"what": f"paper 000's eleven experiments, {_WHY}", "started": "2026-11-29 15:34 UTC", "load": _LOAD_B},
           "paper_003": {"what": f"paper 003's four experiments, {_WHY}", "started": "2026-11-29 15:57 UTC", "load": _LOAD_B},
           "papers_002_004": {"what": f"papers 002 and 004's ten experiments, {_WHY}", "started": "2026-11-29 16:11 UTC",
                              "load": _LOAD_B},
           "paper_001": {"what": f"paper 001's three experiments, {_WHY}", "started": "2026-11-29 15:33 UTC", "load": _LOAD_A}}
VERSIONS = ("python", "numpy", "scipy", "scikit-learn", "threadpoolctl", "blas", "seed", "sizes", "package")


def _read(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def runs():
    "Per folder: its provenance row (provenance.csv) and its code hashes (code_hashes.json)."
    return {f: (_read(HERE / f / "provenance.csv")[0], json.loads((HERE / f / "code_hashes.json").read_text())) for f in FOLDERS}


def owners(rs):
    "{experiment: folder}: the last folder (in `FOLDERS`' order) that ran it."
    return {name: f for f, (_, hs) in rs.items() for name in hs}


def _git(*args):
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)


def one_code(rs):
    """The report's provenance: the commit of its last folder, whose code produced every kept result. ValueError if the
    folders disagree on a version, ran from a dirty tree or at reduced sizes, come from a commit that is not an ancestor
    of the report's, keep nothing, or keep a result whose `code_hash` at the report's commit differs from its run's."""
    provs = {f: p for f, (p, _) in rs.items()}
    for key in VERSIONS:
        vals = {p.get(key, "") for p in provs.values()}
        if len(vals) != 1:
            raise ValueError(f"the folders disagree on {key}: {sorted(vals)}")
    for f, p in provs.items():
        if "uncommitted" in p["commit"] or not p["sizes"].startswith("full"):
            raise ValueError(f"{f}: not a clean full-size run: {p['commit']!r}, {p['sizes']!r}")
    head = provs[list(FOLDERS)[-1]]["commit"]
    own = owners(rs)
    for f, p in provs.items():
        if f not in own.values():
            raise ValueError(f"{f}: every result of it is replaced by a later folder: remove it")
        if p["commit"] != head and _git("merge-base", "--is-ancestor", p["commit"], head).returncode:
            raise ValueError(f"{f}: commit {p['commit']} is not an ancestor of the report's commit {head}")
    reg, at_head = load_experiments(), _git_source(head)
    changed = [n for n, f in own.items() if provs[f]["commit"] != head and code_hash(n, reg[n].module, at_head) != rs[f][1][n]]
    if changed:
        raise ValueError(f"results whose code changed between their run and {head}: rerun them: {sorted(changed)}")
    dates = "; ".join(f"{f}: {p['date']}" for f, p in provs.items())
    return {**provs[list(FOLDERS)[-1]], "date": dates, "runs": "; ".join(f"{f}: {p['commit']}" for f, p in provs.items())}


def rows(rs):
    "Every kept line of the folders (an experiment's from its `owners` folder), with its folder; the not-run lines of a paper once."
    out, seen, own = [], set(), owners(rs)
    for folder in FOLDERS:
        for r in _read(HERE / folder / "summary.csv"):
            if r["experiment"] in own and own[r["experiment"]] != folder:
                continue
            key = (r["paper_id"], r["quantity"]) if r["experiment"].endswith("_not_run") else (folder, r["experiment"], r["quantity"])
            if key not in seen:
                seen.add(key)
                out.append({"folder": folder, **r})
    return out


def hashes(rs):
    "{experiment: {hash, commit, folder}}: the `code_hash` each run recorded, with its commit and folder."
    own = owners(rs)
    return {name: {"hash": h, "commit": prov["commit"], "folder": folder}
            for folder, (prov, hs) in rs.items() for name, h in sorted(hs.items()) if own[name] == folder}


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


def experiment_rows(rs):
    """Every kept experiment: its paper, folder, the commit it ran from and its time, read from its folder's page
    (`## name: ...` then `Time: Xs`)."""
    import re
    out, own = [], owners(rs)
    for folder in FOLDERS:
        page = (HERE / folder / "index.md").read_text()
        for name, paper, secs in re.findall(r"^## (\w+): .*\n\nPaper (\w+)\. Time: ([\d.]+)s", page, flags=re.M):
            if own.get(name) != folder:
                continue
            out.append({"experiment": name, "paper": paper, "folder": folder, "commit": rs[folder][0]["commit"], "time (s)": float(secs),
                        "failed": "yes" if "**FAILED**" in page.split(f"## {name}:")[1].split("\n## ")[0] else ""})
    return out


def index(summ, prov, stale_list, stale_table, exps, rs_commit):
    """index.md and index.html: the one commit and its versions, the experiments and their times, what a run records, the
    stale results by name, the whole tally, every paper's lines (in the HTML linked to their evidence)."""
    from ovk_nb.reproduce import _STYLE, _html_table
    t = tally(summ)
    total = sum(e["time (s)"] for e in exps)
    commits = sorted({e["commit"] for e in exps})
    runs = "; ".join(f"`{f}/`: {w['what']}, from commit `{rs_commit[f]}`, started {w['started']} ({w['load']})"
                     for f, w in FOLDERS.items())
    head = ["# ovk_nb full-size reproduction report (one commit's code, one index)", "",
            f"**Every result from one commit's code**: every registered experiment at the papers' sizes, run by `ovk-nb reproduce` "
            f"from a clean checkout (seed {prov['seed']}) on this 2-core machine, in {len(FOLDERS)} processes ({runs}); "
            f"{len(exps)} experiments, {sum(bool(e['failed']) for e in exps)} failed, {total:.0f} s of experiment time in all. "
            + (f"All ran from commit `{prov['commit']}`. " if commits == [prov["commit"]] else
               f"The report's commit is `{prov['commit']}`: the experiments kept from an earlier commit have the same "
               "`code_hash` there (their function and every ovk_nb module they import), checked by `build_report.one_code`, "
               "so this commit runs exactly the code that produced them. ")
            + "Each verdict is the run's own, computed from its evidence by `ovk_nb.experiments.core.judge`; each folder's "
            "page holds the evidence (tables, figures) that the lines below link to.", "",
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
    html = ["<h1>ovk_nb full-size reproduction report (one commit's code, one index)</h1>"] + [f"<p>{x}</p>" for x in head[2:] if x] + \
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
    prov = one_code(rs)
    recorded = hashes(rs)
    (HERE / "code_hashes.json").write_text(json.dumps(recorded, indent=1, sort_keys=True) + "\n")
    st = stale(recorded)
    (HERE / "stale.json").write_text(json.dumps(st, indent=1) + "\n")
    summ = rows(rs)
    bad = [f"{r['experiment']}: {r['quantity']}: {p}" for r in summ for p in verdict_problems(r)]
    if bad:
        raise SystemExit("lines break the rules:\n" + "\n".join(bad))
    (HERE / "summary.csv").write_text(rows_to_csv(summ))
    (HERE / "provenance.csv").write_text(rows_to_csv([prov]))
    index(summ, prov, st, stale_rows(recorded, st), experiment_rows(rs), {f: p['commit'] for f, (p, _) in rs.items()})
    dead = dead_links(HERE)
    if dead:
        raise SystemExit(f"dead links in index.html: {dead[:10]}")
    print(len(summ), "lines;", {k: sum(r["kind"] == k for r in summ) for k in dict.fromkeys(r["kind"] for r in summ)},
          f"; stale {len(st)} of {len(recorded)}")


if __name__ == "__main__":
    main()
