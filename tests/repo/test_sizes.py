"""Sizes a reader can hold in mind: modules and JavaScript files of at most 600 lines, Python
functions of at most 70, JavaScript functions of at most 80 (a file's outer wrapper excepted).

Nothing is over today. OVER is where an exception would be listed with its size, so that
the test fails when it grows; it stays empty.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from common import ROOT

MODULE_LINES, FUNCTION_LINES, JS_FUNCTION_LINES = 600, 70, 80
PYTHON = [
    *sorted((ROOT / "src").rglob("*.py")),
    *sorted((ROOT / "course").rglob("*.py")),
    *sorted((ROOT / "tools").rglob("*.py")),
    *sorted((ROOT / "_ext").glob("*.py")),
]
JAVASCRIPT = sorted((ROOT / "course").rglob("*.js"))  # the engine has none

#: What is over its limit, with its size (nothing is, now).
OVER: dict[str, int] = {}


def python_sizes(path: Path) -> dict[str, int]:
    """``{module: lines, module:function: lines}`` for what is over its limit in ``path``."""
    name = path.relative_to(ROOT).as_posix()
    text = path.read_text(encoding="utf-8")
    found = {name: len(text.splitlines())} if len(text.splitlines()) > MODULE_LINES else {}
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            lines = node.end_lineno - node.lineno + 1
            if lines > FUNCTION_LINES:
                found[f"{name}:{node.name}"] = lines
    return found


_TOKEN = re.compile(r"//[^\n]*|/\*.*?\*/|\"(?:\\.|[^\"\\])*\"|'(?:\\.|[^'\\])*'|[{}]|\bfunction\b", re.S)


def javascript_functions(text: str) -> list[tuple[int, int]]:
    """(first line, lines) of every function in ``text``, found by matching braces outside strings and comments."""
    found, stack, pending = [], [], None
    for token in _TOKEN.finditer(text):
        word = token.group()
        line = text.count("\n", 0, token.start()) + 1
        if word == "function":
            pending = line
        elif word == "{":
            stack.append(pending)
            pending = None
        elif word == "}":
            start = stack.pop()
            if start is not None:
                found.append((start, line - start + 1))
    assert not stack, "unbalanced braces"
    return found


def javascript_sizes(path: Path, root: Path = ROOT) -> dict[str, int]:
    name = path.relative_to(root).as_posix()
    total = len(path.read_text(encoding="utf-8").splitlines())
    functions = javascript_functions(path.read_text(encoding="utf-8"))
    # the outer wrapper, (function () { ... })(), spans the file: it is the module, not a function
    found = {
        f"{name}:line {start}": lines for start, lines in functions if lines > JS_FUNCTION_LINES and lines < total - 20
    }
    return found | ({name: total} if total > MODULE_LINES else {})


def test_nothing_new_is_over_its_limit_and_nothing_listed_has_grown():
    found = {}
    for path in PYTHON:
        found.update(python_sizes(path))
    for path in JAVASCRIPT:
        found.update(javascript_sizes(path))
    assert found == OVER, (
        f"new or grown: { {k: v for k, v in found.items() if OVER.get(k) != v} }; "
        f"gone or shrunk (update OVER): { {k: v for k, v in OVER.items() if found.get(k) != v} }"
    )


def test_the_measures_can_fail(tmp_path: Path):
    long_js = "(function () {\n" + "function a() {\n" + "  x('}{');\n" * 90 + "}\n" + "\n" * 30 + "})();\n"
    assert (2, 92) in javascript_functions(long_js)
    assert javascript_functions("var s = '{'; /* } */ function b() { return 1; }") == [(1, 1)]
    (tmp_path / "long.js").write_text("(function () {\n" + "  x();\n" * 600 + "})();\n")
    assert javascript_sizes(tmp_path / "long.js", tmp_path) == {"long.js": 602}
    long_py = "def f():\n" + "    x = 1\n" * 80
    assert ast.parse(long_py).body[0].end_lineno == 81  # what python_sizes measures: 81 lines > 70
