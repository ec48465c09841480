"""Every glossary term is explained before the core path uses it, or linked where it is used.

The glossary (``chapters/glossary.md``) says where each term is explained: the first section its
entry refers to (``see {ref}`sec-...```). Walking the numbered chapters in the table of contents'
order, a chapter's first use of a term in its core prose (not in an optional block, a solution,
or the exercises) before that section is a fault, unless that use is a link: ``{term}`...```
(to the glossary, which defines it and links the section) or a ``{ref}`` to the section itself.
After that first link, the chapter may use the term; from its section on, every chapter may.

Checked on the chapters as they are, and on a planted chapter to show that the check can fail.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from common import MYST_HEADER, ROOT, plant_book

from tools.book.book_model import numbered_chapters, read_chapter, read_toc
from tools.book.reading_time import SOLUTION  # a solution is not read straight through

ENTRY = re.compile(r"^([^\s].*)\n((?:[ \t]+.*\n?)+)", re.M)
SEE = re.compile(r"\{ref\}`(?:[^`<]*<)?([\w:-]+)>?`")
LABEL = re.compile(r"^\(([\w:-]+)\)=\s*$", re.M)
# What is not checked as prose: code, maths, roles other than {term}, directive lines, the title.
NOT_PROSE = re.compile(
    r"`[^`\n]*`(?<!\}`)|\$\$.*?\$\$|\$[^$\n]+\$|\\begin\{(\w+\*?)\}.*?\\end\{\1\}|^\s*[`:]{3,}[^\n]*$|^:\w[\w-]*:[^\n]*$"
    r"|^# [^\n]*$",  # a chapter's title names its subject: the chapter explains it
    re.S | re.M,
)
LINK = re.compile(r"\{(?:term|ref)\}`[^`]*`")
OPTIONAL = re.compile(r"^`{3,}\{optional-start\}.*?^`{3,}\{optional-end\}.*?$", re.M | re.S)


@dataclass(frozen=True)
class Term:
    name: str
    label: str  # the section that explains it


def glossary_terms(root: Path) -> list[Term]:
    """Each glossary entry's term and the first section it refers to."""
    text = (root / "chapters" / "glossary.md").read_text(encoding="utf-8")
    body = text[text.index("```{glossary}") :]
    terms = []
    for name, definition in ENTRY.findall(body):
        found = SEE.search(definition)
        if found and not name.startswith("```"):
            terms.append(Term(name.strip(), found[1]))
    return terms


def core_text(cells) -> list[str]:
    """The core prose of a chapter's Markdown cells, cell by cell, before its exercises."""
    texts = []
    for cell in cells:
        if cell.cell_type != "markdown" or "solution" in cell.metadata.get("tags", []):
            continue
        text, ends = re.subn(r"^## Exercises\s*$.*", "", cell.source, flags=re.M | re.S)
        texts.append(SOLUTION.sub("", text))
        if ends:
            break
    return [OPTIONAL.sub("", text) for text in ["\n".join(texts)]]


def pattern(term: Term) -> re.Pattern:
    words = r"\s+".join(re.escape(word) for word in term.name.split())
    return re.compile(rf"(?<![\w-]){words}(?:s|es)?(?![\w-])", re.IGNORECASE)


def line_of(root: Path, chapter: str, text: str, use: re.Match) -> int:
    """The line of the chapter's source where ``use`` (found in its prose ``text``) is."""
    before = text[max(0, use.start() - 60) : use.end()]
    source = (root / f"{chapter}.md").read_text(encoding="utf-8")
    at = source.find(before)
    return source.count("\n", 0, at + len(before)) + 1 if at >= 0 else 0


def used_before_explained(root: Path) -> list[str]:
    """The uses of a glossary term in core prose before the section that explains it, unlinked."""
    terms = glossary_terms(root)
    chapters = numbered_chapters(read_toc(root))
    texts = {chapter: core_text(read_chapter(root, chapter).cells)[0] for chapter in chapters}
    where = {}  # label -> (chapter's place, offset in its text)
    for place, chapter in enumerate(chapters):
        for label in LABEL.finditer(texts[chapter]):
            where.setdefault(label[1], (place, label.start()))
    faults = []
    for term in terms:
        if term.label not in where:
            faults.append(f"glossary: {term.name!r} refers to {term.label}, which no chapter's core text labels")
            continue
        explained = where[term.label]
        for place, chapter in enumerate(chapters[: explained[0] + 1]):
            prose = LINK.sub(lambda m: " " * len(m[0]), texts[chapter])
            prose = NOT_PROSE.sub(lambda m: " " * len(m[0]), prose)
            linked = [link.start() for link in LINK.finditer(texts[chapter]) if pattern(term).search(link[0])]
            use = pattern(term).search(prose)
            if use and (place, use.start()) < explained and not (linked and linked[0] < use.start()):
                faults.append(f"{chapter}.md:{line_of(root, chapter, texts[chapter], use)}: {use[0]!r} "
                              f"before {term.label} explains it")  # fmt: skip
    return faults


def test_no_term_is_used_before_it_is_explained():
    faults = used_before_explained(ROOT)
    assert faults == [], f"{len(faults)} uses:\n" + "\n".join(faults)


PLANTED = (
    MYST_HEADER
    + """
# First

A topological order is used here, unexplained; a {term}`topological order` is linked.

# Second

(sec-order)=
## Topological order

A topological order lists parents first.
"""
)


def test_the_check_fails_on_a_term_used_early(tmp_path: Path):
    chapters = plant_book(tmp_path, "one", PLANTED)
    glossary = "```{glossary}\nTopological order\n  Parents first; see {ref}`sec-order`.\n```\n"
    (chapters / "glossary.md").write_text(glossary, encoding="utf-8")
    assert used_before_explained(tmp_path) == ["chapters/one.md:14: 'topological order' before sec-order explains it"]
