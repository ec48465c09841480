"""The browser's scripts: ESLint lints them, and they agree with the build and with the Python they call.

* ESLint (npm, pinned in package.json; eslint.config.js says which globals each file has) runs over
  every script the repository ships. It fails here when it is missing: `make setup` installs it.
* The ``data-*`` contract: every attribute a script reads is written by the build, by the Python that
  writes HTML for the pages, by a chapter or by a script; every one the build or the Python writes is
  read by a script or a stylesheet. ``[data-role="..."]`` and ``[data-action="..."]`` values too.
* The page scripts are ES modules: every name one imports from another (``import { start } from
  "./python.js"``, ``python.start`` after ``import * as python``, or ``m.name`` of a dynamic
  ``import()``) is exported by it; a factory (``liveCells(helpers)``) is given every helper it reads
  and returns every function read of what it returns; and none sets anything on ``window``. The one
  name left there, ``window.chainruleExplorable``, is set by the classic script explorable.js (inlined
  into notebook outputs) and read by the modules: ``WINDOW_HOOKS``.
* Every Python module and function a script calls in the page's Python exists in the course's package.

The scripts are read through espree (ESLint's parser, in node_modules with it): their tokens (the
strings, names and punctuation of their code, never their comments) for the attributes and the Python,
their syntax trees for the modules' links (script_links.cjs).
"""

from __future__ import annotations

import ast
import importlib
import json
import posixpath
import re
import subprocess
from functools import cache
from pathlib import Path

import pytest
from common import ROOT

ESLINT = ROOT / "node_modules" / ".bin" / "eslint"
PAGES = ROOT / "course" / "chainrule_course" / "pages"


def shipped_scripts() -> list[Path]:
    """Every .js, .mjs and .cjs file of the repository but npm's packages, the built sites (copies),
    the caches, the venvs and the student edition (made from the book's)."""
    not_shipped = {"node_modules", "_build", ".cache", ".venv", ".venv-grade", ".git", "dist", "student"}
    found = []
    for pattern in ("*.js", "*.mjs", "*.cjs"):
        found += [path for path in ROOT.rglob(pattern) if not not_shipped & set(path.relative_to(ROOT).parts)]
    return sorted(found)


def eslint(*arguments: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    if not ESLINT.is_file():
        pytest.fail(f"{ESLINT} is missing: run `make setup` (package.json pins eslint)", pytrace=False)
    return subprocess.run(
        [str(ESLINT), "--max-warnings", "0", *arguments], input=stdin, capture_output=True, text=True, cwd=ROOT,
        timeout=120,
    )  # fmt: skip


def test_eslint_finds_nothing():
    """Every shipped script, named one by one: one that eslint.config.js ignored would warn, and fail."""
    scripts = [path.relative_to(ROOT).as_posix() for path in shipped_scripts()]
    assert len(scripts) >= 12, scripts
    run = eslint(*scripts)
    assert run.returncode == 0, "`node_modules/.bin/eslint .` finds:\n" + run.stdout[-6000:] + run.stderr[-2000:]


def test_eslint_can_fail():
    """An undefined name in a page's script (read from stdin as if it were that file) fails."""
    where = "course/chainrule_course/pages/planted.js"
    planted = 'import { start } from "./python.js";\n\nexport const planted = () => start(notDefinedAnywhere);\n'
    failed = eslint("--stdin", "--stdin-filename", where, stdin=planted)
    assert failed.returncode == 1 and "'notDefinedAnywhere' is not defined" in failed.stdout, failed.stdout


def test_eslint_refuses_a_name_set_on_window():
    """A page module that hands a name to another through window (or globalThis, or self), not an
    export, fails: each line."""
    where = "course/chainrule_course/pages/planted.js"
    planted = "export function planted() {\n  window.a = 1;\n  globalThis.b = 2;\n  self.c = 3;\n}\n"
    failed = eslint("--stdin", "--stdin-filename", where, stdin=planted)
    flagged = re.findall(r"^\s*(\d+):\d+\s+error.*no-restricted-syntax$", failed.stdout, re.M)
    assert failed.returncode == 1 and flagged == ["2", "3", "4"], failed.stdout


# --- the scripts' code, as espree reads it --------------------------------------------------------------
TOKENIZE = """
const espree = require(process.argv[1]);
const files = JSON.parse(require("fs").readFileSync(0, "utf8"));
const out = {};
for (const [name, text] of Object.entries(files)) {
  let tokens;
  try { tokens = espree.tokenize(text, { ecmaVersion: "latest", sourceType: "script" }); }
  catch { tokens = espree.tokenize(text, { ecmaVersion: "latest", sourceType: "module" }); }
  out[name] = tokens.map((token) => [token.type, token.value]);
}
process.stdout.write(JSON.stringify(out));
"""


def tokenized(texts: dict[str, str]) -> dict[str, list[tuple[str, str]]]:
    """Each script's tokens, (type, value); a string's value without its quotes."""
    espree = ROOT / "node_modules" / "espree"
    if not espree.is_dir():
        pytest.fail(f"{espree} is missing: run `make setup` (it comes with eslint)", pytrace=False)
    run = subprocess.run(
        ["node", "-e", TOKENIZE, str(espree)], input=json.dumps(texts), capture_output=True, text=True, timeout=60
    )
    assert run.returncode == 0, run.stderr
    found = {}
    for name, tokens in json.loads(run.stdout).items():
        found[name] = [(kind, value[1:-1] if kind in ("String", "Template") else value) for kind, value in tokens]
    return found


def page_scripts() -> dict[str, str]:
    """The scripts the pages run (not the build's prerendered_math.js): path -> text."""
    paths = sorted(PAGES.glob("*.js")) + [ROOT / "course" / "chainrule_course" / "explore" / "explorable.js"]
    return {path.relative_to(ROOT).as_posix(): path.read_text(encoding="utf-8") for path in paths}


@cache
def script_tokens() -> dict[str, list[tuple[str, str]]]:
    return tokenized(page_scripts())


# --- the data-* attributes ----------------------------------------------------------------------------
ATTRIBUTE = r"data-[a-z][a-z0-9]*(?:-[a-z0-9]+)*"
SELECTED = re.compile(r"\[(" + ATTRIBUTE + r")(?:[~|^$*]?=\s*\"?([\w-]*))?")
READ_CALLS = {"getAttribute", "hasAttribute"}
WRITE_CALLS = {"setAttribute", "toggleAttribute", "removeAttribute"}


def kebab(name: str) -> str:
    """``dataset.liveMode`` is ``data-live-mode``."""
    return "data-" + re.sub(r"[A-Z]", lambda m: "-" + m[0].lower(), name)


def script_attributes(tokens: dict[str, list[tuple[str, str]]]) -> tuple[dict, dict, dict]:
    """What the scripts read, what they write, and the values they select on: ({attribute: {script}},
    {attribute: {script}}, {(attribute, value): {script}})."""
    reads, writes, values = {}, {}, {}
    for name, found in tokens.items():
        for i, (kind, value) in enumerate(found):
            before = found[i - 2][1] if i >= 2 else ""
            if kind == "Identifier" and value == "dataset" and i + 2 < len(found) and found[i + 1][1] == ".":
                target = writes if i + 3 < len(found) and found[i + 3][1] == "=" else reads
                target.setdefault(kebab(found[i + 2][1]), set()).add(name)
            if kind not in ("String", "Template") or "data-" not in value:
                continue
            if re.fullmatch(ATTRIBUTE, value):
                if before in READ_CALLS:
                    reads.setdefault(value, set()).add(name)
                elif before in WRITE_CALLS:
                    writes.setdefault(value, set()).add(name)
                else:
                    raise AssertionError(f"{name}: {value!r} is neither read nor written as test_javascript.py knows")
            for attribute, selected in SELECTED.findall(value):  # a selector: querySelector, closest, ...
                reads.setdefault(attribute, set()).add(name)
                if selected:
                    values.setdefault((attribute, selected), set()).add(name)
    return reads, writes, values


def python_strings(path: Path) -> list[str]:
    """The string constants of a Python file's code (f-strings' parts too), not its docstrings."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
    ]


WRITTEN = re.compile(r"(?<![\w-])(" + ATTRIBUTE + r")(?:=\"?([\w-]*)|\"|$)", re.M)


@cache
def build_sources() -> dict[str, str]:
    """What writes the pages' HTML: the build's extensions and the course's Python (their code's
    strings, joined), and the chapters' own HTML (the drills' <div class="cr-drill" data-drill-title>)."""
    sources = {}
    for path in sorted((ROOT / "_ext").glob("*.py")) + sorted((ROOT / "course" / "chainrule_course").rglob("*.py")):
        sources[path.relative_to(ROOT).as_posix()] = "\n".join(python_strings(path))
    for path in sorted((ROOT / "chapters").glob("*.md")):
        tags = re.findall(r"<[a-zA-Z][^<>]*>", path.read_text(encoding="utf-8"))
        sources[path.relative_to(ROOT).as_posix()] = "\n".join(tags)
    return sources


def built_attributes(sources: dict[str, str]) -> tuple[dict, set]:
    """({attribute: {file}}, {(attribute, value)}) of what the build and the course's Python write."""
    names, values = {}, set()
    for name, text in sources.items():
        for attribute, value in WRITTEN.findall(text):
            names.setdefault(attribute, set()).add(name)
            values.add((attribute, value))
    return names, values


def stylesheet_attributes() -> set[str]:
    """The data-* attributes the shipped stylesheets select on."""
    sheets = list((ROOT / "course").rglob("*.css")) + list((ROOT / "_static").glob("*.css"))
    return {m for path in sheets for m in re.findall(r"\[(" + ATTRIBUTE + ")", path.read_text(encoding="utf-8"))}


#: Read by a script, and written only by the browser tests: a knob of theirs.
WRITTEN_BY_TESTS = {
    "data-stop-wait": "how long Stop waits for an interrupt before it restarts Python (live.js)",
}
#: Written by a script, and read only by the browser tests and the benchmarks: what they measure or click.
READ_BY_TESTS = {
    "data-python-start": "python.js: Python started from the kept snapshot or from scratch",
    "data-live-first-output": "live.js: seconds from Live code to the first output",
    "data-drill-asks": "drill.js: how many questions the drill has asked",
    "data-drill-asked": "drill.js: the kind, level and seed asked",
    "data-live-action": "live.js: which button, as the tests find it",
    "data-live-status": "live.js: the status line",
    "data-live-clock": "live.js: the seconds a cell has run",
    "data-live-output": "live_cells.js: a cell's output",
    "data-live-verdict": "live_answers.js: right or wrong",
}


def unmatched(tokens: dict, sources: dict[str, str]) -> list[str]:
    """What breaks the data-* contract, one line each; empty when nothing does."""
    reads, writes, selected = script_attributes(tokens)
    built, built_values = built_attributes(sources)
    css = stylesheet_attributes()
    problems = [
        f"{attribute} is read by {sorted(reads[attribute])} and written by nothing"
        for attribute in sorted(set(reads) - set(built) - set(writes) - set(WRITTEN_BY_TESTS))
    ]
    problems += [
        f"{attribute} is written by {sorted(built[attribute])} and read by no script and no stylesheet"
        for attribute in sorted(set(built) - set(reads) - css)
    ]
    problems += [
        f"{attribute} is written by {sorted(writes[attribute])} and read by no script, stylesheet or "
        "READ_BY_TESTS entry"
        for attribute in sorted(set(writes) - set(reads) - css - set(READ_BY_TESTS))
    ]
    problems += [
        f'[{attribute}="{value}"] is selected by {sorted(scripts)} and written by nothing'
        for (attribute, value), scripts in sorted(selected.items())
        if attribute in ("data-role", "data-action") and (attribute, value) not in built_values
    ]
    return problems


def test_every_data_attribute_read_is_written_and_every_one_written_is_read():
    reads, writes, selected = script_attributes(script_tokens())
    built, _ = built_attributes(build_sources())
    assert len(reads) >= 20 and len(built) >= 15 and len(selected) >= 10, (reads, built, selected)
    problems = unmatched(script_tokens(), build_sources())
    assert not problems, "\n".join(problems)


def test_the_tests_lists_name_attributes_the_tests_use():
    """WRITTEN_BY_TESTS and READ_BY_TESTS go when the tests stop using an attribute."""
    tests = "\n".join(path.read_text(encoding="utf-8") for folder in ("tests/browser", "benchmarks")
                      for path in (ROOT / folder).glob("*.py"))  # fmt: skip
    assert not [name for name in {**WRITTEN_BY_TESTS, **READ_BY_TESTS} if name not in tests]


@pytest.mark.parametrize(
    ("where", "old", "new", "said"),
    [
        ("_ext/live_code.py", '"data-wheels"', '"data-wheel-files"', "data-wheels is read by"),
        ("_ext/live_code.py", '"data-wheels"', '"data-wheel-files"', "data-wheel-files is written by"),
        ("course/chainrule_course/explore/widget.py", 'data-role="slider"', 'data-role="range"', '"slider"]'),
        ("course/chainrule_course/pages/live.js", '"data-live-clock"', '"data-live-timer"', "data-live-timer"),
    ],
    ids=["read-not-written", "written-not-read", "value-not-written", "script-written-not-read"],
)
def test_the_contract_can_fail(where: str, old: str, new: str, said: str):
    """An attribute renamed in one place breaks the contract, and the test says where."""
    sources, texts = dict(build_sources()), page_scripts()
    if where.endswith(".js"):
        assert texts[where].count(old) == 1
        texts[where] = texts[where].replace(old, new)
        tokens = tokenized(texts)
    else:
        assert old.strip('"') in sources[where]
        sources[where] = sources[where].replace(old.strip('"'), new.strip('"'))
        tokens = script_tokens()
    assert [problem for problem in unmatched(tokens, sources) if said in problem], unmatched(tokens, sources)


# --- the modules' imports and exports, and window ------------------------------------------------------
#: The names on window that the page's scripts share, each deliberately: who sets it, and why there.
WINDOW_HOOKS = {
    "chainruleExplorable": "explorable.js, a classic script that widget.py inlines into every widget's HTML "
    "(notebooks show it too), defines it once per page; drill.js and live_cells.js set up the widgets of "
    "an output with it",
}


def script_links(texts: dict[str, str]) -> dict[str, dict]:
    """What each script imports, exports and shares on window, read from espree's syntax tree by
    script_links.cjs (it says what each field holds)."""
    run = subprocess.run(
        ["node", str(Path(__file__).with_name("script_links.cjs"))], input=json.dumps(texts), capture_output=True,
        text=True, cwd=ROOT, timeout=60,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


@cache
def page_links() -> dict[str, dict]:
    return script_links(page_scripts())


def resolved(importer: str, source: str) -> str | None:
    """A relative import's module as a path from the root (``./python.js`` from pages/drill.js), or None
    for a bare name (CodeMirror's, through the import map)."""
    return posixpath.normpath(posixpath.join(posixpath.dirname(importer), source)) if source.startswith(".") else None


def broken_links(links: dict[str, dict]) -> list[str]:
    """What breaks the modules' contract, one line each: a name imported that its module does not
    export, an import whose names cannot be read, a factory's helpers not given or its functions not
    returned, a name set on window (or globalThis, or a module's self) not in WINDOW_HOOKS, and one
    read there that nothing sets."""
    problems = []
    for importer, found in sorted(links.items()):
        for entry in found["imports"]:
            module = resolved(importer, entry["source"])
            if module is None:
                continue
            if entry["unread"]:
                problems.append(f"{importer} imports {module}, but {entry['unread']}")
            missing = sorted(set(entry["names"]) - set(links.get(module, {}).get("exports", ())))
            if missing:
                problems.append(f"{importer} imports {missing} from {module}, which does not export it")
        for entry in found["calls"]:
            module = resolved(importer, entry["source"])
            made = links.get(module, {}).get("factories", {}).get(entry["name"]) if module else None
            if made:
                problems += factory_problems(importer, entry["name"], made, entry["calls"])
    set_, read = window_names(links)
    problems += [f"{sorted(where)} set window.{name}: not in WINDOW_HOOKS" for name, where in sorted(set_.items())
                 if name not in WINDOW_HOOKS]  # fmt: skip
    problems += [f"{where} sets window.{name}, but it is a module: export it" for name, scripts in sorted(set_.items())
                 for where in sorted(scripts) if links[where]["module"]]  # fmt: skip
    problems += [f"{sorted(where)} read window.{name}, which no script sets" for name, where in sorted(read.items())
                 if name not in set_]  # fmt: skip
    return problems


def factory_problems(importer: str, name: str, made: dict, calls: list[dict]) -> list[str]:
    """A factory's calls (script_links.cjs: factory, callsOf) against what it takes and returns."""
    problems = []
    for call in calls:
        given, read = set(call["given"] or ()), set(call["read"] or ())
        if call["given"] is not None and set(made["takes"]) - given:
            problems.append(f"{importer} calls {name} without {sorted(set(made['takes']) - given)}, which it reads")
        if call["given"] is not None and given - set(made["takes"]):
            problems.append(f"{importer} gives {name} {sorted(given - set(made['takes']))}, which it never reads")
        if read - set(made["returns"]):
            problems.append(
                f"{importer} reads {sorted(read - set(made['returns']))} of what {name} returns, which lacks it"
            )
    return problems


def window_names(links: dict[str, dict]) -> tuple[dict, dict]:
    """({name: {script}} set on window, {name: {script}} read there): on ``window`` or ``globalThis``,
    and on ``self`` in a module (a worker's ``self.onmessage`` is its own)."""
    set_, read = {}, {}
    for name, found in links.items():
        for entry in found["shared"]:
            if entry["on"] != "self" or found["module"]:
                (set_ if entry["set"] else read).setdefault(entry["name"], set()).add(name)
    return set_, read


def test_every_name_a_module_imports_is_exported_and_nothing_else_is_on_window():
    links = page_links()
    modules = {name for name, found in links.items() if found["module"]}
    imported = [name for found in links.values() for entry in found["imports"] for name in entry["names"]]
    factories = [name for found in links.values() for name in found["factories"]]
    assert len(modules) >= 8 and len(imported) >= 15 and len(factories) >= 2, (modules, imported, factories)
    assert not broken_links(links), "\n".join(broken_links(links))
    set_, read = window_names(links)
    assert set(set_) == set(WINDOW_HOOKS) and read, (set_, read)


PLANTED = "course/chainrule_course/pages/planted.js"


@pytest.mark.parametrize(
    ("where", "old", "new", "said"),
    [
        ("live.js", "python.inFlight()", "python.running()",
         "live.js imports ['running'] from course/chainrule_course/pages/python.js, which does not export it"),
        ("progress.js", "export function load() {", "export async function loaded() {",
         "drill.js imports ['load'] from course/chainrule_course/pages/progress.js"),
        ("live_cells.js", "then(function (editor) { return editor.makeCodeEditor; })",
         "then(function (editor) { return editor.makeEditor; })",
         "live_cells.js imports ['makeEditor'] from course/chainrule_course/pages/live_editor.js"),
        ("live_cells.js", "then(function (editor) { return editor.makeCodeEditor; })",
         "then(function (editor) { return editor; })", "live_editor.js, but editor itself is handed on"),
        ("live_cells.js", "makeEditor: makeEditor, ", "",
         "live.js reads ['makeEditor'] of what liveCells returns, which lacks it"),
        ("live.js", "save: save, runCells: runCells,", "save: save,", "live.js calls liveCells without ['runCells']"),
        ("live.js", "startLive: startLive, START", "startLive: startLive, unused: save, START",
         "live.js gives liveAnswers ['unused'], which it never reads"),
        ("progress.js", "export function load() {", "globalThis.chainruleLoad = load;\nexport function load() {",
         "progress.js sets window.chainruleLoad, but it is a module"),
        ("drill.js", "if (window.chainruleExplorable)", "if (window.chainruleWidgets)",
         "read window.chainruleWidgets, which no"),
    ],
    ids=["not-exported", "renamed-async", "dynamic-not-exported", "dynamic-unreadable", "factory-lacks",
         "helper-not-given", "helper-not-read", "globalThis", "window-read-not-set"],
)  # fmt: skip
def test_the_module_check_can_fail(where: str, old: str, new: str, said: str):
    """A name renamed or dropped on one side of a link breaks it, and the test says where."""
    texts = page_scripts()
    path = f"course/chainrule_course/pages/{where}"
    assert old in texts[path], old
    texts[path] = texts[path].replace(old, new, 1)
    problems = broken_links(script_links(texts))
    assert [problem for problem in problems if said in problem], problems


def test_the_module_reader_reads_every_form():
    """The forms a page script could use, each read: a default and named import, ``export async
    function``, a destructured export, ``export { a as b }``, a dynamic import awaited or destructured,
    and names set on globalThis and a module's self."""
    planted = (
        'import d, { a as b } from "./m.js";\n'
        'export async function f() { const m = await import("./n.js"); return m.q + b + d; }\n'
        'export async function g() { const { r } = await import("./o.js"); return r; }\n'
        "export const { z, y: [w] } = { z: 1, y: [2] };\nconst v = 3;\nexport { v as u };\n"
        "globalThis.one = 1;\nself.two = 2;\n"
    )
    found = script_links({PLANTED: planted})[PLANTED]
    assert sorted(found["exports"]) == ["f", "g", "u", "w", "z"]
    imports = {entry["source"]: sorted(entry["names"]) for entry in found["imports"]}
    assert imports == {"./m.js": ["a", "default"], "./n.js": ["q"], "./o.js": ["r"]}
    assert window_names(script_links({PLANTED: planted}))[0] == {"one": {PLANTED}, "two": {PLANTED}}


# --- the Python the scripts call ------------------------------------------------------------------------
IMPORT_FROM = re.compile(r"^\s*from ([\w.]+) import (\w+)(?: as (\w+))?", re.M)
IMPORT = re.compile(r"^\s*import ([\w., ]+)$", re.M)


def python_calls(tokens: dict) -> set[tuple[str, str | None]]:
    """(module, name) of each function or module a script uses in the page's Python; name None: the module.

    Found in the scripts' code: the Python source in their strings (``from m import f``, ``import m``, and
    ``f.name(`` after ``from m import f``); ``x = pyodide.pyimport("m")`` and then ``x.name``; and
    python.js's ``call("m", "name", args)``, or ``call("m", name, args)`` inside a script's own
    ``function call(name, args)``, which the script then calls as ``call("name", ...)``."""
    calls = set()
    for found in tokens.values():
        strings = [value for kind, value in found if kind in ("String", "Template")]
        aliases = {}
        for text in strings:
            for module, name, alias in IMPORT_FROM.findall(text.replace("\\n", "\n")):
                calls.add((module, name))
                aliases[alias or name] = f"{module}.{name}"
            for names in IMPORT.findall(text.replace("\\n", "\n")):
                calls.update((module.strip(), None) for module in names.split(","))
        for text in strings:
            for alias, name in re.findall(r"\b(\w+)\.(\w+)\(", text):
                if alias in aliases:
                    calls.add((aliases[alias], name))
        proxies = {}
        for i in range(len(found) - 4):
            window = [value for _, value in found[i : i + 5]]
            if window[1:4] == [".", "pyimport", "("] and found[i + 4][0] == "String":
                calls.add((window[4], None))
                if i >= 2 and found[i - 1][1] == "=":
                    proxies[found[i - 2][1]] = window[4]
            # python.js's call(module, name, args)
            if window[1:4] == [".", "call", "("] and found[i + 4][0] == "String":
                module, name = found[i + 4][1], found[i + 6]
                if name[0] == "String":
                    calls.add((module, name[1]))
                else:  # the name is the argument of the script's own call(name, args)
                    calls.update((module, value) for value in called_by_name(found))
        for i in range(len(found) - 2):
            if found[i][1] in proxies and found[i][0] == "Identifier" and found[i + 1][1] == ".":
                calls.add((proxies[found[i][1]], found[i + 2][1]))
    return calls


def called_by_name(found: list[tuple[str, str]]) -> set[str]:
    """The names a script passes to its own ``call(name, ...)``: ``call("ask", [...])``."""
    return {
        found[i + 2][1]
        for i in range(len(found) - 2)
        if found[i] == ("Identifier", "call") and found[i + 1][1] == "(" and found[i + 2][0] == "String"
        and (i == 0 or found[i - 1][1] != ".")
    }  # fmt: skip


def missing_python(calls: set[tuple[str, str | None]]) -> list[str]:
    missing = []
    for module, name in sorted(calls, key=str):
        try:
            imported = importlib.import_module(module)
        except ImportError:
            try:  # ``from package import module``
                importlib.import_module(f"{module}.{name}")
                continue
            except ImportError:
                missing.append(f"{module} does not import")
                continue
        if name is not None and not hasattr(imported, name):
            try:
                importlib.import_module(f"{module}.{name}")
            except ImportError:
                missing.append(f"{module}.{name} does not exist")
    return missing


def test_the_python_the_scripts_call_exists():
    calls = python_calls(script_tokens())
    named = {(module, name) for module, name in calls if name}
    assert len(named) >= 8, sorted(calls, key=str)
    assert not missing_python(calls), missing_python(calls)


def test_the_python_check_can_fail():
    """A function renamed in a script's call is missing from the package: the worker's, and a drill's."""
    texts = page_scripts()
    worker, drill = "course/chainrule_course/pages/live_worker.js", "course/chainrule_course/pages/drill.js"
    texts[worker] = texts[worker].replace("live.run_solution_cell(", "live.run_solutions_cell(")
    assert texts[drill].count('call("steps",') == 1
    texts[drill] = texts[drill].replace('call("steps",', 'call("show_steps",')
    assert missing_python(python_calls(tokenized(texts))) == [
        "chainrule_course.drills.page.show_steps does not exist",
        "chainrule_course.pages.live.run_solutions_cell does not exist",
    ]


def unshipped(links: dict[str, dict], page_modules: list[str], package_files: list[str]) -> list[str]:
    """The page modules imported by another that the build would not copy into the site
    (``_ext/live_code.PACKAGE_FILES``) or name in the pages' import map (``PAGE_MODULES``)."""
    problems = []
    for importer, found in sorted(links.items()):
        for entry in found["imports"]:
            module = resolved(importer, entry["source"])
            if module is None or not importer.startswith("course/chainrule_course/pages/"):
                continue
            name = posixpath.basename(module)
            for listed, where in ((page_modules, "PAGE_MODULES"), (package_files, "PACKAGE_FILES")):
                if name not in listed:
                    problems.append(f"{importer} imports {name}, which _ext/live_code.py's {where} lacks")
    return problems


def test_every_page_module_imported_is_shipped_and_in_the_import_map():
    """Without both, the import fails in the page (every drill dead) while make check and make book pass."""
    from _ext import live_code

    assert unshipped(page_links(), live_code.PAGE_MODULES, live_code.PACKAGE_FILES) == []
    texts = page_scripts()  # planted: a new module imported by drill.js, not listed
    texts["course/chainrule_course/pages/drill.js"] = (
        'import { note } from "./drill_note.js";\nnote();\n' + texts["course/chainrule_course/pages/drill.js"]
    )
    assert unshipped(script_links(texts), live_code.PAGE_MODULES, live_code.PACKAGE_FILES) == [
        "course/chainrule_course/pages/drill.js imports drill_note.js, which _ext/live_code.py's PAGE_MODULES lacks",
        "course/chainrule_course/pages/drill.js imports drill_note.js, which _ext/live_code.py's PACKAGE_FILES lacks",
    ]


def files_not_in_the_table(contributing: str, package_files: list[str]) -> list[str]:
    """The files the build copies into the site (``PACKAGE_FILES``) that CONTRIBUTING's table of what
    Live code ships does not name in its row for this repository's files."""
    row = next(
        (line for line in contributing.splitlines() if line.startswith("|") and "| this repository |" in line), ""
    )
    return [name for name in package_files if f"`{name}`" not in row]


def test_contributing_s_table_names_every_file_the_site_ships():
    from _ext import live_code

    text = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    missing = files_not_in_the_table(text, live_code.PACKAGE_FILES)
    assert missing == [], (
        f"add {missing} to the row 'this repository' of CONTRIBUTING.md's table of what Live code ships"
    )
    assert files_not_in_the_table(text, [*live_code.PACKAGE_FILES, "drill_note.js"]) == ["drill_note.js"]
