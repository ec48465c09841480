"""Every framework call the core path uses is explained before it is used.

The course checks its gradients against PyTorch and JAX from its first chapter, so a reader
meets ``requires_grad`` or ``.item()`` long before the frameworks chapter takes them apart.
``EXPLAINED`` names, for each such call, the section whose core explains it first (a clause
where the call is first used is enough). Walking the numbered chapters in the table of
contents' order, through the core prose (inline code included) and the code cells a page
shows, outside optional blocks, solutions and the exercises, no use may come before that
section unless it is in that chapter's opening, whose objectives name what the chapter will
explain, or its chapter's first use links there (a ``{ref}`` to the section or to its chapter,
or a ``{doc}`` of its chapter, in the same paragraph). The section named must mention the call in its own core, so the
table cannot point at a section that says nothing about it.

Checked on the chapters as they are, and on a planted book to show that the check can fail.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from common import MYST_HEADER, ROOT, plant_book

from tools.book.book_model import numbered_chapters, read_chapter, read_toc
from tools.book.reading_time import EXERCISES, MARKER, SOLUTION, shown

#: A framework call and the label of the section whose core explains it first.
EXPLAINED = {
    "requires_grad": "sec-intro-taste",
    ".item()": "sec-intro-taste",
    "grad_fn": "sec-tensors-rules",
    "zero_grad": "sec-engine-twice",
    "retain_graph": "sec-frameworks-retain",
    "retain_grad": "sec-frameworks-retain",
    "no_grad": "sec-frameworks-graph",
    ".detach()": "sec-mlp-weight-decay",
    "torch.optim": "sec-mlp-overfit",
    "jax.grad": "chapter-forward",
    "jax.vjp": "chapter-forward",
    "jax.jvp": "chapter-forward",
    "jax.jit": "chapter-forward",
    "cost_analysis": "sec-forward-two-modes",
    "tracemalloc": "sec-cost-parts",
    "torch.autograd.gradcheck": "sec-frameworks-custom",
}
LABEL = re.compile(r"^\(([\w:-]+)\)=\s*$", re.M)
LINK = re.compile(r"\{(?:ref|numref|doc)\}`(?:[^`<]*<)?([\w:/.-]+)>?`")


@dataclass(frozen=True)
class Part:
    """A paragraph of a chapter's core prose, or a code cell its page shows."""

    chapter: str
    text: str
    code: bool
    opening: bool  # before the chapter's first section: its introduction and objectives


def core_parts(root: Path) -> list[Part]:
    """The core path of every numbered chapter in reading order, optional blocks left out."""
    parts = []
    for chapter in numbered_chapters(read_toc(root)):
        optional, opening = False, True
        for cell in read_chapter(root, chapter).cells:
            if not shown(cell):
                continue
            if cell.cell_type == "code":
                if not optional:
                    parts.append(Part(chapter, cell.source, code=True, opening=opening))
                continue
            text = EXERCISES.split(cell.source, maxsplit=1)[0]
            for n, piece in enumerate(MARKER.split(SOLUTION.sub("", text))):
                optional = optional if n == 0 else not optional
                if not optional:
                    for para in filter(str.strip, re.split(r"\n\s*\n", piece)):
                        opening = opening and not para.startswith("## ")
                        parts.append(Part(chapter, para, code=False, opening=opening))
            if text != cell.source:
                break
    return parts


def uses(call: str, text: str) -> bool:
    """Whether ``text`` uses ``call`` (``.item()`` also as ``x.item()``; ``no_grad`` not in ``torch.no_gradient``)."""
    before = "" if call.startswith(".") else r"(?<![\w])"
    return re.search(before + re.escape(call) + r"(?![\w])", text) is not None


def used_before_explained(root: Path, explained: dict[str, str]) -> list[str]:
    parts = core_parts(root)
    starts = {}  # label -> (the index of the part it labels, its chapter)
    for index, part in enumerate(parts):
        for label in LABEL.findall(part.text):
            starts.setdefault(label, (index, part.chapter))
    chapter_labels = {chapter: label for label, (_, chapter) in reversed(list(starts.items()))}
    faults = []
    for call, label in explained.items():
        if label not in starts:
            faults.append(f"{call}: {label!r} labels no section of a chapter's core")
            continue
        start, chapter = starts[label]
        end = next((i for i in range(start + 1, len(parts)) if LABEL.search(parts[i].text)), len(parts))
        if not any(uses(call, part.text) for part in parts[start:end]):
            faults.append(f"{call}: the core of {label} does not mention it")
        welcome = {label, chapter_labels[chapter], chapter.removeprefix("chapters/")}
        linked = set()  # chapters whose first use links to the explanation: their later uses need no link
        for part in parts[:start]:
            if not uses(call, part.text) or part.chapter in linked or (part.opening and part.chapter == chapter):
                continue
            if welcome & {link.split("/")[-1] for link in LINK.findall(part.text)}:
                linked.add(part.chapter)
            else:
                kind = "a code cell" if part.code else "prose"
                faults.append(f"{part.chapter}.md: {call} in {kind} before {label} explains it: {part.text[:60]!r}")
                break
    return faults


def test_every_framework_call_is_explained_before_it_is_used():
    faults = used_before_explained(ROOT, EXPLAINED)
    assert faults == [], f"{len(faults)} uses:\n" + "\n".join(faults)


PLANTED = (
    MYST_HEADER
    + """
# First

The opening may name `requires_grad`: the chapter explains it below.

## A start

```{code-cell} ipython3
x = 1.0  # requires_grad used here, unexplained
```

# Second

(sec-torch)=
## PyTorch

`requires_grad=True` asks PyTorch to record the operations.
"""
)


def test_the_check_fails_on_a_call_used_early(tmp_path: Path):
    plant_book(tmp_path, "one", PLANTED)
    assert used_before_explained(tmp_path, {"requires_grad": "sec-torch"}) == [
        "chapters/one.md: requires_grad in a code cell before sec-torch explains it: "
        "'x = 1.0  # requires_grad used here, unexplained'"
    ]
    missing = used_before_explained(tmp_path, {"requires_grad": "sec-none"})
    assert missing == ["requires_grad: 'sec-none' labels no section of a chapter's core"]
