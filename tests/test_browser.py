"""The built site as a reader sees it: pages opened in headless Chromium (`ovk_nb.docs.check_site`)."""
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
    "Representative pages: the index and one per floor (the MovKL page has the table with `|` in its math)."
    out = tmp_path_factory.mktemp("site")
    b = docs.build_site(out, nbs=NBS, only=["index", "01_kernels", "03_movkl", "00_core"], workers=2)
    assert b.failures() == {}, b.summary()
    return out, b


def test_representative_pages_pass_in_chromium(site):
    out, b = site
    probs = docs.check_site(out)
    assert sorted(probs) == sorted(p.page for p in b.pages)
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
    (tmp_path / "bad.html").write_text(docs.render_html(node, docs.nav_html([("bad.html", "Bad")], "bad.html"), banner))
    probs = " / ".join(docs.check_site(tmp_path)["bad.html"])
    for what in ["error banner", "markdown table leaked", "1 broken image", "dead anchor(s): #nowhere"]:
        assert what in probs, (what, probs)
    assert "math" not in probs                            # $x^2$ was typeset
    assert (tmp_path / "_screenshots" / "bad.png").exists()
