"""A code cell without the book's glue, for the notebook editions.

The book's cells hand the numbers its prose quotes to ``glue`` (:mod:`chainrule_course.pages.glue`);
in the Colab and student notebooks the prose holds those numbers already, and the calls are noise
to a learner. :func:`without_glue` takes them out of a cell's code and leaves the rest as written:

- ``from chainrule_course.pages.glue import glue`` goes;
- a statement ``glue("name", value)`` goes, and a loop or ``with`` left with nothing else goes too
  (the values glued are computed where the reader needs them, or are plain expressions);
- ``x = glue("name", value)``, or a ``glue(...)`` inside an expression, becomes ``value``.

A cell that is not Python (IPython syntax) is left as it is.
"""

from __future__ import annotations

import ast
import re
from typing import TypeGuard

MODULE = "chainrule_course.pages.glue"


def _is_glue(node) -> TypeGuard[ast.Call]:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "glue"


def _dropped(statement) -> bool:
    """Whether ``statement`` only glues: a glue call, the import of glue, or a block of such statements."""
    if isinstance(statement, ast.Expr) and _is_glue(statement.value):
        return True
    if isinstance(statement, ast.ImportFrom) and statement.module == MODULE:
        return all(alias.name == "glue" for alias in statement.names)
    if isinstance(statement, (ast.For, ast.With, ast.If)) and not getattr(statement, "orelse", []):
        return all(_dropped(inner) for inner in statement.body)
    return False


def _blocks(statement) -> list[list]:
    """The blocks of statements inside ``statement`` (a loop's body, a ``try``'s handlers' bodies, ...)."""
    blocks = [getattr(statement, field, None) for field in ("body", "orelse", "finalbody")]
    blocks += [handler.body for handler in getattr(statement, "handlers", [])]
    blocks += [case.body for case in getattr(statement, "cases", [])]
    return [block for block in blocks if isinstance(block, list) and block]


def _span(node: ast.stmt | ast.expr) -> tuple[int, int, int, int]:
    """(line, column, end line, end column) of ``node``: ast.parse gives every node its end."""
    if node.end_lineno is None or node.end_col_offset is None:
        raise ValueError(f"without_glue: the node at line {node.lineno} has no end position")
    return node.lineno, node.col_offset, node.end_lineno, node.end_col_offset


def without_glue(source: str) -> str:
    """``source`` with the book's glue taken out (see the module)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source
    lines = source.splitlines(keepends=True)
    gone: set[int] = set()  # indexes of the lines that go
    # (line, column, end line, end column, text): glue(...) inside an expression
    edits: list[tuple[int, int, int, int, str]] = []

    def walk(statements, keep_one: bool = False) -> None:
        for statement in statements:
            if _dropped(statement) and not (keep_one and statement is statements[0] and all(map(_dropped, statements))):
                gone.update(range(statement.lineno - 1, statement.end_lineno))
                continue
            if _dropped(statement):  # a block that would be empty keeps a pass
                edits.append((*_span(statement), "pass"))
                continue
            blocks = _blocks(statement)
            for block in blocks:
                walk(block, keep_one=True)
            inner = {id(s) for block in blocks for s in block}
            for child in ast.iter_child_nodes(statement):
                if id(child) in inner or isinstance(child, (ast.ExceptHandler, ast.match_case)):
                    continue
                for node in ast.walk(child):
                    if _is_glue(node) and len(node.args) >= 2:
                        value = ast.get_source_segment(source, node.args[1])
                        if value is None:  # only for a node without positions, which ast.parse does not make
                            raise ValueError(f"without_glue: no source for the value glued at line {node.lineno}")
                        edits.append((*_span(node), value))

    walk(tree.body)
    encoded = [line.encode() for line in lines]
    for line, column, end_line, end_column, text in sorted(edits, reverse=True):
        if any(edit[0] <= line and (edit[0], edit[1]) < (line, column) and edit[2] >= end_line for edit in edits):
            continue  # inside another glue call, which takes it with its value
        first, last = encoded[line - 1], encoded[end_line - 1]
        encoded[line - 1 : end_line] = [first[:column] + text.encode() + last[end_column:]]
        gone = {i if i < line - 1 else i - (end_line - line) for i in gone if not line - 1 < i < end_line}
    kept = "".join(part.decode() for i, part in enumerate(encoded) if i not in gone)
    kept = re.sub(r"\n{4,}", "\n\n\n", kept)  # at most the two blank lines between functions
    return kept.strip("\n") + ("\n" if source.endswith("\n") and kept.strip() else "")
