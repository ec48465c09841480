"""The reading time a chapter states under its objectives (tools/book/reading_time.py): what it
counts, on a small chapter, and the table of the whole book."""

from __future__ import annotations

from pathlib import Path

from common import MYST_HEADER, ROOT

from tools.book.reading_time import Reading, reading, table, words

CHAPTER = (
    MYST_HEADER
    + """
# A small chapter

One two three {term}`four <four words>` five, and $x$ six.

```{code-cell} ipython3
print("shown")
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
    assert found == Reading(words=11, cells=1), found  # "A small chapter" and the 8 of the paragraph
    assert found.minutes == 11 / 200 + 0.5


def test_words_leave_out_the_syntax_and_the_solutions():
    assert words("(sec-x)=\n### Title\n\n```{note}\n:class: tip\nSee {numref}`fig-a`.\n```") == 3
    assert words("````{solution} ex-a\nHidden answer.\n````\nAfter.") == 1


def test_the_book_s_table_has_every_chapter_and_adds_up():
    rows = table(ROOT).splitlines()
    chapters = [row.split()[0] for row in rows[1:-1]]
    assert chapters[0] == "intro" and len(chapters) >= 14
    minutes = [int(row.split()[-1]) for row in rows[1:-1]]
    assert abs(sum(minutes) - int(rows[-1].split()[-1])) <= len(minutes) / 2  # each row rounded
