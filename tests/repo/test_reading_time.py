"""The reading time a chapter states under its objectives (tools/book/reading_time.py): what it
counts, on a small chapter, and the table of the whole book."""

from __future__ import annotations

from pathlib import Path

from common import MYST_HEADER, ROOT

from tools.book.reading_time import Count, Reading, counted, reading, table

CHAPTER = (
    MYST_HEADER
    + """
# A small chapter

One two three {term}`four <four words>` five, and $x$ six.

```{code-cell} ipython3
print("shown")
```

```{optional-start} Under the hood
```

Four optional words here.

```{code-cell} ipython3
print("optional")
```

```{optional-end}
```

```{code-cell} ipython3
:tags: [remove-cell]

print("the book's own")
```

```{code-cell} ipython3
---
jupyter:
  source_hidden: true
---
print("folded")
```

+++ {"tags": ["solution"]}

Solution words are not read straight through.

+++

## Exercises

Exercise words are practice.

```{code-cell} ipython3
print("after the exercises")
```
"""
)


def test_a_chapter_s_reading_counts_its_prose_and_shown_cells_before_its_exercises(tmp_path: Path):
    (tmp_path / "chapters").mkdir()
    (tmp_path / "chapters" / "small.md").write_text(CHAPTER, encoding="utf-8")
    found = reading(tmp_path, "chapters/small")
    # "A small chapter" and the 7 words of the paragraph, and its formula, x; the block's title is not counted
    assert found == Reading(Count(words=10, formulas=1, symbols=1, cells=1), Count(words=4, cells=1)), found
    assert found.core.minutes == 11 / 200 + 0.5 and found.optional.minutes == 4 / 200 + 0.5
    assert found.sentence().endswith("the optional parts, folded, about 1 minute more.")


def test_words_leave_out_the_syntax_and_the_solutions():
    assert counted("(sec-x)=\n### Title\n\n```{note}\n:class: tip\nSee {numref}`fig-a`.\n```") == Count(words=3)
    assert counted("````{solution} ex-a\nHidden answer.\n````\nAfter.") == Count(words=1)


def test_a_formula_is_read_as_its_symbols_not_its_commands():
    text = "Then $\\bar{W}^{(2)} = \\bar{O}^{\\top} H$ and\n\n$$\nJ = L + \\tfrac{\\lambda}{2} s\n$$\n"
    assert counted(text) == Count(words=2, formulas=2, symbols=4 + 5)  # W 2 O H; J L 2 s, and \\lambda's nothing


def test_the_book_s_table_has_every_chapter_and_adds_up():
    rows = table(ROOT).splitlines()
    chapters = [row.split()[0] for row in rows[1:-1]]
    assert chapters[0] == "intro" and len(chapters) >= 14
    for column in (4, 7):  # the core's minutes, the optional blocks'
        minutes = [int(row.split()[column]) for row in rows[1:-1]]
        assert abs(sum(minutes) - int(rows[-1].split()[column])) <= len(minutes) / 2  # each row rounded
