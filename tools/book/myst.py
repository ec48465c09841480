"""Reading MyST Markdown: the chapters' blocks and directives, as myst-parser reads them.

The parser is markdown-it-py with the plugins myst-parser uses (``create_md_parser``), so
a directive, a role or a fence is found here exactly where the book build finds it: every
tool that looks for exercises, solutions or labels in a chapter reads it through this.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from markdown_it import MarkdownIt
from markdown_it.renderer import RendererHTML
from markdown_it.token import Token
from mdit_py_plugins.myst_role.index import myst_role
from myst_parser.config.main import MdParserConfig
from myst_parser.parsers.mdit import create_md_parser
from myst_parser.parsers.options import options_to_items

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


def token_lines(token: Token) -> tuple[int, int]:
    """``token.map``: the first line of a block token (or of an inline one's text) and the line after its last."""
    if token.map is None:  # markdown-it maps every block token and every inline token of a block
        raise ConversionError(f"a {token.type} token with no lines in the source")
    first, end = token.map
    return first, end


def line_range(token: Token) -> tuple[int, int]:
    """The first line of a block token and the line after its last."""
    first, end = token_lines(token)
    if token.type == "amsmath":  # its map ends on its last line, not after it
        return first, first + token.content.count("\n") + 1
    return first, end


def is_directive(token: Token) -> bool:
    return token.type in FENCES and token.info.startswith("{")


def is_closed(token: Token, lines: list[str]) -> bool:
    """Whether a fence has its closing line (markdown-it runs an unclosed fence to the end of the text)."""
    first, end = token_lines(token)
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
    first = token_lines(token)[0]
    return Directive(name, argument.strip(), dict(options), "\n".join(lines[count:]), first, first + 1 + count)


def directives(source: str, name: str) -> list[Directive]:
    """The top-level directives ``{name}`` of ``source``, read as myst-parser reads them.

    A directive inside inline code or a longer fence is not one, as in the book build.
    """
    return [
        read_directive(block[0])
        for block in blocks(source)
        if is_directive(block[0]) and block[0].info[1:].partition("}")[0] == name
    ]
