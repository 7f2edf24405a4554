"""Benchmark river's `learn_one` against one `partial_fit` over the same rows (issue 19, section 2), for ONORMA, OSKAAR
and SALAMI (the fast path lives in the streaming core, `StreamLearner.learn_one`).

    python bench/bench_learn_one.py            # 3 runs; writes bench/results/learn_one.md (the medians first, then each
                                               # run; the file's earlier sections kept below as history),
                                               # learn_one.csv (every run's rows), learn_one_median.csv (the medians)
    python bench/bench_learn_one.py --runs 5   # the whole benchmark 5 times: medians over 5
    python bench/bench_learn_one.py --quick    # fewer rows
    python bench/bench_learn_one.py --out DIR  # the tables elsewhere (e.g. another checkout's code, by PYTHONPATH)
    python bench/bench_learn_one.py --only "budget 50" --only "truncation 50"   # only these rows (name contains the text)

Targets (issue 30): learn_one per row <= 3x partial_fit's per-row cost, a fixed cost a call (learn_one's time outside the
learner's one-row step `_run_one`) <= 15 us, with rows as arrays and, in river's convention, as dicts (x: feature ->
value, y: output -> value); the same model to 1e-12 (max |f_learn_one - f_partial_fit| over test inputs, relative to
max |f|). Times are CPU times of this process (time.process_time, best of the repeats): on a shared machine wall times
count the other jobs' slices too. The load average and the BLAS thread count are written beside every table.

Why medians over runs (`--runs N`, 3 by default): on this 2-core machine a whole run's speed swings by about a third from
one run to the next even when idle (learn_one and partial_fit are interleaved within a run, but both the fixed cost and
the step move with the run), so one run's figure near a bound says little. Each figure is reported as its median over the
runs, with the worst run's ratio and fixed cost beside it; the verdict ('met (median)') reads the medians, 'met (worst
run)' says whether every run met the targets too.
"""
from __future__ import annotations

import copy
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np

from ovk_nb.datasets import make_paper000_synthetic
from ovk_nb.decoding import Hamming
from ovk_nb.experiments.core import rows_to_csv, rows_to_markdown
from ovk_nb.kernels import RBF, gaussian_times_J
from ovk_nb.onorma import ONORMA
from ovk_nb.oskaar import OSKAAR
from ovk_nb.salami import SALAMI

sys.path.insert(0, str(Path(__file__).parent))

HERE = Path(__file__).resolve().parent
OUT = HERE / "results"


def scores(est, X):
    "The learner's real-valued output on X: f_n(X) (ONORMA) or the feature estimates g(X) (OSKAAR, SALAMI)."
    return est._feature_estimates(X) if hasattr(est, "_feature_estimates") else est.predict(X)


def _as_dicts(A, prefix):
    "Rows as river's dicts (name -> value), or the rows themselves for label vectors (prefix None)."
    return list(A) if prefix is None else [dict(zip([f"{prefix}{j}" for j in range(A.shape[1])], r)) for r in A.tolist()]


def _cpu(f):
    c = time.process_time(); res = f(); return time.process_time() - c, res


def _step_owners():
    "(class, method name) of every learner's one-row work: `_run_one`, and the lean route's numbers `_lean_step` where one has it."
    out = []
    for learner in (ONORMA, OSKAAR, SALAMI):
        for name in ("_run_one", "_lean_step"):
            owner = next((c for c in learner.__mro__ if name in vars(c)), None)
            if owner is not None and (owner, name) not in out:
                out.append((owner, name))
    return out


_ZEROS = np.zeros(1 << 16)


def _no_lean_step(est, x1, *args):
    """The lean route's numbers replaced by nothing. ONORMA: a zero coefficient, no error (and no norm increment
    untruncated), no new entry for the window's norms cache (its write, a few item sets at the commit, is left out); exact OSKAAR: a zero row of the factor and of E = L^{-1} Phi, delta = 1, the first decision, no loss;
    a primal round of OSKAAR: its state unchanged, the first decision, no loss."""
    if isinstance(est, OSKAAR):                 # exact: zero rows; primal: the state as it is
        if est._primal is not None:
            return None, est._primal, None, est._dec[0], 0.0, 0.0, est._err_sum
        f = est._factor                          # zeros sliced from one array (the stub's own cost stays out)
        return _ZEROS[:f.n], 1.0, _ZEROS[:f._E.shape[1]], est._dec[0], 0.0, 0.0, est._err_sum
    return np.zeros(est._C.shape[1]), 0.0, None if est._trunc is not None else 0.0, None, None   # no norms-cache write


def _room(e, k):
    "Room for k more rows on the lean route (the general route's growth, done beforehand): ONORMA's buffers, OSKAAR's."
    if not isinstance(e, OSKAAR):
        e._reserve(k)
        return
    from ovk_nb.oskaar import _rows_for
    e._grow_records(k)
    for name in ("_X", "_codes"):
        old = getattr(e, name)
        new = np.zeros((e._n_in + k,) + old.shape[1:], old.dtype)
        new[:e._n_in] = old[:e._n_in]
        setattr(e, name, new)
    f = e._factor
    if getattr(f, "__dict__", {}).get("_E") is not None:         # exact (a budgeted one past its switch has none)
        f.buf, f._E = f._grown(f.n + k), _rows_for(f._E, f.n + k)


class _NoStep:
    """While active, the learners' one-row work (`_run_one`; `_lean_step`, the numbers of ONORMA's and exact OSKAAR's lean routes) does
    nothing: a `learn_one` call is then its glue alone (the lean route's commit included)."""
    def __enter__(self):
        self.saved = {}
        for owner, name in _step_owners():
            self.saved[owner, name] = vars(owner)[name]
            setattr(owner, name, _no_lean_step if name == "_lean_step" else (lambda est, X, T: None))
        return self

    def __exit__(self, *exc):
        for (owner, name), f in self.saved.items():
            setattr(owner, name, f)


def _fixed_cost(est, Xr, Yr, k=500):
    """learn_one's cost a call outside the step (its glue: the row and target checks, the parameter check, the undo point,
    the BLAS limit where one applies), in seconds: the learner at its last state (after the whole stream: the largest
    undo point and window) learning its last rows with the step replaced by nothing (so its state stays), best of 5
    loops of k calls. A short loop read apart from the step: on a loaded machine, the difference of two long passes is
    mostly noise."""
    rows = list(zip(Xr[-k:], Yr[-k:]))
    best = float("inf")
    with _NoStep():
        for _ in range(5):
            e = copy.deepcopy(est)            # the lean route commits (a zero coefficient): each loop from the same state,
            if hasattr(e, "_lean_step"):      # with room for its rows (else it would take the general route)
                _room(e, k)
            c = time.process_time()
            for x, y in rows:
                e.learn_one(x, y)
            best = min(best, (time.process_time() - c) / len(rows))
    return best


class _StepClock:
    """Times the learners' one-row work (`_run_one`, and `_lean_step` on ONORMA's lean route) while active: each method is
    wrapped where the learners find it; a step inside a step (SALAMI's experts) is counted once, in the outer one."""
    def __enter__(self):
        self.total, self.depth, self.saved = 0.0, 0, {}
        for owner, name in _step_owners():
            self.saved[owner, name] = vars(owner)[name]
            setattr(owner, name, self._timed(self.saved[owner, name]))
        return self

    def _timed(self, f):
        def step(*args):
            self.depth += 1
            c = time.process_time()
            try:
                return f(*args)
            finally:
                self.depth -= 1
                if self.depth == 0:
                    self.total += time.process_time() - c
        return step

    def __exit__(self, *exc):
        for (owner, name), f in self.saved.items():
            setattr(owner, name, f)


def case(name, make, X, Y, Xt, repeat, dicts=False):
    Xr, Yr = (_as_dicts(X, "x"), _as_dicts(Y, None if Y.dtype.kind in "iub" else "y")) if dicts else (X, Y)

    def one_by_one():
        est = make()
        for x, y in zip(Xr, Yr):
            est.learn_one(x, y)
        return est

    tp = tl = tw = tf = float("inf")
    for _ in range(repeat):                   # interleaved: a load change between the two loops hits both alike
        t, a = _cpu(lambda: make().partial_fit(X, Y))
        tp = min(tp, t)
        t, b = _cpu(one_by_one)
        tl = min(tl, t)
        with _StepClock() as clock:           # the one-row steps alone, in a third (timed) pass
            one_by_one()
        tw = min(tw, clock.total)
        tf = min(tf, _fixed_cost(b, Xr, Yr))
    with warnings.catch_warnings():               # a learner fed dicts knows feature names; Xt is an array, same order
        warnings.simplefilter("ignore", UserWarning)
        fa, fb = scores(a, Xt), scores(b, Xt)
    diff = float(np.abs(fa - fb).max() / max(1.0, np.abs(fa).max()))
    n = len(X)
    fixed = 1e6 * tf
    return {"learner": name, "rows": "dict" if dicts else "array", "n": n, "partial_fit per row (us)": 1e6 * tp / n,
            "learn_one per row (us)": 1e6 * tl / n, "of which the step (us)": 1e6 * tw / n, "fixed cost a call (us)": fixed,
            "ratio": tl / tp, "max rel. difference": diff, "target": "ratio <= 3, fixed <= 15 us, difference <= 1e-12",
            "met": bool(tl / tp <= 3 and fixed <= 15 and diff <= 1e-12)}


def run_all(quick, repeat, n, run, only=None):
    "One run of every case; rows tagged with the run and the load average at its end."
    X, Y = make_paper000_synthetic(n + 200, 10, random_state=0, return_X_y=True)
    X = X / np.sqrt(X.shape[1])                                       # inputs in the unit ball (notebook 02)
    Xt, X, Y = X[n:], X[:n], Y[:n]
    rng = np.random.default_rng(0)
    Xs = rng.normal(size=(n // 4 + 200, 5)) / 2
    Ys = (Xs[:, :4] + 0.3 * rng.normal(size=(len(Xs), 4)) > 0).astype(int)
    m = n // 4                                                        # OSKAAR/SALAMI cost O(t^2) a round: fewer rows
    X5 = rng.normal(size=(n + 200, 5)) / 3                            # issue 30's case: 5 inputs, 3 outputs, truncated
    Y3 = np.column_stack([np.sin(X5[:, 0]), X5[:, 1] * X5[:, 2], X5[:, 3]])
    small = lambda: ONORMA(gaussian_times_J(3, gamma=1.0), lam=0.01, truncation=50)
    cases = [
        ("ONORMA, Gaussian x J (d = 3, 5 inputs), truncation 50", small, X5[:n], Y3[:n], X5[n:], repeat),
        ("ONORMA, Gaussian x J (d = 3, 5 inputs), truncation 50", small, X5[:n], Y3[:n], X5[n:], repeat, True),
        ("ONORMA, Gaussian x J (d = 10)", lambda: ONORMA(gaussian_times_J(10, gamma=1.0), lam=0.01), X, Y, Xt, repeat),
        ("ONORMA, Gaussian x J (d = 10)", lambda: ONORMA(gaussian_times_J(10, gamma=1.0), lam=0.01), X, Y, Xt, repeat, True),
        ("ONORMA, Gaussian x J, truncation 200", lambda: ONORMA(gaussian_times_J(10, gamma=1.0), lam=0.01,
                                                                     truncation=200), X, Y, Xt, repeat),
        ("OSKAAR, RBF, Hamming (4 labels)", lambda: OSKAAR(RBF(0.5), lam=0.3, decoder=Hamming()),
             Xs[:m], Ys[:m], Xs[m:], repeat),
        ("OSKAAR, RBF, Hamming (4 labels)", lambda: OSKAAR(RBF(0.5), lam=0.3, decoder=Hamming()),
             Xs[:m], Ys[:m], Xs[m:], repeat, True),
        ("SALAMI, RBF, Hamming (4 labels), lifetime 4", lambda: SALAMI(RBF(0.5), lam=0.3, decoder=Hamming()),
             Xs[:m], Ys[:m], Xs[m:], repeat),
        ("OSKAAR, RBF, Hamming (4 labels), budget 50", lambda: OSKAAR(RBF(0.5), lam=0.3, decoder=Hamming(), budget=50),
             Xs[:m], Ys[:m], Xs[m:], repeat),
        ("SALAMI, RBF, Hamming (4 labels), lifetime 4, budget 30",
             lambda: SALAMI(RBF(0.5), lam=0.3, decoder=Hamming(), budget=30), Xs[:m], Ys[:m], Xs[m:], repeat),
    ]
    rows = [case(*c) for c in cases if only is None or any(o in c[0] for o in only)]
    load = os.getloadavg()
    for r in rows:
        r["BLAS threads"] = _blas_threads()
        r["run"], r["load (1 min) at the end"] = run, round(load[0], 1)
    return rows, load


def _blas_threads():
    from threadpoolctl import threadpool_info
    return ",".join(str(i["num_threads"]) for i in threadpool_info() if i["user_api"] == "blas")


def _head(repeat, runs):
    "The results' header: what is measured, how, on which machine."
    return (f"# learn_one vs partial_fit\n\n`learn_one` row by row against one `partial_fit` over the same rows, best of "
            f"{repeat} run(s) each in CPU time of the process (`time.process_time`: on a shared machine wall times count "
            f"the other jobs' slices), the two interleaved, per row; rows as arrays and, in river's convention, as dicts "
            f"(x: feature -> value; y: output -> value, label vectors as arrays). 'of which the step': the time inside the "
            f"learner's one-row work (the work itself, timed in a third pass): `_run_one`, or on ONORMA's and exact OSKAAR's lean "
            f"routes `_lean_step` (the step's numbers, computed from the committed state); 'fixed cost a call': a learn_one "
            f"call's glue (the row and target checks, the parameter check, the undo point, the BLAS limit where it "
            f"applies; on the lean route its error-state switch and its commit) timed apart: the learner at its final "
            f"state (a copy, with room for the rows on the lean route) learning its last 500 rows with the work replaced "
            f"by nothing, best of 5 (on a loaded machine the difference of two long passes, learn_one minus the steps, "
            f"is mostly noise: 11 to 58 us for the same exact OSKAAR code within an hour). ONORMA: paper 000's synthetic data (x in the unit ball of R^20, "
            f"d = 10), lam = 0.01, eta_t = 1/sqrt(t). OSKAAR / SALAMI: 5 inputs, 4 binary labels (Hamming decoder); the "
            f"budgeted ones switch to their primal (Nystrom) state after the budget. 'max rel. difference': "
            f"max |f_learn_one - f_partial_fit| / max(1, max |f|) on held-out inputs (the feature estimates g(x) for "
            f"OSKAAR / SALAMI). Machine: {os.cpu_count()} cores shared with other jobs (the whole "
            f"benchmark is run {runs} time(s), each run's table with the load average at its end).\n\n"
            f"**The verdict reads medians.** Each figure of the first table is its MEDIAN over the {runs} run(s), with the "
            f"worst run's ratio and fixed cost beside it ('met (median)': the targets on the medians; 'met (worst run)': "
            f"on every run). Why: on this 2-core machine a whole run's speed swings by about a third from one run to "
            f"the next even when idle (the fixed cost and the step move together within a run), so one run near a bound "
            f"proves nothing either way; a median of an odd number of runs is a run that happened, and half the runs "
            f"were at least as slow. Aim, for margin against the swing: ratio <= 2.5 and fixed cost <= 11 us.\n\n")


_FIGURES = ("partial_fit per row (us)", "learn_one per row (us)", "of which the step (us)", "fixed cost a call (us)",
            "ratio", "max rel. difference")


def summarise(allrows):
    """One row per case over the runs: each figure's MEDIAN over the runs (the verdict's), the worst run's ratio and fixed
    cost beside it. The median, not one run nor the best: on this machine a whole run's speed swings by about a third
    from one run to the next, even idle (other jobs' slices, the CPU's clock), and a bound that holds only in the lucky
    run is no guarantee; the median of an odd number of runs is a run that happened, and half the runs were at least as
    slow."""
    groups = {}
    for r in allrows:
        groups.setdefault((r["learner"], r["rows"]), []).append(r)
    out = []
    for (learner, rows), rs in groups.items():
        med = {k: float(np.median([r[k] for r in rs])) for k in _FIGURES}
        out.append({"learner": learner, "rows": rows, "n": rs[0]["n"], "runs": len(rs), **med,
                    "worst ratio": max(r["ratio"] for r in rs),
                    "worst fixed cost (us)": max(r["fixed cost a call (us)"] for r in rs),
                    "target": rs[0]["target"],
                    "met (median)": bool(med["ratio"] <= 3 and med["fixed cost a call (us)"] <= 15
                                         and med["max rel. difference"] <= 1e-12),
                    "met (worst run)": all(r["met"] for r in rs), "BLAS threads": rs[0]["BLAS threads"]})
    return out


def main(quick=False, runs=3, out=OUT, only=None):
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    n, repeat = (500, 1) if quick else (2000, 5)
    head = _head(repeat, runs)
    parts, allrows, loads = [], [], []
    t0, c0 = time.perf_counter(), time.process_time()
    for run in range(1, runs + 1):
        rows, load = run_all(quick, repeat, n, run, only)
        allrows += rows
        loads.append(load)
        parts.append(f"### Run {run} (load average at the end {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f})\n\n"
                     + rows_to_markdown([{k: v for k, v in r.items() if k not in ("run", "load (1 min) at the end")}
                                         for r in rows]) + "\n\n")
        print(parts[-1], flush=True)
    summary = summarise(allrows)
    lo = ", ".join(f"{l[0]:.1f}" for l in loads)
    med = (f"## Median over {runs} run(s) (load average, 1 min, at the end of each run: {lo}; "
           f"{time.perf_counter() - t0:.0f} s wall, {time.process_time() - c0:.0f} s CPU in all)\n\n"
           + rows_to_markdown(summary) + "\n\n## Each run\n\n")
    print(med, flush=True)
    md = out / "learn_one.md"
    text = (head + med + "".join(parts)).rstrip("\n") + "\n"
    if md.exists():                                 # the file's earlier sections are kept below, as history
        text += "\n" + _as_history(md.read_text(), time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()))
    md.write_text(text)
    (out / "learn_one.csv").write_text(rows_to_csv(allrows))
    (out / "learn_one_median.csv").write_text(rows_to_csv(summary))


HISTORY = "# Earlier runs (history, as they were written)\n"


def _as_history(old: str, now: str) -> str:
    """An earlier learn_one.md as the history of a new one: its head's sections (below its description) one level down
    under "Previous head of this file", then its own history, unchanged."""
    i = old.find("\n## ")
    first, _, rest = (old[i + 1:] if i >= 0 else "").partition(HISTORY)
    first = "\n".join("#" + ln if ln.startswith("##") else ln for ln in first.splitlines()).strip()
    prev = f"## Previous head of this file (replaced {now})\n\n{first}\n\n" if first else ""
    return HISTORY + "\n" + prev + rest.lstrip("\n")


if __name__ == "__main__":
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3, help="the whole benchmark this many times (default 3): each figure is "
                    "reported as its median over the runs (the verdict's) and the worst run")
    ap.add_argument("--quick", action="store_true", help="fewer rows")
    ap.add_argument("--out", default=OUT, help="folder of learn_one.md / learn_one.csv")
    ap.add_argument("--only", action="append", help="only the learners whose name contains this text (repeatable)")
    a = ap.parse_args()
    sys.exit(main(quick=a.quick, runs=a.runs, out=a.out, only=a.only))
