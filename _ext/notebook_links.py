"""The ``{notebook-links}`` directive: a table of every chapter's notebooks, with Colab links.

Each numbered chapter of ``_toc.yml`` gets one row: its number, a link to its page, and
links that open its two generated notebooks in Google Colab (the full edition,
``chapters/<name>.ipynb``, and the student edition, ``student/chapters/<name>.ipynb``)
or download them from the repository. The Colab addresses use the repository and branch
of ``_config.yml`` (the same ones as the rocket button), so the links follow the
configuration. A notebook file that does not exist is a warning, so ``-W`` fails the
build instead of publishing a dead link.

Registered in ``_config.yml`` under ``sphinx: extra_extensions``. Config values:
``notebook_links_root`` is the repository folder, where the notebook files are looked up
(default: the book's source folder). The chapters and the editions' paths come from the
book model, ``tools/book/book_model.py``.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

from docutils import nodes
from sphinx import addnodes
from sphinx.application import Sphinx
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

from tools.book import book_model

logger = logging.getLogger(__name__)


def repository(config) -> tuple[str, str]:
    """(owner/name, branch) of the repository set in _config.yml."""
    options = config.html_theme_options or {}
    url = options.get("repository_url", "")
    branch = options.get("repository_branch", "")
    path = urlsplit(url).path.strip("/")
    if urlsplit(url).netloc != "github.com" or path.count("/") != 1 or not branch:
        raise ValueError(
            f"notebook-links: repository.url must be https://github.com/<owner>/<name> and "
            f"repository.branch must be set in _config.yml (got url={url!r}, branch={branch!r})"
        )
    return path, branch


def link(text: str, url: str) -> nodes.reference:
    return nodes.reference("", text, refuri=url, internal=False)


class NotebookLinks(SphinxDirective):
    has_content = False

    def run(self) -> list[nodes.Node]:
        repo, branch = repository(self.config)
        root = Path(self.config.notebook_links_root or self.env.srcdir)
        toc = book_model.read_toc(Path(self.env.srcdir))
        raw = f"https://github.com/{repo}/raw/{branch}"
        table = nodes.table(classes=["notebook-links"])
        group = nodes.tgroup(cols=4)
        table += group
        for width in (1, 6, 3, 3):
            group += nodes.colspec(colwidth=width)
        head = nodes.thead()
        body = nodes.tbody()
        group += head
        group += body
        header = nodes.row()
        for title in ("", "Chapter", "Full edition", "Student edition"):
            header += nodes.entry("", nodes.paragraph(text=title))
        head += header
        for number, chapter in enumerate(book_model.numbered_chapters(toc), start=1):
            row = nodes.row()
            row += nodes.entry("", nodes.paragraph(text=f"{number}"))
            xref = addnodes.pending_xref(
                "", refdomain="std", reftype="doc", reftarget=f"/{chapter}", refexplicit=False, refdoc=self.env.docname
            )
            xref += nodes.inline("", chapter)
            row += nodes.entry("", nodes.paragraph("", "", xref))
            for path in (book_model.edition_path(chapter, student) for student in (False, True)):
                # Sphinx reads this page again when the file changes or goes, so an
                # incremental build also warns about a notebook that was deleted.
                self.env.note_dependency(str(root / path))
                if not (root / path).is_file():
                    logger.warning(
                        f"notebook-links: {path} does not exist; run `make notebooks`",
                        location=(self.env.docname, self.lineno),
                    )
                links = nodes.paragraph()
                links += link("Colab", f"{book_model.COLAB}/{repo}/blob/{branch}/{path}")
                links += nodes.Text(" · ")
                links += link("download", f"{raw}/{path}")
                row += nodes.entry("", links)
            body += row
        return [table]


def setup(app: Sphinx) -> dict:
    app.add_config_value("notebook_links_root", "", "env")
    app.add_directive("notebook-links", NotebookLinks)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
