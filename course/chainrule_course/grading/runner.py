"""The answer runner: one answer cell, run apart, where only what its exercise allows exists.

This file is the untrusted side of grading, with :mod:`chainrule_course.grading.wire` (the values
sent to and from it, as JSON), which it loads from beside itself. Both import nothing but the
standard library, so that it runs as ``python -I -S runner.py``: isolated (no environment
variables, no user site, not its own folder) and without ``site`` (no site-packages), on a path
made of the standard library and the folders of the modules the exercise allows
(:mod:`chainrule_course.grading.apart` builds it). The notebook's check and the grader start it
the same way; the grader adds a sandbox around it, and shows it both files
(:data:`chainrule_course.grading.apart.RUNNER_FILES`).

The protocol is one JSON document per line:

1. it reads the answer: ``source`` (the answer cell), ``filename``, ``allowed`` (the modules it may
   import besides the standard library), ``paths`` (where they are), ``prelude`` (their imports,
   as a notebook's first cell has them), ``values`` (answers that are values, not functions)
   and ``observer`` (the text of :mod:`chainrule_course.grading.observing`, run apart from the answer);
2. it runs the cell in a fresh namespace and says ``ready``, with the encoded ``values``, or the
   ``error`` the cell raised;
3. only then is it sent the calls, one at a time (``name``, ``key``: the encoded arguments); for
   each it answers ``result`` (encoded: :func:`chainrule_course.grading.wire.encode`) or ``error``,
   ``changed`` (the positions of the arguments the answer changed in place) and ``did`` (what the
   observer saw).

Each reply carries what the answer printed (``printed``, its first :data:`PRINT_LIMIT` characters,
and how many more were ``cut``), in a process of its own and in the web page's Python alike.

The caller keeps the time: a call that does not answer within its limit is stopped from outside.
The recursion limit is Python's default during every call, whatever the cell set: a call's
``sys.setrecursionlimit`` changes nothing (the reply says what it asked for). In the answer's
own process the interpreter enforces it: the limit is fixed before anything of the answer's
arrives, and every way back to the real setter is gone (:func:`_fix_recursion_limit`); an audit
hook, which cannot be removed and reads nothing the answer can change, refuses what could
raise it again, and processes (:func:`_guard`). No verdict of this process's is needed, so none
can be replaced: a search that calls itself fails on any input deeper than 1,000. (A trace
function also counts the depth, for the message; in the web page's Python, where nothing is
graded, it is the rule.)
"""

from __future__ import annotations

import builtins
import contextlib
import copy
import json
import math
import os
import sys
import traceback

# encode, decode and Unreadable (the values sent between the grader and this process, as JSON) live in
# wire.py, beside this file. Imported as a module of its package (by apart, and in the web page's
# Python), the runner takes it from the package. Run as a script (python -I -S runner.py), this file's
# folder is not on sys.path, and it is not put there: that would let an answer import, or read by name,
# whatever lies beside the runner (the grader's other modules, where it runs from the installed
# package). So wire.py is loaded from its path alone, and the grader ships and shows the two files
# together (apart.RUNNER_FILES).
if __package__:
    from . import wire
else:
    import importlib.util

    _path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "wire.py")
    _spec = importlib.util.spec_from_file_location("wire", _path)
    if _spec is None or _spec.loader is None:
        raise ImportError(f"the runner cannot load {_path}")
    wire = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(wire)  # FileNotFoundError, naming wire.py, where it was not shipped

RECURSION_LIMIT = 1000  # Python's default
PRINT_LIMIT = 2000  # characters of what an answer prints that a reply carries
STANDARD = frozenset(getattr(sys, "stdlib_module_names", ())) | {"__future__"}
OBSERVER = "<observer>"  # the file name of the grader's observer (``observer``: what it sends of observing.py)


class NotAllowed(ImportError):
    """An import that the exercise does not allow."""


# --------------------------------------------------------------------------- what an answer may import


def refusal(name: str, allowed) -> str:
    """The message of an import that the exercise does not allow."""
    may = ", ".join(sorted(allowed))
    return (
        f"your answer uses {name}, which this exercise does not allow: its answer cell runs with "
        f"{may + ' and ' if may else ''}Python's standard library only."
    )


def guarded_import(allowed, real=builtins.__import__):
    """``__import__`` that refuses every module but the standard library's and ``allowed``'s."""

    def __import__(name, globals=None, locals=None, fromlist=(), level=0):  # noqa: A001, A002
        top = name.partition(".")[0]
        if level == 0 and top not in STANDARD and top not in allowed:
            shown = f"{name}.{fromlist[0]}" if fromlist and fromlist[0] != "*" else name
            raise NotAllowed(refusal(shown, allowed), name=name)
        return real(name, globals, locals, fromlist, level)

    return __import__


class _Refuse:
    """A finder first on ``sys.meta_path``: what ``importlib`` loads passes the same rule."""

    def __init__(self, allowed):
        self.allowed = allowed

    def find_spec(self, name, path=None, target=None):
        top = name.partition(".")[0]
        if top not in STANDARD and top not in self.allowed:
            raise NotAllowed(refusal(name, self.allowed), name=name)
        return None


# --------------------------------------------------------------------------- one answer


def where(error: BaseException, filename: str) -> str:
    """ " in line 3 of f (`return 1 / 0`)": the deepest frame of the answer cell."""
    frames = [frame for frame in traceback.extract_tb(error.__traceback__) if frame.filename == filename]
    if not frames:
        return ""
    frame = frames[-1]
    return f" in line {frame.lineno} of {frame.name} (`{frame.line}`)" if frame.line else f" in {frame.name}"


def described(error: BaseException, filename: str) -> dict:
    """An exception as data: its type's name, its message, where in the cell, and a missing name."""
    found: dict = {"type": type(error).__name__, "message": str(error)[:2000], "where": where(error, filename)}
    if isinstance(error, NameError) and isinstance(getattr(error, "name", None), str):
        found["name"] = error.name
    if isinstance(error, NotAllowed):
        found["type"], found["rule"] = "NotAllowed", True
    return found


class Printed:
    """Stands for ``sys.stdout`` while the answer runs: keeps the first :data:`PRINT_LIMIT` characters and
    counts the rest, so that an answer that prints in a loop neither floods a page nor slows a check."""

    def __init__(self):
        self.kept, self.size, self.cut = [], 0, 0

    def write(self, text) -> int:
        text = str(text)
        room = max(PRINT_LIMIT - self.size, 0)
        self.kept.append(text[:room])
        self.size += min(len(text), room)
        self.cut += max(len(text) - room, 0)
        return len(text)

    def flush(self) -> None:
        pass

    def told(self, entry: dict) -> dict:
        """``entry`` with what was printed, if anything: ``printed`` and the characters ``cut``."""
        if self.size or self.cut:
            entry["printed"], entry["cut"] = "".join(self.kept), self.cut
        return entry


@contextlib.contextmanager
def _printed():
    """Within the block, what is printed (to stdout or stderr) is kept by a :class:`Printed`."""
    printed, before = Printed(), (sys.stdout, sys.stderr)
    sys.stdout = sys.stderr = printed
    try:
        yield printed
    finally:
        sys.stdout, sys.stderr = before


def define(answer: dict, namespace: dict) -> dict:
    """Run the answer cell (and its prelude) in ``namespace``; what the caller is told, and what it printed."""
    with _printed() as printed:
        return printed.told(_define(answer, namespace))


def _define(answer: dict, namespace: dict) -> dict:
    import linecache

    filename = str(answer.get("filename") or "<answer cell>")
    source = str(answer.get("source", ""))
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    try:
        exec(compile(str(answer.get("prelude", "")), "<prelude>", "exec"), namespace)  # noqa: S102
        exec(compile(source, filename, "exec"), namespace)  # noqa: S102 - the answer, in its own process
    except BaseException as error:  # noqa: BLE001 - the cell's error is the answer's verdict
        return {"ready": False, "error": described(error, filename)}
    values = {}
    for name in answer.get("values", []):
        if name in namespace:
            try:
                values[name] = wire.encode(namespace[name])
            except wire.Unreadable as error:
                values[name] = {"t": "other", "type": f"value with {error}"[:60]}
    return {"ready": True, "values": values}


class _KeptLimit:
    """Stands for ``sys.setrecursionlimit`` while an answer is called: the limit stays; what was asked is kept."""

    def __init__(self):
        self.asked = None

    def __call__(self, limit) -> None:
        self.asked = limit


@contextlib.contextmanager
def _kept_limit(watch=None):
    """The context of a call: the recursion limit is :data:`RECURSION_LIMIT` (in the answer's own process it is
    fixed already, :func:`_fix_recursion_limit`), ``sys.setrecursionlimit`` changes nothing (it only notes
    what it was asked), and the depth of the answer's calls is counted, so that a call deeper than the limit
    fails even if the limit was raised another way (and put back)."""
    set_limit = sys.setrecursionlimit  # the real one in the web page's Python; a stand-in in the process
    kept, depth = _KeptLimit(), _Depth(watch)
    set_limit(RECURSION_LIMIT)
    depth.expected = sys.getrecursionlimit()
    sys.setrecursionlimit = kept
    previous = sys.gettrace()
    sys.settrace(depth.call)
    try:
        yield kept, depth
    finally:
        depth.removed = sys.gettrace() != depth.call  # by a recursion too deep for it, or by the answer
        sys.settrace(previous)
        sys.setrecursionlimit = set_limit


#: Frames between the runner's serve() and an answer's first frame (serve, call, _called), and room for the
#: trace function's own frames and the observer's: the limit fixed for the answer's process counts from serve().
FRAMES_ABOVE = 3 + 8


def _fix_recursion_limit() -> None:
    """Fix Python's recursion limit for the life of this process, where the answer cannot reach it: set it so
    that an answer's calls may go :data:`RECURSION_LIMIT` deep, then drop every way back to the real setter
    (``sys.setrecursionlimit`` becomes a stand-in that only notes what it is asked; ``_imp.create_builtin``,
    which would copy ``sys``'s first dictionary back, goes, once every built-in module is loaded). The
    interpreter itself then stops any recursion deeper than that, whatever the answer does: its Python
    cannot raise the limit (:func:`_guard` refuses ctypes, the garbage collector's lists and new code
    objects, which could)."""
    import _imp
    import types  # loaded already by the imports above: only a name, for the annotation below

    for name in sys.builtin_module_names:
        __import__(name)
    frame: types.FrameType | None = sys._getframe(1)  # noqa: SLF001 - the caller's depth: serve()'s
    depth = 0
    while frame is not None:
        frame, depth = frame.f_back, depth + 1
    sys.setrecursionlimit(RECURSION_LIMIT + depth + FRAMES_ABOVE)
    sys.setrecursionlimit = _KeptLimit()
    del _imp.create_builtin


class _Depth:
    """A trace function that counts how deep the answer's Python calls go (the lines are not traced)."""

    def __init__(self, watch=None):
        self.depth, self.deepest, self.removed, self.expected = 0, 0, False, RECURSION_LIMIT
        self.watch = watch  # the observer's (chainrule_course.grading.observing), told of each call

    def call(self, frame, event, arg):
        if event != "call" or frame.f_code.co_filename == OBSERVER:  # its copies of math are not the answer's
            return None
        if self.watch is not None:
            self.watch.call(frame)
        self.depth += 1
        self.deepest = max(self.deepest, self.depth)  # judged after the call (a trace function that raised
        frame.f_trace_lines = False  # would be removed, and the answer could catch what it raised)
        return self.returned

    def returned(self, frame, event, arg):
        if event == "return":
            self.depth -= 1
        return self.returned


def _limit_changed(entry: dict, kept: _KeptLimit, depth: _Depth) -> dict:
    """``entry``, told what the answer asked of the recursion limit, or failed if it went deeper than the
    limit (caught or not) or changed the limit anyway."""
    too_deep = depth.deepest > RECURSION_LIMIT or (depth.removed and "result" in entry)
    if too_deep and entry.get("error", {}).get("type") != "RecursionError":
        message = (
            f"maximum recursion depth exceeded: the calls went more than {RECURSION_LIMIT:,} deep, or the "
            "trace function that counts them was removed"
        )
        entry = {"error": {"type": "RecursionError", "message": message, "where": ""}}
    if kept.asked is not None and "error" in entry:
        entry["error"]["asked_limit"] = str(kept.asked)[:40]
    if sys.getrecursionlimit() != depth.expected:
        message = f"changed Python's recursion limit to {sys.getrecursionlimit():,}; the checks keep it at "
        entry = {"error": {"type": "RecursionLimit", "message": message + f"{RECURSION_LIMIT:,}", "where": ""}}
    return entry


def call(function, key: str, filename: str, watch=None) -> dict:
    """One call of the answer on the encoded arguments ``key``: what it returned or raised, what it changed, and
    what the observer's ``watch`` saw it do."""
    try:
        args, kwargs = (wire.decode(part) for part in json.loads(key))
    except Exception as error:  # noqa: BLE001 - inputs this process cannot read (numpy not allowed, say)
        return {"error": {"type": "Unreadable", "message": str(error)[:300], "where": ""}}
    before = [wire.encode(argument) for argument in args]
    given = copy.deepcopy(args)
    with _kept_limit(watch) as (kept, depth), _printed() as printed:
        entry = _called(function, given, kwargs, filename)
        entry = printed.told(_limit_changed(entry, kept, depth))
    entry = watch.told(entry) if watch is not None else entry
    changed = [i for i, argument in enumerate(given) if _encoded(argument) != before[i]]
    if changed:
        entry["changed"] = changed
        entry["rounded"] = [i for i in changed if _rounded(before[i], _encoded(given[i]))]
    return entry


def _called(function, given: list, kwargs: dict, filename: str) -> dict:
    """What ``function(*given, **kwargs)`` returned (encoded) or raised."""
    try:
        result = function(*given, **kwargs)
    except BaseException as error:  # noqa: BLE001 - written down for the caller, which explains it
        entry = {"error": described(error, filename)}
    else:
        try:
            entry = {"result": wire.encode(result)}
        except wire.Unreadable as error:
            kind = "AnswerTooLarge" if "numbers" in str(error) else "Unreadable"
            entry = {"error": {"type": kind, "message": f"returned {error}", "where": ""}}
        except BaseException as error:  # noqa: BLE001 - a generator that raised while it was read
            entry = {"error": described(error, filename)}
    return entry


def _encoded(value):
    try:
        return wire.encode(value)
    except Exception:  # noqa: BLE001 - an argument the answer replaced by something unreadable
        return None


def _rounded(before, after) -> bool:
    """Whether the encoded array ``after`` differs from ``before`` only by rounding (``x += h; x -= h``)."""
    if not (isinstance(before, dict) and isinstance(after, dict) and before.get("t") == after.get("t") == "array"):
        return False
    if before["shape"] != after["shape"] or before["dtype"] != after["dtype"]:
        return False
    return all(
        isinstance(a, float) and isinstance(b, float) and math.isclose(a, b, rel_tol=1e-12, abs_tol=0.0)
        for a, b in zip(before["v"], after["v"], strict=True)
    )


#: What no answer needs, refused by an audit hook for the life of the answer's process: starting processes
#: (where a recursion would go uncounted), and what could raise the fixed recursion limit: reaching C through
#: ctypes (all of it but loading a library, which importing numpy does), the garbage collector's lists
#: (which hold ``sys``'s first dictionary, with the real setter) and new code objects.
REFUSED_EVENTS = frozenset(
    {"subprocess.Popen", "os.system", "os.exec", "os.spawn", "os.posix_spawn", "os.fork", "os.forkpty", "pty.spawn"}
) | {"gc.get_objects", "gc.get_referrers", "gc.get_referents", "code.__new__"}
#: Modules not imported: CPython's own tests' and subinterpreters (each with a recursion limit of its own), and
#: the C part of subprocess, which starts a process without the event subprocess.Popen raises.
REFUSED_MODULES = frozenset({"_xxsubinterpreters", "_xxinterpchannels", "_posixsubprocess"}) | {
    f"_{name}" for name in ("testcapi", "testinternalcapi", "testmultiphase", "ctypes_test")
}


def _guard():
    """Add the audit hook of :data:`REFUSED_EVENTS` and :data:`REFUSED_MODULES` to this process, for its whole
    life: an audit hook cannot be removed, and this one reads nothing an answer can change (no global, no
    state), so that nothing the answer does switches it off."""

    def hook(event, args, refused=REFUSED_EVENTS, modules=REFUSED_MODULES, error=PermissionError):
        if event in refused or (event.startswith("ctypes.") and event != "ctypes.dlopen"):
            raise error(f"an answer may not use {event}: it needs neither processes nor ctypes")
        if event == "import" and args[0] in modules:
            why = "it starts processes (subprocess imports it)" if "process" in args[0] else "an answer needs none"
            raise error(f"an answer may not import {args[0]}: {why}")

    sys.addaudithook(hook)


def serve(requests, reply) -> None:
    """Read the answer, then the calls, from ``requests`` (lines); ``reply`` writes one line of data."""
    _fix_recursion_limit()  # before anything of the answer's reaches the process
    _guard()
    answer = json.loads(next(requests))
    allowed = frozenset(answer.get("allowed", []))
    sys.path.extend(str(path) for path in answer.get("paths", []))
    sys.meta_path.insert(0, _Refuse(allowed))
    filename = str(answer.get("filename") or "<answer cell>")
    observer: dict = {}  # what observing.py's text defines, run apart from the answer
    exec(compile(str(answer.get("observer", "")), OBSERVER, "exec"), observer)  # noqa: S102 - the grader's
    watch = observer["Watch"](filename) if "Watch" in observer else None
    scope = dict(vars(builtins))
    scope["__import__"] = observer["importer"](guarded_import(allowed), watch) if watch else guarded_import(allowed)
    namespace = {"__name__": "__main__", "__builtins__": scope}
    told = define(answer, namespace)
    reply({**told, "nonce": answer.get("nonce")})
    if not told["ready"]:
        return
    for line in requests:
        request = json.loads(line)
        function = namespace.get(request.get("name"))
        if not callable(function):
            entry = {"error": {"type": "NameError", "message": f"{request.get('name')} is not defined", "where": ""}}
        else:
            entry = call(function, str(request.get("key")), filename, watch)
        reply({**entry, "nonce": request.get("nonce")})  # the caller takes only a line with its nonce


def main() -> None:
    """Serve on stdin and a private copy of stdout; the answer's own output goes to stderr."""
    out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr

    def reply(data: dict) -> None:
        out.write(json.dumps(data) + "\n")
        out.flush()

    serve(iter(sys.stdin.readline, ""), reply)


if __name__ == "__main__":
    main()
