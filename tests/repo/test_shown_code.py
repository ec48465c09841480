"""The code the book shows reads well without its glue.

The site and the notebook editions show each code cell without its ``glue`` calls
(``tools.book.unglued.without_glue``), while the chapter runs as written. A value computed
only to be glued then shows as a name that nothing reads (``ratio = rows / batch``, and no
output), and a loop that only glued shows as a loop that does nothing. So, in the shown code of
every chapter, each name a cell binds at module level must be read afterwards: later in the
cell (anywhere in the loop that binds it, for a loop), in a later cell before it is bound
again, in a function of the chapter, or in an IPython line (``%timeit f(x)``). A glued value
the prose quotes and no code reads is printed, so the output shows the number; a name that
only built a glue key goes.

Not checked, since they read well: ``for step in range(n)``, a counted loop; ``x += 1``, which
changes ``x`` in place or reads it; a name beside a used one in an unpacking
(``C, vjp = jax.vjp(f, A)`` names what ``vjp`` returns); and functions, which exercises define
for checks to call by name.

The prose does not describe the glue either ("keeps the numbers for the text"): the reader
sees no glue, only what a cell prints and the numbers in the prose.
"""

from __future__ import annotations

import ast
import re

import jupytext
import pytest
from common import ROOT, pages_with_code

from tools.book.unglued import without_glue

#: A line of IPython, not Python: a magic (``%timeit``) or a shell command (``!ls``).
IPYTHON_LINE = re.compile(r"^\s*[%!]")
#: Prose about the glue: the roles that show glued numbers (``{glue:text}`key```) aside.
GLUE_ROLE = re.compile(r"\{glue(?::\w+)?\}`[^`]*`")
PLUMBING = re.compile(r"\bfor the text\b|\bglue", re.IGNORECASE)


def stored(target: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(target) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def module_reads(node: ast.AST, bound: frozenset[str] = frozenset()) -> list[ast.Name]:
    """The names ``node`` reads at module level: not in a function's body, nor a comprehension's own."""
    if isinstance(node, ast.Name):
        return [node] if isinstance(node.ctx, ast.Load) and node.id not in bound else []
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        outer = node.args.defaults + [d for d in node.args.kw_defaults if d] + getattr(node, "decorator_list", [])
        return [name for child in outer for name in module_reads(child, bound)]
    if isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
        bound = bound | {name for g in node.generators for name in stored(g.target)}
    target = node.target if isinstance(node, ast.AugAssign) else None
    reads = [target] if isinstance(target, ast.Name) and target.id not in bound else []  # x += 1 reads x
    return reads + [name for child in ast.iter_child_nodes(node) for name in module_reads(child, bound)]


def function_reads(tree: ast.AST) -> set[str]:
    """The module names the functions of ``tree`` read: their loads that are not their own locals."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            a = node.args
            local = {arg.arg for arg in a.posonlyargs + a.args + a.kwonlyargs + [a.vararg, a.kwarg] if arg}
            names = [n for n in ast.walk(node) if isinstance(n, ast.Name)]
            local |= {n.id for n in names if isinstance(n.ctx, ast.Store)}
            found |= {n.id for n in names if isinstance(n.ctx, ast.Load)} - local
    return found


def bindings(statements: list[ast.stmt], loop: ast.stmt | None = None):
    """(names, the node that binds them, the innermost loop around it) for each checked binding
    at module level, inside loops, ifs, withs and trys but not in functions."""
    for statement in statements:
        if isinstance(statement, ast.Assign):
            yield set().union(*map(stored, statement.targets)), statement, loop
        elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
            yield stored(statement.target), statement, loop
        elif isinstance(statement, (ast.Import, ast.ImportFrom)):
            yield {(a.asname or a.name).split(".")[0] for a in statement.names}, statement, loop
        elif isinstance(statement, (ast.For, ast.While)):
            counted = isinstance(statement.iter, ast.Call) and getattr(statement.iter.func, "id", "") == "range"
            if isinstance(statement, ast.For) and not counted:
                yield stored(statement.target), statement.target, statement
            yield from bindings(statement.body, statement)
            yield from bindings(statement.orelse, loop)
        elif isinstance(statement, (ast.If, ast.With, ast.Try)):
            for item in getattr(statement, "items", []):
                if item.optional_vars is not None:
                    yield stored(item.optional_vars), item.optional_vars, loop
            for block in [statement.body, getattr(statement, "orelse", []), getattr(statement, "finalbody", [])]:
                yield from bindings(block, loop)
            for handler in getattr(statement, "handlers", []):
                yield from bindings(handler.body, loop)


def rebinds(statement: ast.stmt, name: str) -> bool:
    """Whether the module-level ``statement`` surely binds ``name`` anew (before reading it, for a loop)."""
    if isinstance(statement, ast.Assign):
        return any(name in stored(target) for target in statement.targets)
    if isinstance(statement, ast.For):
        return name in stored(statement.target) and all(n.id != name for n in module_reads(statement.iter))
    if isinstance(statement, (ast.Import, ast.ImportFrom)):
        return any((a.asname or a.name).split(".")[0] == name for a in statement.names)
    return isinstance(statement, (ast.FunctionDef, ast.ClassDef)) and statement.name == name


def unread_bindings(cells: list[tuple[int, str]]) -> list[str]:
    """Each binding of the shown code ``cells`` (index, source) whose names nothing reads afterwards."""
    statements, ipython_words, free = [], [], set()  # statements: (cell index, statement, source)
    for index, source in cells:
        code = "\n".join("#" + line if IPYTHON_LINE.match(line) else line for line in source.split("\n"))
        try:
            tree = ast.parse(code)
        except SyntaxError:  # not Python: every word in it counts as read
            ipython_words.append((index, set(re.findall(r"\w+", source))))
            continue
        lines = [line for line in source.split("\n") if IPYTHON_LINE.match(line)]
        ipython_words.append((index, set(re.findall(r"\w+", "\n".join(lines)))))
        free |= function_reads(tree)
        statements += [(index, statement, source) for statement in tree.body]
    found = []
    for k, (index, top, source) in enumerate(statements):
        for names, node, loop in bindings([top]):
            end = (node.end_lineno, node.end_col_offset)
            inside = [n for n in module_reads(top) if n.id in names]
            read = {n.id for n in inside if (n.lineno, n.col_offset) > end}
            if loop is not None:  # the next time round, a loop reads what it bound before
                read |= {n.id for n in inside if loop.lineno <= n.lineno <= loop.end_lineno}
            read |= names & free
            read |= {name for i, words in ipython_words if i >= index for name in names & words}
            for name in names - read:
                for _, later, _ in statements[k + 1 :]:
                    if isinstance(later, ast.For) and rebinds(later, name):
                        break
                    if any(n.id == name for n in module_reads(later)):
                        read.add(name)
                        break
                    if rebinds(later, name):
                        break
            if names and not read & names and names != {"_"}:
                found.append(f"cell {index}: {source.split(chr(10))[node.lineno - 1].strip()}")
    return found


def shown_cells(notebook) -> list[tuple[int, str]]:
    return [(i, without_glue(cell.source)) for i, cell in enumerate(notebook.cells) if cell.cell_type == "code"]


def glue_in_prose(notebook) -> list[str]:
    found = []
    for cell in notebook.cells:
        if cell.cell_type == "markdown":
            text = GLUE_ROLE.sub("", cell.source)
            found += [line.strip() for line in text.splitlines() if PLUMBING.search(line)]
    return found


@pytest.mark.parametrize("page", pages_with_code())
def test_every_name_the_shown_code_binds_is_read(page: str):
    found = unread_bindings(shown_cells(jupytext.read(ROOT / f"{page}.md")))
    assert not found, (
        f"{page}.md: without its glue, the shown code binds names that nothing reads afterwards. Print a "
        "glued value the prose quotes, and glue a key's parts directly:\n" + "\n".join(found)
    )


@pytest.mark.parametrize("page", pages_with_code())
def test_the_prose_does_not_describe_the_glue(page: str):
    found = glue_in_prose(jupytext.read(ROOT / f"{page}.md"))
    assert not found, f"{page}.md: the prose tells of glue the reader does not see:\n" + "\n".join(found)


PLANTED = """\
The next cell keeps the numbers for the text:

```{code-cell} ipython3
for key, name in [("a", "first"), ("b", "second")]:
    count, size = kept[name]
    glue(f"policy-{key}", count)
ratio = glue("ratio", 2 / 3)
shown = glue("shown", 1 / 3)
label, total = "x", 0
for step in range(3):
    total += step
for t in [1, 2]:
    last = t
```

```{code-cell} ipython3
print(shown, [label for label in "ab"], total)
def f():
    return last
shown = 2
```
"""


def test_the_checks_can_fail():
    planted = jupytext.reads(PLANTED, fmt="md:myst")
    assert unread_bindings(shown_cells(planted)) == [
        "cell 1: count, size = kept[name]",
        "cell 1: ratio = 2 / 3",
        "cell 2: shown = 2",
    ]
    assert glue_in_prose(planted) == ["The next cell keeps the numbers for the text:"]
