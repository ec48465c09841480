"""An incremental build as strict as a fresh one.

Executed outputs are reused only while the code they ran on is the same. With
``execute_notebooks: cache`` myst-nb keeps each chapter's executed notebook in
jupyter-cache (``_build/.jupyter_cache``), keyed on the chapter's code cells. That key
does not see ``src/chainrule``: a change to the engine would leave old outputs on the
pages. This extension fingerprints the files the outputs depend on besides the chapters
(``execution_fingerprint_files``: the engine and the pinned requirements; and
``execution_fingerprint_imports``: the course's modules that the chapters import, found by
reading the imports, so that a change to the grader or the page's runtime executes nothing)
and, when the fingerprint differs from the one recorded beside the cache,

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

import ast
import hashlib
import re
from pathlib import Path
from typing import Any, Protocol, cast

from sphinx.application import Sphinx
from sphinx.util import logging

logger = logging.getLogger(__name__)

#: Globs, relative to the book's folder, of the files executed outputs depend on, besides
#: the course package's modules that the chapters import (:data:`DEFAULT_IMPORTS`).
DEFAULT_FILES = [
    "src/chainrule/**/*.py",
    "src/chainrule/**/*.js",
    "src/chainrule/**/*.css",
    "course/pyproject.toml",
    "requirements.lock",  # every version of the venv the chapters run in
    "pyproject.toml",
]
#: (folder, package): the package's modules that the chapters import count, and those they
#: import in turn, with the scripts and styles they read by name (the explorables inline
#: theirs in the outputs); its other modules (the grader's reports, the page's runtime) do not.
DEFAULT_IMPORTS = [("course", "chainrule_course")]
#: An import statement of a chapter's code: ``from <module> import <names>`` or ``import <module>``.
IMPORT_LINE = re.compile(r"^\s*(?:from\s+([\w.]+)\s+import\s+([\w ,()]+)|import\s+([\w.]+))", re.MULTILINE)


def chapter_imports(chapters: list[Path], package: str) -> list[str]:
    """The modules of ``package`` that the chapters name in an import (each imported name may be one)."""
    names = []
    for chapter in chapters:
        for found in IMPORT_LINE.finditer(chapter.read_text(encoding="utf-8")):
            module = found[1] or found[3]
            imported = (found[2] or "").replace("(", " ").replace(")", " ").split(",")
            names += [module] + [f"{module}.{name.strip()}" for name in imported if name.strip()]
    return [name for name in names if name == package or name.startswith(package + ".")]


def module_imports(tree: ast.Module, name: str, is_package: bool) -> list[str]:
    """The modules that the module ``name`` imports anywhere in it, relative imports resolved."""
    here = name.split(".") if is_package else name.split(".")[:-1]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            anchor = here[: len(here) - node.level + 1] if node.level else []
            module = ".".join(anchor + ([node.module] if node.module else []))
            found += [module] + [f"{module}.{alias.name}" for alias in node.names]
    return found


def read_by_name(tree: ast.Module, folder: Path) -> list[Path]:
    """The scripts and styles beside a module that its code names (not its docstrings)."""
    docstrings = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr)}
    strings = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and id(n) not in docstrings}
    return [path for path in folder.iterdir() if path.suffix in (".js", ".css") and path.name in strings]


def imported_files(root: Path, folder: str, package: str) -> list[Path]:
    """The files of ``package`` (under ``root/folder``) that the chapters' code runs or reads."""
    wanted = chapter_imports(sorted((root / "chapters").glob("*.md")), package)
    seen, files = set(), set()
    while wanted:
        name = wanted.pop()
        if name in seen or not (name == package or name.startswith(package + ".")):
            continue
        seen.add(name)
        parts = name.split(".")
        wanted += [".".join(parts[:i]) for i in range(1, len(parts))]  # its packages run first
        base = root / folder / Path(*parts)
        path = next((p for p in (base / "__init__.py", base.with_suffix(".py")) if p.is_file()), None)
        if path is not None:
            tree = ast.parse(path.read_text(encoding="utf-8"))
            wanted += module_imports(tree, name, path.name == "__init__.py")
            files |= {path, *read_by_name(tree, path.parent)}
    return sorted(files)


def fingerprint(root: Path, patterns: list[str], imports=()) -> str:
    """SHA-256 over the names and bytes of the files matching ``patterns`` under ``root``, and of
    the files of each (folder, package) in ``imports`` that the chapters import (:func:`imported_files`)."""
    digest = hashlib.sha256()
    files = {path for pattern in patterns for path in root.glob(pattern) if path.is_file()}
    files |= {path for folder, package in imports for path in imported_files(root, folder, package)}
    for path in sorted(files):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def stamp_path(cache: Path) -> Path:
    return cache.with_name(cache.name + ".fingerprint")


class _Environment(Protocol):
    """What this extension reads and keeps on Sphinx's build environment, which declares neither."""

    mystnb_config: Any  # myst-nb's NbParserConfig, which its own builder-inited handler sets
    chainrule_stale_outputs: bool  # whether the pages' outputs may be stale: check_fingerprint sets it


def check_fingerprint(app: Sphinx) -> None:
    # A cast: myst-nb's handler, which runs before this one (priority 900), set mystnb_config, and
    # chainrule_stale_outputs is set on the next line.
    env = cast(_Environment, app.env)
    env.chainrule_stale_outputs = False
    config = env.mystnb_config
    if config.execution_mode in ("off", None, False):
        return
    cache = Path(config.execution_cache_path)
    files, imports = app.config.execution_fingerprint_files, app.config.execution_fingerprint_imports
    current = fingerprint(Path(app.confdir), files, imports)
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
            changed = "the engine, a course module the chapters import, or the lock"
            logger.info(f"[incremental] {changed} changed: emptying {cache}")
            from jupyter_cache.cache.db import NbCacheRecord

            for record in records.list_cache_records():
                try:
                    records.remove_cache(record.pk)
                except KeyError:  # a record whose notebook is gone already
                    NbCacheRecord.remove_records([record.pk], records.db)
        env.chainrule_stale_outputs = True
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
    app.add_config_value("execution_fingerprint_imports", DEFAULT_IMPORTS, "env")
    # After myst-nb's own builder-inited handler, which sets the cache's path.
    app.connect("builder-inited", check_fingerprint, priority=900)
    app.connect("env-get-outdated", outdated)
    app.connect("env-get-updated", every_page)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
