"""Optional blocks: depth a chapter keeps, checked, but its objectives do not need.

A chapter marks such a block with a pair of directives around its Markdown and code cells::

    ```{optional-start} what a node keeps
    ```

    ... text and code cells ...

    ```{optional-end}
    ```

The site shows the block folded, under a summary line "Under the hood (optional): <title>" that opens it
(``<details>``, which the keyboard and screen readers know); the PDF opens it
(``tools/book/pdf.py`` opens every ``<details>``); the notebooks give it the same heading and
close it with a line (``tools/book/plain_markdown.py``). Its cells execute like any other, and the
chapter's reading time counts it apart (``tools/book/reading_time.py``). A block starts and ends
in the same section: a heading inside it, or a start without its end, is an error that names the
page and the line.

Registered in ``_config.yml`` under ``sphinx: extra_extensions``.
"""

from __future__ import annotations

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

LOGGER = logging.getLogger(__name__)
SUMMARY = "Under the hood (optional): {title}"


class optional_block(nodes.General, nodes.Element):  # noqa: N801 (docutils names nodes in lower case)
    """The block, folded on the site."""


class optional_marker(nodes.General, nodes.Element):  # noqa: N801
    """Where a block starts (``title`` set) or ends, until the transform gathers what is between."""


class OptionalStart(SphinxDirective):
    required_arguments = 1
    final_argument_whitespace = True

    def run(self) -> list[nodes.Node]:
        marker = optional_marker(title=self.arguments[0])
        self.set_source_info(marker)
        return [marker]


class OptionalEnd(SphinxDirective):
    def run(self) -> list[nodes.Node]:
        marker = optional_marker()
        self.set_source_info(marker)
        return [marker]


def gather(app: Sphinx, doctree: nodes.document) -> None:
    """Move what lies between each start and its end into one folded block."""
    for start in list(doctree.findall(optional_marker)):
        if start.parent is None or "title" not in start:
            continue
        parent, siblings = start.parent, start.parent.children
        at = siblings.index(start)
        end = next((i for i in range(at + 1, len(siblings)) if isinstance(siblings[i], optional_marker)), None)
        if end is None or "title" in siblings[end]:
            LOGGER.warning(
                "optional-start %r has no optional-end after it in the same section (no heading may come between)",
                start["title"],
                location=start,
            )
            del siblings[at]
            continue
        block = optional_block(title=start["title"])
        block.source, block.line = start.source, start.line
        moved = siblings[at + 1 : end]
        del siblings[at : end + 1]  # by position: a Text node equals any text like it
        block.extend(moved)
        parent.insert(at, block)
    for stray in list(doctree.findall(optional_marker)):
        LOGGER.warning("optional-end without an optional-start before it in the same section", location=stray)
        stray.parent.children.remove(stray)


def visit_html(self, node: optional_block) -> None:
    summary = self.encode(SUMMARY.format(title=node["title"]))
    self.body.append(f'<details class="cr-optional"><summary>{summary}</summary>\n<div class="cr-optional-body">\n')


def depart_html(self, node: optional_block) -> None:
    self.body.append("</div></details>\n")


def setup(app: Sphinx) -> dict:
    html = (visit_html, depart_html)
    app.add_node(optional_block, html=html, singlehtml=html, dirhtml=html)  # singlehtml: the PDF's page
    app.add_node(optional_marker)
    app.add_directive("optional-start", OptionalStart)
    app.add_directive("optional-end", OptionalEnd)
    app.connect("doctree-read", gather)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
