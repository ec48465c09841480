"""What an answer's code uses: its definition in a notebook, and the notebook's code it reaches.

The grader reads a submitted notebook's code cells with :mod:`ast` (it never runs them) to
find whether an answer uses what its exercise does not allow (:func:`not_allowed_used`).
"""

from __future__ import annotations

import ast
import re

#: What no answer needs: the grader's modules and reference answers, and the frameworks that
#: the assignments are graded without (a notebook that removes the grader's import blocker
#: still uses them by name).
GRADER_NAMES = ("exercises", "otter_plugin", "d2l_gradients", "d2l_memory", "_REFERENCES", "torch", "jax", "tensorflow")


def answer_uses(cells: list[str], answers: list[str]) -> tuple[set[str], set[str]]:
    """The names and the attributes that the code of ``answers`` reads.

    ``cells`` are a notebook's code cells. The code of an answer is its top-level definition
    (a ``def``, or what is assigned to its name), and, transitively, the notebook's
    definitions of the names it reads (a helper, an import). An imported name counts as a
    name; a string that is one identifier (``getattr(v, "backward")``) as an attribute;
    a docstring as neither.
    """
    definitions: dict[str, list] = {}
    for source in cells:
        try:
            tree = ast.parse(re.sub(r"(?m)^\s*[%!].*$", "", source))  # IPython's magics and shell lines
        except SyntaxError:
            continue
        for node in _statements(tree.body):
            for defined in _defines(node):
                definitions.setdefault(defined, []).append(node)
    names: set[str] = set()
    attributes: set[str] = set()
    todo, seen = list(answers), set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for node in definitions.get(name, []):
            docstrings = {id(inner.value) for inner in ast.walk(node) if isinstance(inner, ast.Expr)}
            for inner in ast.walk(node):
                if isinstance(inner, ast.Name):
                    names.add(inner.id)
                    todo.append(inner.id)
                elif isinstance(inner, ast.alias):
                    names.update(inner.name.split("."))
                elif isinstance(inner, ast.ImportFrom) and inner.module:
                    names.update(inner.module.split("."))
                elif isinstance(inner, ast.Attribute):
                    attributes.add(inner.attr)
                elif isinstance(inner, ast.Constant) and isinstance(inner.value, str) and id(inner) not in docstrings:
                    attributes.update(word for word in re.findall(r"\w+", inner.value) if inner.value.isidentifier())
    return names, attributes


def _statements(body: list):
    """The statements of a cell, also those inside its ``if``, ``for``, ``while``, ``with`` and ``try`` blocks."""
    for node in body:
        yield node
        if isinstance(node, (ast.If, ast.For, ast.While, ast.With, ast.Try)):
            inner = [*node.body, *getattr(node, "orelse", []), *getattr(node, "finalbody", [])]
            inner += [statement for handler in getattr(node, "handlers", []) for statement in handler.body]
            yield from _statements(inner)


def _defines(node) -> list[str]:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return [(alias.asname or alias.name).split(".")[0] for alias in node.names]
    targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
    return [
        inner.id
        for target in targets
        if target is not None
        for inner in ast.walk(target)
        if isinstance(inner, ast.Name)
    ]


def not_allowed_used(cells: list[str], answers: list[str], paths: list[str]) -> list[str]:
    """What of ``paths`` (``chainrule.Value.backward``) and :data:`GRADER_NAMES` the code of ``answers`` uses.

    A method (its owner's name starts with a capital) is found as an attribute
    (``y.backward()``, ``getattr(y, "backward")``), so that a local variable called
    ``backward`` is no match; a function or a module as a name or an attribute
    (``topological_order(v)``, ``graph.topological_order(v)``).
    """
    names, attributes = answer_uses(cells, answers)
    found = []
    for path in [*paths, *GRADER_NAMES]:
        parts = path.split(".")
        method = len(parts) > 1 and parts[-2][:1].isupper()
        if parts[-1] in attributes or (not method and parts[-1] in names):
            found.append(path.removeprefix("chainrule."))
    return found
