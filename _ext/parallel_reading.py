"""Declares two extensions that Jupyter Book loads safe for parallel reading, so that Sphinx
reads (and myst-nb executes) chapters in several processes (``tools/book/build_book.py``).

Neither says whether it is safe, so Sphinx assumes it is not, warns (an error under ``-W``)
and reads serially. Both are, for the HTML builder:

* sphinx-multitoc-numbering 0.1.3: its ``setup`` replaces
  ``TocTreeCollector.assign_section_numbers``, which Sphinx calls in the main process
  after reading, on the merged environment. Reader processes fork after ``setup``.
* sphinx-jupyterbook-latex 1.0.0: its transforms change only the document being read; it
  keeps state in the environment only under a LaTeX builder.

Sphinx reads the flags when the build starts, after every extension is loaded, which is
after ``config-inited``.
"""

from __future__ import annotations

from sphinx.application import Sphinx

VOUCHED_FOR = ("sphinx_multitoc_numbering", "sphinx_jupyterbook_latex")


def declare(app: Sphinx, config) -> None:
    for name in VOUCHED_FOR:
        extension = app.extensions.get(name)
        if extension is not None and extension.parallel_read_safe is None:
            extension.parallel_read_safe = True


def setup(app: Sphinx) -> dict:
    app.connect("config-inited", declare)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
