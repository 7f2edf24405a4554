"""The house: three floors, every import pointing down, no circles.

Floor 1 (shared pieces) < floor 2 (algorithms) < floor 3 (reproduction, report, docs, CLI). Inside floor 1 and floor 3
a module may import the modules listed before it; floor-2 modules import floor 1 only (no algorithm leans on another).
Estimator modules never import the report, the experiments, the docs, the CLI or matplotlib, not even lazily."""
import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PKG = ROOT / "ovk_nb"
FLOORS = {
    1: ["validation", "kernels", "linalg", "backend", "weights", "metrics", "decoding", "streaming", "datasets", "distributed"],
    2: ["ridge", "onorma", "monorma", "movkl", "kde", "oskaar", "salami", "mvml", "gp", "quantile", "vector_fields"],
    3: ["experiments.core", "experiments.paper000", "experiments.paper001", "experiments.paper002", "experiments.paper003", "experiments.paper004",
        "reproduce", "docs", "cli"],
}
# The one declared sideways arrow on floor 2: SALAMI (paper 002, Algorithm 3) is by definition an aggregate of OSKAAR
# experts (it is an OSKAAR whose experts are OSKAAR's KAARFactor), so it stands on oskaar as well as on floor 1.
LEANS_ON = {"salami": {"oskaar"}}
RANK = {m: (f, i) for f, mods in FLOORS.items() for i, m in enumerate(mods)}
NOT_BELOW_FLOOR_3 = ("ovk_nb.reproduce", "ovk_nb.experiments", "ovk_nb.docs", "ovk_nb.cli", "matplotlib")


def module_files():
    out = {}
    for p in PKG.rglob("*.py"):
        rel = p.relative_to(PKG).with_suffix("")
        name = ".".join(rel.parts)
        if name in ("__init__", "_modidx") or name.endswith("__init__"):
            continue
        out[name] = p
    return out


def imports_of(path: Path, name: str) -> set:
    "Every ovk_nb module imported anywhere in the file (top level, functions, lazy imports), as names relative to ovk_nb."
    tree = ast.parse(path.read_text())
    pkg_parts = ["ovk_nb"] + name.split(".")[:-1]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg_parts[:len(pkg_parts) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            if mod == "ovk_nb" or mod.startswith("ovk_nb."):
                targets = [mod] + [f"{mod}.{a.name}" for a in node.names]
                for t in targets:
                    rel = t[len("ovk_nb."):] if t.startswith("ovk_nb.") else ""
                    if rel in RANK or rel in module_files():
                        found.add(rel)
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("ovk_nb."):
                    found.add(a.name[len("ovk_nb."):])
    found.discard(name)
    return found


def graph():
    return {name: imports_of(p, name) for name, p in module_files().items()}


def test_every_module_has_a_floor():
    assert set(module_files()) == set(RANK), "give every module of ovk_nb a floor in FLOORS (and in the README)"


@pytest.mark.parametrize("name", sorted(RANK))
def test_imports_point_down(name):
    f, i = RANK[name]
    for dep in graph()[name]:
        g, j = RANK[dep]
        if f == 2:
            assert g == 1 or dep in LEANS_ON.get(name, ()), \
                f"{name} (floor 2) imports {dep} (floor {g}): algorithms stand on floor 1 only"
        else:
            assert (g, j) < (f, i), f"{name} (floor {f}) imports {dep} (floor {g}): an arrow running up or sideways"


def test_no_import_circle():
    g = graph()
    state = {}

    def visit(n, path):
        state[n] = "open"
        for m in g[n]:
            if state.get(m) == "open":
                raise AssertionError("import circle: " + " -> ".join(path + [n, m]))
            if m not in state:
                visit(m, path + [n])
        state[n] = "done"

    for n in g:
        if n not in state:
            visit(n, [])


@pytest.mark.parametrize("name", FLOORS[1] + FLOORS[2])
def test_estimator_floors_do_not_pull_in_the_top(name):
    "Imported alone in a fresh interpreter, a floor-1/2 module loads no report, experiment, docs, CLI or matplotlib."
    code = (f"import sys, json; import ovk_nb.{name}; "
            "print(json.dumps(sorted(m for m in sys.modules if m.startswith(('ovk_nb', 'matplotlib')))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True).stdout
    loaded = json.loads(out.strip().splitlines()[-1])
    bad = [m for m in loaded if m.startswith(NOT_BELOW_FLOOR_3)]
    assert not bad, f"importing ovk_nb.{name} loads {bad}"


def test_the_checker_sees_a_circle(tmp_path):
    "The circle test can fail: a fake pair of modules that import each other is reported."
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    a.write_text("from ovk_nb.ridge import OVKRidge\n")
    assert imports_of(a, "kde") == {"ridge"}
    b.write_text("def f():\n    from .streaming import step_sizes\n")
    assert imports_of(b, "onorma") == {"streaming"}
