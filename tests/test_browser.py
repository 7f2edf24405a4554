"""The Sphinx site as a reader sees it: every built page opened in headless Chromium (Debian's `chromium`; .ci/run
installs it): math typeset by the local MathJax, every image loaded, no error output, and search finds `MovKL`.

The site is built once per module with `python -m ovk_nb.docs build` (warnings are errors) into a temporary folder:
the index and the notebooks of `PAGES` (with their API pages; a guide and a gallery example among them);
`OVK_DOCS_FULL=1` builds and checks the whole site; `OVK_DOCS_SITE=_docs` checks a site already built there."""
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

pytest.importorskip("sphinx")
pytest.importorskip("myst_nb")

ROOT = Path(__file__).resolve().parent.parent
PAGES = ["02_linalg", "03_movkl", "00_ridge",    # math, a table with |t - s|, a figure, API pages
         "00_getting_started", "01_choosing_an_estimator", "08_digits_scale"]   # a guide, a wide table, a gallery example
CHROMIUM = next((p for c in (os.environ.get("CHROMIUM"), "chromium", "chromium-browser") if c and (p := shutil.which(c))),
                None)
if CHROMIUM is None:
    pytest.skip("no chromium on the PATH: the browser check needs Debian's `chromium` (apt-get install chromium; "
                ".ci/run installs it)", allow_module_level=True)
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--hide-scrollbars",
         "--disable-background-networking", "--disable-component-update", "--disable-sync", "--window-size=1280,1600"]
# Appended to a copy of each page: once loaded and typeset, the body says how many images failed and that math is done.
PROBE = """<script>window.addEventListener('load', () => {
  const done = () => { const b = document.body;
    b.dataset.imagesBroken = [...document.images].filter(i => !i.complete || i.naturalWidth === 0).length;
    b.dataset.math = window.MathJax ? 'typeset' : 'none';
    b.dataset.cut = [...document.querySelectorAll('article pre, article table')].filter(e => {   // wide code cut off
      const o = getComputedStyle(e).overflowX, p = e.closest('.table-wrapper, .pst-scrollable-table-container');
      return e.scrollWidth > e.clientWidth + 1 && !['auto', 'scroll'].includes(o) &&
             !(p && ['auto', 'scroll'].includes(getComputedStyle(p).overflowX)); }).length; };
  (window.MathJax && MathJax.startup) ? MathJax.startup.promise.then(done) : done(); });</script></body>"""


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    if built := os.environ.get("OVK_DOCS_SITE"):
        return Path(built).resolve()
    tmp = tmp_path_factory.mktemp("browser")
    only = [] if os.environ.get("OVK_DOCS_FULL") else ["--only", *PAGES]
    r = subprocess.run([sys.executable, "-m", "ovk_nb.docs", "build", "--srcdir", str(tmp / "src"),
                        "--out", str(tmp / "site"), *only], capture_output=True, text=True, cwd=ROOT, timeout=3000)
    assert r.returncode == 0, r.stderr[-6000:]
    return tmp / "site"


def dom(html_file, query=""):
    "The DOM of `html_file` once Chromium loaded it and ran its scripts (MathJax, search)."
    with tempfile.TemporaryDirectory(prefix="ovk-chromium-") as prof:
        r = subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={prof}", "--virtual-time-budget=20000", "--dump-dom",
                            Path(html_file).resolve().as_uri() + query],
                           capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL)
    assert r.returncode == 0 and "<body" in r.stdout, r.stderr[-500:]
    return r.stdout


def problems(page: Path) -> list:
    "What is wrong with `page` in Chromium (a probed copy beside it, so relative links hold)."
    html = page.read_text(encoding="utf-8")
    probe = page.with_name("_probe_" + page.name)
    probe.write_text(html.replace("</body>", PROBE), encoding="utf-8")
    try: d = dom(probe)
    finally: probe.unlink()
    body = re.search(r"<body[^>]*>", d).group(0)
    text = re.sub(r"<[^>]+>", "", re.sub(r"<(script|style|pre|mjx-container)\b.*?</\1>", "", d, flags=re.S))
    out = []
    if 'data-images-broken="0"' not in body: out.append(f"images: {re.search(r'data-images-broken=.[^ >]*', body)}")
    if 'data-cut="0"' not in body: out.append(f"wide code or table cut off: {re.search(r'data-cut=.[^ >]*', body)}")
    if 'class="math' in html:
        if 'data-math="typeset"' not in body or "<mjx-container" not in d: out.append("math not typeset")
        if "<mjx-merror" in d or "data-mjx-error" in d: out.append("MathJax error")
        if m := re.search(r"\\\(.{0,60}", text): out.append(f"math left as source: {m.group(0)!r}")
    if re.search(r'class="[^"]*\btraceback\b', d) or "Traceback (most recent call last)" in text:
        out.append("an error output on the page")
    return out


def test_every_page_in_chromium(site):
    pages = sorted(p for p in site.rglob("*.html") if not p.relative_to(site).parts[0].startswith("_"))
    assert len(pages) > 10 and site / "index.html" in pages
    bad = {p.relative_to(site).as_posix(): probs for p in pages if (probs := problems(p))}
    assert bad == {}


def test_math_figures_and_api(site):
    d = dom(site / "2_algorithms" / "03_movkl.html")
    assert d.count("<mjx-container") > 50
    d = dom(site / "2_algorithms" / "00_ridge.html")
    assert re.search(r'<img[^>]+src="[^"]+\.png"', d)                 # a figure of the executed notebook (two moons)
    assert "ovk_nb.movkl.MovKL.fit" in (site / "api" / "ovk_nb.movkl.MovKL.html").read_text()
    assert "ovk_nb.ridge.OVKRidge.predict" in (site / "api" / "ovk_nb.ridge.OVKRidge.html").read_text()


def test_search_finds_the_estimator(site):
    d = dom(site / "search.html", "?q=MovKL")
    hits = re.findall(r'<li[^>]*>\s*<a[^>]+href="([^"]+)"', d.split('id="search-results"', 1)[-1])
    assert any("api/ovk_nb.movkl.MovKL.html" in h for h in hits), hits[:10]
    assert not re.findall(r'<li[^>]*>\s*<a', dom(site / "search.html", "?q=zzzzqqqxx").split('id="search-results"', 1)[-1])


def test_top_bar_and_wide_code(site):
    "The top bar links the user guide, the gallery and the API page; the choosing page's wide table and code scroll."
    d = dom(site / "index.html")
    header = d.split('class="bd-header', 1)[1].split("</header>", 1)[0]
    for href in ("guides.html", "gallery.html", "api.html", "changelog.html", "contributing.html"):
        assert f'href="{href}"' in header, href
    assert 'href="genindex.html"' in (site / "api.html").read_text()
    assert 'href="guides/00_getting_started.html"' in (site / "index.html").read_text()     # the landing page's body
    assert problems(site / "guides" / "01_choosing_an_estimator.html") == []               # wide table and map: not cut
