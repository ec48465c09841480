"""Drop repeated, identical ``<script>`` entries from every HTML page.

sphinx-thebe registers its inline configuration script (``const THEBE_JS_URL = ...``)
once for each time Sphinx reads the sources, and Jupyter Book reads them more than
once, so every page declared the same ``const`` twice and the browser logged
"Identifier 'THEBE_JS_URL' has already been declared". Keeping the first of each
identical entry removes the error; scripts that differ in any attribute are kept.

Registered in ``_config.yml`` under ``sphinx: extra_extensions``.
"""

from __future__ import annotations

from sphinx.application import Sphinx


def drop_duplicate_scripts(app: Sphinx, pagename: str, templatename: str, context: dict, doctree) -> None:
    """Keep only the first of each identical script entry of the page context."""
    scripts = context.get("script_files")
    if not scripts:
        return
    seen = set()
    unique = []
    for script in scripts:
        # An inline script has filename None or "" depending on who added it.
        filename = getattr(script, "filename", script) or ""
        attributes = tuple(sorted(getattr(script, "attributes", {}).items()))
        key = (str(filename), attributes)
        if key not in seen:
            seen.add(key)
            unique.append(script)
    if len(unique) != len(scripts):
        context["script_files"] = unique


def setup(app: Sphinx) -> dict:
    app.connect("html-page-context", drop_duplicate_scripts)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
