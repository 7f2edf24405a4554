"""Sphinx configuration of the ovk_nb site. Build: `ovk-nb docs --out _docs`, which runs
`sphinx-build -W --keep-going -q -b html -j 1 -c docs docs _docs` (see nbs/3_reproduction/07_docs.ipynb)."""
import os
from pathlib import Path

from ovk_nb.docs import MATHJAX_FILE, our_names

os.environ.setdefault('IN_TEST', '1')        # the notebooks execute at test sizes, as in tests/test_notebooks.py

project, author, copyright = 'ovk_nb', 'ovk_nb developers', '2026 onwards, ovk_nb developers'
extensions = ['ovk_nb.docs',                 # writes the sources (tagged notebooks, floor pages), copies MathJax
              'myst_nb', 'sphinx.ext.autodoc', 'sphinx.ext.autosummary', 'numpydoc', 'sphinx.ext.mathjax']
root_doc = 'index'
templates_path = [str(Path(__file__).resolve().parent / '_templates')]   # absolute: autosummary reads it from the srcdir
exclude_patterns = ['_build', '_templates', '_static', '**.ipynb_checkpoints', 'jupyter_execute', '.jupyter_cache']   # _templates: absolute in templates_path, so not excluded by Sphinx itself

# Notebooks: executed (they are stored without outputs), a failing cell fails the build. ovk_nb.docs executes those the
# cache (docs/_build/.jupyter_cache, by content) does not hold, one per CPU at a time, before Sphinx reads them.
nb_execution_mode = 'cache'
nb_execution_timeout = 900
nb_execution_raise_on_error = True
nb_execution_show_tb = True
nb_output_stderr = 'remove'                  # the hidden first cell sends stderr to the terminal; anything left is too
nb_merge_streams = True
nb_render_markdown_format = 'myst'           # Run.table's Markdown tables and math
myst_enable_extensions = ['dollarmath', 'amsmath']
myst_dmath_double_inline = True                # $$...$$ inside a paragraph is display math, not two empty inline ones
myst_heading_anchors = 3

# API pages: autosummary + autodoc, docstrings in numpydoc's format; types in the Parameters section, not the signature.
autosummary_generate = True
autosummary_ignore_module_all = False
autodoc_typehints = 'none'
# A class page documents its own public methods and `__call__` in full (autodoc), not scikit-learn's inherited ones nor
# the metadata-routing setters it adds to every estimator (their docstrings point into scikit-learn's own docs).
autodoc_default_options = {'member-order': 'bysource', 'special-members': '__call__',
                           'exclude-members': ','.join(f'set_{m}_request' for m in
                                                       ('fit', 'partial_fit', 'predict', 'score', 'transform', 'decision_function'))}
numpydoc_show_class_members = False

# Warnings are errors (-W); unresolved references to our own names are warnings, to other libraries' are not (offline:
# no intersphinx).
nitpicky = True
nitpick_ignore_regex = [(r'py:.*', rf'(?!ovk_nb\.)(?!(?:{"|".join(our_names())})$).*')]

# Offline: MathJax 3 served from the site (copied there by ovk_nb.docs), no CDN, no external links in the theme.
mathjax_path = f'mathjax/{MATHJAX_FILE}'
html_theme = 'pydata_sphinx_theme'
html_title = 'ovk_nb'
# The top bar: User guide, Gallery, API, floors 1 and 2; floor 3, Changelog, Contributing under 'More' (one line at 1280 px).
html_theme_options = {'navigation_with_keys': False, 'show_prev_next': True, 'secondary_sidebar_items': ['page-toc'],
                      'navbar_end': ['navbar-icon-links'], 'footer_start': ['copyright'], 'footer_end': [],
                      'header_links_before_dropdown': 5}
html_static_path = ['_static']               # relative to this folder (-c docs): ovk.css, wide code and tables scroll
html_css_files = ['ovk.css']
html_show_sourcelink = False
