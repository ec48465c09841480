"""Reading a notebook's cell: which of its statements are an exercise's answer, and what of the other cells
it carries with it.

The notebook's check and the grader both read cells with these functions
(:mod:`chainrule_course.grading.apart` runs what they choose), so that both run the same code
for an answer. A cell is read as IPython reads it (:func:`as_python`), each in one pass over its
statements: a cell of 100,000 lines is read in seconds.
"""

from __future__ import annotations

import builtins
import functools

from . import runner


def answer_code(source: str, names) -> str:
    """What of the cell ``source`` runs for the answer ``names`` (:func:`_answer_code`, once per cell and names)."""
    return _answer_code(source, tuple(names))


@functools.lru_cache(maxsize=64)
def _answer_code(source: str, names: tuple[str, ...]) -> str:
    """What of the cell ``source`` runs for the answer ``names``: every top-level statement that defines
    or fills one of those names, or a name such a statement reads, name by name. A statement defines
    a name wherever it binds it outside a function (a ``def`` under an ``if``, an import in a
    ``try``), and fills it when it stores into it (``table[k] = v`` in a ``for`` loop,
    ``table.update(...)``). The cell's other statements (a print, a test against the engine, a
    plot) do not run; the lines kept keep their numbers.

    A cell that is not Python (a syntax error) is the answer as it is: running it says where.
    """
    found = _answer_nodes(source, names)
    if found is None:
        return source
    kept, python, lines = found[0], as_python(source).splitlines(), source.splitlines()
    shown = [""] * len(lines)
    for node in kept:
        first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
        for number in range(first, node.end_lineno + 1):
            shown[number - 1] = python[number - 1]
    return "\n".join(shown).rstrip() + "\n"


@functools.lru_cache(maxsize=64)
def _answer_nodes(source: str, names: tuple[str, ...]):
    """The statements of the cell ``source`` that run for the answer ``names`` (:func:`_answer_code`), and the
    global reads of its functions; None for a cell that is not Python."""
    text, tree = _read(source)
    if tree is None:
        return None
    scopes = _global_reads(text)
    return _reached(tree.body, names, scopes), scopes


#: A timing magic and its options: the statement after it is kept (``%time x = f()`` binds x).
TIMING = r"(?m)^(\s*)%%?(?:time|timeit|prun)\b(?:\s+-\S+(?:\s+\d+)?)*\s*"


def as_python(source: str) -> str:
    """The cell ``source`` as Python, line for line, read as IPython reads it: a magic (``%timeit``), a shell
    escape (``!ls``, ``files = !ls``) or a help line (``np.maximum?``) becomes ``pass``, for it runs
    nothing of the answer; a timing magic keeps its statement; a line that only continues an
    expression (``!= b)``) is Python, and stays.

    A cell that is Python already is returned as it is. Where IPython is not installed (the web
    page's Python), lines that start with ``%`` or ``!`` are dropped, as a notebook would have them.
    """
    return _read(source)[0]


@functools.lru_cache(maxsize=32)
def _read(source: str):
    """The cell ``source`` as Python (:func:`as_python`) and its tree (None where it is not Python): each cell
    is parsed once, however many answers and checks read it."""
    import ast

    try:
        return source, ast.parse(source)
    except SyntaxError:
        python = _ipython(source)
    try:
        return python, ast.parse(python)
    except SyntaxError:
        return python, None


def _ipython(source: str) -> str:
    """``source``, which is not Python, as IPython reads it, line for line (:func:`as_python`)."""
    import re

    timed = re.sub(TIMING, r"\1", source)
    lines = timed.splitlines()
    try:
        from IPython.core.inputtransformer2 import TransformerManager

        read = TransformerManager().transform_cell(timed).splitlines()
    except ImportError:
        read = []
    if len(read) != len(lines):  # a cell magic, or no IPython: the lines IPython would not run go
        return "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in lines) + "\n"
    kept = []
    for line, python in zip(lines, read, strict=True):
        if "get_ipython()" in python and "get_ipython()" not in line:
            python = python[: len(python) - len(python.lstrip())] + "pass"
        kept.append(python)
    return "\n".join(kept) + "\n"


def _reached(statements: list, names, scopes: dict) -> list:
    """The ``statements`` that define or fill ``names``, and what those read, in order:
    every one that binds or fills a name, as the cell runs them."""
    bound = [set(_module_bindings(node)) for node in statements]
    setting: dict[str, list[int]] = {}  # name -> the statements that bind or fill it: one pass, not one per name
    for index, node in enumerate(statements):
        for name in bound[index] | _filled(node):
            setting.setdefault(name, []).append(index)
    wanted, kept, todo = set(), set(), list(names)
    while todo:
        name = todo.pop()
        if name in wanted:
            continue
        wanted.add(name)
        for index in setting.get(name, ()):
            if index not in kept:
                kept.add(index)
                todo += _reads(statements[index], scopes)
                todo += bound[index]  # what else it binds may be set up further down (getcontext().prec = 60)
    return [statements[index] for index in sorted(kept)]


def carried(cells: list[str], answer: str, names, allowed) -> str:
    """What of the notebook's other ``cells`` runs before the answer cell (:func:`_carried`, cached)."""
    return _carried(tuple(cells), answer, tuple(names), tuple(allowed))


@functools.lru_cache(maxsize=64)
def _carried(cells: tuple[str, ...], answer: str, names: tuple[str, ...], allowed: tuple[str, ...]) -> str:
    """What of the notebook's other ``cells`` runs before the answer cell ``answer``: the imports of the
    standard library and of the ``allowed`` modules, and the functions and classes (``def``,
    ``class``) of names that the answer (``names``) reads and its cell does not define, with what
    they read in turn. Assignments are not carried (a stash of a forbidden function is one): a name
    they bind is said to be another cell's.
    """
    import ast

    found = _answer_nodes(answer, tuple(names))
    if found is None:
        return ""
    own, scopes = found
    needed = {name for node in own for name in _reads(node, scopes)}
    needed -= {name for node in own for name in _module_bindings(node)} | set(dir(builtins))
    statements, scopes = [], {}
    for cell in cells:
        if cell != answer:
            body, reads = _parsed(cell)
            statements += body
            scopes.update(reads)

    def keep(node) -> bool:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return True
        modules = [a.name for a in node.names] if isinstance(node, ast.Import) else [getattr(node, "module", "")]
        return isinstance(node, (ast.Import, ast.ImportFrom)) and all(
            getattr(node, "level", 0) == 0 and (m.split(".")[0] in runner.STANDARD or m.split(".")[0] in allowed)
            for m in modules
            if m
        )

    chosen = _reached([node for node in statements if keep(node)], sorted(needed), scopes)
    return "\n\n".join(ast.unparse(node) for node in chosen) + ("\n" if chosen else "")


@functools.lru_cache(maxsize=64)
def _parsed(cell: str) -> tuple[list, dict]:
    """A cell's top-level statements and their functions' global reads (:func:`_global_reads`), read once
    for all the answers of a notebook; none for a cell that is not Python."""
    python, tree = _read(cell)
    return ([], {}) if tree is None else (tree.body, _global_reads(python))


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
    return dict(_top_level(source))


@functools.lru_cache(maxsize=64)
def _top_level(source: str) -> dict[str, str | None]:
    import re

    tree = _read(source)[1]
    if tree is None:  # the cell is still the answer's: running it says where the error is
        return {match: None for match in re.findall(r"(?m)^def\s+(\w+)|^(\w+)\s*=", source) for match in match if match}
    return {name: module for node in tree.body for name, module in _module_bindings(node).items()}
