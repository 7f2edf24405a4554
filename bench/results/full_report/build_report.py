"""The one full-size report (issue 32): every committed full-size folder in one summary, one tally, one index page, each
line re-judged under today's verdict rules from the numbers the runs stored. Nothing is rerun here.
Run from the repository root: python bench/results/full_report/build_report.py

* summary.csv: every line of the folders once (paper 001's not-run lines were in three folders), with the line as the run
  recorded it (`verdict as recorded`) and the verdict under today's rules (`verdict`, computed by
  `ovk_nb.experiments.core.judge` from evidence rebuilt out of the stored numbers, see REJUDGE below).
* A line whose evidence the run did not store (no tolerance from the data, no trivial predictor) gets no positive verdict:
  'not judged because ...' says what is missing; a rerun with today's code stores it (`Run.claim`).
* code_hashes.json: for every experiment, `code_hash` (its function and every ovk_nb module it imports) at the commit the
  run started from (the runs also had uncommitted changes in ovk_nb/ that nothing recorded: see the README), and
  stale.json: the experiments whose hash differs from today's.
* index.md / index.html: provenance per folder, the whole tally, every paper's lines.
"""
import csv
import json
import re
import subprocess
from pathlib import Path

import numpy as np

from ovk_nb.experiments.core import (Evidence, Order, Tol, _module_path, binomial_tol, code_hash, evidence_columns,
                                     experiment_hashes, judge, ovk_imports,
                                     ratio_tol, rows_to_csv, rows_to_markdown, verdict_kind, verdict_problems)
from ovk_nb.experiments import paper000 as p000, paper001 as p001, paper003 as p003, paper004 as p004
from ovk_nb.reproduce import PAPER_SOURCES, PAPERS, load_experiments, provenance, tally, versions

HERE = Path(__file__).parent
ROOT = HERE.parent.parent.parent
# folder -> (the commit its run started from, by the README's table; the lent machine's or this one's versions)
FOLDERS = {"papers_000_004": "98970ed", "paper_001": "1b7dfd6", "paper_001_lag": "1b7dfd6", "paper_001_real": "1b7dfd6",
           "paper_003": "e3d3b6f", "paper_002": "433a66e"}
MISSING_TRIVIAL = "the full-size run stored no trivial predictor's score"


def _num(s):
    return None if s in ("", None) else float(s)


def _pm(cell):
    "'87.0 ± 5.2' -> (87.0, 5.2)."
    a, b = str(cell).split("±")
    return float(a), float(b)


def _read(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def rows():
    "Every line of the folders once, in folder order (the not-run lines of a paper only the first time)."
    out, seen = [], set()
    for folder in FOLDERS:
        for r in _read(HERE / folder / "summary.csv"):
            key = (r["paper_id"], r["quantity"]) if r["experiment"].endswith("_not_run") else (folder, r["experiment"], r["quantity"])
            if key in seen:
                continue
            seen.add(key)
            out.append({"folder": folder, **r})
    return out


def _judged(r, ours, ev, trivial_stored=True):
    "The line judged from `ev`; a positive verdict whose trivial predictor the run did not store is not judged."
    v = judge(ours, ev, "full")
    if not trivial_stored and verdict_kind(v) in ("reproduced", "shape holds"):
        v = f"not judged because {MISSING_TRIVIAL} (its evidence otherwise gives: {v})"
    return v, evidence_columns(ev, "full")


def _majority(y, tr, te):
    "The trivial classifier's accuracy (%): the most frequent training label."
    vals, counts = np.unique(y[tr], return_counts=True)
    return 100 * float(np.mean(y[te] == vals[np.argmax(counts)]))


# ---- the re-derivations: (folder, experiment) -> function(lines of that experiment) -> {quantity: Evidence}
def _p000_classification(ls):
    from sklearn.datasets import load_digits, load_iris, load_wine
    out = {}
    for name, loader in (("wine", load_wine), ("iris", load_iris), ("digits", load_digits)):
        r = next(x for x in ls if x["quantity"].startswith(f"{name}:"))
        X, y = loader(return_X_y=True)
        p = np.random.default_rng(0).permutation(len(X)); h = len(X) // 2          # half_split(run.rng()) at seed 0
        b = float(re.search(r"batch ([\d.]+)", r["note"]).group(1))
        ours = float(r["ours"])
        out[r["quantity"]] = Evidence(p000.CLASSIFICATION[name], binomial_tol(1 - b, len(X) - h),
                                      ties=(("ONORMA (best mu)", 100 * ours, "batch (best mu)", 100 * b),),
                                      trivial=100 - _majority(y, p[:h], p[h:]), learner=100 * ours, higher_is_better=False)
    return out


def _p000_fig12(ls):
    out = {}
    for r in ls:
        q = r["quantity"]
        name = q.split(":")[0]
        if r["vs_trivial"] in ("", None):
            continue
        n = int(re.search(r"n=(\d+)", q).group(1)) if "n=" in q else {"synthetic-4": 500, "synthetic-10": 5000, "solar": 1066}[name]
        ours, vt = float(r["ours"]), float(r["vs_trivial"])
        kw = dict(trivial=1.0, learner=vt, higher_is_better=False)
        what = ("MONORMA / ONORMA", "1 (ONORMA)") if "MONORMA / ONORMA" in q else None
        out[q] = Evidence(p000.setup_data(name), ratio_tol(n - n // 2),
                          orders=(Order(*what, ours, 1.0, False),) if what else (),
                          ties=() if what else (("ours / batch", ours, "1 (batch)", 1.0),), **kw)
    return out


def _p001_rsse_lcr(ls, n_test, data):
    out = {}
    lcr0 = next((float(r["ours"]) for r in ls if r["quantity"].endswith("LCR (%), KRR scalar-valued")), None)
    for r in ls:
        q, ours = r["quantity"], float(r["ours"])
        if r["kind"] == "own check" or ("RSSE / scalar-KRR RSSE" not in q and "LCR (%)" not in q):
            continue
        mth = q.split(", ", 1)[1]
        ev = (Evidence(data, ratio_tol(n_test, "test curves"), orders=(Order(mth, "scalar KRR", ours, 1.0, False),),
                       missing=MISSING_TRIVIAL) if "RSSE" in q else
              Evidence(data, binomial_tol(lcr0 / 100, n_test), orders=(Order(mth, "scalar KRR", ours, lcr0),),
                       missing=MISSING_TRIVIAL))
        out[q] = ev
    return out


def _p001_finger(ls):
    return _p001_rsse_lcr(ls, 487 - int(round(0.65 * 487)), p001.FINGER)


def _p001_real(ls):
    out = {}
    for key, n in (("elecdemand", 365), ("gait", 39)):
        out.update(_p001_rsse_lcr([r for r in ls if r["quantity"].startswith(key)], n - int(round(0.65 * n)), p001.REAL_CURVES[key]))
    return out


def _p003_table1(ls):
    from ovk_nb.datasets import load_basicmotions
    mf, _, tr, te = p003.mfeat_split(type("R", (), {"quick": False, "rng": staticmethod(lambda o=0: np.random.default_rng(o))})())
    bm = load_basicmotions()
    trb, teb = np.flatnonzero(bm.train), np.flatnonzero(~bm.train)
    data = {"UCI mfeat": (p003.MFEAT, len(te), _majority(mf.target, tr, te)),
            "BasicMotions": (p003.BASICMOTIONS, len(teb), _majority(bm.target, trb, teb))}
    out, groups = {}, {}
    for r in ls:
        m = re.match(r"Table 1 (.+) (\d+)%: (.+) accuracy %", r["quantity"])
        if m:
            groups.setdefault((m.group(1), m.group(2)), {})[m.group(3)] = (float(r["ours"]), r["quantity"])
    for (name, _), g in groups.items():
        a = {k: v for k, (v, _) in g.items()}
        decl, n, triv = data[name]
        for k, (_, q) in g.items():
            out[q] = p003.table1_evidence(k, a, decl, n, triv)
    return out


def _p003_fig1(ls):
    sep = {}
    for r in ls:
        m = re.match(r"Fig. 1: pooled linear separability, (.+)", r["quantity"])
        sep[m.group(1)] = 100 * float(r["ours"])
    mv = next(k for k in sep if k.startswith("MVML (learned"))
    others = {k: Order(mv, k, sep[mv], sep[k]) for k in sep if k.startswith(("MKL-like", "OKL"))}
    tol = binomial_tol(sep[mv] / 100, 200 * 2)
    out = {f"Fig. 1: pooled linear separability, {k}": Evidence(p003.TOY, tol, orders=(o,), no_trivial="a separability of learned embeddings")
           for k, o in others.items()}
    out[f"Fig. 1: pooled linear separability, {mv}"] = Evidence(p003.TOY, tol, orders=tuple(others.values()),
                                                                  no_trivial="a separability of learned embeddings")
    return out


def _p004_digits(ls):
    t = _read(HERE / "papers_000_004" / "kde_digits" / "table2_digits.csv")
    std = {(r["settings"], r["method"], k): _pm(r[col])[1] * np.sqrt(5 / 4) for r in t if r["data"].startswith("16x16")
           for k, col in (("own", "RBF loss (own sigma_l)"), ("common", "RBF loss (common sigma_l)"))}
    groups = {}
    for r in ls:
        q = r["quantity"]
        m = (re.match(r"RBF loss at a common sigma_l, (.+) \(16x16 digits, tuned\)", q) and ("tuned", "common")) or \
            (re.match(r"RBF loss, (.+) \(16x16 digits, own sigma_l\)", q) and ("tuned", "own")) or \
            (re.match(r"RBF loss, (.+) \(16x16 digits, the paper's", q) and ("paper's (sigma_k, lam)", "own"))
        if m:
            meth = re.match(r"RBF loss(?: at a common sigma_l)?, (.+?) \(16x16", q).group(1)
            groups.setdefault(m, {})[meth] = (float(r["ours"]), q)
    out = {}
    for (settings, key), g in groups.items():
        tol = Tol(2 * max(std[settings, m, key] for m in g), "RBF loss",
                  "2 x the largest std over the 5 splits (200 train / 400 test) of the four methods (from the stored table)")
        orders = p004._table2_orders({m: {"v": v} for m, (v, _) in g.items()}, "v")
        for m, (_, q) in g.items():
            out[q] = Evidence(p004.DIGITS16, tol, orders=tuple(o for o in orders if m in (o.better, o.worse)), missing=MISSING_TRIVIAL)
    return out


def _p004_ocr(ls):
    from ovk_nb.datasets import load_letters
    t = {(r["100 words"].startswith("variant"), float(r["lambda"]), r["algorithm"].replace("KDE - ", "")): _pm(r["WRC (%)"])
         for r in _read(HERE / "papers_000_004" / "kde_ocr" / "table3_ocr.csv")}
    sweep = {float(r["lambda"]): _pm(r["gap cond. cov. - cov. (points)"]) for r in _read(HERE / "papers_000_004" / "kde_ocr" / "lambda_sweep_ocr.csv")}
    let = load_letters()
    triv = {"block": p004._ocr_trivial(let.target, p004.ocr_selections(let.folds, "block", seed=0)),
            "random": p004._ocr_trivial(let.target, p004.ocr_selections(let.folds, "random", seed=0, n_draws=10))}
    def tol(s, ps, n=10):                                  # the table's std is over n word sets (ddof 0): 2 sqrt(s'^2/n + ps^2/10)
        return Tol(2 * np.sqrt(s ** 2 * n / (n - 1) / n + ps ** 2 / 10), "points",
                   f"2 x the std of the difference of two means: ours over {n} word sets (from the stored table), the paper's "
                   f"over its 10 folds (std {ps:g})")
    out = {}
    for r in ls:
        q, ours = r["quantity"], float(r["ours"])
        for op, (_, pm, ps) in p004.PAPER_TABLE3.items():
            if q.startswith(f"Table 3 WRC %, {op} ("):
                out[q] = Evidence(p004.LETTERS, tol(t[False, 0.01, op.replace("_", " ")][1], ps), paper=pm, trivial=triv["block"])
            if q == f"WRC %, {op}, variant: 100 random words":
                out[q] = Evidence(p004.LETTERS, tol(t[True, 0.01, op.replace("_", " ")][1], ps), paper=pm, trivial=triv["random"])
        cc, c = t[False, 0.01, "conditional covariance"][0], t[False, 0.01, "covariance"][0]
        if q.startswith("Table 3: WRC of conditional covariance minus covariance"):
            out[q] = Evidence(p004.LETTERS, tol(sweep[0.01][1], float(np.hypot(4, 5))), paper=86.1 - 83.8,
                              orders=(Order("conditional covariance", "covariance", cc, c),), no_trivial="a difference of two learners")
        if q.startswith("Table 3 lambda sweep: largest WRC gain"):
            best = max(sweep, key=lambda lam: sweep[lam][0])
            out[q] = Evidence(p004.LETTERS, tol(sweep[best][1], float(np.hypot(4, 5))), paper=p004.PAPER_GAP,
                              orders=(Order(f"conditional covariance (lambda = {best:g})", "covariance", ours, 0.0),),
                              no_trivial="a difference of two learners")
    return out


REJUDGE = {("papers_000_004", "onorma_classification"): _p000_classification,
           ("papers_000_004", "monorma_fig1"): _p000_fig12, ("papers_000_004", "monorma_fig2"): _p000_fig12,
           ("paper_001", "movkl_finger"): _p001_finger, ("paper_001_real", "movkl_real_curves"): _p001_real,
           ("paper_003", "mvml_table1"): _p003_table1, ("paper_003", "mvml_fig1_toy"): _p003_fig1,
           ("papers_000_004", "kde_digits"): _p004_digits, ("papers_000_004", "kde_ocr"): _p004_ocr}


def rejudge(lines):
    "Each line with today's verdict (`verdict`, its `kind`) beside the one the run recorded (`verdict as recorded`)."
    evs = {}
    for (folder, exp), f in REJUDGE.items():
        ls = [r for r in lines if r["folder"] == folder and r["experiment"] == exp]
        if ls:
            evs.update({(folder, exp, q): ev for q, ev in f(ls).items()})
    out = []
    for r in lines:
        rec = r["verdict"]
        base = {k: r.get(k, "") for k in ("folder", "paper_id", "experiment", "quantity", "ours", "note", "section", "evidence")}
        base["verdict as recorded"] = rec
        ev = evs.get((r["folder"], r["experiment"], r["quantity"]))
        if r["experiment"].endswith("_not_run"):
            new = {"paper": "", "verdict": rec, "claim_of": "not run"}
        elif ev is not None:
            new = {"paper": ev.paper, "verdict": judge(float(r["ours"]), ev, "full"), **evidence_columns(ev, "full")}
        elif r["kind"] == "own check" and not verdict_problems({"verdict": rec, "note": r["note"], "claim_of": "ours",
                                                                 "paper": _num(r["paper"])}):
            new = {"paper": "", "verdict": rec, "claim_of": "ours"}
        elif r["kind"] == "own check":
            new = {"paper": "", "verdict": "not judged because the recorded text of this own check breaks today's rules "
                                           "(an odd text, or a quote of the paper: see the recorded verdict)", "claim_of": "stale"}
        else:
            new = {"paper": "", "verdict": "not judged because the full-size run stored no structured evidence for this claim "
                                           "(a tolerance from the data, the trivial predictor's score); a rerun stores it",
                   "claim_of": "stale"}
            if _num(r["paper"]) is not None:
                base["note"] = f"the paper's number: {r['paper']}; " + base["note"]
        row = {**base, **new}
        row["kind"] = verdict_kind(row["verdict"])
        out.append(row)
    return out


def hashes():
    "{experiment: {hash, commit, folder}}: `code_hash` at the commit each folder's run started from."
    reg = load_experiments()
    out = {}
    for folder, commit in FOLDERS.items():
        done = {p.name for p in (HERE / folder).iterdir() if p.is_dir()}
        for name in sorted(done & set(reg)):
            out[name] = {"hash": code_hash(name, reg[name].module, _git_source(commit)), "commit": commit, "folder": folder}
    return out


def _git_source(commit):
    "`source_of(path)` for `code_hash` and `ovk_imports`: the file's text at `commit` (OSError if it is not there)."
    def source_of(p):
        r = subprocess.run(["git", "show", f"{commit}:{p}"], cwd=ROOT, capture_output=True, text=True)
        if r.returncode:
            raise OSError(p)
        return r.stdout
    return source_of


def stale_rows(recorded, names):
    """Each stale experiment by name: its folder, the commit its run started from, its hash then and today, and what
    changed since: its own function (and what it reaches in its module) and each ovk_nb module it imports whose code
    (unparsed by `ast`: comments do not count) differs, or that one side does not import."""
    import ast
    reg = load_experiments()
    here = lambda p: (ROOT / p).read_text()
    out = []
    for name in names:
        rec, module = recorded[name], reg[name].module
        then = _git_source(rec["commit"])
        text = lambda src, m: ast.unparse(ast.parse(src(_module_path(m, src)))) if _module_path(m, src) else None
        changed = []
        try:
            if experiment_hashes(then(_module_path(module, then))).get(name) != experiment_hashes(here(_module_path(module, here)))[name]:
                changed.append(f"{name} itself")
        except (OSError, TypeError):
            changed.append(f"{name} itself (its module is not at {rec['commit']})")
        for m in sorted(set(ovk_imports(module, then)) | set(ovk_imports(module))):
            if m != module and text(then, m) != text(here, m):
                changed.append(m.replace("ovk_nb.", ""))
        out.append({"experiment": name, "folder": rec["folder"], "run started from": rec["commit"], "hash at the run": rec["hash"],
                    "hash when this page was built": code_hash(name, module), "changed since the run": ", ".join(changed)})
    return out


# what a new run writes beside its results (`ovk_nb.reproduce.provenance`, `write_report`), field by field
RUN_FIELDS = {"package": "the ovk_nb version", "commit": "the one commit of the tree it ran from (12 hex digits); from a tree "
              "with uncommitted changes in ovk_nb/, ' + uncommitted.diff (sha256 ...)' and that diff beside the report "
              "(untracked modules there are refused)", "date": "when it started", "seed": "the seed of every experiment",
              "sizes": "quick or full", "machine": "architecture, cores, system",
              "python": "Python's version", "numpy": "numpy's version", "scipy": "scipy's version",
              "scikit-learn": "scikit-learn's version", "threadpoolctl": "threadpoolctl's version",
              "blas": "the BLAS threadpoolctl finds: its API, version, threading layer and threads"}


def run_field_rows():
    """The provenance fields a new run records (the keys of `provenance()`, so a field added there shows here), and
    whether each of these folders' runs recorded it; then the files written beside the results."""
    keys = list(provenance(quick=True))
    had = {f: set(_read(HERE / f / "provenance.csv")[0]) for f in FOLDERS}
    rows = [{"field": k, "a new run records": RUN_FIELDS.get(k, "(see `ovk_nb.reproduce.provenance`)"),
             "recorded by these runs": ", ".join(f for f in FOLDERS if k in had[f]) or "none"} for k in keys]
    rows += [{"field": "code_hashes.json", "a new run records": "`code_hash` of every experiment it ran: the experiment's "
              "function and every ovk_nb module its module imports (the staleness check compares it with today's)",
              "recorded by these runs": "none (recorded afterwards here, at each run's start commit)"},
             {"field": "uncommitted.diff", "a new run records": "the diff of ovk_nb/ against the commit, when the tree "
              "was not clean", "recorded by these runs": "none (each page says '+ uncommitted changes' only)"}]
    return rows


def stale(recorded):
    "The experiments whose `code_hash` today differs from the recorded one."
    reg = load_experiments()
    return sorted(k for k, r in recorded.items() if code_hash(k, reg[k].module) != r["hash"])


def provenance_rows():
    "Per folder: the commit its run started from (README), the commit on its page, the commit that committed it, its machine."
    out = []
    for folder, start in FOLDERS.items():
        prov = _read(HERE / folder / "provenance.csv")[0]
        committed = subprocess.run(["git", "log", "-1", "--format=%h", "--", str(HERE / folder)], cwd=ROOT,
                                   capture_output=True, text=True).stdout.strip()
        out.append({"folder": folder, "run started from": start, "commit on its page": prov.get("commit", ""),
                    "committed in": committed, "date": prov.get("date", ""), "machine": prov.get("machine", ""),
                    "scipy / scikit-learn / threadpoolctl / BLAS": "not recorded by these runs"})
    return out


def _claim_cells(r):
    t = r.get("tol")
    return {"result": r["experiment"], "quantity": r["quantity"], "ours": _num(r["ours"]),
            "paper": r.get("paper") if r.get("paper") not in (None, "") else "",
            "verdict": r["verdict"], "tolerance": "" if t in (None, "") else f"{float(t):.3g} {r.get('tol_unit', '')} ({r.get('tol_from', '')})",
            "as recorded": r["verdict as recorded"]}


def index(summ, prov, stale_list, stale_table=(), fields=()):
    """index.md and index.html: provenance, what a new run records, the stale results by name, what was not rerun, the
    whole tally, every paper's lines."""
    from ovk_nb.reproduce import _STYLE, _html_table
    t = tally(summ)
    head = ["# ovk_nb full-size reproduction report (one index)", "",
            "Every committed full-size folder in one page. **Nothing was rerun for this page**: the runs are those of "
            "2026-11-26 (README), each line re-judged under today's rules (issue 32: a verdict is computed from its evidence "
            "by `ovk_nb.experiments.core.judge`) from the numbers the runs stored. Where a run did not store the evidence "
            "(a tolerance from the data, the trivial predictor's score) the line reads *not judged* and says what is missing.",
            "", f"**Stale**: {len(stale_list)} of {len(json.loads((HERE / 'code_hashes.json').read_text()))} experiments "
            "(their code, or an ovk_nb module they import, changed since their run: `stale.json`; each is named, with what "
            "changed, under *Stale results*). **Provenance**: the runs "
            "started from different commits and had uncommitted changes in ovk_nb/ that were not recorded (see the table): "
            "this page is not one commit's result; a rerun with `ovk-nb reproduce` records one commit (its diff beside it "
            "if the tree is dirty) and the versions below.", "",
            "Versions of the machine that built this page (not of the runs): "
            + "; ".join(f"{k} {v}" for k, v in versions().items()), ""]
    rec = ("What a new full-size run (`ovk-nb reproduce --out DIR`) records in its provenance.csv and on its page, field "
           "by field, and which of the runs below recorded it:")
    st_intro = (f"{len(stale_list)} experiments whose `code_hash` today differs from the one recorded at their run's start "
                "commit (`code_hashes.json`), by name, with what changed since (their own function, or the ovk_nb modules "
                "they import). `tests/test_report_rules.py` fails when this list and today's hashes disagree, and warns "
                "with every name while it is not empty. A rerun of these empties it.")
    md = head + ["## Provenance per folder", "", rows_to_markdown(prov), "", "## What a new run records", "", rec, "",
                 rows_to_markdown(list(fields)), "", "## Stale results, by name", "", st_intro, "",
                 rows_to_markdown(list(stale_table)) if stale_table else "None.", "",
                 "## Verdicts per paper (all folders)", "", rows_to_markdown(t), ""]
    html = ["<h1>ovk_nb full-size reproduction report (one index)</h1>"] + [f"<p>{x}</p>" for x in head[2:] if x] + \
           ["<h2>Provenance per folder</h2>", _html_table(prov), "<h2>What a new run records</h2>", f"<p>{rec}</p>",
            _html_table(list(fields)), '<h2 id="stale">Stale results, by name</h2>', f"<p>{st_intro}</p>",
            _html_table(list(stale_table)) if stale_table else "<p>None.</p>",
            '<h2 id="tally">Verdicts per paper (all folders)</h2>', _html_table(t).replace("<table>", '<table class="tally">', 1)]
    for paper in sorted({r["paper_id"] for r in summ}):
        st, au = PAPER_SOURCES.get(paper, ("", ""))
        cells = [_claim_cells(r) for r in summ if r["paper_id"] == paper]
        md += [f"## Paper {paper}: {PAPERS.get(paper, '')}", "", f"*{st}*, {au}.", "", rows_to_markdown(cells), ""]
        html += [f'<h2 id="paper-{paper}">Paper {paper}: {PAPERS.get(paper, "")}</h2>', f"<p><em>{st}</em>, {au}.</p>",
                 _html_table([{**c, "verdict": (verdict_kind(c["verdict"]).replace(" ", "-"), c["verdict"])} for c in cells])]
    (HERE / "index.md").write_text("\n".join(md) + "\n")
    (HERE / "index.html").write_text("<!DOCTYPE html><html><head><meta charset='utf-8'><title>ovk_nb full-size report</title>"
                                     f"<style>{_STYLE}</style></head><body>\n" + "\n".join(html) + "\n</body></html>\n")


def main(record_hashes=False):
    if record_hashes:
        (HERE / "code_hashes.json").write_text(json.dumps(hashes(), indent=1, sort_keys=True) + "\n")
    recorded = json.loads((HERE / "code_hashes.json").read_text())
    st = stale(recorded)
    (HERE / "stale.json").write_text(json.dumps(st, indent=1) + "\n")
    summ = rejudge(rows())
    bad = [f"{r['experiment']}: {r['quantity']}: {p}" for r in summ for p in verdict_problems(r)]
    if bad:
        raise SystemExit("lines break the rules:\n" + "\n".join(bad))
    (HERE / "summary.csv").write_text(rows_to_csv(summ))
    index(summ, provenance_rows(), st, stale_rows(recorded, st), run_field_rows())
    print(len(summ), "lines;", {k: sum(r["kind"] == k for r in summ) for k in dict.fromkeys(r["kind"] for r in summ)},
          f"; stale {len(st)} of {len(recorded)}")


if __name__ == "__main__":
    import sys
    main(record_hashes="--record-hashes" in sys.argv)
