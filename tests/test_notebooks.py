"""Every notebook in nbs/ runs top to bottom as a test (nbdev's test_nb, with IN_TEST=1)."""
from pathlib import Path

import pytest
from nbdev import test as nbtest   # imported as a module so pytest does not collect test_nb

NBS = sorted(p for p in (Path(__file__).resolve().parent.parent / "nbs").rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)


def test_there_are_notebooks():
    assert len(NBS) >= 5, NBS


@pytest.mark.parametrize("nb", NBS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_notebook_runs(nb, monkeypatch):
    monkeypatch.setenv("IN_TEST", "1")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    ok, seconds = nbtest.test_nb(nb, skip_flags=["notest"])
    assert ok, f"{nb.name} failed (see the traceback above)"
