"""The "Live code" mode of the scalar chapters: Python in the page, served by the book itself.

The pages listed in ``live_code_pages`` get one small script, ``chainrule_course/pages/live.js``, which
adds a "Live code" button. Everything else it needs is copied into the build's
``_static/live/`` folder, and fetched by the browser only when the reader presses it:

* Pyodide's core (npm ``pyodide``: ``pyodide.js``, ``pyodide.asm.js``, ``pyodide.asm.wasm``,
  ``python_stdlib.zip``, ``pyodide-lock.json``), from ``node_modules`` (``make setup`` runs
  ``npm ci`` on the pinned ``package-lock.json``);
* Graphviz in WebAssembly (npm ``@viz-js/viz``, ``lib/viz-standalone.js``), which draws
  chainrule's DOT figures in the page;
* CodeMirror 6 and its Python mode (npm ``@codemirror/*``, ``@lezer/*`` and their three small
  dependencies), the cells' editor: each package's ES module, unbundled, into ``cm/``, with
  their bare names mapped to those files by the page's import map (below), which ``live_editor.js``
  imports them through;
* the engine's and the course's wheels, built from this checkout (again only when ``src/`` or
  ``course/`` changed);
* the worker, the editor and the styles, ``chainrule_course/pages/live_worker.js``, ``live_editor.js``
  and ``live.css``.

The page scripts are ES modules (``<script type="module">``), and only the ones whose tag carries
the build's data are loaded by a tag: ``site.js`` and ``progress.js`` on every page, ``drill.js`` and
``live.js`` where they run; ``python.js``, ``live_cells.js``, ``live_answers.js`` and ``live_editor.js``
are imported by them. Sphinx gives each tag the file's digest as ``?v=...``, but a module's own imports
(``import ... from "./site.js"``) name the file without it, and a module fetched under two URLs runs
twice (two Pythons, two progress records drawn). So every page starts with an import map
(:func:`import_map`) that maps each page module's plain URL to the URL with its digest, the one its
tag has: each module has one URL, and a new build's modules are fetched again. On a live page the
same map gives CodeMirror's bare names; it precedes the first module script, as a map must where a
browser allows only one. The page modules are copied into the build before the pages are written
(:func:`copy_page_modules`), so that Sphinx's digest is that of the file the page gets.

Every page gets ``site.js``, which registers the site's service worker: the build writes
``chainrule_course/pages/service_worker.js`` to the site's root as ``service-worker.js``, with the
fingerprint of ``_static/live/`` as its version. It keeps the runtime across chapters and
visits, and makes the pages cross-origin isolated, so that Stop can interrupt a cell. The
panel's note says how much the runtime weighs, as the build measures it
(``data-runtime-size``).

The pages of the chapters that teach drill kinds (``chainrule_course.drills.catalog``: each kind
names its chapter), and the Practice page (``progress_page``), get ``drill.js`` and ``drill.css``
(also in ``chainrule_course/pages``), with the catalog and the page's chapter: each element
``<div class="cr-drill">`` of the page becomes a drill of its chapter's kinds, which starts the
same runtime in a worker of its own at its first question and asks
``chainrule_course.drills.page`` for the questions, the verdicts and the steps.

The script's ``data-exercises`` attribute carries the page's checked exercises (those with
an answer cell and a check cell, as ``tools/book/questions.py`` finds them for the assignments):
label, the names the answer defines, the answer cell and the check cell. The book removes those cells from
the page (``remove-cell``); in Live code mode the script puts the answer cell, with a
Check button that runs the check, under each exercise. Every other chapter whose checked
exercises have checks that need no numpy gets the same script with ``data-live-mode="answers"``: its
button, "Answer in the page", starts Python for those answers alone, and its cells stay as built.
``data-check-limit`` is the seconds a check may take, the notebook's own limit
(``chainrule_course.grading.apart.TIME_LIMIT``).

Registered in ``_config.yml`` under ``sphinx: extra_extensions``.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
import shutil
import zlib
from pathlib import Path
from typing import Any, Protocol, cast

from sphinx.application import Sphinx
from sphinx.errors import ExtensionError
from sphinx.util import logging
from sphinx.util.osutil import relative_uri

import chainrule_course.pages
from _ext import edition_numbers
from chainrule_course.drills import catalog
from chainrule_course.grading.apart import TIME_LIMIT
from tools.book import package
from tools.book.book_model import book_version, read_chapter
from tools.book.questions import allowed, defined_names, questions_of

logger = logging.getLogger(__name__)

STATIC_FOLDER = "live"
PYODIDE_FILES = ["pyodide.js", "pyodide.asm.js", "pyodide.asm.wasm", "python_stdlib.zip", "pyodide-lock.json"]
VIZ_FILE = Path("@viz-js") / "viz" / "lib" / "viz-standalone.js"
#: The browser's side of Live code and the drills, shipped in the course's package.
BOOK_PACKAGE = Path(chainrule_course.pages.__file__).parent
#: The page scripts, ES modules, which import each other: every page's import map names them all.
PAGE_MODULES = ["site.js", "progress.js", "python.js", "drill.js", "live.js", "live_cells.js", "live_answers.js",
                "live_editor.js"]  # fmt: skip
PACKAGE_FILES = [  # in BOOK_PACKAGE
    "python.js",
    "live_answers.js",
    "live_cells.js",
    "live.js",
    "live_worker.js",
    "live_editor.js",
    "live.css",
    "drill.js",
    "drill.css",
    "progress.js",
    "progress.css",
    "site.js",
]
#: The editor's ES modules: bare name (as the modules import each other) -> file in node_modules.
EDITOR_MODULES = {
    "@codemirror/autocomplete": "@codemirror/autocomplete/dist/index.js",
    "@codemirror/commands": "@codemirror/commands/dist/index.js",
    "@codemirror/lang-python": "@codemirror/lang-python/dist/index.js",
    "@codemirror/language": "@codemirror/language/dist/index.js",
    "@codemirror/state": "@codemirror/state/dist/index.js",
    "@codemirror/streamparser": "@codemirror/streamparser/dist/index.js",
    "@codemirror/view": "@codemirror/view/dist/index.js",
    "@lezer/common": "@lezer/common/dist/index.js",
    "@lezer/highlight": "@lezer/highlight/dist/index.js",
    "@lezer/lr": "@lezer/lr/dist/index.js",
    "@lezer/python": "@lezer/python/dist/index.js",
    "@marijn/find-cluster-break": "@marijn/find-cluster-break/src/index.js",
    "crelt": "crelt/index.js",
    "style-mod": "style-mod/src/style-mod.js",
    "w3c-keyname": "w3c-keyname/index.js",
}


def repository(app: Sphinx) -> Path:
    """The course's checkout: the book's folder, or ``live_code_root`` (the student site is built in a copy)."""
    return Path(app.config.live_code_root or app.confdir).resolve()


def node_modules(app: Sphinx) -> Path:
    """The npm packages of ``package-lock.json``; ExtensionError naming ``make setup`` when missing."""
    folder = repository(app) / "node_modules"
    missing = [
        name
        for name in ["pyodide/" + file for file in PYODIDE_FILES] + [str(VIZ_FILE)] + list(EDITOR_MODULES.values())
        if not (folder / name).is_file()
    ]
    if missing:
        raise ExtensionError(
            f"live_code: {folder} lacks {', '.join(missing[:3])}; run `make setup` (it runs "
            "`npm ci --ignore-scripts` on package-lock.json)"
        )
    return folder


def source_fingerprint(root: Path) -> str:
    """SHA-256 over the two projects' sources and pyproject.toml files: the wheels are built again
    when it changes."""
    digest = hashlib.sha256()
    files = sorted(
        path
        for folder in (root / "src", root / "course")
        for path in folder.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts and ".egg-info" not in path.as_posix()
    )
    for path in files + [root / "pyproject.toml"]:
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def built_wheels(root: Path) -> list[Path]:
    """The engine's and the course's wheels, built from the checkout once per version of their sources."""
    cache = root / "_build" / ".live-wheel"
    folder = cache / source_fingerprint(root)
    wheels = sorted(folder.glob("*.whl"))
    if len(wheels) == 2:
        return wheels
    if cache.exists():
        shutil.rmtree(cache)
    return list(package.build_wheels(folder))


def runtime_size(modules: Path, wheels: list[Path]) -> str:
    """What the page downloads when Python starts, as the panel says it: "14.2 MB"."""
    files = [modules / "pyodide" / name for name in PYODIDE_FILES] + [modules / VIZ_FILE, *wheels]
    files += [modules / path for path in EDITOR_MODULES.values()]
    files += [BOOK_PACKAGE / name for name in ("live_worker.js", "live_editor.js")]
    return f"{sum(path.stat().st_size for path in files) / 1e6:.1f} MB"


class _LiveEnvironment(Protocol):
    """What this extension keeps on Sphinx's build environment, which declares none of it."""

    live_code_wheels: str  # the wheels' file names, space-separated
    live_code_size: str  # what Live code downloads, as its button says it
    live_code_exercises: dict[str, list[dict]]  # page -> its exercises answered in the page


def live_env(app: Sphinx) -> _LiveEnvironment:
    """The build environment with what :func:`find_wheel` keeps on it."""
    # A cast: find_wheel, on builder-inited, sets all three before any page's context is made.
    return cast(_LiveEnvironment, app.env)


def taught_kinds(pagename: str) -> list[str]:
    """The drill kinds the page's chapter teaches, in the catalog's order (a kind names its chapter's page)."""
    return [name for name, kind in catalog().items() if f"chapters/{kind['chapter']}" == pagename]


def add_script(app: Sphinx, pagename: str, templatename: str, context: dict, doctree) -> None:
    """Give every page the import map, the site's and the progress module, the drill pages the drills' and
    the live pages Live code's (which import python.js, the page's one Python, and the rest)."""
    answers_only = pagename not in app.config.live_code_pages
    live = not answers_only or bool(live_env(app).live_code_exercises.get(pagename))
    imports = json.dumps({"imports": import_map(app, pagename, editor=live)}, separators=(",", ":"))
    app.add_js_file(None, body=imports, type="importmap")  # before the first module script
    app.add_js_file(f"{STATIC_FOLDER}/site.js", type="module")
    app.add_css_file(f"{STATIC_FOLDER}/progress.css")
    book = json.dumps({"name": "chainrule", "version": edition()}, separators=(",", ":"))
    # The tags' attributes, as Any: mypy would match **str values against add_js_file's int priority.
    attributes: dict[str, Any] = {"data-book": book, **progress_attributes(app, pagename)}
    app.add_js_file(f"{STATIC_FOLDER}/progress.js", type="module", **attributes)
    kinds = catalog()
    if pagename == app.config.progress_page or taught_kinds(pagename):
        app.add_css_file(f"{STATIC_FOLDER}/drill.css")
        attributes = {
            "data-wheels": live_env(app).live_code_wheels,
            "data-runtime-size": live_env(app).live_code_size,
            "data-kinds": json.dumps(kinds, separators=(",", ":")),
            "data-chapter": Path(pagename).name,  # a kind's chapter is its page's name
        }
        app.add_js_file(f"{STATIC_FOLDER}/drill.js", type="module", **attributes)
    if not live:
        return
    app.add_css_file(f"{STATIC_FOLDER}/live.css")
    exercises = json.dumps(live_env(app).live_code_exercises.get(pagename, []), separators=(",", ":"))
    attributes = {
        "data-wheels": live_env(app).live_code_wheels,
        "data-runtime-size": live_env(app).live_code_size,
        "data-exercises": exercises,
        "data-check-limit": f"{TIME_LIMIT:g}",  # the notebook's limit on a check, in seconds
        "data-live-mode": "answers" if answers_only else "cells",
    }
    app.add_js_file(f"{STATIC_FOLDER}/live.js", type="module", **attributes)


def import_map(app: Sphinx, pagename: str, editor: bool) -> dict[str, str]:
    """The page's import map: each page module's URL, as another module imports it, to the URL its tag
    has (Sphinx's ``?v=`` digest); with ``editor``, CodeMirror's bare names to its files. Relative to
    the page, as the tags' URLs are; a map's URLs start with ``./`` or ``../``."""
    here = app.builder.get_target_uri(pagename)

    def url(path: str) -> str:
        found = relative_uri(here, f"_static/{STATIC_FOLDER}/{path}")
        return found if found.startswith("../") else "./" + found

    found = {url(name): f"{url(name)}?v={digest(BOOK_PACKAGE / name)}" for name in PAGE_MODULES}
    if editor:
        found.update((name, url(f"cm/{file}")) for name, file in editor_files().items())
    return found


def digest(path: Path) -> str:
    """The ``?v=`` Sphinx gives a file of ``_static`` (sphinx.builders.html._assets._file_checksum):
    CRC-32 of its bytes without carriage returns. tests/built/test_book.py holds the tags to the map."""
    checksum = zlib.crc32(path.read_bytes().replace(b"\r", b""))
    return f"{checksum:08x}"


def copy_page_modules(app: Sphinx) -> None:
    """The page modules into ``_static/live/`` before any page is written: Sphinx takes a tag's ``?v=``
    from the file it finds there, which must be this build's (the rest is copied after the build)."""
    if app.builder.format != "html":
        return
    target = Path(app.outdir) / "_static" / STATIC_FOLDER
    target.mkdir(parents=True, exist_ok=True)
    for name in PAGE_MODULES:  # small: compared by content, so the digest is always this file's
        source, copy = BOOK_PACKAGE / name, target / name
        if not copy.is_file() or copy.read_bytes() != source.read_bytes():
            shutil.copy2(source, copy)


@functools.cache
def edition() -> str:
    """The edition of the drills and exercises a reader's record names (``book_version``), once a build: the
    repository's chapters, also for the student site, which is built from their student editions."""
    return book_version()


def progress_attributes(app: Sphinx, pagename: str) -> dict:
    """On the page that shows the Progress section, every exercise and every drill of the book, in its order;
    on a chapter, its own drills and exercises, for the line of progress at its end."""
    if pagename != app.config.progress_page:
        return chapter_attributes(app, pagename)
    in_page = {exercise["label"] for found in live_env(app).live_code_exercises.values() for exercise in found}
    numbers = edition_numbers.collect(app.env)
    here = app.builder.get_target_uri(pagename)
    titles = {docname: f"{numbers['chapters'].get(docname, '')}. {app.env.titles[docname].astext()}"
              for docname in numbers["chapters"]}  # fmt: skip
    found = []
    for docname, elements in numbers["numbered"].items():
        chapter = titles.get(docname, "")
        for element in elements.values():
            if element["kind"] == "exercise" and "label" in element:
                found.append(
                    {
                        "label": element["label"],
                        "number": element["number"],
                        "chapter": chapter,
                        "page": relative_uri(here, app.builder.get_target_uri(docname)),
                        "inPage": element["label"] in in_page,
                    }
                )
    found.sort(key=lambda e: [int(part) for part in e["number"].split(".")])
    drills = [
        {"kind": name, "title": kind["title"], "chapter": titles["chapters/" + kind["chapter"]]}
        for name, kind in catalog().items()
    ]
    return {
        "data-exercises": json.dumps(found, separators=(",", ":")),
        "data-drills": json.dumps(drills, separators=(",", ":")),
    }


def chapter_attributes(app: Sphinx, pagename: str) -> dict:
    """A chapter's drill kinds and exercises (label, number), and where the Practice page is."""
    numbers = edition_numbers.collect(app.env)
    if pagename not in numbers["chapters"]:
        return {}
    exercises = [
        {"label": element["label"], "number": element["number"]}
        for element in numbers["numbered"].get(pagename, {}).values()
        if element["kind"] == "exercise" and "label" in element
    ]
    drills = taught_kinds(pagename)
    if not exercises and not drills:
        return {}
    here = app.builder.get_target_uri(pagename)
    practice = relative_uri(here, app.builder.get_target_uri(app.config.progress_page))
    chapter = {"drills": drills, "exercises": exercises, "practice": practice}
    return {"data-chapter": json.dumps(chapter, separators=(",", ":"))}


def checked_exercises(root: Path, pages: list[str]) -> dict[str, list[dict]]:
    """Per live page, its exercises that have an answer cell and a check cell.

    Their numbers are the page's own (the script reads them from the exercise's title): the
    build has not numbered them yet when this runs.
    """
    found = {}
    for page in pages:
        found[page] = [
            {
                "label": q.label,
                "names": defined_names(q.stub),
                "allowed": list(allowed(q)),
                "answer": q.stub.strip(),
                "check": q.check.strip(),
            }
            for q in questions_of(None, page, read_chapter(root, page))
        ]
    return found


def runs_in_the_page(check: str) -> bool:
    """Whether a check cell runs without numpy: each ``feedback.<name>`` it calls is one that
    :mod:`chainrule_course.exercises.feedback` imports itself (the others load numpy when asked for)."""
    from chainrule_course.exercises import feedback

    called = re.findall(r"\bfeedback\.(\w+)", check)
    return bool(called) and all(name in vars(feedback) for name in called)


def find_wheel(app: Sphinx) -> None:
    modules = node_modules(app)  # fail early, before anything executes, when npm's packages are missing
    root = repository(app)
    wheels = built_wheels(root)
    live_env(app).live_code_wheels = " ".join(wheel.name for wheel in wheels)
    live_env(app).live_code_size = runtime_size(modules, wheels)
    live = list(app.config.live_code_pages)
    # Every other chapter: its exercises whose check runs without numpy are answered in the page too.
    others = [f"chapters/{path.stem}" for path in sorted((root / "chapters").glob("*.md"))]
    answers = checked_exercises(root, [page for page in others if page not in live])
    in_page = {page: [e for e in found if runs_in_the_page(e["check"])] for page, found in answers.items()}
    live_env(app).live_code_exercises = checked_exercises(root, live)
    live_env(app).live_code_exercises.update((page, found) for page, found in in_page.items() if found)


def copy_assets(app: Sphinx, exception: Exception | None) -> None:
    """Copy the runtime, Graphviz, the wheels and the scripts into ``_static/live/``."""
    if exception is not None or app.builder.format != "html":
        return
    target = Path(app.outdir) / "_static" / STATIC_FOLDER
    (target / "pyodide").mkdir(parents=True, exist_ok=True)
    modules = node_modules(app)
    for name in PYODIDE_FILES:
        _copy(modules / "pyodide" / name, target / "pyodide" / name)
    _copy(modules / VIZ_FILE, target / VIZ_FILE.name)
    copy_editor(modules, target / "cm")
    root = repository(app)
    for name in PACKAGE_FILES:
        _copy(BOOK_PACKAGE / name, target / name)
    for old in target.glob("*.whl"):
        old.unlink()
    for wheel in built_wheels(root):
        _copy(wheel, target / wheel.name)
    write_service_worker(root, Path(app.outdir), target)


def write_service_worker(root: Path, outdir: Path, runtime: Path) -> None:
    """``service-worker.js`` at the site's root, its VERSION the fingerprint of ``_static/live/``:
    a new build's runtime replaces what the readers' browsers cached of the last one."""
    digest = hashlib.sha256()
    for path in sorted(p for p in runtime.rglob("*") if p.is_file()):
        digest.update(path.relative_to(runtime).as_posix().encode() + b"\0" + path.read_bytes())
    source = (BOOK_PACKAGE / "service_worker.js").read_text(encoding="utf-8")
    if source.count('var VERSION = "BUILD";') != 1:
        raise ExtensionError('live_code: service_worker.js must set VERSION once, to "BUILD"')
    version = digest.hexdigest()[:16]
    text = source.replace('var VERSION = "BUILD";', f'var VERSION = "{version}";')
    (outdir / "service-worker.js").write_text(text, encoding="utf-8")


def editor_files() -> dict[str, str]:
    """CodeMirror's bare names -> their files in ``cm/``: ``@codemirror/view`` -> ``codemirror-view.js``."""
    return {name: name.lstrip("@").replace("/", "-") + ".js" for name in EDITOR_MODULES}


def copy_editor(modules: Path, target: Path) -> None:
    """CodeMirror's modules, one file per package (the pages' import map names them)."""
    target.mkdir(parents=True, exist_ok=True)
    (target / "modules.json").unlink(missing_ok=True)  # the import map an older build wrote here
    for name, file in editor_files().items():
        _copy(modules / EDITOR_MODULES[name], target / file)


def _copy(source: Path, target: Path) -> None:
    """Copy unless the target already has the same size and time (the runtime is 12 MB)."""
    if (
        target.is_file()
        and target.stat().st_size == source.stat().st_size
        and target.stat().st_mtime >= source.stat().st_mtime
    ):
        return
    shutil.copy2(source, target)


def setup(app: Sphinx) -> dict:
    app.add_config_value("live_code_pages", [], "html")
    app.add_config_value("live_code_root", "", "html")
    app.add_config_value("progress_page", "", "html")
    app.connect("builder-inited", find_wheel)
    app.connect("builder-inited", copy_page_modules)
    # Before dedupe_scripts, which replaces the page's list of scripts with a copy.
    app.connect("html-page-context", add_script, priority=400)
    app.connect("build-finished", copy_assets)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
