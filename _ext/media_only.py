"""Text for the screen only, or for paper only: ``{web}`` and ``{print}`` roles and directives.

A sentence that tells a reader to press a button or click something is true on the website
and not on paper. It is written once in the chapter and marked::

    Each solution is folded under it{web}` (click to open it)`.

    ```{web-only}
    Press **Next step** to move one step.
    ```

    ```{print-only}
    The figure shows the search's last step.
    ```

The roles give ``<span class="web-only">`` and ``<span class="print-only">``, the directives
``<div>``s with the same classes. The site hides ``.print-only`` (``_static/course.css``),
the PDF hides ``.web-only`` and shows ``.print-only`` (``tools/pdf.css``). The notebooks,
which are read on a screen, keep the web text and drop the print text
(``tools/book/plain_markdown.py``).

Registered in ``_config.yml`` under ``sphinx: extra_extensions``.
"""

from __future__ import annotations

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective

MEDIA = {"web": "web-only", "print": "print-only"}


def media_role(medium: str):
    """The role ``{web}`` or ``{print}``: its text in a span of that medium's class."""

    def role(name, rawtext, text, lineno, inliner, options=None, content=()):
        return [nodes.inline(rawtext, text, classes=[MEDIA[medium]])], []

    return role


class MediaOnly(SphinxDirective):
    """``{web-only}`` or ``{print-only}``: its content (Markdown) in a div of that class."""

    has_content = True
    css_class = ""

    def run(self) -> list[nodes.Node]:
        container = nodes.container(classes=[self.css_class])
        self.state.nested_parse(self.content, self.content_offset, container)
        return [container]


def setup(app: Sphinx) -> dict:
    for medium, css_class in MEDIA.items():
        app.add_role(medium, media_role(medium))
        app.add_directive(css_class, type(f"{medium.title()}Only", (MediaOnly,), {"css_class": css_class}))
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
