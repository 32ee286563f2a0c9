"""Sphinx configuration of kvproof's reference site (built by ``kvproof docs``; docs/commands.md).

The source folder is ``docs/`` (so the findings and design notes already there are pages with
their links intact); this folder holds the configuration and the site's own pages
(``site/index``, one page per rule family, findings, releases). Pictures and rule tables
come from ``kvproof.docs_site.ext``; every ``{doctest}`` block runs in Sphinx's doctest
builder and in the test suite (``kvproof/tests/test_docs_examples.py``).
"""

project = "kvproof"
author = "the kvproof maintainers"
copyright = "the kvproof maintainers, Apache-2.0"
root_doc = "site/index"

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.doctest",
    "sphinx.ext.viewcode",
    "kvproof.docs_site.ext",
]

source_suffix = {".md": "markdown"}
exclude_patterns = ["site/_templates", "site/_static"]
templates_path = ["_templates"]
html_static_path = ["_static"]
html_css_files = ["kvproof.css"]
html_favicon = "_static/favicon.svg"  # else the browser asks for /favicon.ico, a 404
html_theme = "alabaster"
html_theme_options = {"page_width": "1180px", "sidebar_width": "230px", "show_relbars": True}
html_title = "kvproof: the rules of a KV-cache-aware router"
html_additional_pages = {"index": "redirect.html"}  # build/docs/html/index.html leads to the front page
html_show_sourcelink = False
html_last_updated_fmt = None

# Broken internal references are errors: every :py: role, every {doc} link, every typed signature.
nitpicky = True
nitpick_ignore_regex = [
    # Names from the standard library and typing (no intersphinx: the build machine has no network).
    (r"py:(class|obj|data)", r"(typing|collections\.abc|builtins|types|fractions)\..*"),
    (
        r"py:(class|obj|data)",
        r"(Any|Callable|Mapping|Sequence|Iterable|Iterator|Literal|TypeGuard|NamedTuple|Fraction|range|bytes)",
    ),
    (r"py:class", r"kvproof\.spec\.primitives\.[TKVS]"),  # the type variables of FrozenMap, FrozenSet and is_int
]

myst_heading_anchors = 3
myst_enable_extensions = ["colon_fence"]

autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_preserve_defaults = True  # `ops: Arith = PY`, not the object's repr
autodoc_default_options = {"exclude-members": "__init__, __new__"}
python_use_unqualified_type_names = True
add_module_names = False

# The examples are written the way a reader types them; the flags match kvproof's doctest runner.
doctest_test_doctest_blocks = "default"
