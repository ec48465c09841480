"""Markup that the themes and docutils write, changed where it fails WCAG 2.1 AA.

axe-core (``tests/browser/test_accessibility.py``) finds these on every page, and configuration
cannot change them:

* the search button whose visible text ("Search Ctrl+K") is not part of its
  accessible name ("Search"), and the colour-mode button whose icons carry titles
  ("Light", "Dark", "System Settings") that are not part of its name ("Color mode"):
  the templates in ``_ext/templates`` replace the themes' components of the same name,
  with the accessible name taken from the visible text and the icons hidden from
  assistive technology;
* docutils' bibliography, a ``role="list"`` whose entries have the deprecated role
  ``doc-biblioentry`` (so the list has no list items): each entry becomes a
  ``listitem``.

The same templates folder leaves the theme's ``fontawesome.js`` (1.49 MB) off every page
(``static/webpack-macros.html``, as the theme imports it): the theme's stylesheet draws the
icons from Font Awesome's web fonts without it (``tests/browser/test_weight.py``).

Registered in ``_config.yml`` under ``sphinx: extra_extensions``.
"""

from __future__ import annotations

from pathlib import Path

from sphinx.application import Sphinx
from sphinx.config import Config

TEMPLATES = Path(__file__).parent / "templates"


def use_templates(app: Sphinx, config: Config) -> None:
    """Put this extension's templates before the themes' components."""
    config.templates_path.insert(0, str(TEMPLATES))


def bibliography_as_list(app: Sphinx, pagename: str, templatename: str, context: dict, doctree) -> None:
    """Give each bibliography entry the role ``listitem`` of the list it is in."""
    body = context.get("body")
    if body and 'role="doc-biblioentry"' in body:
        context["body"] = body.replace('role="doc-biblioentry"', 'role="listitem"')


def setup(app: Sphinx) -> dict:
    app.connect("config-inited", use_templates)
    app.connect("html-page-context", bibliography_as_list)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
