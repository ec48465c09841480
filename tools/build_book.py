"""``jupyter-book build`` with Sphinx's parallel reading, so that chapters execute on every core.

    python tools/build_book.py [--jobs N] BOOK [jupyter-book build options]

Jupyter Book 1's command line has no ``-j``, although the function it calls,
``jupyter_book.sphinx.build_sphinx``, takes ``jobs`` and hands it to Sphinx. This runs
the same command with ``jobs`` set (default: the machine's cores). myst-nb executes a
notebook while Sphinx reads it, so Sphinx's reader processes execute chapters side by
side; every extension the book uses declares itself safe for that.
"""

from __future__ import annotations

import functools
import os
import shutil
import sys
from pathlib import Path

import jupyter_book.sphinx
from jupyter_book.cli.main import main as cli


def run(argv: list[str]) -> int:
    jobs = os.cpu_count() or 1
    if argv[:1] == ["--jobs"]:
        jobs, argv = int(argv[1]), argv[2:]
    # The CLI imports build_sphinx when it runs, so it picks up this one.
    jupyter_book.sphinx.build_sphinx = functools.partial(jupyter_book.sphinx.build_sphinx, jobs=jobs)
    book = Path(next((arg for arg in argv if not arg.startswith("-")), "."))
    shutil.rmtree(book / "_build" / "html" / "reports", ignore_errors=True)
    status = 1  # also when the build raises
    try:
        cli(["build", *argv], standalone_mode=False)
        status = 0
    except SystemExit as exit:
        status = exit.code if isinstance(exit.code, int) else 1
    finally:
        if status:
            shutil.rmtree(book / "_build" / ".doctrees", ignore_errors=True)
    return status


if __name__ == "__main__":
    sys.exit(run(sys.argv[1:]))
