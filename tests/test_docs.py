"""The offline documentation site and README generation (ovk_nb.docs, from nbs/3_reproduction/07_docs.ipynb)."""
import json
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

pytest.importorskip("nbdev")
pytest.importorskip("nbconvert")
from ovk_nb import docs  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
NBS = ROOT / "nbs"


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    "The stable notebooks' pages, built with execution (in-process: workers=1)."
    out = tmp_path_factory.mktemp("site")
    b = docs.build_site(out, nbs=NBS, only=["index", "01_kernels", "07_datasets"], workers=1)
    return out, b


@pytest.fixture(scope="module")
def figure_site(tmp_path_factory):
    "A notebook of our own with a figure, math, an exported function and a failing cell."
    src = tmp_path_factory.mktemp("nbs")
    code = nbformat.v4.new_code_cell
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# Figures page\n\n> Has a plot."),
        code("#| default_exp figs"),
        code('#| export\ndef area(r: float) -> float:\n    "Area of a disc of radius `r`."\n    return 3.14159 * r * r'),
        nbformat.v4.new_markdown_cell("The area is $\\pi r^2$ and $$\\int_0^r 2\\pi s\\,ds = \\pi r^2.$$"),
        code("import matplotlib.pyplot as plt\nfig, ax = plt.subplots(figsize=(2, 2))\nax.plot([0, 1, 2], [0, 1, 4]);"),
        code("print(f'area(2) = {area(2):.3f}')"),
        code("from ovk_nb.reproduce import Run\nrun = Run.inline()\nfig, ax = plt.subplots(figsize=(2, 2))\n"
             "ax.bar([0, 1], [1, 2])\nrun.figure('bars', fig, caption='Bars')"),   # display(fig), then closed
    ], metadata={"kernelspec": {"name": "python3", "display_name": "python3", "language": "python"}})
    nbformat.write(nb, src / "01_figs.ipynb")
    broken = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# Broken page"),
        code("x = 1"),
        code("raise ValueError('this notebook is broken')"),
        code("print('never printed')"),
    ], metadata=nb.metadata)
    nbformat.write(broken, src / "02_broken.ipynb")
    out = tmp_path_factory.mktemp("figsite")
    with pytest.warns(UserWarning, match="02_broken.ipynb built with errors"):
        b = docs.build_site(out, nbs=src, workers=2)   # the process-pool path
    return out, b


def _page(out, name):
    return (out / name).read_text(encoding="utf-8")


def _text(html):
    "The page's text without tags (code is split into highlighted spans)."
    return re.sub(r"<[^>]+>", "", html)


def test_pages_exist_with_titles(site):
    out, b = site
    assert [p.page for p in b.pages] == ["index.html", "1_shared/kernels.html", "1_shared/datasets.html"]
    assert b.index == (out / "index.html").resolve()
    titles = {"index.html": "ovk_nb", "1_shared/kernels.html": "Operator-valued kernels"}
    for page, title in titles.items():
        html = _page(out, page)
        assert f"<title>{title}</title>" in html
        assert re.search(rf'<h1 id="[^"]*">{re.escape(title)}', html), page
    assert b.failures() == {}, b.summary()


def test_sidebar_lists_every_page(site):
    out, b = site
    for p in b.pages:
        html = _page(out, p.page)
        up = "../" * p.page.count("/")            # links are relative to the page's folder
        for q in b.pages:
            assert f'<a href="{up}{q.page}">' in html
        assert f'<li class="active"><a href="{up}{p.page}">' in html
        assert "Floor 1: shared pieces" in html       # the sidebar shows the floors


def test_previous_and_next_follow_the_reading_order(site):
    "Every page ends with links to the previous and the next page of the sidebar (index, floor 1, 2, 3), none past the ends."
    out, b = site
    order = [p.page for p in b.pages]
    for i, page in enumerate(order):
        html = _page(out, page)
        pager = re.search(r'<nav class="ovk-pager">(.*?)</nav>', html, re.S)
        assert pager, page
        links = dict((m.group(1), m.group(2)) for m in re.finditer(r'<a class="ovk-(prev|next)"[^>]*href="([^"]+)"', pager.group(1)))
        up = "../" * page.count("/")
        assert links.get("prev") == (up + order[i - 1] if i > 0 else None), (page, links)
        assert links.get("next") == (up + order[i + 1] if i + 1 < len(order) else None), (page, links)
        assert html.index('class="ovk-pager"') < html.index("</main>")     # at the foot of the page, inside <main>


def _search_index(out):
    js = (out / "_static" / "search_index.js").read_text(encoding="utf-8")
    assert js.startswith("window.OVK_SEARCH_INDEX = ") and js.rstrip().endswith(";")   # a script: works from file://
    return json.loads(js.strip()[len("window.OVK_SEARCH_INDEX = "):-1])


def test_search_index_holds_every_heading_and_api_entry(site):
    out, b = site
    ix = _search_index(out)
    assert [p for p, _ in ix["pages"]] == [p.page for p in b.pages]
    for i, p in enumerate(b.pages):
        html = _page(out, p.page).split("</nav>", 1)[1]           # the sidebar has no headings of its own
        ids = {m for m in re.findall(r'<h[1-4] id="([^"]+)"', html)}
        entries = {e[2]: e for e in ix["entries"] if e[0] == i}
        assert ids and {docs._html.unescape(x) for x in ids} == set(entries), p.page
        assert entries and next(iter(entries.values()))[3] == "page"
    kernels = {e[2]: e for e in ix["entries"] if ix["pages"][e[0]][0] == "1_shared/kernels.html"}
    for name in ["Separable", "SumKernel", "RBF", "Separable.T_eig"]:
        assert kernels[name][3] == "api" and kernels[name][1] == name, kernels.get(name)
    assert "symmetric psd" in kernels["Separable"][4].lower()        # the docstring is searchable
    assert all(e[4].count("$") % 2 == 0 for e in ix["entries"])      # no formula cut in two
    assert not any(e[4].startswith("def ") for e in ix["entries"])   # signatures (code) are not text
    search = _page(out, "search.html")
    assert 'id="ovk-search-page"' in search and "OVK_SEARCH_INDEX" in search and "<title>Search</title>" in search
    assert 'class="ovk-pager"' not in search                          # not a page of the reading order


def test_api_is_shown_as_show_doc_output(site):
    out, _ = site
    html = _page(out, "1_shared/kernels.html")
    for name in ["Separable", "SumKernel", "RBF", "Linear"]:
        assert f'<h3 id="{name}">' in html, name          # show_doc heading
    assert 'id="separable"' in html                       # the anchor nbdev's links use
    assert '<h3 id="Separable.T_eig">' in html and 'id="separable.t_eig"' in html   # public methods get API entries
    text = _text(html)
    assert "def Separable(" in text                       # the signature
    assert "#| export" not in text and "class Separable(" not in text   # exported sources hidden, as nbdev does
    assert "[source]" not in html and "{target=" not in html
    assert "ovk-nb.example.org" not in html               # doc links made relative


def test_index_page_has_the_example_output(site):
    out, _ = site
    html = _page(out, "index.html")
    assert "Install and run" in html
    assert "test MSE" in html and re.search(r"test MSE \d+\.\d{4} vs variance", html)   # executed


def test_math_present_and_local_mathjax(site):
    out, _ = site
    html = _page(out, "1_shared/kernels.html")
    assert "\\mathcal{L}" in html or "\\mathcal L" in html          # the math source, for MathJax to typeset
    m = re.search(r'<script[^>]*id="MathJax-script"[^>]*src="([^"]+)"', html)
    assert m and not m.group(1).startswith(("http", "//")), m
    js = (out / "1_shared") / m.group(1)
    assert js.exists() and js.stat().st_size > 1_000_000
    assert "window.MathJax" in html and "inlineMath" in html
    assert not re.search(r'<script[^>]*src="(https?:)?//', html), "a script loaded from the network"


def test_figure_is_an_embedded_png(figure_site):
    out, b = figure_site
    html = _page(out, "figs.html")
    assert re.search(r'<img[^>]+src="data:image/png;base64,[A-Za-z0-9+/=\n]{500,}', html)
    assert {p.page: p.n_images for p in b.pages}["figs.html"] == 2   # plt.subplots at the end of a cell; Run.figure
    assert "area(2) = 12.566" in html                     # printed output captured
    assert '<h3 id="area">' in html and "Area of a disc" in html
    assert "$$\\int_0^r 2\\pi s\\,ds = \\pi r^2.$$" in html


def test_failing_notebook_does_not_stop_the_site(figure_site):
    out, b = figure_site
    assert list(b.failures()) == ["02_broken.ipynb"]
    assert "ValueError: this notebook is broken" in b.failures()["02_broken.ipynb"][0]
    html = _page(out, "broken.html")
    assert "This page was built with errors" in html
    assert "never printed</pre>" not in html
    assert (out / "figs.html").exists() and (out / "index.html").exists()   # a contents page: no index.ipynb


def test_no_exec_still_has_the_api(tmp_path):
    b = docs.build_site(tmp_path, nbs=NBS, only=["01_kernels"], execute=False, workers=1)
    html = _page(tmp_path, "1_shared/kernels.html")
    assert b.failures() == {} and '<h3 id="Separable">' in html and "def Separable(" in _text(html)


def test_bad_arguments(tmp_path):
    with pytest.raises(ValueError, match="nbs: expected a folder"):
        docs.build_site(tmp_path, nbs=tmp_path / "missing")
    with pytest.raises(ValueError, match="only: no such notebooks"):
        docs.build_site(tmp_path, nbs=NBS, only=["99_nope"])
    with pytest.raises(ValueError, match="no notebooks"):
        docs.build_site(tmp_path / "out", nbs=tmp_path)


def test_readme_check_passes_on_the_repo():
    r = subprocess.run([sys.executable, "-m", "ovk_nb.docs", "readme", "--check"], cwd=ROOT,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_readme_check_fails_on_a_stale_readme(tmp_path, capsys):
    stale = tmp_path / "README.md"
    stale.write_text((ROOT / "README.md").read_text().replace("## A first example", "## An old example"))
    assert docs.readme(check=True, path=stale) == 1
    assert "out of date" in capsys.readouterr().err
    assert docs.readme(path=stale) == 0
    assert stale.read_text() == (ROOT / "README.md").read_text()


def test_readme_is_the_processed_index_notebook():
    md = docs.readme_markdown()
    assert md.startswith(docs.README_HEADER + "# ovk_nb\n\n> ")
    assert "WARNING: THIS FILE WAS AUTOGENERATED" not in md
    assert md == (ROOT / "README.md").read_text()


def test_a_failing_page_fails_the_build(tmp_path, capsys):
    "`ovk-nb docs` and `python -m ovk_nb.docs build` exit non-zero when a page fails (the site is still written)."
    from ovk_nb.cli import main as cli_main
    src = tmp_path / "nbs"
    src.mkdir()
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# Broken page"),
                                         nbformat.v4.new_code_cell("raise ValueError('this notebook is broken')")],
                                  metadata={"kernelspec": {"name": "python3", "display_name": "python3", "language": "python"}})
    nbformat.write(nb, src / "00_broken.ipynb")
    with pytest.warns(UserWarning, match="built with errors"):
        assert cli_main(["docs", "--out", str(tmp_path / "a"), "--nbs", str(src)]) == 1
    assert "1 page(s) built with errors: 00_broken.ipynb" in capsys.readouterr().err
    assert (tmp_path / "a" / "broken.html").exists()
    with pytest.warns(UserWarning, match="built with errors"):
        assert docs.main(["build", "--out", str(tmp_path / "b"), "--nbs", str(src)]) == 1


def test_dead_in_site_links_are_unlinked(tmp_path):
    "A link to an anchor no page of the site has (a private helper) loses its link, keeps its text; good links stay."
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "p.html").write_text('<h3 id="f">f</h3><a href="#f">f</a> <a href="#_helper"><code>_helper</code></a> '
                                           '<a href="../b.html#g">g</a> <a href="../b.html#_x">x</a> <a href="https://e.org/#z">z</a>')
    (tmp_path / "b.html").write_text('<h3 id="g">g</h3>')
    assert docs.drop_dead_links(tmp_path, ["a/p.html", "b.html"]) == 2
    assert (tmp_path / "a" / "p.html").read_text() == ('<h3 id="f">f</h3><a href="#f">f</a> <code>_helper</code> '
                                                      '<a href="../b.html#g">g</a> x <a href="https://e.org/#z">z</a>')


def test_pipes_in_table_math_and_code_do_not_split_cells():
    md = "| op | matrix |\n|---|---|\n| integral | $e^{-|t-s|}$ and `a|b` |"
    html = docs.render_html(nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(md)]), nav="")
    assert "<td>integral</td>" in html and r"$e^{-\vert t-s\vert }$" in html and "<code>a|b</code>" in html
    assert "|---|" not in _text(html.split("</style>")[-1])


def test_images_linked_by_a_repository_path_are_copied_into_the_site(tmp_path):
    "The index shows bench/results/scaling.png by its repository path (as README.md does): the site gets a copy there."
    from ovk_nb import docs
    root, out = tmp_path / "repo", tmp_path / "repo" / "_docs"
    (root / "bench" / "results").mkdir(parents=True)
    (root / "bench" / "results" / "plot.png").write_bytes(b"\x89PNG fake")
    (out / "sub").mkdir(parents=True)
    (out / "index.html").write_text('<img src="bench/results/plot.png"><img src="data:image/png;base64,AAAA">')
    (out / "sub" / "page.html").write_text('<img alt="x" src="../bench/results/plot.png"><img src="missing.png">')
    assert docs.copy_repo_images(out, root) == ["bench/results/plot.png"]
    assert (out / "bench" / "results" / "plot.png").read_bytes() == b"\x89PNG fake"
    assert docs.copy_repo_images(out, root) == []                 # already there: nothing to do
