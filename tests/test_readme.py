"""The README's two fresh-machine commands are the ones .ci/run executes."""
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_ci_runs_the_readme_commands():
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    install = 'pip install -e ".[dev]"'
    assert install in readme and install in ci
    assert "&& pytest" in readme and "\npytest" in ci
    assert "ovk-nb reproduce --quick" in readme


def test_readme_is_generated_from_index():
    assert (ROOT / "README.md").read_text().startswith("<!-- Generated from nbs/index.ipynb")
