"""Tests for chainrule_course.pages.live, the runner the "Live code" mode uses in the page (in Pyodide).

It runs here in CPython: a cell's prints, its last expression (shown as Jupyter shows
it), a ``;`` that hides it, one namespace across cells, and errors as one line that names
the exception and the cell's line.

tests/browser/test_live_browser.py runs it in Pyodide, in Chromium, on the built pages.
"""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

from common import ROOT

from chainrule import Value
from chainrule_course.pages import live


def run(source, namespace=None):
    return live.run_cell(source, live.new_namespace() if namespace is None else namespace)


def test_prints_and_the_last_expression_are_kept_apart():
    result = run("print('a')\nprint('b')\n6 * 7")
    assert result["stdout"] == "a\nb\n" and result["text"] == "42" and result["error"] is None


def test_a_semicolon_or_none_shows_nothing():
    assert run("6 * 7;")["text"] is None
    assert run("None")["text"] is None and run("x = 3")["text"] is None


def test_cells_share_one_namespace_in_order():
    namespace = live.new_namespace()
    run("from chainrule import Value\na = Value(2.0, label='a')", namespace)
    result = run("(a * a).data", namespace)
    assert result["text"] == "4.0"
    assert namespace["__name__"] == "__main__"


def test_a_value_with_an_html_view_is_shown_as_html():
    class Shown:
        def _repr_html_(self):
            return "<b>bold</b>"

    namespace = live.new_namespace()
    namespace["Shown"] = Shown
    assert run("Shown()", namespace)["html"] == "<b>bold</b>"
    assert run("Value(1.5)")["error"] == "NameError: name 'Value' is not defined (line 1: Value(1.5))"
    assert run("from chainrule import Value\nValue(1.5)")["text"] == repr(Value(1.5))


def test_an_error_is_one_line_with_the_cell_line_that_raised():
    result = run("x = 1\ny = 0\nprint('before')\nx / y\n")
    assert result["stdout"] == "before\n"
    assert result["error"] == "ZeroDivisionError: division by zero (line 4: x / y)"
    deep = run("def f(n):\n    return f(n - 1) if n else 1 / 0\nf(3)")
    assert deep["error"] == "ZeroDivisionError: division by zero (line 2: return f(n - 1) if n else 1 / 0)"


def test_an_engine_error_keeps_the_engines_message():
    result = run("from chainrule import Value\nValue(1.0) + 'a'")
    assert result["error"].startswith("TypeError: Value + (add): expected a real number")
    assert result["error"].endswith("(line 2: Value(1.0) + 'a')")


def test_syntax_errors_and_exit_do_not_escape():
    assert run("x = (1,\n")["error"].startswith("SyntaxError: ")
    assert run("raise SystemExit(3)")["error"] == "SystemExit: 3 (line 1: raise SystemExit(3))"
    assert run("import sys\nprint('oops', file=sys.stderr)")["stderr"] == "oops\n"


def test_shallow_release_frees_unused_values_and_keeps_used_ones():
    import chainrule.value as value_module

    original = value_module.Value.__dict__["from_op"]  # the staticmethod itself
    release = live.ShallowRelease(batch=1000)
    try:
        release.install(value_module.Value)
        namespace = live.new_namespace()
        result = live.run_cell(
            "from chainrule import Value\n"
            "def chain(n):\n    v = Value(0.5)\n    for _ in range(n):\n        v = v.tanh()\n    return v\n"
            "kept = chain(3000)\nchain(5000)\nNone",
            namespace,
            release=release,
        )
        assert result["error"] is None
        assert len(release.values) == 3000, "the unused chain of 5000 was not freed, or the kept one was"
        result = live.run_cell("kept.backward()\nkept = None", namespace, release=release)
        assert result["error"] is None and release.values == []
        # Values made while the cell runs are swept in batches, so a long loop does not hold them all.
        live.run_cell("for _ in range(30):\n    chain(200)", namespace, release=release)
        assert release.values == []
    finally:
        value_module.Value.from_op = original


def test_a_solution_cell_never_replaces_the_readers_answer():
    namespace, solutions = live.new_namespace(), {}
    run("def answer():\n    return 'mine'\nx = 1", namespace)
    result = live.run_solution_cell("def answer():\n    return 'key'\nhelper = x + 1\nanswer()", namespace, solutions)
    assert result["text"] == "'key'" and run("answer()", namespace)["text"] == "'mine'"
    assert "helper" not in namespace and solutions["helper"] == 2
    # A later solution sees the earlier solutions' names and the page's; the page sees neither.
    run("x = 10", namespace)
    assert live.run_solution_cell("helper, x", namespace, solutions)["text"] == "(2, 10)"


def test_an_exercise_checks_verdict_is_shown_as_jupyter_shows_it():
    from chainrule_course.exercises import answers

    namespace = live.new_namespace()
    namespace["AnswerError"] = answers.AnswerError
    error = run("raise AnswerError('q', 'q is wrong: expected 1, received 2.')", namespace)["error"]
    assert error == "AnswerError: q is wrong: expected 1, received 2."  # no "(line 1: ...)" after it


def test_the_editors_import_map_covers_every_import_and_the_lock_pins_it():
    """live.js imports CodeMirror unbundled, through the import map of _ext/live_code.py: every
    bare name that a copied module imports must be in it, and each package must be pinned in
    package.json and package-lock.json (with an integrity hash) at one version."""
    root = ROOT
    spec = importlib.util.spec_from_file_location("live_code", root / "_ext" / "live_code.py")
    live_code = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(live_code)
    modules = live_code.EDITOR_MODULES
    imported = set()
    for path in modules.values():
        source = (root / "node_modules" / path).read_text()
        imported |= set(
            re.findall(r"""(?:^|;)\s*(?:import|export)\b[^'";]*?from\s*['"]([^'"./][^'"]*)['"]""", source, re.M)
        )
    assert imported and not imported - set(modules), f"imported but not in the import map: {imported - set(modules)}"
    editor = (live_code.BOOK_PACKAGE / "live_editor.js").read_text()
    assert set(re.findall(r'from "([^"]+)"', editor)) <= set(modules)
    lock = json.loads((root / "package-lock.json").read_text())["packages"]
    pinned = json.loads((root / "package.json").read_text())["dependencies"]
    for name in modules:
        entry = lock[f"node_modules/{name}"]
        assert entry["integrity"].startswith("sha512-"), name
        if name in pinned:
            assert pinned[name] == entry["version"], (name, pinned[name], entry["version"])
    assert {"@codemirror/view", "@codemirror/lang-python", "@codemirror/commands"} <= set(pinned)


def test_stop_is_a_cells_error_not_the_end_of_python():
    """An interrupt (Stop, on an isolated page) ends the cell with a one-line error; the names bound
    before it stay."""
    namespace = live.new_namespace()
    live.run_cell("x = 41", namespace)
    stopped = live.run_cell("x += 1\nraise KeyboardInterrupt", namespace)
    assert stopped["error"] == "KeyboardInterrupt (line 2: raise KeyboardInterrupt)", stopped
    assert namespace["x"] == 42


def test_the_service_worker_is_versioned_by_the_runtime(tmp_path: Path):
    """The build writes service-worker.js with the fingerprint of _static/live/: a change to any
    file of the runtime gives the readers' browsers a new worker, which drops the old cache."""
    root = ROOT
    spec = importlib.util.spec_from_file_location("live_code", root / "_ext" / "live_code.py")
    live_code = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(live_code)
    runtime = tmp_path / "_static" / "live"
    runtime.mkdir(parents=True)
    (runtime / "pyodide.asm.wasm").write_bytes(b"one")

    def version() -> str:
        live_code.write_service_worker(root, tmp_path, runtime)
        found = re.findall(r'var VERSION = "([0-9a-f]{16})";', (tmp_path / "service-worker.js").read_text())
        assert len(found) == 1
        return found[0]

    first = version()
    assert version() == first
    (runtime / "pyodide.asm.wasm").write_bytes(b"two")
    assert version() != first


def test_start_page_draws_with_the_pages_graphviz():
    """The worker's set-up: figures go to the renderer it is given, not to the `dot` program."""
    from chainrule.figures import dot

    drawn = []
    original = Value.__dict__["from_op"]  # the staticmethod itself
    try:
        namespace, solutions, release = live.start_page(lambda source: drawn.append(source) or "<svg/>")
        graph = dot.Digraph("g")
        graph.edge("a", "b")
        assert graph.pipe() == "<svg/>" and drawn == [graph.source]
        assert live.run_cell("x = 2", namespace, release=release)["error"] is None and namespace["x"] == 2
        assert solutions == {} and isinstance(release, live.ShallowRelease)
    finally:
        dot.set_renderer(None)
        Value.from_op = original


def test_what_a_cell_prints_is_streamed_as_it_comes_and_still_comes_whole_with_its_result():

    posted = []
    live.stream_to(posted.append)
    try:
        source = "for i in range(6000):\n    print(i)"
        result = live.run_cell(source, live.new_namespace())
    finally:
        live.stream_to(None)
    streamed = "".join(posted)
    assert result["stdout"] == "".join(f"{i}\n" for i in range(6000)), "the result lost output"
    # What was posted is the output as printed, from its start; the first 5,000 writes at once.
    assert result["stdout"].startswith(streamed) and streamed.count("\n") >= 2500, streamed[-30:]
    assert len(posted) > 100, "not streamed: it came in one piece"
    assert live.run_cell("print(1)", live.new_namespace())["stdout"] == "1\n"
    assert len("".join(posted)) == len(streamed), "still streaming after stream_to(None)"
