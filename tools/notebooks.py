"""Generate the notebook editions of the chapters (`make notebooks`).

``chapters/<name>.md`` (MyST Markdown notebooks) are the one source people write. From
each numbered chapter of ``_toc.yml`` this writes

* ``chapters/<name>.ipynb``, the **Colab edition**: every cell of the chapter, no outputs,
  solutions folded (a collapsed "Solution" section in Colab, hidden code in JupyterLab);
* ``student/chapters/<name>.ipynb``, the **student edition**: the same without any
  solution cell, and an answer cell (text, and code when the solution had code) under
  each exercise. A code answer cell raises ``NotImplementedError("Exercise 6.3 ...")``
  until the student replaces it.

Colab shows MyST as raw text, so the Markdown of both editions is plain: admonitions
become a bold title in a block quote, exercises become "Exercise 6.3" headings,
``{eq}``/``{numref}`` become the numbers the book shows, ``{cite}`` becomes author-year
text with a reference list at the end, labels are dropped and figures become images.
A construct without a plain form is an error that names the chapter and line.

The set-up cell (the first code cell of every chapter, tagged ``setup``) is written from
``SETUP_TEMPLATE`` here, the one place that defines how ``chainrule`` is installed. It
installs from the repository of ``_config.yml`` (``git+<repository.url>@<branch>``), or,
when ``_config.yml`` sets ``chainrule_release: "0.1.0"``, the release ``chainrule==0.1.0``
from PyPI (a wheel: faster than cloning). This tool also writes each chapter ``.md`` back
in the exact form jupytext writes (what JupyterLab writes on save), so opening and saving a
chapter changes nothing.

Figure, equation, exercise and chapter numbers are the ones Sphinx gave the book, read
from ``_build/numbers.json``, which every book build writes (``_ext/edition_numbers.py``).
So the editions are written after a book build: ``make notebooks`` and ``make book`` build
the book, then run this (``tools/build_book.py --editions``). A chapter whose labels
differ from that file's is an error that asks for the build, never an edition with old
numbers.

    python tools/notebooks.py            # write the editions and normalise the chapters
    python tools/notebooks.py --check    # write nothing; list what is out of date (exit 1)
    make notebooks                       # build the book, then the first line
"""

from __future__ import annotations

import argparse
import ast
import copy
import json
import re
import sys
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from urllib.parse import urlsplit

import jupytext
import nbformat
import yaml
from markdown_it import MarkdownIt
from markdown_it.renderer import RendererHTML
from markdown_it.token import Token
from mdit_py_plugins.myst_role.index import myst_role
from myst_nb.core.variables import format_plain_text
from myst_parser.config.main import MdParserConfig
from myst_parser.parsers.mdit import create_md_parser
from myst_parser.parsers.options import options_to_items
from packaging.version import InvalidVersion, Version
from pybtex.backends.plaintext import Backend as PlainText
from pybtex.database import parse_file
from pybtex.richtext import Text
from pybtex.style import FormattedEntry
from pybtex.style import template as bib
from pybtex.style.formatting import BaseStyle

ROOT = Path(__file__).resolve().parents[1]
STUDENT_FOLDER = "student"
#: The numbers Sphinx gave the book's figures, equations, exercises and chapters, written by
#: every book build (_ext/edition_numbers.py); the editions print the same ones.
NUMBERS = Path("_build") / "numbers.json"
COLAB = "https://colab.research.google.com/github"
#: The kernel JupyterLab records when it saves a chapter (ipykernel's python3 kernel).
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}

SETUP_TEMPLATE = """\
# Set-up: makes `import chainrule` work. On Colab it installs it
# (the environment variable CHAINRULE_PIP_SPEC overrides from where).
import importlib.util, os, shutil, subprocess, sys
SOURCE = "{default_spec}"
if importlib.util.find_spec("chainrule") is None:
    spec = os.environ.get("CHAINRULE_PIP_SPEC", SOURCE)
    on_colab = "google.colab" in sys.modules
    if not on_colab and "CHAINRULE_PIP_SPEC" not in os.environ:
        raise ModuleNotFoundError(
            "chainrule is not installed in this kernel. In a clone of "
            "the course, run `make setup` and pick the .venv kernel, "
            "or run `pip install -e .` in the clone.")
    if shutil.which("dot") is None:  # graphviz draws the figures
        subprocess.run(["apt-get", "install", "-y", "-qq", "graphviz"],
                       capture_output=True)
    pip = subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-color",
         spec], capture_output=True, text=True)
    importlib.invalidate_caches()
    if importlib.util.find_spec("chainrule") is None:
        raise RuntimeError(
            f"Installing chainrule with `pip install {{spec}}` failed:"
            f"\\n{{pip.stderr[-2000:]}}\\nCheck the network, or set "
            "CHAINRULE_PIP_SPEC to a source you can reach (a wheel "
            "file, a git URL or chainrule==x.y), then run this cell "
            "again.")"""

#: The directive fences: ```{name} and :::{name}.
FENCES = ("fence", "colon_fence")
#: Display maths: $$ ... $$ (label), a bare $$ ... $$, and \begin{equation*} ... \end{equation*}.
DISPLAY_MATH = ("math_block_label", "math_block", "amsmath")


class ConversionError(ValueError):
    """A chapter uses MyST that has no plain-Markdown form here."""


# ---------------------------------------------------------------------------------------
# Reading MyST (markdown-it-py with the plugins myst-parser uses)
# ---------------------------------------------------------------------------------------


def with_spans(rule):
    """The inline rule ``rule``, recording in each token it makes the span of text it read (``meta["span"]``)."""

    def rule_with_spans(state, silent: bool) -> bool:
        start, count = state.pos, len(state.tokens)
        found = rule(state, silent)
        for token in state.tokens[count:]:
            token.meta["span"] = (start, state.pos)
        return found

    return rule_with_spans


def myst_parser() -> MarkdownIt:
    """The parser the book reads the chapters with (the syntax extensions of _config.yml), roles with their spans."""
    config = MdParserConfig(
        enable_extensions={"amsmath", "colon_fence", "deflist", "dollarmath"}, dmath_double_inline=True
    )
    parser = create_md_parser(config, RendererHTML)
    parser.inline.ruler.at("myst_role", with_spans(myst_role))
    return parser


MYST = myst_parser()


def blocks(source: str) -> Iterator[list[Token]]:
    """The top-level blocks of MyST Markdown, each as its tokens (from its opening token to its closing one)."""
    block = []
    for token in MYST.parse(source):
        block.append(token)
        if token.level == 0 and token.nesting <= 0:
            yield block
            block = []


def line_range(token: Token) -> tuple[int, int]:
    """The first line of a block token and the line after its last."""
    first, end = token.map
    if token.type == "amsmath":  # its map ends on its last line, not after it
        return first, first + token.content.count("\n") + 1
    return first, end


def is_directive(token: Token) -> bool:
    return token.type in FENCES and token.info.startswith("{")


def is_closed(token: Token, lines: list[str]) -> bool:
    """Whether a fence has its closing line (markdown-it runs an unclosed fence to the end of the text)."""
    first, end = token.map
    closing = lines[end - 1].strip()
    return end - first > 1 and len(closing) >= len(token.markup) and set(closing) == {token.markup[0]}


@dataclass
class Directive:
    name: str
    argument: str
    options: dict[str, str]
    body: str
    start: int  # the line of the opening fence in the parsed text
    body_start: int  # the line of the body's first line, after the options and blank lines


def read_directive(token: Token) -> Directive:
    """A directive's name, argument, ``:key: value`` options (read as myst-parser reads them) and body."""
    name, _, argument = token.info[1:].partition("}")
    lines = token.content.removesuffix("\n").split("\n")
    count = 0
    while count < len(lines) and lines[count].lstrip().startswith(":"):
        count += 1
    options, _ = options_to_items("\n".join(line.lstrip()[1:] for line in lines[:count]))
    while count < len(lines) and not lines[count].strip():
        count += 1
    first = token.map[0]
    return Directive(name, argument.strip(), dict(options), "\n".join(lines[count:]), first, first + 1 + count)


# ---------------------------------------------------------------------------------------
# The book: configuration, chapters, numbers
# ---------------------------------------------------------------------------------------


@dataclass
class Target:
    kind: str  # "figure", "equation", "exercise", "section" or "chapter"
    chapter: str  # the chapter file, e.g. "chapters/mlp"
    number: str = ""  # "6.1" for numbered targets
    title: str = ""  # section and chapter titles


@dataclass
class Book:
    root: Path
    repo: str  # owner/name on GitHub
    branch: str
    repository_url: str
    chapters: list[str]  # numbered chapters, in order ("chapters/mlp")
    chapter_numbers: dict[str, str] = field(default_factory=dict)  # "chapters/mlp": "6", from the book build
    targets: dict[str, Target] = field(default_factory=dict)
    bibliography: object = None
    glue: dict[str, dict[str, str]] = field(default_factory=dict)  # page -> key -> text/plain, from the build
    mark_glue: bool = False  # print GLUE_MARK instead of each glued number (see same_but_glued)
    release: str = ""  # _config.yml chainrule_release: a version on PyPI the set-up cell installs, or "" (git)

    def chapter_number(self, chapter: str) -> str:
        return self.chapter_numbers[chapter]

    def colab_url(self, chapter: str, student: bool) -> str:
        return f"{COLAB}/{self.repo}/blob/{self.branch}/{edition_path(chapter, student)}"

    def raw_url(self, path: str) -> str:
        return f"https://raw.githubusercontent.com/{self.repo}/{self.branch}/{path}"

    @property
    def default_pip_spec(self) -> str:
        """What the set-up cell installs: ``chainrule==<chainrule_release>`` when _config.yml sets a release,
        else the repository itself, ``git+<repository.url>@<branch>``."""
        return f"chainrule=={self.release}" if self.release else f"git+{self.repository_url}@{self.branch}"


def edition_path(chapter: str, student: bool) -> str:
    """The repository path of a chapter's notebook: chapters/mlp.ipynb or student/chapters/mlp.ipynb."""
    return f"{STUDENT_FOLDER}/{chapter}.ipynb" if student else f"{chapter}.ipynb"


def numbered_chapters(toc: dict) -> list[str]:
    chapters = []
    for part in toc.get("parts", []):
        if part.get("numbered"):
            chapters.extend(entry["file"] for entry in part.get("chapters", []))
    if not chapters:
        raise ConversionError("_toc.yml has no numbered part: the editions number chapters as the book does")
    return chapters


def load_book(root: Path = ROOT) -> Book:
    config = yaml.safe_load((root / "_config.yml").read_text(encoding="utf-8"))
    toc = yaml.safe_load((root / "_toc.yml").read_text(encoding="utf-8"))
    url = config["repository"]["url"].rstrip("/")
    parts = urlsplit(url)
    repo = parts.path.strip("/")
    if parts.netloc != "github.com" or repo.count("/") != 1:
        raise ConversionError(f"_config.yml repository.url must be https://github.com/<owner>/<name>, not {url!r}")
    branch = config["repository"].get("branch")
    if not branch:
        raise ConversionError("_config.yml must set repository.branch (Colab links name the branch)")
    release = read_release(config)
    numbers = read_numbers(root)
    book = Book(
        root=root,
        repo=repo,
        branch=branch,
        repository_url=url,
        chapters=numbered_chapters(toc),
        chapter_numbers=numbers["chapters"],
        glue=numbers.get("glue", {}),
        release=release,
    )
    unnumbered = [chapter for chapter in book.chapters if chapter not in book.chapter_numbers]
    if unnumbered:
        raise ConversionError(
            f"{NUMBERS} gives no number to {', '.join(unnumbered)}: the book build is older "
            "than _toc.yml. Run `make notebooks`, which builds the book first"
        )
    bibfiles = config.get("bibtex_bibfiles", [])
    book.bibliography = parse_file(str(root / bibfiles[0])) if bibfiles else None
    for page in book.chapters + unnumbered_pages(toc):  # unnumbered: the first page and the back matter
        number_targets(book, page, read_chapter(root, page), numbers["numbered"].get(page, {}))
    return book


def read_release(config: dict) -> str:
    """_config.yml's ``chainrule_release``: a version of chainrule on PyPI ("0.1.0"), or "" when unset."""
    release = config.get("chainrule_release")
    if release is None or release == "":
        return ""
    if not isinstance(release, str):  # YAML reads 0.10 as the number 0.1
        raise ConversionError(
            f'_config.yml chainrule_release must be a quoted version, such as "0.1.0", '
            f"not the {type(release).__name__} {release!r}"
        )
    try:
        Version(release)
    except InvalidVersion:
        raise ConversionError(
            f'_config.yml chainrule_release {release!r} is not a version (such as "0.1.0"): '
            "the set-up cell would run `pip install chainrule==<it>`"
        ) from None
    return release


def unnumbered_pages(toc: dict) -> list[str]:
    pages = [toc["root"]]
    for part in toc.get("parts", []):
        if not part.get("numbered"):
            pages.extend(entry["file"] for entry in part.get("chapters", []))
    return pages


def read_chapter(root: Path, chapter: str):
    return jupytext.read(root / f"{chapter}.md")


def read_numbers(root: Path) -> dict:
    """What Sphinx numbered in the last book build (``_ext/edition_numbers.py`` writes it)."""
    path = root / NUMBERS
    if not path.is_file():
        raise ConversionError(
            f"{NUMBERS} is missing: the editions take their numbers from the book build. "
            "Run `make notebooks`, which builds the book first"
        )
    return json.loads(path.read_text(encoding="utf-8"))


def number_targets(book: Book, chapter: str, notebook, numbered: dict) -> None:
    """Record the chapter's labels: numbers as the book build gave them, titles from the source.

    ``numbered`` is the build's numbered elements of this chapter, by HTML id. Every one of
    them must carry a label the chapter defines, and every numbered label the chapter
    defines must be among them: otherwise the build is older than the chapter.
    """
    by_label = {element["label"]: element for element in numbered.values() if "label" in element}
    unlabelled = [f"{element['kind']} {element['number']}" for element in numbered.values() if "label" not in element]
    if unlabelled:
        raise ConversionError(
            f"{chapter}.md: the book numbers {', '.join(unlabelled)}, which has no label; "
            "give it one (:name: or :label:) so that the editions can print its number"
        )
    found = set()

    def add(label: str, kind: str, **values) -> None:
        if label in book.targets:
            raise ConversionError(f"{chapter}: label {label!r} is defined twice")
        book.targets[label] = Target(kind=kind, chapter=chapter, **values)

    def numbered_label(label: str | None, kind: str) -> None:
        element = by_label.get(label)
        if element is None or element["kind"] != kind:
            what = f"the {kind} {label!r}" if label else f"a {kind} without a label"
            raise ConversionError(
                f"{chapter}.md: {what} has no number in {NUMBERS}, so the book build is "
                "older than the chapter (or the book does not number it). Run `make notebooks`, "
                "which builds the book first"
            )
        found.add(label)
        add(label, kind, number=element["number"])

    def label_markdown(source: str) -> None:
        label = None  # a (label)= line names the heading right after it
        for block in blocks(source):
            token = block[0]
            if label and token.type == "heading_open":
                add(label, "chapter" if token.tag == "h1" else "section", title=block[1].content)
            label = token.content if token.type == "myst_target" else None
            if token.type == "math_block_label":
                numbered_label(token.info, "equation")
            elif is_directive(token):
                directive = read_directive(token)
                if directive.name == "exercise" and "nonumber" not in directive.options:
                    numbered_label(directive.options.get("label"), "exercise")
                elif directive.name == "figure" and directive.options.get("name"):
                    numbered_label(directive.options["name"], "figure")
                label_markdown(directive.body)

    for cell in notebook.cells:
        if cell.cell_type == "markdown":
            label_markdown(cell.source)
        elif figure := cell.metadata.get("mystnb", {}).get("figure"):
            if figure.get("name"):
                numbered_label(figure["name"], "figure")
    if set(by_label) - found:
        raise ConversionError(
            f"{chapter}.md: the book build numbers {sorted(set(by_label) - found)}, which the "
            "chapter no longer defines. Run `make notebooks`, which builds the book first"
        )
    first = next((cell for cell in notebook.cells if "numbering" not in cell.metadata.get("tags", [])), None)
    headings = blocks(first.source) if first and first.cell_type == "markdown" else []
    title = next((block[1].content for block in headings if block[0].tag == "h1"), None)
    if title is None:
        raise ConversionError(f"{chapter}: the first cell must hold the chapter's '# Title'")
    book.targets[f"/{chapter}"] = Target(kind="chapter", chapter=chapter, title=title)


# ---------------------------------------------------------------------------------------
# MyST Markdown to plain Markdown
# ---------------------------------------------------------------------------------------


@dataclass
class Context:
    book: Book
    chapter: str
    student: bool
    cited: list[str] = field(default_factory=list)


def where(context: Context, line: int) -> str:
    """The chapter file and, when it is known (not 0), the line: 'chapters/mlp.md, line 40'."""
    return f"{context.chapter}.md, line {line}" if line else f"{context.chapter}.md"


def shifted(line: int, by: int) -> int:
    """The chapter line ``by`` lines after ``line`` (0, unknown, stays unknown)."""
    return line + by if line else 0


def convert_markdown(source: str, context: Context, line: int = 0) -> str:
    """Plain Markdown for MyST Markdown that starts on chapter line ``line`` (0 when not known)."""
    lines = source.split("\n")
    out: list[str] = []
    done = 0
    for block in blocks(source):
        first, end = line_range(block[0])
        out.extend(lines[done:first])
        out.extend(convert_block(block, lines, context, line))
        done = end
    out.extend(lines[done:])
    return "\n".join(out).strip("\n")


def convert_block(block: list[Token], lines: list[str], context: Context, line: int) -> list[str]:
    """Plain Markdown lines for one top-level block of ``lines`` (which start on chapter line ``line``)."""
    token = block[0]
    first, end = line_range(token)
    if token.type in FENCES and not is_closed(token, lines):
        raise ConversionError(
            f"{where(context, shifted(line, first))}: the block opened with {token.markup} is never closed"
        )
    if is_directive(token):
        return convert_directive(read_directive(token), context, line)
    if token.type in (*FENCES, "code_block"):
        return lines[first:end]
    if token.type == "myst_target":
        return []
    if token.type in DISPLAY_MATH:
        return display_math(token, lines, context, shifted(line, first))
    if token.tag == "h1":
        title = convert_inline(block[1].content, context, shifted(line, first))
        return [f"# {context.book.chapter_number(context.chapter)}. {title}"]
    return with_roles(block, lines, context, line)


def display_math(token: Token, lines: list[str], context: Context, line: int) -> list[str]:
    """A display equation as ``$$ \\begin{equation*} ... \\tag{6.1} \\end{equation*} $$``.

    MathJax (Colab, JupyterLab) shows the ``\\tag`` as the book's number. jupyterlab-myst
    numbers every display equation except an ``equation*`` one, so the starred environment
    keeps it from adding a second number. In the chapters, a labelled equation is
    ``$$ ... $$ (label)`` and an unlabelled one ``\\begin{equation*} ... \\end{equation*}``
    (a bare ``$$`` block would get a number in JupyterLab that the book does not show).
    """
    first, end = line_range(token)
    if lines[first].strip() != (r"\begin{equation*}" if token.type == "amsmath" else "$$"):
        raise ConversionError(
            f"{where(context, line)}: display maths must open with a line of its own, "
            f"`$$` or `\\begin{{equation*}}`, not {lines[first]!r}"
        )
    if token.type == "math_block":
        raise ConversionError(
            f"{where(context, line)}: an unlabelled $$ equation ({lines[first + 1][:60]!r}); write it as "
            r"\begin{equation*} ... \end{equation*}, or give it a label: $$ (eq-name)"
        )
    tag = [rf"\tag{{{context.book.targets[token.info].number}}}"] if token.type == "math_block_label" else []
    return ["$$", r"\begin{equation*}", *lines[first + 1 : end - 1], *tag, r"\end{equation*}", "$$"]


def with_roles(block: list[Token], lines: list[str], context: Context, line: int) -> list[str]:
    """A block's own lines with each role in plain form (paragraphs, lists, quotes, tables, headings)."""
    first, end = line_range(block[0])
    for index in range(first, end):
        if lines[index].startswith(("$$", "\\begin{")):
            raise ConversionError(
                f"{where(context, shifted(line, index))}: display maths must open with a line of "
                f"its own, `$$` or `\\begin{{equation*}}`, and be closed, not {lines[index]!r}"
            )
    edits, searched = [], {}
    for token in block:
        if is_directive(token) or token.type in DISPLAY_MATH:
            raise ConversionError(
                f"{where(context, shifted(line, token.map[0]))}: a directive or display equation "
                "inside a list, quote or table has no plain-Markdown form for Colab"
            )
        if token.type != "inline":
            continue
        offsets = line_offsets(token, lines, first, searched)
        for role in (child for child in token.children if child.type == "myst_role"):
            start, stop = role.meta["span"]
            at = shifted(line, token.map[0] + token.content.count("\n", 0, start))
            edits.append(
                (
                    place(token.content, offsets, start),
                    place(token.content, offsets, stop),
                    convert_role(role, context, at),
                )
            )
    return [replaced("\n".join(lines[first:end]), edits)]


def line_offsets(token: Token, lines: list[str], first: int, searched: dict[int, int]) -> list[int]:
    """Where each line of an inline token's text starts in the text of ``lines[first:]``.

    ``searched`` holds, for each line, where the text of the previous inline token on it
    ended (table cells share a line). markdown-it may turn a tab of the indentation into
    spaces, so a line is found by its text after the indentation.
    """
    offsets = []
    for number, content in enumerate(token.content.split("\n"), start=token.map[0]):
        text = content.lstrip()
        column = lines[number].find(text, searched.get(number, 0))
        assert column >= 0, f"an inline text {text!r} that is not in its line {lines[number]!r}"
        searched[number] = column + len(text)
        offsets.append(sum(len(source) + 1 for source in lines[first:number]) + column - len(content) + len(text))
    return offsets


def place(content: str, offsets: list[int], position: int) -> int:
    """Where a position in an inline token's text lies in the block's text, given where each line starts there."""
    return offsets[content.count("\n", 0, position)] + position - (content.rfind("\n", 0, position) + 1)


def replaced(text: str, edits: list[tuple[int, int, str]]) -> str:
    """``text`` with each span ``(start, stop)`` replaced by its new text (the spans in order, apart)."""
    for start, stop, new in reversed(edits):
        text = text[:start] + new + text[stop:]
    return text


def convert_directive(directive: Directive, context: Context, line: int) -> list[str]:
    """Plain Markdown for a directive of text that starts on chapter line ``line``."""
    name, argument, options = directive.name, directive.argument, directive.options
    at, body_at = shifted(line, directive.start), shifted(line, directive.body_start)
    if name == "admonition":
        title = convert_inline(argument, context, at) if argument else "Note"
        text = convert_markdown(directive.body, context, body_at)
        return [f"> **{title}**", ">"] + [f"> {quoted}".rstrip() for quoted in text.split("\n")]
    if name == "exercise":
        number = context.book.targets[options["label"]].number if "label" in options else ""
        title = f" ({convert_inline(argument, context, at)})" if argument else ""
        return [f"### Exercise {number}{title}", "", convert_markdown(directive.body, context, body_at)]
    if name == "solution-start":
        target = context.book.targets.get(argument)
        if target is None or target.kind != "exercise":
            raise ConversionError(
                f"{where(context, at)}: solution-start names {argument!r}, which is no exercise label"
            )
        return [f"#### Solution to Exercise {target.number}"]
    if name == "solution-end":
        return []
    if name == "figure":
        path = (context.book.root / context.chapter).parent / argument
        relative = path.resolve().relative_to(context.book.root.resolve()).as_posix()
        if not path.is_file():
            raise ConversionError(f"{where(context, at)}: figure file {argument} does not exist")
        alt = options.get("alt", "")
        caption = convert_markdown(directive.body, context, body_at)
        number = context.book.targets[options["name"]].number if "name" in options else ""
        label = f"**Fig. {number}** " if number else ""
        return [f"![{alt}]({context.book.raw_url(relative)})", "", f"{label}{caption}"]
    raise ConversionError(
        f"{where(context, at)}: the directive {{{name}}} has no plain-Markdown form for Colab; "
        "add one to tools/notebooks.py or use a directive it knows"
    )


def convert_inline(text: str, context: Context, line: int = 0) -> str:
    """One line of MyST Markdown (a title) with its roles in plain form."""
    [inline] = MYST.parseInline(text)
    return replaced(
        text,
        [
            (*role.meta["span"], convert_role(role, context, line))
            for role in inline.children
            if role.type == "myst_role"
        ],
    )


def convert_role(role: Token, context: Context, line: int) -> str:
    """The plain form of a role: a citation, a number or a link."""
    name, target, book = role.meta["name"], role.content, context.book
    if name in ("cite", "cite:p", "cite:t"):
        keys = [key.strip() for key in target.split(",")]
        for key in keys:
            if book.bibliography is None or key not in book.bibliography.entries:
                raise ConversionError(f"{where(context, line)}: {{cite}} key {key!r} is not in references.bib")
            if key not in context.cited:
                context.cited.append(key)
        if name == "cite:t":
            return "; ".join(f"{cited_names(book, key)} [{cited_year(book, key)}]" for key in keys)
        return "[" + "; ".join(f"{cited_names(book, key)}, {cited_year(book, key)}" for key in keys) + "]"
    if name == "term":  # {term}`leaves <leaf>`: the word, without the link to the glossary
        return target[:-1].rpartition("<")[0].rstrip() if target.endswith(">") and "<" in target else target
    if name in ("glue", "glue:text"):
        return glued_text(target, context, line)
    if name not in ("eq", "numref", "ref", "doc"):
        raise ConversionError(f"{where(context, line)}: the role {{{name}}} has no plain-Markdown form for Colab")
    text, label = None, target
    if target.endswith(">") and "<" in target:  # {ref}`text <label>`
        text, _, label = target[:-1].rpartition("<")
        text = text.rstrip()
    if name == "doc":
        label = "/" + str((Path(context.chapter).parent / label).as_posix()).lstrip("/")
    found = book.targets.get(label)
    if found is None:
        raise ConversionError(f"{where(context, line)}: {{{name}}}`{target}` names an unknown label")
    if name == "eq":
        return f"({found.number})"
    if name == "numref":
        shown = {"figure": "Fig. {}", "exercise": "Exercise {}", "equation": "({})"}.get(found.kind)
        if shown is None:
            raise ConversionError(f"{where(context, line)}: {{numref}} to a {found.kind} is not supported")
        return text.replace("%s", found.number) if text else shown.format(found.number)
    title = text or convert_inline(found.title, context)
    if found.chapter != context.chapter and found.chapter in book.chapters:
        # The notebook beside this one (JupyterLab, a clone), and the same in Colab.
        local = f"{Path(found.chapter).name}.ipynb"
        return f"[{title}]({local}) ([in Colab]({book.colab_url(found.chapter, context.student)}))"
    return f"*{title}*"


def glued_text(target: str, context: Context, line: int) -> str:
    """A ``{glue:text}`key:format``` role as the number the book build printed there."""
    key, _, spec = target.rpartition(":") if ":" in target else (target, "", "")
    glued = context.book.glue.get(context.chapter, {})
    if key not in glued:
        raise ConversionError(
            f"{where(context, line)}: no cell of the last book build glued {key!r}. Glue it "
            "in a cell above (chainrule.book.glue.glue), then run `make notebooks`"
        )
    try:
        text = format_plain_text(glued[key], spec or "s")
    except (TypeError, ValueError) as error:
        raise ConversionError(
            f"{where(context, line)}: {{glue:text}} format {spec!r} does not fit the value "
            f"{glued[key]!r} of {key!r}: {error}"
        ) from None
    return GLUE_MARK if context.book.mark_glue else text


#: Stands for a glued number in an edition written to be compared (a private-use character).
GLUE_MARK = "\ue000"


def same_but_glued(actual: str, marked: str) -> bool:
    """Whether ``actual`` is ``marked`` with some number, on one line, at each GLUE_MARK.

    A glued number can change from one book build to the next (a timing, most often), so
    an edition whose only difference from the new one is in glued numbers is current:
    ``make notebooks`` does not write it again, and ``--check`` does not call it stale.
    """
    if GLUE_MARK not in marked:
        return actual == marked
    pattern = "[^\\n]*?".join(re.escape(part) for part in marked.split(GLUE_MARK))
    return re.fullmatch(pattern, actual) is not None


# ---------------------------------------------------------------------------------------
# Citations and references (pybtex, which sphinxcontrib-bibtex formats the book's with)
# ---------------------------------------------------------------------------------------

TEXT = PlainText()
YEAR = bib.first_of[bib.optional[bib.field("year")], Text("n.d.")]
#: One entry of an edition's reference list: "Names (year). *Title*. Venue. <url>".
REFERENCE = bib.join(sep=" ")[
    bib.join[
        bib.first_of[bib.optional[bib.names("author", sep=", ")], bib.optional[bib.names("editor", sep=", ")]],
        " (",
        YEAR,
        ").",
    ],
    bib.optional[bib.join["*", bib.field("title"), "*."]],
    bib.sentence[
        bib.first_of[
            bib.optional[bib.field("journal")],
            bib.optional[bib.field("booktitle")],
            bib.optional[bib.field("publisher")],
            bib.optional[bib.field("howpublished")],
        ]
    ],
    bib.optional[bib.join["<", bib.field("url", raw=True), ">"]],
]


class ReferenceStyle(BaseStyle):
    """The editions' reference list: REFERENCE entries, in the book's order (by author, year and title)."""

    default_sorting_style = "author_year_title"

    def format_entry(self, label, entry, bib_data=None):
        return FormattedEntry(entry.key, REFERENCE.format_data({"entry": entry, "style": self}), label)


REFERENCES = ReferenceStyle()


def cited_names(book: Book, key: str) -> str:
    """The names of an author-year citation: 'Kahn', 'Griewank and Walther' or 'Paszke et al.'."""
    entry = book.bibliography.entries[key]
    people = entry.persons.get("author") or entry.persons.get("editor") or []
    names = [Text(" ").join(person.rich_prelast_names + person.rich_last_names).render(TEXT) for person in people]
    if len(names) > 2:
        return f"{names[0]} et al."
    return " and ".join(names) or Text.from_latex(entry.fields.get("title", key)).render(TEXT)


def cited_year(book: Book, key: str) -> str:
    return YEAR.format_data({"entry": book.bibliography.entries[key]}).render(TEXT)


def reference_list(book: Book, keys: list[str]) -> str:
    """The '## References' section that ends an edition, for the cited keys."""
    entries = REFERENCES.format_entries([book.bibliography.entries[key] for key in keys])
    return "\n".join(["## References", "", *(f"- {entry.text.render(TEXT)}" for entry in entries)])


# ---------------------------------------------------------------------------------------
# Notebooks
# ---------------------------------------------------------------------------------------


def bound_and_read(source: str) -> tuple[set[str], set[str]]:
    """(names a code cell binds at any level, names it reads), IPython magics left out."""
    lines = [line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))]
    bound, read = set(), set()
    for node in ast.walk(ast.parse("\n".join(lines))):
        if isinstance(node, ast.Name):
            (read if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
    return bound, read


def tags(cell) -> list[str]:
    return list(cell.metadata.get("tags", []))


def setup_source(book: Book) -> str:
    return SETUP_TEMPLATE.format(default_spec=book.default_pip_spec)


def numbering_source(book: Book, chapter: str) -> str:
    """Front matter that makes jupyterlab-myst number as the book does (Exercise 6.3, Fig. 6.1).

    jupyterlab-myst reads front matter only from a notebook's first Markdown cell. The cell
    is tagged ``remove-cell``, which MyST-NB drops from the website, and ``numbering``,
    which the editions drop (Colab would show the YAML).
    """
    return f'---\nnumbering:\n  enumerator: "{book.chapter_number(chapter)}.%s"\n---'


def with_front_cells(book: Book, chapter: str, notebook):
    """The chapter with its numbering cell first and its set-up cell written from the template."""
    notebook = copy.deepcopy(notebook)
    cells = [cell for cell in notebook.cells if "numbering" not in tags(cell)]
    numbering = nbformat.v4.new_markdown_cell(
        numbering_source(book, chapter), metadata={"tags": ["remove-cell", "numbering"]}
    )
    notebook.cells = [numbering, *cells]
    for cell in notebook.cells:
        if "setup" in tags(cell):
            cell.source = setup_source(book)
    return notebook


def check_solution_marks(chapter: str, notebook) -> None:
    """Every cell from a solution-start to its solution-end is tagged ``solution``, and no other cell is."""
    inside = False
    for number, cell in enumerate(notebook.cells, start=1):
        source = cell.source.lstrip()
        starts = cell.cell_type == "markdown" and "{solution-start}" in cell.source
        if starts and not source.startswith("````{solution-start}"):
            raise ConversionError(
                f"{chapter}.md, cell {number}: a solution-start must open its own Markdown cell "
                '(put `+++ {"tags": ["solution"]}` before it)'
            )
        inside = inside or starts
        if inside != ("solution" in tags(cell)):
            state = "inside a solution but not" if inside else "outside any solution but"
            raise ConversionError(
                f"{chapter}.md, cell {number} ({cell.cell_type}) lies {state} tagged `solution`: {cell.source[:80]!r}"
            )
        if cell.cell_type == "markdown" and "{exercise}" in cell.source and inside:
            raise ConversionError(f"{chapter}.md, cell {number}: an exercise inside a solution")
        if cell.cell_type == "markdown" and "{solution-end}" in cell.source:
            if not cell.source.rstrip().endswith("````{solution-end}\n````"):
                raise ConversionError(f"{chapter}.md, cell {number}: nothing may follow a solution-end in its cell")
            inside = False
    if inside:
        raise ConversionError(f"{chapter}.md: a solution-start has no solution-end")


def solution_label(cell) -> str | None:
    match = re.search(r"\{solution-start\}\s*(\S+)", cell.source)
    return match[1] if match else None


def new_cell(kind: str, source: str, metadata: dict | None = None):
    make = nbformat.v4.new_code_cell if kind == "code" else nbformat.v4.new_markdown_cell
    return make(source, metadata=metadata or {})


SOLUTION_MARKERS = re.compile(r"^`{3,}\{solution-(start|end)\}.*\n(:class:.*\n)?`{3,}$", re.MULTILINE)


def answer_cells(number: str, with_text: bool, with_code: bool) -> list:
    """The student edition's answer cells for one exercise: for its text, and for code it has no answer cell for.

    Neither raises: only a checked exercise's own answer cell (tag ``exercise-stub`` in the
    chapter) holds a function that raises, so Run All goes past the exercises graded by hand.
    """
    cells = []
    if with_text:
        cells.append(
            new_cell(
                "markdown",
                f"**Your answer to Exercise {number}.** Double-click here to write it.",
                {"tags": ["exercise-stub"]},
            )
        )
    if with_code:
        cells.append(
            new_cell(
                "code",
                f"# Exercise {number}: room for your code. It has no automatic "
                "check:\n# write your answer in the text cell above.",
                {"tags": ["exercise-stub"]},
            )
        )
    return cells


CHECK_IMPORT = "from chainrule.exercises import feedback\n"


def check_body(chapter: str, source: str) -> str:
    """A check cell's code after its first line, ``from chainrule.exercises import feedback``."""
    if not source.startswith(CHECK_IMPORT):
        raise ConversionError(f"{chapter}.md: a check cell must start with `{CHECK_IMPORT.strip()}`: {source[:80]!r}")
    return source[len(CHECK_IMPORT) :].strip("\n")


def checked_source(chapter: str, number: str, source: str) -> str:
    """A check cell inside ``with feedback.exercise(number)``: one line when the answer is missing or not run."""
    body = textwrap.indent(check_body(chapter, source), "    ")
    return f'{CHECK_IMPORT}\nwith feedback.exercise("{number}"):\n{body}'


def summary_source(chapter: str, number: str, checks: list[tuple[str, str]]) -> str:
    """The last cell of a student notebook: every check of the chapter again, one verdict per exercise."""
    lines = [
        "# Every checked exercise of this chapter, checked again: one line each.",
        CHECK_IMPORT,
        f'summary = feedback.Summary("Chapter {number}")',
    ]
    for exercise, source in checks:
        body = [line for line in check_body(chapter, source).splitlines() if not line.startswith("print(")]
        lines += [f'with summary.exercise("{exercise}"):', textwrap.indent("\n".join(body), "    ")]
    return "\n".join([*lines, "summary.show()"])


def edition(book: Book, chapter: str, notebook, student: bool):
    """The Colab (``student=False``) or student edition of one chapter, as an nbformat notebook."""
    check_solution_marks(chapter, notebook)
    context = Context(book=book, chapter=chapter, student=student)
    number = book.chapter_number(chapter)
    cells = []
    setup_cells = [cell for cell in notebook.cells if "setup" in tags(cell)]
    code_cells = [cell for cell in notebook.cells if cell.cell_type == "code"]
    if len(setup_cells) != 1 or code_cells[0] is not setup_cells[0]:
        raise ConversionError(f"{chapter}.md: the first code cell, and only it, must be the set-up cell (tag `setup`)")
    solution_number, solution_has_code, solution_has_text = None, False, False
    authored_stubs, checks = [], []
    for cell, line in zip(notebook.cells, cell_lines(book.root / f"{chapter}.md", notebook.cells)):
        if "numbering" in tags(cell) or "hidden-check" in tags(cell):
            continue  # hidden checks go only into the autograder (tools/assignments.py)
        if "exercise-stub" in tags(cell):
            # An answer cell written in the chapter: only the student edition has it, under the
            # exercise (after the text answer cell); the full edition has the solution instead.
            authored_stubs.extend(converted(cell, context, line, folded=False) if student else [])
            continue
        if "solution" in tags(cell):
            label = solution_label(cell)
            if label:
                solution_number = book.targets[label].number
                solution_has_code = solution_has_text = False
            solution_has_code |= cell.cell_type == "code"
            solution_has_text |= cell.cell_type == "markdown" and bool(SOLUTION_MARKERS.sub("", cell.source).strip())
            ends = cell.cell_type == "markdown" and "{solution-end}" in cell.source
            if not student:
                cells.extend(converted(cell, context, line, folded=True))
            elif ends:
                cells.extend(
                    answer_cells(
                        solution_number,
                        solution_has_text or not authored_stubs,
                        solution_has_code and not authored_stubs,
                    )
                )
                cells.extend(authored_stubs)
                authored_stubs = []
            continue
        if "check" in tags(cell):
            cells.append(
                new_cell(
                    "markdown",
                    f"The next cell checks the answer to Exercise {solution_number}: "
                    "it names what is wrong, where, and the mistake it matches.",
                )
            )
            checks.append((solution_number, cell.source))
            cell = copy.deepcopy(cell)
            cell.source = checked_source(chapter, solution_number, cell.source)
        cells.extend(converted(cell, context, line, folded=False))
    if context.cited:
        cells.append(new_cell("markdown", reference_list(book, context.cited)))
    if student and checks:  # last, so that Run All ends with it
        cells.append(
            new_cell(
                "markdown",
                "## Check everything\n\nThe next cell runs the checks of every "
                "exercise above again and gives one verdict per exercise.",
            )
        )
        cells.append(new_cell("code", summary_source(chapter, number, checks), {"tags": ["check-all"]}))
    banner = (
        f"Chapter {number} of *Backpropagation, from the chain rule up*. Run the first code cell "
        "before the others: it installs `chainrule` when it is missing."
    )
    if student:
        banner += (
            " **Student edition:** the solutions are removed. Write each answer in the cells under its "
            "exercise. A checked exercise's function raises `NotImplementedError` until you write it, "
            "and its check then says, in one line, that it is not answered yet."
        )
    title = cells[0]
    title_lines = title.source.split("\n")
    title.source = "\n".join([title_lines[0], "", banner, *title_lines[1:]]).rstrip("\n")
    return finish(chapter, cells, student)


def cell_lines(path: Path, cells) -> list[int]:
    """The line of the chapter file where each cell's text starts (0 where the file does not hold it)."""
    text = path.read_text(encoding="utf-8") if path.is_file() else ""
    lines, searched = [], 0
    for cell in cells:
        found = text.find(cell.source, searched) if cell.source else -1
        lines.append(text.count("\n", 0, found) + 1 if found >= 0 else 0)
        searched = found + len(cell.source) if found >= 0 else searched
    return lines


def converted(cell, context: Context, line: int, folded: bool) -> list:
    """One source cell, which starts on chapter line ``line``, as edition cells (a figure gains a caption cell)."""
    cell = copy.deepcopy(cell)
    metadata = {key: value for key, value in cell.metadata.items() if key != "mystnb"}
    if cell.cell_type == "markdown":
        text = convert_markdown(cell.source, context, line)
        if not text.strip():
            return []
        heading = re.match(r"^(#### Solution to Exercise [\d.]+)\n*", text)
        if heading and folded:
            rest = text[heading.end() :]
            # Colab folds it through notebook.metadata.colab.collapsed_sections, JupyterLab through this key.
            folded_heading = {"tags": ["solution"], "jp-MarkdownHeadingCollapsed": True}
            return [new_cell("markdown", heading[1], folded_heading)] + (
                [new_cell("markdown", rest, metadata)] if rest.strip() else []
            )
        return [new_cell("markdown", text, metadata)]
    source = cell.source
    if "setup" in tags(cell):
        source = setup_source(context.book)
        # Folded: JupyterLab hides the code (jupyter.source_hidden), Colab shows it as a form.
        metadata = {**metadata, "jupyter": {"source_hidden": True}, "cellView": "form"}
    result = [new_cell("code", source, metadata)]
    figure = cell.metadata.get("mystnb", {}).get("figure")
    if figure:
        number = context.book.targets[figure["name"]].number if figure.get("name") else ""
        caption = convert_markdown(str(figure.get("caption", "")), context, line)
        result.append(new_cell("markdown", f"**Fig. {number}** {caption}".strip(), {}))
    return result


def finish(chapter: str, cells: list, student: bool):
    notebook = nbformat.v4.new_notebook()
    stem = ("student-" if student else "") + Path(chapter).name
    collapsed = []
    for index, cell in enumerate(cells):
        cell.id = f"{stem}-{index:03d}"
        cell.metadata["id"] = cell.id  # Colab names cells (and collapsed sections) by metadata.id
        if cell.cell_type == "markdown" and cell.source.startswith("#### Solution to Exercise"):
            collapsed.append(cell.id)
    notebook.cells = cells
    notebook.metadata = {
        "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
        "colab": {"provenance": [], "toc_visible": True, "collapsed_sections": collapsed},
    }
    nbformat.validate(notebook)
    return notebook


def canonical_markdown(notebook) -> str:
    """A chapter as jupytext (and so JupyterLab, on save) writes it."""
    notebook = copy.deepcopy(notebook)
    notebook.metadata["kernelspec"] = dict(KERNELSPEC)
    return jupytext.writes(notebook, fmt="md:myst")


def expected_files(book: Book) -> dict[Path, str]:
    """Every generated file (and every chapter .md, normalised) with the text it must have."""
    files = {}
    for chapter in book.chapters:
        notebook = with_front_cells(book, chapter, read_chapter(book.root, chapter))
        files[book.root / f"{chapter}.md"] = canonical_markdown(notebook)
        for student in (False, True):
            path = book.root / edition_path(chapter, student)
            files[path] = nbformat.writes(edition(book, chapter, notebook, student)) + "\n"
    return files


def stale_files(book: Book, files: dict[Path, str] | None = None) -> list[Path]:
    """The generated files (of ``expected_files``) that are missing or out of date, glued numbers aside."""
    files = expected_files(book) if files is None else files
    marked = expected_files(replace(book, mark_glue=True))
    return [
        path
        for path in files
        if not path.is_file() or not same_but_glued(path.read_text(encoding="utf-8"), marked[path])
    ]


def expected_paths(root: Path = ROOT) -> list[Path]:
    """The two notebook files of every numbered chapter (what `make notebooks` writes besides the chapters)."""
    toc = yaml.safe_load((root / "_toc.yml").read_text(encoding="utf-8"))
    return [root / edition_path(chapter, student) for chapter in numbered_chapters(toc) for student in (False, True)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 when a file is out of date")
    parser.add_argument("--root", type=Path, default=ROOT, help="the book's folder (default: this repository)")
    args = parser.parse_args(argv)
    try:
        book = load_book(args.root)
        files = expected_files(book)
        stale = stale_files(book, files)
    except ConversionError as error:
        print(f"make notebooks: {error}", file=sys.stderr)
        return 2
    if args.check:
        for path in stale:
            print(f"out of date: {path.relative_to(book.root)}")
        if stale:
            print("Run `make notebooks` and commit the result.", file=sys.stderr)
        return 1 if stale else 0
    for path in stale:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(files[path], encoding="utf-8")
        print(f"wrote {path.relative_to(book.root)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
