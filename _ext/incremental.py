"""An incremental build as strict as a fresh one.

Executed outputs are reused only while the code they ran on is the same. With
``execute_notebooks: cache`` myst-nb keeps each chapter's executed notebook in
jupyter-cache (``_build/.jupyter_cache``), keyed on the chapter's code cells. That key
does not see ``src/chainrule``: a change to the engine would leave old outputs on the
pages. This extension fingerprints the files the outputs depend on besides the chapters
(``execution_fingerprint_files``: the engine and the pinned requirements) and, when the
fingerprint differs from the one recorded beside the cache,

* empties the cache, so every chapter executes again, and
* makes Sphinx read every page again, although their sources did not change.

It also opens the cache once in the main process, before Sphinx forks its parallel
readers, so that two of them never create the cache's database at the same time.
Nothing of this happens when execution is off (the student site, whose outputs are copied).

Every page is written again on every build (a few seconds; only changed pages are read
again). Sphinx does not track references between pages, so otherwise a page that links to
a label another page no longer has would keep its old link, and ``-n -W`` would not say so.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.util import logging

logger = logging.getLogger(__name__)

#: Globs, relative to the book's folder, of the files executed outputs depend on.
#: The explorables' script and styles are inlined in the outputs, so they count too.
DEFAULT_FILES = [
    "src/chainrule/**/*.py",
    "src/chainrule/**/*.js",
    "src/chainrule/**/*.css",
    "course/chainrule_course/**/*.py",
    "course/chainrule_course/**/*.js",
    "course/chainrule_course/**/*.css",
    "course/pyproject.toml",
    "requirements.txt",
    "pyproject.toml",
]


def fingerprint(root: Path, patterns: list[str]) -> str:
    """SHA-256 over the names and bytes of the files matching ``patterns`` under ``root``."""
    digest = hashlib.sha256()
    files = sorted({path for pattern in patterns for path in root.glob(pattern) if path.is_file()})
    for path in files:
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def stamp_path(cache: Path) -> Path:
    return cache.with_name(cache.name + ".fingerprint")


def check_fingerprint(app: Sphinx) -> None:
    app.env.chainrule_stale_outputs = False
    config = app.env.mystnb_config
    if config.execution_mode in ("off", None, False):
        return
    cache = Path(config.execution_cache_path)
    current = fingerprint(Path(app.confdir), app.config.execution_fingerprint_files)
    stamp = stamp_path(cache)
    recorded = stamp.read_text(encoding="utf-8").strip() if stamp.is_file() else None
    from jupyter_cache import get_cache

    records = get_cache(str(cache))
    if recorded != current:
        if cache.exists():
            # Through jupyter-cache, not by deleting the folder: myst-nb has opened the database
            # already, and workers forked with that connection would write records into the deleted
            # file while the notebooks went to the new folder ("Notebook file does not exist for
            # cache record").
            logger.info(f"[incremental] the engine or requirements changed: emptying {cache}")
            from jupyter_cache.cache.db import NbCacheRecord

            for record in records.list_cache_records():
                try:
                    records.remove_cache(record.pk)
                except KeyError:  # a record whose notebook is gone already
                    NbCacheRecord.remove_records([record.pk], records.db)
        app.env.chainrule_stale_outputs = True
    records.list_cache_records()  # creates the database, once
    records.db.dispose()  # no connection of this process is shared with the forked workers
    stamp.parent.mkdir(parents=True, exist_ok=True)
    stamp.write_text(current + "\n", encoding="utf-8")


def outdated(app: Sphinx, env, added, changed, removed) -> list[str]:
    """Every page, when the outputs they show may be stale."""
    if getattr(env, "chainrule_stale_outputs", False):
        return sorted(env.found_docs - set(added) - set(changed) - set(removed))
    return []


def every_page(app: Sphinx, env) -> list[str]:
    """Every page, to be written (and its references resolved) again."""
    return sorted(env.found_docs)


def setup(app: Sphinx) -> dict:
    app.add_config_value("execution_fingerprint_files", DEFAULT_FILES, "env")
    # After myst-nb's own builder-inited handler, which sets the cache's path.
    app.connect("builder-inited", check_fingerprint, priority=900)
    app.connect("env-get-outdated", outdated)
    app.connect("env-get-updated", every_page)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
