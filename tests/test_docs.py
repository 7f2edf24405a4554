"""What is ours in the documentation site (ovk_nb.docs, from nbs/3_reproduction/07_docs.ipynb): nbdev's directives as
MyST-NB tags, the hidden first cell (warnings, progress), the floor pages, local MathJax, a failing cell failing the
build, `ovk-nb docs` outside a checkout, README.md. Sphinx and MyST-NB themselves are not tested here.

The builds run Sphinx in a subprocess (`python -m ovk_nb.docs build`, warnings are errors) on notebooks made here, in a
temporary source folder: `docs/` is not touched. The real site is built by tests/test_browser.py."""
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

pytest.importorskip("sphinx")
pytest.importorskip("myst_nb")
from ovk_nb import docs  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
code, md = nbformat.v4.new_code_cell, nbformat.v4.new_markdown_cell
META = {"kernelspec": {"name": "python3", "display_name": "python3", "language": "python"}}
INDEX = """ovk_nb, made up for the tests.

**Floor 1, shared pieces** (`nbs/1_shared/`): none here.

| notebook | module | what |
|---|---|---|
| `00_none` | `ovk_nb.none` | nothing |

**Floor 2, algorithms** (`nbs/2_algorithms/`): none here.

| notebook | module | what |
|---|---|---|
| `00_none` | `ovk_nb.none` | nothing |

**Floor 3, reproduction and tools** (`nbs/3_reproduction/`): a page with a figure.

| notebook | module | what |
|---|---|---|
| `01_figs` | `ovk_nb.figs` | a plot, math, hidden cells, warnings |
"""


def _write_nbs(root, extra=()):
    """A notebook folder: an index with the three floor tables and links into the checkout, `3_reproduction/01_figs.ipynb`,
    a guide, `extra` notebooks; and a CHANGELOG.md beside it."""
    (root / "3_reproduction").mkdir(parents=True)
    (root / "guides").mkdir()
    nbformat.write(nbformat.v4.new_notebook(cells=[md("# ovk_nb\n\n> The made-up site."), md(INDEX),
                                                   md("Start with [the guide](nbs/guides/00_start.ipynb); "
                                                      "see the [changelog](CHANGELOG.md).")], metadata=META),
                   root / "index.ipynb")
    nbformat.write(nbformat.v4.new_notebook(cells=[md("# Starting\n\n> The first guide."), code("print(6 * 7)")],
                                            metadata=META), root / "guides" / "00_start.ipynb")
    (root.parent / "CHANGELOG.md").write_text("# Changelog\n\n## 0.1.0\n\nFirst release: see [the guide](nbs/guides/00_start.ipynb).\n")
    nbformat.write(nbformat.v4.new_notebook(cells=[
        md("# Figures page\n\n> Has a plot."),
        code("#| default_exp figs"),
        code("#| hide\nhidden_marker = 'HIDDEN-CELL-SOURCE'"),
        code('#| export\ndef area(r: float) -> float:\n    "Area of a disc."\n    return 3.14159 * r * r'),
        md("The area is $\\pi r^2$ and $$\\int_0^r 2\\pi s\\,ds = \\pi r^2.$$"),
        code("import matplotlib.pyplot as plt\nfig, ax = plt.subplots(figsize=(2, 2))\nax.plot([0, 1, 2], [0, 1, 4]);"),
        code("#| echo: false\nprint('ECHO-OUTPUT')  # ECHO-SOURCE"),
        code("#| output: false\nprint('HIDDEN' + '-OUTPUT')  # OUTPUT-SOURCE"),
        code("import warnings\nwarnings.warn('our own warning', UserWarning)\n"
             "warnings.warn_explicit('third-party ' + 'warning', DeprecationWarning, '/usr/lib/python3/' + 'dist-packages/x.py', 1)"),
        code("import sys\nprint('PROGRESS' + '-LINE 1/3', file=sys.stderr)\nprint(f'area(2) = {area(2):.3f}')"),
        code("#| eval: false\nraise RuntimeError('a cell that is not run')"),
    ], metadata=META), root / "3_reproduction" / "01_figs.ipynb")
    for name, cells in extra:
        nbformat.write(nbformat.v4.new_notebook(cells=cells, metadata=META), root / "3_reproduction" / name)


def _build(tmp, *args):
    return subprocess.run([sys.executable, "-m", "ovk_nb.docs", "build", "--nbs", str(tmp / "nbs"), "--srcdir",
                           str(tmp / "src"), "--out", str(tmp / "site"), *args],
                          capture_output=True, text=True, cwd=ROOT, timeout=600)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("docs")
    _write_nbs(tmp / "nbs")
    r = _build(tmp)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-5000:]
    return tmp / "site", r


def _page(site, name):
    return (site / name).read_text(encoding="utf-8")


def _text(html):
    return re.sub(r"<[^>]+>", "", html)


def test_pages_of_the_site(site):
    out, _ = site
    for page in ["index.html", "1_shared.html", "2_algorithms.html", "3_reproduction.html", "3_reproduction/01_figs.html",
                 "guides.html", "guides/00_start.html", "gallery.html", "api.html", "changelog.html", "contributing.html",
                 "genindex.html", "search.html", "searchindex.js", "_static/mathjax/" + docs.MATHJAX_FILE]:
        assert (out / page).exists(), page
    assert "<title>Figures page" in _page(out, "3_reproduction/01_figs.html")


def test_directives_become_tags(site):
    html = _page(site[0], "3_reproduction/01_figs.html")
    assert "def" in html and "area" in _text(html) and "Area of a disc" in html     # exported code shown as code
    assert "#|" not in html and "export" not in _text(html).replace("exported", "")
    assert "HIDDEN-CELL-SOURCE" not in html and "default_exp" not in html          # hide, default_exp: removed
    assert "ECHO-OUTPUT" in html and "ECHO-SOURCE" not in html                     # echo: false
    assert "OUTPUT-SOURCE" in html and "HIDDEN-OUTPUT" not in html                 # output: false
    assert "a cell that is not run" in html                                        # eval: false: shown, not run
    assert "area(2) = 12.566" in html


def test_figures_math_and_local_mathjax(site):
    out, _ = site
    html = _page(out, "3_reproduction/01_figs.html")
    imgs = re.findall(r'<img[^>]+src="([^"]+)"', html)
    assert any(s.endswith(".png") and (out / "3_reproduction" / s).resolve().is_file() for s in imgs), imgs
    assert r"\(\pi r^2\)" in html and "math notranslate" in html
    assert re.search(r'<script[^>]+src="\.\./_static/mathjax/' + re.escape(docs.MATHJAX_FILE), html)
    assert not re.search(r'<script[^>]+src="(https?:)?//', html)                   # offline: no CDN


def test_warnings_without_paths_and_a_quiet_terminal(site):
    out, r = site
    html = _page(out, "3_reproduction/01_figs.html")
    assert "UserWarning: our own warning" in html
    assert "third-party warning" not in html and "/usr/lib/python3/dist-packages" not in html and "/tmp/" not in _text(html)
    assert "PROGRESS-LINE" not in html and "PROGRESS-LINE" not in r.stderr + r.stdout  # quiet: only with --verbose
    assert "third-party warning" not in r.stderr + r.stdout


def test_floor_pages_link_the_notebooks(site):
    out, _ = site
    html = _page(out, "3_reproduction.html")
    assert 'href="3_reproduction/01_figs.html"' in html and "a plot, math, hidden cells" in html
    assert "<code" in _page(out, "1_shared.html") and "00_none" in _page(out, "1_shared.html")   # named, not linked
    assert 'href="3_reproduction.html"' in _page(out, "index.html")                # the floors in the navigation


def test_a_failing_cell_fails_the_build(tmp_path):
    "...with its traceback; `--verbose`: the notebooks' stderr (progress lines) on the terminal."
    _write_nbs(tmp_path / "nbs", [("02_broken.ipynb", [md("# Broken page"), code("import sys; print('PROGRESS-LINE 2/3', file=sys.stderr)"),
                                                        code("raise ValueError('this notebook is broken')")])])
    r = _build(tmp_path, "--verbose")
    assert r.returncode != 0
    assert "02_broken" in r.stderr and "this notebook is broken" in r.stderr and "Sphinx build failed" in r.stderr
    assert "PROGRESS-LINE 2/3" in r.stderr + r.stdout and "PROGRESS-LINE 1/3" in r.stderr + r.stdout


def test_an_unresolved_reference_fails_the_build(tmp_path):
    "`nitpicky` on our own names, warnings as errors: a page naming an ovk_nb object that does not exist fails."
    _write_nbs(tmp_path / "nbs", [("02_ref.ipynb", [md("# Ref page\n\nSee {py:class}`ovk_nb.ridge.NoSuchEstimator`.")])])
    r = _build(tmp_path, "--no-exec")
    assert r.returncode != 0 and "NoSuchEstimator" in r.stderr


def test_only_builds_a_subset_and_drops_stale_copies(tmp_path):
    src = tmp_path / "src"
    (src / "3_reproduction").mkdir(parents=True)
    (src / "3_reproduction" / "09_gone.ipynb").write_text("{}")                    # a notebook renamed since
    (src / "api").mkdir()                                                          # a full build's API pages (issue 30:
    for stub in ("ovk_nb.ridge.rst", "ovk_nb.ridge.OVKRidge.rst"):                 # in no toctree now, -W failed)
        (src / "api" / stub).write_text("x")
    _write_nbs(tmp_path / "nbs")
    written = docs.write_sources(src, nbs=tmp_path / "nbs", only=["none"])
    assert written == ["index", "guides", "gallery", "1_shared", "2_algorithms", "3_reproduction", "api", "changelog",
                       "contributing"]
    assert not list((src / "3_reproduction").glob("*.ipynb"))
    assert not list((src / "api").glob("*.rst"))


def test_cli_outside_a_checkout_says_so(tmp_path, monkeypatch, capsys):
    from ovk_nb import cli
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(docs, "_package", lambda: tmp_path)                        # an installed copy, not a clone
    assert cli.main(["docs", "--out", str(tmp_path / "site")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("ovk-nb: ") and "inside a clone of the repository" in err and "Traceback" not in err
    assert not (tmp_path / "site").exists()


def test_readme_check_passes_on_the_repo():
    r = subprocess.run([sys.executable, "-m", "ovk_nb.docs", "readme", "--check"], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_readme_check_fails_on_a_stale_readme(tmp_path, capsys):
    stale = tmp_path / "README.md"
    stale.write_text((ROOT / "README.md").read_text().replace("## A first example", "## An old example"))
    assert docs.readme(check=True, path=stale) == 1
    assert "out of date" in capsys.readouterr().err
    assert docs.readme(path=stale) == 0
    assert stale.read_text() == (ROOT / "README.md").read_text()


def test_navigation_guides_api_changelog(site):
    "The top bar: the user guide, the gallery, the API page, the floors, the changelog; the index's links made the site's."
    out, _ = site
    index = _page(out, "index.html")
    nav = index.split('class="bd-header', 1)[1].split("</nav>", 1)[0]
    for href in ["guides.html", "gallery.html", "api.html", "1_shared.html", "changelog.html", "contributing.html"]:
        assert f'href="{href}"' in nav, href
    assert 'href="guides/00_start.html"' in index and 'href="changelog.html"' in index     # links into the checkout, made the site's
    assert 'href="3_reproduction/01_figs.html"' in index                                # a floor table's notebook, linked
    guides = _page(out, "guides.html")
    assert 'href="guides/00_start.html"' in guides and "The first guide." in guides    # title and description of the notebook
    assert "42" in _page(out, "guides/00_start.html")                                 # executed
    assert 'href="guides/00_start.html"' in _page(out, "changelog.html")
    assert 'href="genindex.html"' in _page(out, "api.html")


def test_build_is_quiet_and_leaves_nothing_beside_the_output(site):
    out, r = site
    tmp = out.parent
    assert "without encryption" not in r.stderr + r.stdout                            # kernels over IPC, not TCP
    assert "WARNING" not in r.stderr and "out of date" not in r.stderr
    assert not (tmp / "jupyter_execute").exists() and not (tmp / ".jupyter_cache").exists()
    assert (tmp / "src" / "_build" / ".jupyter_cache").is_dir()


def test_a_warm_build_executes_nothing(site):
    "Every notebook is executed once (in parallel, before Sphinx reads); the next build takes all of them from the cache."
    out, first = site
    assert "executing 3 notebook(s)" in first.stdout and "3_reproduction/01_figs:" in first.stdout
    r = _build(out.parent)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "executing" not in r.stdout and "PROGRESS-LINE" not in r.stderr + r.stdout
    assert "area(2) = 12.566" in _page(out, "3_reproduction/01_figs.html")             # the outputs, from the cache


def test_nbdev_update_is_idempotent(tmp_path):
    """`nbdev_update` (modules -> notebooks) changes no notebook, run once or twice: an exported cell carries no directive
    that the module keeps (07_docs's `#| eval: false` was copied into ovk_nb/docs.py and added again at each update)."""
    for name in ("nbs", "ovk_nb"):
        shutil.copytree(ROOT / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__", ".ipynb_checkpoints"))
    for name in ("settings.ini", "setup.py", "pyproject.toml"):
        shutil.copy(ROOT / name, tmp_path / name)
    before = {p: p.read_bytes() for p in sorted((tmp_path / "nbs").rglob("*.ipynb"))}
    for run in (1, 2):
        r = subprocess.run([sys.executable, "-c", "from nbdev.sync import nbdev_update; nbdev_update()"], cwd=tmp_path,
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr[-3000:]
        changed = [p.relative_to(tmp_path).as_posix() for p, b in before.items() if p.read_bytes() != b]
        assert changed == [], (run, changed)
