"""MyST Markdown to plain Markdown, for the notebook editions (Colab shows MyST as raw text).

Admonitions become a bold title in a block quote, exercises "Exercise N.M" headings,
``{eq}``/``{numref}`` the numbers the book shows, ``{cite}`` author-year text with a
reference list at the end (formatted by pybtex, as sphinxcontrib-bibtex formats the
book's), labels are dropped and figures become images. A construct without a plain
form is a :class:`~myst.ConversionError` that names the chapter and line.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from markdown_it.token import Token
from myst_nb.core.variables import format_plain_text
from pybtex.backends.plaintext import Backend as PlainText
from pybtex.richtext import Text
from pybtex.style import FormattedEntry
from pybtex.style import template as bib
from pybtex.style.formatting import BaseStyle

from tools.book.book_model import Book
from tools.book.myst import (
    DISPLAY_MATH,
    FENCES,
    MYST,
    ConversionError,
    Directive,
    blocks,
    is_closed,
    is_directive,
    line_range,
    read_directive,
    token_lines,
)
from tools.book.reading_time import reading

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
    edits: list[tuple[int, int, str]] = []
    searched: dict[int, int] = {}
    for token in block:
        if is_directive(token) or token.type in DISPLAY_MATH:
            raise ConversionError(
                f"{where(context, shifted(line, token_lines(token)[0]))}: a directive or display equation "
                "inside a list, quote or table has no plain-Markdown form for Colab"
            )
        if token.type != "inline":
            continue
        offsets = line_offsets(token, lines, first, searched)
        for role in (child for child in token.children or [] if child.type == "myst_role"):
            start, stop = role.meta["span"]
            at = shifted(line, token_lines(token)[0] + token.content.count("\n", 0, start))
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
    for number, content in enumerate(token.content.split("\n"), start=token_lines(token)[0]):
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


OPTIONAL_NOTE = "*Depth this chapter's objectives do not need: read it now, later, or not at all.*"


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
    if name == "optional-start":  # folded on the site (_ext/optional_blocks.py)
        return [f"#### Under the hood (optional): {convert_inline(argument, context, at)}", "", OPTIONAL_NOTE]
    if name == "optional-end":
        return ["*End of the optional part.*", "", "---"]
    if name == "reading-time":  # the sentence the site shows (_ext/reading_time.py)
        return [reading(context.book.root, context.chapter).sentence()]
    if name == "web-only":  # a notebook is read on a screen (_ext/media_only.py)
        return [convert_markdown(directive.body, context, body_at)]
    if name == "print-only":
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
        "add one to tools/book/notebooks.py or use a directive it knows"
    )


def convert_inline(text: str, context: Context, line: int = 0) -> str:
    """One line of MyST Markdown (a title) with its roles in plain form."""
    [inline] = MYST.parseInline(text)
    return replaced(
        text,
        [
            (*role.meta["span"], convert_role(role, context, line))
            for role in inline.children or []
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
    if name in ("web", "print"):  # a notebook is read on a screen (_ext/media_only.py)
        return target if name == "web" else ""
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
    if name == "numref" and found.kind == "chapter":  # {numref}`chapter %s <chapter-mlp>`: the number, linked
        if not text or "%s" not in text:
            raise ConversionError(f"{where(context, line)}: {{numref}}`{target}` needs a text with %s for the number")
        text = text.replace("%s", book.chapter_number(found.chapter))
    elif name == "numref":
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
            "in a cell above (chainrule_course.pages.glue.glue), then run `make notebooks`"
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
    # Line by line, as a number never spans lines: one small pattern per marked line, not one
    # pattern of the whole notebook (compiling that took seconds).
    actual_lines, marked_lines = actual.split("\n"), marked.split("\n")
    if len(actual_lines) != len(marked_lines):
        return False
    for line, expected in zip(actual_lines, marked_lines, strict=True):
        if GLUE_MARK not in expected:
            if line != expected:
                return False
        elif re.fullmatch(".*?".join(re.escape(part) for part in expected.split(GLUE_MARK)), line) is None:
            return False
    return True


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


def bibliography_entries(book: Book) -> Mapping:
    """The entries of the book's references.bib: a key is cited only once :func:`convert_role` found it there."""
    if book.bibliography is None:
        raise ConversionError("the book cites a reference but has no bibliography (_config.yml's bibtex_bibfiles)")
    return book.bibliography.entries


def cited_names(book: Book, key: str) -> str:
    """The names of an author-year citation: 'Kahn', 'Griewank and Walther' or 'Paszke et al.'."""
    entry = bibliography_entries(book)[key]
    people = entry.persons.get("author") or entry.persons.get("editor") or []
    names = [Text(" ").join(person.rich_prelast_names + person.rich_last_names).render(TEXT) for person in people]
    if len(names) > 2:
        return f"{names[0]} et al."
    return " and ".join(names) or Text.from_latex(entry.fields.get("title", key)).render(TEXT)


def cited_year(book: Book, key: str) -> str:
    return YEAR.format_data({"entry": bibliography_entries(book)[key]}).render(TEXT)


def reference_list(book: Book, keys: list[str]) -> str:
    """The '## References' section that ends an edition, for the cited keys."""
    entries = REFERENCES.format_entries([bibliography_entries(book)[key] for key in keys])
    return "\n".join(["## References", "", *(f"- {entry.text.render(TEXT)}" for entry in entries)])
