"""An answer run apart: its cell alone, in a process of its own, with only what its exercise allows.

The notebook's check and the grader both call an answer through :class:`Answer`, so a notebook
"right" is a graded "right": the same cell, the same modules, the same encoder
(:mod:`chainrule_course.grading.wire`), the same messages (:func:`failure`). The grader adds its
sandbox around the process (``command``); a notebook runs it as a plain subprocess; where no
process can be started (the web page's Python), the cell runs in a namespace of its own with
the same import rule (:class:`InProcess`).

Here too is what turns a call's recorded entry back into a result or an error
(:func:`result_of`), for the check in the notebook and for the grader's replay alike.
"""

from __future__ import annotations

import builtins
import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING

from . import runner, wire
from .cells import answer_code, as_python, carried, top_level  # noqa: F401 - the check and the grader read cells so

if TYPE_CHECKING:  # imported where a process starts: the web page's Python has none
    import subprocess

#: The script an answer's process runs (:func:`python_command`).
RUNNER = Path(runner.__file__)
#: Every file of the runner: the script and what it loads from beside itself (the values sent to and from it,
#: as JSON). Wherever the runner is shown to a sandbox or copied for one, all of them go.
RUNNER_FILES = (RUNNER, Path(wire.__file__))
#: What the answer's process runs, from its text, to see what the answer does (``did``: observing.py's list).
OBSERVER = Path(__file__).with_name("observing.py")
TIME_LIMIT = 10.0  # seconds a call may take (and a cell, to define its answer)
LINE_LIMIT = 64 * 2**20  # bytes of one reply: a larger one is refused
TOO_LARGE = object()  # what reading a reply longer than LINE_LIMIT gives
RESTARTS = 2  # fresh processes after one stopped (a crash costs the call that crashed)
#: The exit code of the grader's launcher (grading/launch.py) when it could not set an answer's limits or
#: user: the answer never ran, so it is the grader's failure, not the answer's.
LAUNCH_FAILED = 125
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
class AnswerRule:
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


# --------------------------------------------------------------------------- a call's entry, as a result


def key(args: tuple, kwargs: dict) -> str:
    """The inputs of one call, as the text both sides compare."""
    return json.dumps([wire.encode(list(args)), wire.encode(kwargs)], sort_keys=True)


def result_of(name: str, entry: dict, elsewhere: dict | None = None):
    """What the call recorded in ``entry`` returned, decoded; raises what it raised, rebuilt."""
    if "error" in entry:
        raise failure(name, entry["error"], elsewhere or {})
    if "result" not in entry:
        raise wire.Unreadable(f"{name} did not return (its process stopped)")
    changed = entry.get("changed")
    if isinstance(changed, list) and changed and all(type(i) is int and i >= 0 for i in changed):
        rounded = entry.get("rounded")
        rounded = [i for i in rounded if type(i) is int and i in changed] if isinstance(rounded, list) else []
        raise ChangedInPlace(changed, rounded)
    return wire.decode(entry["result"])


def failure(name: str, error, elsewhere: dict) -> BaseException:
    """The exception a call raised, from its description ``error``; :class:`Refused` for what the rules refuse.

    ``elsewhere``: names the notebook defines outside the answer cell, each with the module it
    comes from (None for the notebook's own): a name the cell misses is one of them.
    """
    if not isinstance(error, dict):
        return wire.Unreadable("an error record that is not a dict")
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
    # Fields of the record that the answer's own exception type (ZeroDivisionError, ...) does not declare:
    # set by name here, read back with getattr (chainrule_course.exercises.calling).
    where = str(error.get("where", ""))  # what calling.where() reports
    setattr(rebuilt, "where", f" while its cell ran{where}" if error.get("cell") else where)
    if error.get("asked_limit"):
        setattr(rebuilt, "asked_limit", str(error["asked_limit"])[:40])
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
    sandbox that shows only the paths ``shown`` (the answer's folder, the allowed modules' folders and
    :data:`RUNNER_FILES`) besides the system and the standard library. ``popen`` holds more arguments
    for :class:`subprocess.Popen`, and under ``launcher`` a command put before the process's, which
    sets the grader's limits on it and then runs it (:mod:`chainrule_course.grading.launch`). ``limit``
    is each call's time, in seconds.
    ``copies`` (a :class:`chainrule_course.grading.permissions.Copies`) gives the runner's files and the
    allowed packages from a folder of their own, where the installed ones are hidden from the answer.
    """

    def __init__(
        self, source: str, rule: AnswerRule, values=(), sandbox=None, popen=None, limit=TIME_LIMIT, copies=None
    ):
        self.source, self.rule, self.values, self.limit = source, rule, list(values), limit
        import tempfile

        self.popen = popen or {}
        self._folder = tempfile.TemporaryDirectory(prefix="chainrule-answer-")
        os.chmod(self._folder.name, 0o755)  # the sandbox's user reads it
        folders = copies.package_folders if copies is not None else package_folders
        self.paths = rule.paths(Path(self._folder.name), folders)
        self.command = python_command(runner=copies.runner if copies is not None else RUNNER)
        if sandbox is not None:
            allowed = (f for name in rule.allowed for f in package_folders(name))
            shown = [Path(self._folder.name), *RUNNER_FILES, *allowed]
            self.command = sandbox(shown, python_command(os.path.realpath(sys.executable)))
        # Its pipes carry bytes; typed Popen[Any] only because mypy reads start()'s **popen as asking for text.
        self.process: subprocess.Popen | None = None
        self.told: dict = {}
        self.starts = 0
        self.timed_out = False
        self._buffer = b""

    def start(self) -> dict:
        """Start the process and send the cell; what it said once the cell ran (``ready``, ``values``, ...)."""
        import subprocess

        self.starts += 1
        self._buffer = b""
        popen = dict(self.popen)
        command = [*popen.pop("launcher", ()), *self.command]  # the grader's launcher sets the limits, then runs it
        process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, **popen
        )
        self.process = process
        answer = {
            "source": self.source,
            "filename": "<answer cell>",
            "allowed": list(self.rule.allowed),
            "paths": self.paths,
            "prelude": self.rule.prelude,
            "values": self.values,
            "observer": OBSERVER.read_text(encoding="utf-8"),
        }
        told = self._ask(answer)
        if told is None and process.returncode == LAUNCH_FAILED:
            raise subprocess.SubprocessError(
                f"the grader's launcher could not set the answer's limits or user (exit code {LAUNCH_FAILED}): "
                "this submission is for review, not scored"
            )
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
        requests, _ = self._pipes()
        try:
            requests.write((json.dumps({**request, "nonce": nonce}) + "\n").encode())
            requests.flush()
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

        _, replies = self._pipes()
        descriptor = replies.fileno()
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

    def _pipes(self) -> tuple[IO[bytes], IO[bytes]]:
        """The process's stdin and stdout: both pipes, from :meth:`start` on (only a started process is asked)."""
        if self.process is None or self.process.stdin is None or self.process.stdout is None:
            raise RuntimeError("the answer has no process to ask before start() opens its pipes")
        return self.process.stdin, self.process.stdout

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
                    if stream is not None:  # both pipes, as start() opens them
                        stream.close()
                except OSError:
                    pass
            self._kill()
        self._folder.cleanup()


class InProcess:
    """The same cell and rule where no process can be started (the web page's Python): a namespace of its own."""

    def __init__(self, source: str, rule: AnswerRule, values=()):
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
