"""The built site as a reader sees it: pages opened in headless Chromium (`ovk_nb.docs.check_site`)."""
import re
from pathlib import Path

import nbformat
import pytest

pytest.importorskip("nbdev")
pytest.importorskip("nbconvert")
from ovk_nb import docs  # noqa: E402

NBS = Path(__file__).resolve().parent.parent / "nbs"
if docs.chromium() is None:
    pytest.skip("no chromium on the PATH: the browser check needs Debian's `chromium` (apt-get install chromium; "
                ".ci/run installs it)", allow_module_level=True)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    "Representative pages: the index and some of each floor (the MovKL page has the table with `|` in its math)."
    out = tmp_path_factory.mktemp("site")
    b = docs.build_site(out, nbs=NBS, only=["index", "01_kernels", "02_linalg", "00_ridge", "03_movkl", "00_core"], workers=2)
    assert b.failures() == {}, b.summary()
    return out, b


def test_representative_pages_pass_in_chromium(site):
    out, b = site
    probs = docs.check_site(out)
    assert sorted(probs) == sorted([p.page for p in b.pages] + ["search.html"])
    assert {p: ps for p, ps in probs.items() if ps} == {}
    for p in probs:                                        # one screenshot per page, kept with the site
        shot = out / "_screenshots" / (p[:-5].replace("/", "__") + ".png")
        assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", shot


def test_math_is_typeset_and_the_table_is_a_table(site):
    out, _ = site
    dom = docs.render_in_browser(out / "2_algorithms/movkl.html")
    assert 'data-math="typeset"' in dom and dom.count("<mjx-container") > 50
    assert "<td>integral</td>" in dom                     # the operator table, whose math has |t - s|
    assert "<h3 id=\"MovKL.fit\">" in dom                  # a method's API entry


def _hits(dom):
    "The links of the search hits, in rank order (not the search script's own source)."
    return re.findall(r'<li class="ovk-hit"><a href="([^"]+)"', re.sub(r"<script.*?</script>", "", dom, flags=re.S))


def test_search_page_finds_api_entries_and_sections(site):
    "search.html?q=... lists the hits, server-free, from the index script; the hits' links land and their math is typeset."
    out, _ = site
    ids = lambda t: {docs._html.unescape(i) for i in docs._re_id.findall((out / t).read_text())} if (out / t).exists() else None
    dom = docs.render_in_browser(out / "search.html", query={"q": "OVKRidge"})
    hits = _hits(dom)
    assert hits[0] == "2_algorithms/ridge.html#OVKRidge", hits[:5]            # the class's API entry first
    assert "2_algorithms/ridge.html#OVKRidge.fit" in hits and "2_algorithms/ridge.html#OVKRidgeCV" in hits
    assert "<mark>OVKRidge</mark>" in dom
    assert docs.dom_problems(dom, "search.html", ids) == []                   # every hit's anchor exists
    dom = docs.render_in_browser(out / "search.html", query={"q": "sylvester equation"})
    hits = _hits(dom)
    assert hits[0] == "1_shared/linalg.html#The-Sylvester-equation-and-its-eigen-factor", hits[:5]
    assert any(h.startswith("2_algorithms/movkl.html#") for h in hits) and any(h.startswith("2_algorithms/ridge.html#") for h in hits)
    assert docs.dom_problems(dom, "search.html", ids) == []                   # the snippets' math typeset, none left as $...$
    assert re.search(r'class="ovk-count">\d+ result\(s\) for <b>sylvester equation</b>', dom)
    assert _hits(docs.render_in_browser(out / "search.html", query={"q": "zzzzqqq"})) == []


def _scripted(out, page, js):
    "The DOM of a copy of `page` (next to it, so relative links hold) that runs `js` once loaded: a reader's actions, scripted."
    src = out / page
    copy = src.with_name("scripted.html")
    copy.write_text(src.read_text().replace("</body>", f"<script>window.addEventListener('load', () => {{ {js} }});</script></body>"))
    try:
        return docs.render_in_browser(copy)
    finally:
        copy.unlink()


def test_the_sidebar_box_lists_hits_while_one_types(site):
    "On any page, typing in the sidebar's box lists the best hits under it (as a reader's keystrokes would, here scripted)."
    out, _ = site
    dom = _scripted(out, "1_shared/kernels.html", "const b = document.querySelector('form.ovk-search input');"
                    " b.value = 'loo_err'; b.dispatchEvent(new Event('input'));")
    box = re.search(r'<ul class="ovk-hits">(.*?)</ul>', dom, re.S).group(1)
    assert box.startswith('<li class="ovk-hit">'), box[:300]
    assert '<a href="../2_algorithms/ridge.html#OVKRidge.loo_errors">' in box, box[:500]
    assert box.count('<li class="ovk-hit">') <= 8


def test_a_bad_page_is_caught(tmp_path):
    "A page through the real template: an error banner, a leaked table, a broken image, a dead anchor."
    node = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell('# Bad page\n\nSee [nowhere](#nowhere) and $x^2$.\n\n<img src="missing.png">'),
        nbformat.v4.new_code_cell("print('| a | b |\\n|---|---|')", outputs=[
            nbformat.v4.new_output("stream", name="stdout", text="| a | b |\n|---|---|\n")]),
    ])
    (tmp_path / "_static" / "mathjax").mkdir(parents=True)
    (tmp_path / "_static" / "mathjax" / docs.MATHJAX_FILE).write_bytes(docs.mathjax_js().read_bytes())
    banner = '<div class="ovk-banner">This page was built with errors</div>'
    pager = docs.pager_html([("bad.html", "Bad"), ("gone.html", "Gone")], "bad.html")    # a next page that is not there
    (tmp_path / "bad.html").write_text(docs.render_html(node, docs.nav_html([("bad.html", "Bad")], "bad.html"), banner, pager=pager))
    probs = " / ".join(docs.check_site(tmp_path)["bad.html"])
    for what in ["error banner", "markdown table leaked", "1 broken image", "dead anchor(s): #nowhere",
                 "2 link(s) to missing page(s): index.html, gone.html"]:
        assert what in probs, (what, probs)
    assert "math" not in probs                            # $x^2$ was typeset
    assert (tmp_path / "_screenshots" / "bad.png").exists()


def test_enter_in_the_sidebar_box_opens_the_search_page(site):
    "Enter in the box of a page in a sub-folder opens ../search.html?q=... from file://, with the hits."
    out, _ = site
    dom = _scripted(out, "2_algorithms/ridge.html", "const f = document.querySelector('form.ovk-search');"
                    " f.querySelector('input').value = 'Sylvester'; f.requestSubmit();")
    assert "<title>Search</title>" in dom and "<mark>Sylvester</mark>" in dom
    assert "1_shared/linalg.html#The-Sylvester-equation-and-its-eigen-factor" in _hits(dom)
