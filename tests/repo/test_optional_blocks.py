"""Optional blocks (_ext/optional_blocks.py) are never needed by a core path: a reader who skips
every block misses no name a later core cell uses, and no section, figure or equation a core
sentence refers to. Each block starts and ends once, in order.

Checked on the chapters as they are, and on planted chapters to show that each rule can fail.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from common import MYST_HEADER, ROOT, plant_book

from tools.book.book_model import numbered_chapters, read_chapter, read_toc

MARKER = re.compile(r"^(?:`{3,}|:{3,})\{optional-(start|end)\}(.*)$", re.M)
LABEL = re.compile(r"^\((\S+)\)=\s*$|^\s*:?(?:label|name):\s*(\S+)\s*$", re.M)
REFERENCE = re.compile(r"\{(?:ref|numref|eq)\}`(?:[^`<]*<)?([\w:-]+)>?`")


def names(source: str) -> tuple[set[str], set[str]]:
    """(the names a cell binds at its top level, the names it reads); IPython's % and ! lines left out.
    A function's or a comprehension's own locals bind nothing outside it."""
    code = "\n".join(line for line in source.splitlines() if not line.lstrip().startswith(("%", "!")))
    bound, read = set(), set()
    scopes = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda, ast.ListComp, ast.SetComp,
              ast.DictComp, ast.GeneratorExp)  # fmt: skip
    pending = list(ast.iter_child_nodes(ast.parse(code)))
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        if isinstance(node, scopes):  # its reads of outer names count; its own names stay inside it
            inner = [n for n in ast.walk(node) if isinstance(n, ast.Name)]
            own = {n.id for n in inner if isinstance(n.ctx, ast.Store)} | {
                a.arg for a in ast.walk(node) if isinstance(a, ast.arg)
            }
            read |= {n.id for n in inner if isinstance(n.ctx, ast.Load)} - own
            continue
        if isinstance(node, ast.Name):
            (bound if isinstance(node.ctx, ast.Store) else read).add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound |= {(alias.asname or alias.name).split(".")[0] for alias in node.names}
        pending.extend(ast.iter_child_nodes(node))
    return bound, read


def optional_faults(root: Path) -> list[str]:
    """What an optional block lends a core path, and the markers out of order."""
    faults, in_blocks, core_references = [], {}, []
    for chapter in numbered_chapters(read_toc(root)):
        block, core_bound, block_only = None, set(), {}
        for index, cell in enumerate(read_chapter(root, chapter).cells):
            if cell.cell_type == "markdown":
                position = 0
                for marker in [*MARKER.finditer(cell.source), None]:
                    text = cell.source[position : marker.start() if marker else None]
                    for label in LABEL.finditer(text):
                        if block:
                            in_blocks[label[1] or label[2]] = (chapter, block)
                    if not block:
                        core_references += [(chapter, target) for target in REFERENCE.findall(text)]
                    if marker is None:
                        break
                    position = marker.end()
                    starts, title = marker[1] == "start", marker[2].strip()
                    if starts == bool(block):
                        faults.append(f"{chapter}: cell {index}: optional-{marker[1]} inside {block!r}" if block
                                      else f"{chapter}: cell {index}: optional-end with no block open")  # fmt: skip
                    block = title if starts else None
            elif cell.cell_type == "code":
                bound, read = names(cell.source)
                if block:
                    block_only.update({name: block for name in bound - core_bound})
                else:
                    faults += [
                        f"{chapter}: cell {index} uses `{name}`, defined only in the optional block "
                        f"{block_only[name]!r}"
                        for name in sorted(read & set(block_only) - core_bound - bound)  # a cell's own names aside
                    ]
                    core_bound |= bound
        if block:
            faults.append(f"{chapter}: the optional block {block!r} has no optional-end")
    faults += [
        f"{chapter}: a core sentence refers to {target}, in the optional block {in_blocks[target][1]!r} "
        f"of {in_blocks[target][0]}"
        for chapter, target in core_references
        if target in in_blocks
    ]
    return faults


def test_no_core_path_needs_an_optional_block():
    assert optional_faults(ROOT) == []


PLANTED = (
    MYST_HEADER
    + """
# Planted

```{code-cell} ipython3
core = 1
```

```{optional-start} Under the hood
```

(sec-planted-deep)=
Deep text.

```{code-cell} ipython3
deep = core + 1
```

```{optional-end}
```

See {ref}`the deep part <sec-planted-deep>`.

```{code-cell} ipython3
print(deep, core)
```

```{optional-end}
```

```{optional-start} Never closed
```
"""
)


def test_each_rule_can_fail(tmp_path: Path):
    plant_book(tmp_path, "planted", PLANTED)
    assert optional_faults(tmp_path) == [
        "chapters/planted: cell 5 uses `deep`, defined only in the optional block 'Under the hood'",
        "chapters/planted: cell 6: optional-end with no block open",
        "chapters/planted: the optional block 'Never closed' has no optional-end",
        "chapters/planted: a core sentence refers to sec-planted-deep, in the optional block 'Under the hood' "
        "of chapters/planted",
    ]
