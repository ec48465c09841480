"""Serve MathJax 3 from the book itself, so the pages render math with no network.

Sphinx loads MathJax from a CDN by default; offline, every formula would stay raw TeX.
This extension copies the MathJax 3 browser files that ship in the
``django-static-mathjax`` wheel (a plain copy of the npm ``mathjax@3`` package, importable
as the top-level module ``mathjax``; Django is not needed) into ``_build/html/_static/mathjax``
and points Sphinx's ``mathjax_path`` at that copy.

Registered in ``_config.yml`` under ``sphinx: local_extensions: {local_mathjax: _ext}``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.config import Config
from sphinx.errors import ExtensionError
from sphinx.util import logging

logger = logging.getLogger(__name__)

#: Folder under the build's ``_static`` that receives the MathJax files.
STATIC_FOLDER = "mathjax"
#: The MathJax 3 component the pages load: TeX and MathML input, CommonHTML output.
#: It finds its fonts and lazily loaded TeX extensions relative to its own URL.
ENTRY_POINT = "tex-mml-chtml.js"


def mathjax_source_folder() -> Path:
    """Return the folder holding MathJax 3's ready-to-serve ``es5`` build.

    Raises ExtensionError naming the package to install when it is missing.
    """
    try:
        import mathjax  # the django-static-mathjax wheel
    except ImportError as error:
        raise ExtensionError(
            "local_mathjax: cannot import 'mathjax'; install the django-static-mathjax "
            "package (it is in requirements.txt: run `make book`, which installs it)"
        ) from error
    folder = Path(mathjax.__file__).resolve().parent / "static" / "mathjax" / "es5"
    if not (folder / ENTRY_POINT).is_file():
        raise ExtensionError(
            f"local_mathjax: {folder / ENTRY_POINT} does not exist; the installed "
            "django-static-mathjax does not contain MathJax 3 (expected version 3.2.x)"
        )
    return folder


def use_local_mathjax(app: Sphinx, config: Config) -> None:
    """Point ``mathjax_path`` at the local copy (a path relative to ``_static``)."""
    mathjax_source_folder()  # fail early, before any page is written
    config.mathjax_path = f"{STATIC_FOLDER}/{ENTRY_POINT}"


def _is_up_to_date(source: Path, target: Path) -> bool:
    if not target.is_file():
        return False
    source_stat, target_stat = source.stat(), target.stat()
    return source_stat.st_size == target_stat.st_size and source_stat.st_mtime <= target_stat.st_mtime


def _copy_if_newer(source: str, target: str) -> str:
    if not _is_up_to_date(Path(source), Path(target)):
        shutil.copy2(source, target)
    return target


def copy_mathjax(app: Sphinx, exception: Exception | None) -> None:
    """After an HTML build, copy MathJax into ``_static/mathjax`` (only changed files)."""
    if exception is not None or app.builder.format != "html":
        return
    source = mathjax_source_folder()
    target = Path(app.outdir) / "_static" / STATIC_FOLDER
    shutil.copytree(source, target, dirs_exist_ok=True, copy_function=_copy_if_newer)
    logger.info("local_mathjax: MathJax 3 served from %s", target)


def setup(app: Sphinx) -> dict:
    app.setup_extension("sphinx.ext.mathjax")
    # Priority above the default (500) so this runs after any other extension that
    # might set mathjax_path.
    app.connect("config-inited", use_local_mathjax, priority=900)
    app.connect("build-finished", copy_mathjax)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
