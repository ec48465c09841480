"""The incremental book build: each chapter executes once, and only when what it ran on changed.

``make book`` runs ``tools/book/build_book.py`` (``jupyter-book build`` with Sphinx's parallel
reading; Sphinx reads in parallel from six pages up, and under ``-W`` an extension that is
not safe for it fails the real build) with ``execute_notebooks: cache`` and
``_ext/incremental.py``. These
tests build a scratch book of two small chapters with the same tools and configuration,
and check, build after build:

* a first build executes both chapters and shows their outputs;
* a second build with nothing changed executes nothing;
* a change to a chapter's prose executes nothing; a change to its code executes it alone;
* a change to the engine (``execution_fingerprint_files``) executes every chapter again and
  the pages show the new outputs: no stale output reaches a page;
* a failing cell fails the build with the cell's source and error in the log, and fails
  the next build too, although nothing changed in between;
* a page whose link lost its target fails the build, although only the other page changed;
* every build writes the numbers Sphinx gave (``_ext/edition_numbers.py``), which the
  notebook editions print, and they are the page's.

The checks on the real book's outputs (every chapter executed, no unexpected error) are in
``test_execution.py``.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml
from common import MYST_HEADER, ROOT, book_config

EXECUTED = re.compile(r"(\S+)\.md: Executing notebook")
CHAPTER = (
    MYST_HEADER  # no braces: the whole is a format string
    + """
(sec-{name})=
# Chapter {name}

{prose}

```{{code-cell}} ipython3
import runpy, types
engine = types.SimpleNamespace(**runpy.run_path("../engine.py"))
print("{name} computes", engine.VALUE * {factor})
```
"""
)


#: Page b's prose: a link to page a, and an equation and a figure whose labels are not
#: their HTML ids (Sphinx turns "_" into "-").
PROSE_B = """Other prose; see {ref}`sec-a`.

$$
a + b
$$ (eq_b_sum)

```{figure} dot.svg
:name: fig_b

A dot.
```
"""
DOT = '<svg xmlns="http://www.w3.org/2000/svg" width="4" height="4"><circle cx="2" cy="2" r="2"/></svg>\n'


class ScratchBook:
    def __init__(self, root: Path):
        self.root = root
        (root / "chapters").mkdir(parents=True)
        (root / "engine.py").write_text("VALUE = 1\n")
        self.write_chapter("a", "Some prose.", 2)
        self.write_chapter("b", PROSE_B, 3)
        (root / "chapters" / "dot.svg").write_text(DOT)
        config = book_config()
        config["sphinx"]["extra_extensions"] = [
            "sphinx_exercise",
            "sphinx_togglebutton",
            *(f"_ext.{name}" for name in ("incremental", "parallel_reading", "edition_numbers", "prerendered_math")),
        ]
        config["sphinx"]["config"] = {"execution_fingerprint_files": ["engine.py"]}
        for key in ("bibtex_bibfiles", "html", "launch_buttons", "exclude_patterns"):
            config.pop(key, None)
        (root / "_config.yml").write_text(yaml.safe_dump(config))
        (root / "_toc.yml").write_text(
            yaml.safe_dump(
                {
                    "format": "jb-book",
                    "root": "chapters/a",
                    "parts": [{"numbered": True, "chapters": [{"file": "chapters/b"}]}],
                }
            )
        )

    def write_chapter(self, name: str, prose: str, factor: int, extra: str = "") -> None:
        text = CHAPTER.format(name=name, prose=prose, factor=factor) + extra
        (self.root / "chapters" / f"{name}.md").write_text(text)

    def build(self) -> tuple[int, str, set[str]]:
        """(exit status, log, names of the chapters that executed)."""
        run = subprocess.run(
            [
                sys.executable,
                "-m",
                "tools.book.build_book",
                "--jobs",
                "2",
                str(self.root),
                "-W",
                "-n",
                "--keep-going",
            ],
            capture_output=True,
            text=True,
            cwd=ROOT,  # python -m finds the tools and the extensions there
        )
        log = run.stdout + run.stderr
        return run.returncode, log, {Path(path).name for path in EXECUTED.findall(log)}

    def page(self, name: str) -> str:
        return (self.root / "_build" / "html" / "chapters" / f"{name}.html").read_text()


@pytest.fixture(scope="module")
def scratch_book(tmp_path_factory) -> ScratchBook:
    return ScratchBook(tmp_path_factory.mktemp("scratch-book"))


def built(book: ScratchBook) -> set[str]:
    status, log, executed = book.build()
    assert status == 0, log[-4000:]
    return executed


# The steps share one book and run in order (on one xdist worker: make test's --dist loadfile).


def test_the_first_build_executes_every_chapter(scratch_book):
    assert built(scratch_book) == {"a", "b"}
    assert "a computes 2" in scratch_book.page("a") and "b computes 3" in scratch_book.page("b")


def test_the_build_writes_the_numbers_the_page_shows(scratch_book):
    numbers = json.loads((scratch_book.root / "_build" / "numbers.json").read_text())
    assert numbers["chapters"] == {"chapters/b": "1"}
    assert numbers["numbered"] == {
        "chapters/b": {
            "equation-eq-b-sum": {"kind": "equation", "number": "1.1", "label": "eq_b_sum"},
            "fig-b": {"kind": "figure", "number": "1.1", "label": "fig_b"},
        }
    }
    page = scratch_book.page("b")
    assert re.search(r'id="equation-eq-b-sum".*?\(1\.1\)', page, re.DOTALL), "the page numbers the equation otherwise"
    assert re.search(r'id="fig-b".*?Fig\. 1\.1', page, re.DOTALL), "the page numbers the figure otherwise"


def test_nothing_changed_nothing_executes(scratch_book):
    assert built(scratch_book) == set()


def test_a_change_to_prose_executes_nothing(scratch_book):
    scratch_book.write_chapter("a", "Better prose.", 2)
    assert built(scratch_book) == set()
    assert "Better prose." in scratch_book.page("a") and "a computes 2" in scratch_book.page("a")


def test_a_change_to_code_executes_that_chapter_alone(scratch_book):
    scratch_book.write_chapter("a", "Better prose.", 5)
    assert built(scratch_book) == {"a"}
    assert "a computes 5" in scratch_book.page("a")


def test_a_change_to_the_engine_executes_every_chapter_again(scratch_book):
    (scratch_book.root / "engine.py").write_text("VALUE = 10\n")
    assert built(scratch_book) == {"a", "b"}
    assert "a computes 50" in scratch_book.page("a") and "b computes 30" in scratch_book.page("b")
    assert built(scratch_book) == set()


def test_a_failing_cell_fails_this_build_and_the_next(scratch_book):
    failing = textwrap.dedent("""
        ```{code-cell} ipython3
        denominator = 0
        ratio = engine.VALUE / denominator
        ```
        """)
    scratch_book.write_chapter("b", PROSE_B, 3, extra=failing)
    for attempt in ("first", "second"):
        status, log, _ = scratch_book.build()
        assert status != 0, f"the {attempt} build passed with a failing cell:\n{log[-3000:]}"
        assert "ratio = engine.VALUE / denominator" in log and "ZeroDivisionError" in log, log[-3000:]
    scratch_book.write_chapter("b", PROSE_B, 3)
    assert built(scratch_book) == set()  # the chapter as it was before is still in the cache


def test_a_link_that_lost_its_target_fails_although_its_page_did_not_change(scratch_book):
    """Page b links to a label of page a (the root, so not b's parent in the table of contents)."""
    chapter_a = scratch_book.root / "chapters" / "a.md"
    chapter_a.write_text(chapter_a.read_text().replace("(sec-a)=", "(sec-a-renamed)="))
    status, log, _ = scratch_book.build()
    assert status != 0 and "sec-a" in log and "b.md" in log, log[-3000:]
    chapter_a.write_text(chapter_a.read_text().replace("(sec-a-renamed)=", "(sec-a)="))
    assert built(scratch_book) == set()


def test_a_tex_error_fails_the_build_and_names_the_page(scratch_book):
    """The maths are typeset at build time (_ext/prerendered_math.py): an undefined macro is a
    warning naming the page and the TeX, so the build fails instead of drawing it in red."""
    chapter_b = scratch_book.root / "chapters" / "b.md"
    chapter_b.write_text(chapter_b.read_text().replace("a + b", r"a + \notamacro b"))
    status, log, _ = scratch_book.build()
    chapter_b.write_text(chapter_b.read_text().replace(r"a + \notamacro b", "a + b"))
    assert status != 0 and "chapters/b.html" in log and "Undefined control sequence" in log, log[-3000:]
    status, log, _ = scratch_book.build()
    page = (scratch_book.root / "_build" / "html" / "chapters" / "b.html").read_text(encoding="utf-8")
    assert status == 0 and "<mjx-assistive-mml" in page and "<mjx-tex" not in page, log[-3000:]


def test_a_single_page_build_leaves_the_site_numbers_alone(tmp_path):
    """make pdf (the singlehtml builder) runs beside the steps that read _build/numbers.json, so it
    neither deletes nor rewrites the numbers of the site build; a site build starts without them."""
    from _ext import edition_numbers

    numbers = tmp_path / "numbers.json"

    class Builder:
        format = "html"

    class App:
        builder = Builder()

    for name, outdir in (("singlehtml", "singlehtml"), ("html", "html")):
        numbers.write_text("the site's\n")
        App.builder.name, App.outdir = name, str(tmp_path / outdir)
        edition_numbers.forget_numbers(App())
        if name == "singlehtml":
            edition_numbers.write_numbers(App(), None)
            assert numbers.read_text() == "the site's\n"
    assert not numbers.exists()
