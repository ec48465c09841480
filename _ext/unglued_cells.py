"""The site's code cells without the book's glue, as the notebook editions show them.

A chapter's cells hand the numbers its prose quotes to ``glue`` (``chainrule_course.pages.glue``);
the page shows those numbers in the prose, and the calls are the book's plumbing, not the lesson.
The chapter executes as written; only the code the page shows changes, after execution, by the
same rule the notebooks use (``tools.book.unglued.without_glue``): the import of ``glue`` goes, a
statement that only glues goes, and ``x = glue("name", value)`` shows as ``x = value``. A cell
left with no code shows its output alone, and a cell with neither is not shown.

Live code runs the code the page shows, so it runs the same statements without the calls, which
do nothing in the page anyway.

Registered in ``_config.yml`` under ``sphinx: extra_extensions``.
"""

from __future__ import annotations

from docutils import nodes
from sphinx.application import Sphinx

from tools.book.unglued import without_glue


def _element(node: nodes.Node, name: str) -> bool:
    return isinstance(node, nodes.container) and node.get("nb_element") == name


def unglue(app: Sphinx, doctree: nodes.document) -> None:
    """Take the glue out of each code cell's shown source (see the module)."""
    for source in list(doctree.findall(lambda node: _element(node, "cell_code_source"))):
        for block in list(source.findall(nodes.literal_block)):
            code = block.astext()
            shown = without_glue(code)
            if shown == code:
                continue
            if shown.strip():
                shown = shown.rstrip("\n")
                block.rawsource = shown  # what the HTML writer highlights
                block.clear()
                block += nodes.Text(shown)
                continue
            cell = source.parent
            source.parent.remove(source)
            if not any(_element(child, "cell_code_output") for child in cell.children):
                cell.parent.remove(cell)


def setup(app: Sphinx) -> dict:
    app.connect("doctree-read", unglue)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
