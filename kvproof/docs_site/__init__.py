"""kvproof's reference site: the spec as documentation, with pictures drawn from the rules.

- ``figures``: each picture's data, computed by running the rules, and its drawing;
- ``catalog``: what guards each rule (proofs, laws, gate rows, variants), read off the registries;
- ``ext``: the Sphinx extension that places both in the pages (``docs/site/*.md``);
- ``examples``: the pages' ``{doctest}`` blocks, run with the standard ``doctest`` module;
- ``build``: the html and doctest builds and ``links``, the internal link check;
- ``browser``: every page opened in headless Chromium, its pictures and console checked;
- ``run``: ``kvproof docs`` as a library call: the build, then the browser check, as one report.

``kvproof docs`` builds it; the docs extra (``pip install -e '.[docs]'``) brings Sphinx,
myst-parser, matplotlib and playwright.
"""
