"""An answer run apart: its cell alone, in a process of its own, with only what its exercise allows.

The notebook's check and the grader both call an answer through :class:`Answer`, so a notebook
"right" is a graded "right": the same cell, the same modules, the same encoder
(:mod:`chainrule_course.grading.runner`), the same messages (:func:`failure`). The grader adds its
sandbox around the process (``command``); a notebook runs it as a plain subprocess; where no
process can be started (the web page's Python), the cell runs in a namespace of its own with
the same import rule (:class:`InProcess`).

Here too is what turns a call's recorded entry back into a result or an error
(:func:`result_of`), for the check in the notebook and for the grader's replay alike.
"""

from __future__ import annotations

import builtins
import functools
import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from . import runner

RUNNER = Path(runner.__file__)
TIME_LIMIT = 10.0  # seconds a call may take (and a cell, to define its answer)
LINE_LIMIT = 64 * 2**20  # bytes of one reply: a larger one is refused
TOO_LARGE = object()  # what reading a reply longer than LINE_LIMIT gives
RESTARTS = 2  # fresh processes after one stopped (a crash costs the call that crashed)
#: How a notebook's first cell imports an allowed module: the answer cell starts with these names.
CUSTOMARY = {"math": "import math", "numpy": "import numpy as np", "chainrule": "from chainrule import Value"}
IN_PLACE = "an argument changed in place"
NOT_ALLOWED = "uses what the exercise does not allow"
ANOTHER_CELL = "uses a name from another cell"
RECURSION = "recursion too deep"


class TimeUp(Exception):
    """A call that did not return within its limit."""


class ChangedInPlace(Exception):
    """A call that changed its arguments (``positions``) in place."""

    def __init__(self, positions, rounded=()):
        super().__init__(f"changed the arguments at {list(positions)} in place")
        self.positions = list(positions)
        self.rounded = list(rounded)


class Refused(Exception):
    """An answer the rules refuse (an import, a name from another cell): its message is said as it is."""

    def __init__(self, message: str, mistake: str):
        super().__init__(message)
        self.mistake = mistake


@dataclass(frozen=True)
class Rule:
    """What an exercise's answer cell runs with: Python's standard library and the modules ``allowed``."""

    allowed: tuple[str, ...] = ()
    #: What of the notebook's other cells runs before the answer cell (:func:`carried`).
    carried: str = ""

    @property
    def prelude(self) -> str:
        return "".join(CUSTOMARY.get(name, f"import {name}") + "\n" for name in self.allowed) + self.carried

    def paths(self, folder: Path, folders=None) -> list[str]:
        """A folder of links to the allowed modules' packages (and numpy's ``numpy.libs``), made in ``folder``;
        ``folders(name)`` says where a module's are (default :func:`package_folders`)."""
        for name in self.allowed:
            for found in (folders or package_folders)(name):
                link = folder / found.name
                if not link.exists():
                    link.symlink_to(found, target_is_directory=True)
        return [str(folder)]


def package_folders(name: str) -> list[Path]:
    """Where module ``name`` lives, as folders to show an answer: its package, and ``<name>.libs`` beside it."""
    import importlib.util

    if name in runner.STANDARD:
        return []
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(f"the module {name} that an exercise allows is not installed here")
    package = Path(list(spec.submodule_search_locations)[0]).resolve()
    libs = package.parent / f"{name}.libs"
    return [package, *([libs.resolve()] if libs.is_dir() else [])]


# --------------------------------------------------------------------------- what of a cell is the answer


def answer_code(source: str, names) -> str:
    """What of the cell ``source`` runs for the answer ``names`` (:func:`_answer_code`, once per cell and names)."""
    return _answer_code(source, tuple(names))


@functools.lru_cache(maxsize=1024)
def _answer_code(source: str, names: tuple[str, ...]) -> str:
    """What of the cell ``source`` runs for the answer ``names``: every top-level statement that defines
    or fills one of those names, or a name such a statement reads, name by name. A statement defines
    a name wherever it binds it outside a function (a ``def`` under an ``if``, an import in a
    ``try``), and fills it when it stores into it (``table[k] = v`` in a ``for`` loop,
    ``table.update(...)``). The cell's other statements (a print, a test against the engine, a
    plot) do not run; the lines kept keep their numbers.

    A cell that is not Python (a syntax error) is the answer as it is: running it says where.
    """
    import ast

    lines = source.splitlines()
    python = [("" if line.lstrip().startswith(("%", "!")) else line) for line in lines]
    try:
        tree = ast.parse("\n".join(python))
    except SyntaxError:
        return source
    scopes = _global_reads("\n".join(python))
    kept = _reached(tree.body, names, scopes)
    shown = [""] * len(lines)
    for node in kept:
        first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
        for number in range(first, node.end_lineno + 1):
            shown[number - 1] = python[number - 1]
    return "\n".join(shown).rstrip() + "\n"


def _reached(statements: list, names, scopes: dict, keep=lambda node: True) -> list:
    """The statements (of those ``keep`` accepts) that define or fill ``names``, and what those read, in order:
    every one that binds or fills a name, as the cell runs them."""
    binds = [(node, set(_module_bindings(node)), _filled(node)) for node in statements]
    wanted, kept, todo = set(), set(), list(names)
    while todo:
        name = todo.pop()
        if name in wanted:
            continue
        wanted.add(name)
        for index, (node, bound, filled) in enumerate(binds):
            if (name in bound or name in filled) and index not in kept and keep(node):
                kept.add(index)
                todo += _reads(node, scopes)
                todo += bound  # what else it binds may be set up further down (getcontext().prec = 60)
    return [binds[index][0] for index in sorted(kept)]


def carried(cells: list[str], answer: str, names, allowed) -> str:
    """What of the notebook's other ``cells`` runs before the answer cell (:func:`_carried`, cached)."""
    return _carried(tuple(cells), answer, tuple(names), tuple(allowed))


@functools.lru_cache(maxsize=256)
def _carried(cells: tuple[str, ...], answer: str, names: tuple[str, ...], allowed: tuple[str, ...]) -> str:
    """What of the notebook's other ``cells`` runs before the answer cell ``answer``: the imports of the
    standard library and of the ``allowed`` modules, and the functions and classes (``def``,
    ``class``) of names that the answer (``names``) reads and its cell does not define, with what
    they read in turn. Assignments are not carried (a stash of a forbidden function is one): a name
    they bind is said to be another cell's.
    """
    import ast

    own = answer_code(answer, names)
    try:
        tree, scopes = ast.parse(own), _global_reads(own)
    except SyntaxError:
        return ""
    needed = {name for node in tree.body for name in _reads(node, scopes)}
    needed -= {name for node in tree.body for name in _module_bindings(node)} | set(dir(builtins))
    statements, scopes = [], {}
    for cell in cells:
        if cell == answer:
            continue
        python = "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in cell.splitlines())
        try:
            statements += ast.parse(python).body
            scopes.update(_global_reads(python))
        except SyntaxError:
            continue

    def keep(node) -> bool:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return True
        modules = [a.name for a in node.names] if isinstance(node, ast.Import) else [getattr(node, "module", "")]
        return isinstance(node, (ast.Import, ast.ImportFrom)) and all(
            getattr(node, "level", 0) == 0 and (m.split(".")[0] in runner.STANDARD or m.split(".")[0] in allowed)
            for m in modules
            if m
        )

    chosen = _reached(statements, sorted(needed), scopes, keep)
    return "\n\n".join(ast.unparse(node) for node in chosen) + ("\n" if chosen else "")


def _module_bindings(node) -> dict[str, str | None]:
    """The names a top-level statement binds outside any function or class body, each with the module
    it imports it from (None: the cell's own): a ``def`` under an ``if`` and an import in a ``try`` too."""
    import ast

    found = dict(_bound(node))
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return found
    if isinstance(node, (ast.For, ast.AsyncFor)):
        found.update({n.id: None for n in ast.walk(node.target) if isinstance(n, ast.Name)})
    for field in ("body", "orelse", "finalbody", "handlers", "cases"):
        for child in getattr(node, field, []) or []:
            found.update(_module_bindings(child))
    return found


def _filled(node) -> set[str]:
    """The names a top-level statement fills without binding them: ``table[k] = v``, ``table.append(v)``,
    ``table.x += 1``, ``getcontext().prec = 60`` (which sets up what ``getcontext`` gives), outside any
    function or class body."""
    import ast

    found = set()
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        if isinstance(item, (ast.Subscript, ast.Attribute)) and isinstance(item.ctx, (ast.Store, ast.Del)):
            base = item.value
            while isinstance(base, (ast.Subscript, ast.Attribute, ast.Call)):  # getcontext().prec = 60
                base = base.func if isinstance(base, ast.Call) else base.value
            if isinstance(base, ast.Name):
                found.add(base.id)
        if isinstance(item, ast.Expr) and isinstance(item.value, ast.Call):
            method = item.value.func
            if isinstance(method, ast.Attribute) and isinstance(method.value, ast.Name):
                found.add(method.value.id)
        stack.extend(ast.iter_child_nodes(item))
    return found


def _global_reads(source: str) -> dict:
    """For each function and class of a cell's top level (under an ``if`` too), by name, the global
    names its code reads."""
    import symtable

    def reads(table) -> set[str]:
        found = {symbol.get_name() for symbol in table.get_symbols() if symbol.is_global() and symbol.is_referenced()}
        for child in table.get_children():
            found |= reads(child)
        return found

    return {table.get_name(): reads(table) for table in symtable.symtable(source, "<cell>", "exec").get_children()}


def _reads(node, scopes: dict) -> list[str]:
    """The global names a top-level statement reads: a function's or class's from its scope (its
    parameters and locals are not the cell's names), its decorators' and defaults'; any other
    statement's names, and the scopes of the functions it defines."""
    import ast

    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        outside = [*node.decorator_list, *getattr(node, "bases", []), *_defaults(node)]
        loads = [n.id for part in outside for n in ast.walk(part) if isinstance(n, ast.Name)]
        return [*scopes.get(node.name, ()), *loads]
    found, stack = [], [node]
    while stack:
        item = stack.pop()
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found += _reads(item, scopes)
            continue
        if isinstance(item, ast.Name) and isinstance(item.ctx, ast.Load):
            found.append(item.id)
        stack.extend(ast.iter_child_nodes(item))
    return found


def _defaults(node) -> list:
    arguments = getattr(node, "args", None)
    return [*arguments.defaults, *(d for d in arguments.kw_defaults if d is not None)] if arguments else []


def _bound(node) -> dict[str, str | None]:
    """The names a top-level statement binds, when it is a definition, an import or an assignment,
    each with the module it imports it from (None: the cell's own)."""
    import ast

    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name: None}
    if isinstance(node, ast.Import):
        return {(alias.asname or alias.name).split(".")[0]: alias.name for alias in node.names}
    if isinstance(node, ast.ImportFrom):
        return {alias.asname or alias.name: node.module or "" for alias in node.names}
    if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return {n.id: None for target in targets for n in ast.walk(target) if isinstance(n, ast.Name)}
    return {}


def top_level(source: str) -> dict[str, str | None]:
    """The names a cell's top level binds, each with the module it imports it from (None: the cell's own).

    The notebook's check and the grader both read a cell so: to find the cell of an answer, and
    to say that a name the answer cell misses is another cell's.
    """
    import ast
    import re

    # A timing magic's statement is kept (``%time x = f()`` binds x); other magics are dropped.
    python = re.sub(r"(?m)^(\s*)%%?(?:time|timeit|prun)\b(?:\s+-\S+(?:\s+\d+)?)*\s*", r"\1", source)
    try:
        tree = ast.parse(re.sub(r"(?m)^\s*[%!].*$", "", python))
    except SyntaxError:  # the cell is still the answer's: running it says where the error is
        return {match: None for match in re.findall(r"(?m)^def\s+(\w+)|^(\w+)\s*=", source) for match in match if match}
    return {name: module for node in tree.body for name, module in _module_bindings(node).items()}


# --------------------------------------------------------------------------- a call's entry, as a result


def key(args: tuple, kwargs: dict) -> str:
    """The inputs of one call, as the text both sides compare."""
    return json.dumps([runner.encode(list(args)), runner.encode(kwargs)], sort_keys=True)


def result_of(name: str, entry: dict, elsewhere: dict | None = None):
    """What the call recorded in ``entry`` returned, decoded; raises what it raised, rebuilt."""
    if "error" in entry:
        raise failure(name, entry["error"], elsewhere or {})
    if "result" not in entry:
        raise runner.Unreadable(f"{name} did not return (its process stopped)")
    changed = entry.get("changed")
    if isinstance(changed, list) and changed and all(type(i) is int and i >= 0 for i in changed):
        rounded = entry.get("rounded")
        rounded = [i for i in rounded if type(i) is int and i in changed] if isinstance(rounded, list) else []
        raise ChangedInPlace(changed, rounded)
    return runner.decode(entry["result"])


def failure(name: str, error, elsewhere: dict) -> BaseException:
    """The exception a call raised, from its description ``error``; :class:`Refused` for what the rules refuse.

    ``elsewhere``: names the notebook defines outside the answer cell, each with the module it
    comes from (None for the notebook's own): a name the cell misses is one of them.
    """
    if not isinstance(error, dict):
        return runner.Unreadable("an error record that is not a dict")
    kind, message = str(error.get("type", "Exception")), str(error.get("message", ""))
    if kind == "NotAllowed":
        return Refused(message[:1].upper() + message[1:], NOT_ALLOWED)
    missing = error.get("name")
    if kind == "NameError" and isinstance(missing, str) and missing in elsewhere:
        return Refused(another_cell(name, missing, elsewhere[missing]), ANOTHER_CELL)
    if kind == "_TimeUp":
        return TimeUp()
    if kind == "RecursionLimit":
        return Refused(f"{name} {message}, so that an answer deeper than that must do without recursion.", RECURSION)
    rebuilt = _rebuilt(kind, message)
    rebuilt.where = str(error.get("where", ""))  # what calling.where() reports
    if error.get("asked_limit"):
        rebuilt.asked_limit = str(error["asked_limit"])[:40]
    if error.get("cell"):
        rebuilt.where = f" while its cell ran{rebuilt.where}"
    return rebuilt


def another_cell(name: str, missing: str, module: str | None) -> str:
    """What to say of ``missing``, a name the answer cell of ``name`` uses but another cell defines."""
    if module:
        return (
            f"{name} uses `{missing}`, which another cell imports: the answer cell runs on its own, with "
            "only what the exercise allows, so import in it what it needs."
        )
    return (
        f"{name} uses `{missing}`, which is defined in another cell: the answer cell runs on its own, "
        f"so move `{missing}` into the answer cell."
    )


def _rebuilt(name: str, message: str) -> BaseException:
    kind = getattr(builtins, name, None)
    if isinstance(kind, type) and issubclass(kind, Exception):
        try:
            return kind(message)
        except Exception:  # noqa: BLE001 - an exception type that wants other arguments
            pass
    if isinstance(kind, type) and issubclass(kind, BaseException):
        message = f"stopped the answer's process ({name}){message and ': ' + message}"
    safe = name if name.isidentifier() else "Error"
    return type(safe, (Exception,), {"__module__": "student"})(message)


# --------------------------------------------------------------------------- the answer's process


def python_command(executable: str = sys.executable, runner: Path = RUNNER) -> list[str]:
    """This Python, isolated and without site-packages, running the runner."""
    return [executable, "-I", "-S", str(runner)]


class Answer:
    """One answer cell in a process of its own: :meth:`call` sends it a call and waits for the reply.

    The process is :func:`python_command`; ``sandbox(shown, command)``, the grader's, wraps it in a
    sandbox that shows only the folders ``shown`` (the allowed modules and the runner) besides the
    system and the standard library. ``popen`` holds more arguments for :class:`subprocess.Popen`
    (the grader's limits). ``limit`` is each call's time, in seconds. ``copies`` (a
    :class:`chainrule_course.grading.permissions.Copies`) gives the runner and the allowed
    packages from a folder of their own, where the installed ones are hidden from the answer.
    """

    def __init__(self, source: str, rule: Rule, values=(), sandbox=None, popen=None, limit=TIME_LIMIT, copies=None):
        self.source, self.rule, self.values, self.limit = source, rule, list(values), limit
        import tempfile

        self.popen = popen or {}
        self._folder = tempfile.TemporaryDirectory(prefix="chainrule-answer-")
        os.chmod(self._folder.name, 0o755)  # the sandbox's user reads it
        folders = copies.package_folders if copies is not None else package_folders
        self.paths = rule.paths(Path(self._folder.name), folders)
        self.command = python_command(runner=copies.runner if copies is not None else RUNNER)
        if sandbox is not None:
            shown = [Path(self._folder.name), RUNNER, *(f for name in rule.allowed for f in package_folders(name))]
            self.command = sandbox(shown, python_command(os.path.realpath(sys.executable)))
        self.process = None
        self.told: dict = {}
        self.starts = 0
        self.timed_out = False
        self._buffer = b""

    def start(self) -> dict:
        """Start the process and send the cell; what it said once the cell ran (``ready``, ``values``, ...)."""
        import subprocess

        self.starts += 1
        self._buffer = b""
        self.process = subprocess.Popen(
            self.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, **self.popen
        )
        answer = {
            "source": self.source,
            "filename": "<answer cell>",
            "allowed": list(self.rule.allowed),
            "paths": self.paths,
            "prelude": self.rule.prelude,
            "values": self.values,
        }
        told = self._ask(answer)
        if told is None:
            told = {"ready": False, "error": self._stopped("while its cell ran")}
        if told.get("ready") is not True and isinstance(told.get("error"), dict):
            told["error"]["cell"] = True
        self.told = told
        return told

    def call(self, name: str, call_key: str) -> dict:
        """The entry of one call: ``result`` or ``error``, and ``changed`` (:mod:`chainrule_course.grading.runner`)."""
        if self.timed_out:  # it ran out of time once: do not wait for it again
            return {"error": {"type": "_TimeUp", "message": "", "where": ""}}
        if self.process is None or self.process.poll() is not None:
            if self.starts > RESTARTS:
                return {"error": self._stopped("before this call")}
            self.start()
        if not self.told.get("ready"):
            return {"error": dict(self.told.get("error", {}))}
        reply = self._ask({"name": name, "key": call_key})
        if reply is None:
            return (
                {"error": {"type": "_TimeUp", "message": "", "where": ""}}
                if self.timed_out
                else {"error": self._stopped("during this call")}
            )
        return reply

    def _ask(self, request: dict) -> dict | None:
        """Send ``request``; the reply, or None when the process stopped or ran out of time (then it is killed).

        Each request carries a fresh ``nonce`` that the runner's reply repeats: a line the answer wrote to
        the reply channel itself (it can reach every descriptor of its process) is not taken as a reply."""
        nonce = os.urandom(8).hex()
        try:
            self.process.stdin.write((json.dumps({**request, "nonce": nonce}) + "\n").encode())
            self.process.stdin.flush()
        except OSError:
            self._kill()
            return None
        deadline = time.monotonic() + self.limit
        while True:
            line = self._read_line(deadline)
            if line is None or line is TimeoutError:
                self.timed_out = line is TimeoutError
                self._kill()
                return None
            if line is TOO_LARGE:
                return {"error": {"type": "AnswerTooLarge", "message": "returned more than the grader reads"}}
            try:
                reply = json.loads(line)
            except ValueError:
                continue  # not the runner's
            if isinstance(reply, dict) and reply.pop("nonce", None) == nonce:
                return reply

    def _read_line(self, deadline: float):
        """The next line of the process's replies before ``deadline``: None at their end, TimeoutError (the
        class) when late, :data:`TOO_LARGE` past :data:`LINE_LIMIT` bytes."""
        import select

        descriptor = self.process.stdout.fileno()
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([descriptor], [], [], left)[0]:
                return TimeoutError
            chunk = os.read(descriptor, 2**20)
            if not chunk:
                return None
            self._buffer += chunk
            if len(self._buffer) > LINE_LIMIT:
                self._buffer = b""
                return TOO_LARGE
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line

    def _stopped(self, when: str) -> dict:
        code = self.process.poll() if self.process is not None else None
        how = f" (exit code {code})" if code not in (None, 0) else ""
        return {"type": "Stopped", "message": f"the answer's process stopped {when}{how}", "where": ""}

    def _kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
        if self.process is not None:
            self.process.wait()

    def close(self) -> None:
        if self.process is not None:
            for stream in (self.process.stdin, self.process.stdout):
                try:
                    stream.close()
                except OSError:
                    pass
            self._kill()
        self._folder.cleanup()


class InProcess:
    """The same cell and rule where no process can be started (the web page's Python): a namespace of its own."""

    def __init__(self, source: str, rule: Rule, values=()):
        self.source, self.rule, self.values = source, rule, list(values)
        self.namespace: dict = {}
        self.told: dict = {}
        self.timed_out = False

    def start(self) -> dict:
        scope = dict(vars(builtins))
        scope["__import__"] = runner.guarded_import(frozenset(self.rule.allowed))
        self.namespace = {"__name__": "__main__", "__builtins__": scope}
        answer = {"source": self.source, "prelude": self.rule.prelude, "values": self.values}
        self.told = runner.define(answer, self.namespace)
        if not self.told["ready"]:
            self.told["error"]["cell"] = True
        return self.told

    def call(self, name: str, call_key: str) -> dict:
        if not self.told:
            self.start()
        if not self.told.get("ready"):
            return {"error": dict(self.told["error"])}
        function = self.namespace.get(name)
        if not callable(function):
            return {"error": {"type": "NameError", "message": f"{name} is not defined", "where": ""}}
        limit = sys.getrecursionlimit()
        try:
            return runner.call(function, call_key, "<answer cell>")
        finally:
            sys.setrecursionlimit(limit)

    def close(self) -> None:
        self.namespace = {}


def can_start_processes() -> bool:
    """Whether this Python can start a process (not in the web page's)."""
    return sys.platform != "emscripten"
