"""Checks on the built book in _build/html (build it with `make book`).

Each chapter page must exist, show no trace of a failed execution or a build problem,
come with their maths typeset (no MathJax script), and show graph figures as inline <svg>
(an <img> of an SVG file cannot be styled or read by screen readers the same way, and
graphviz output drawn that way means a figure bypassed chainrule's drawing module).
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path

from bs4 import BeautifulSoup
from common import ROOT, toc_chapters

from _ext import live_code

EXTERNAL = re.compile(r"^(?:[a-z][a-z0-9+.-]*:)?//", re.IGNORECASE)
PYTHON_WARNING = re.compile(r"\b\w*Warning\b|\bWARNING\b")


def parse(page: Path, fresh: bool = False) -> BeautifulSoup:
    """A built page, parsed once for the tests that only read it; ``fresh``: a copy of its own to change."""
    return BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser") if fresh else _parsed(page)


@functools.cache
def _parsed(page: Path) -> BeautifulSoup:
    return BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser")


def describe(element, limit: int = 300) -> str:
    text = " ".join(element.get_text(" ").split())
    return text if len(text) <= limit else text[:limit] + " ..."


def cell_of(element):
    """The enclosing MyST-NB code cell (<div class="cell ...">) of an element, or None."""
    for parent in element.parents:
        if parent.name == "div" and "cell" in parent.get("class", []):
            return parent
    return None


def math_elements(soup: BeautifulSoup) -> list:
    return soup.select("span.math, div.math")


def test_every_toc_page_is_built(book_html: Path):
    missing = [f"{chapter}.html" for chapter in toc_chapters() if not (book_html / f"{chapter}.html").is_file()]
    assert not missing, f"pages listed in _toc.yml but not built: {missing}; run `make book`"


def test_index_redirects_to_the_first_chapter(book_html: Path):
    root = toc_chapters()[0]
    index = (book_html / "index.html").read_text(encoding="utf-8")
    assert f"{root}.html" in index, f"_build/html/index.html does not lead to {root}.html"


def test_no_build_or_execution_problems(chapter: str, chapter_page: Path):
    soup = parse(chapter_page)
    problems = []
    for element in soup.select(".system-message, .problematic"):
        problems.append(f"Sphinx/docutils problem: {describe(element)}")
    text = soup.get_text(" ")
    for marker in ("Executing notebook failed", "CellExecutionError"):
        if marker in text:
            problems.append(f"failed-execution marker {marker!r} in the page")
    for output in soup.select("div.output.traceback, div.output.error"):
        cell = cell_of(output)
        if cell is None or "tag_raises-exception" not in cell.get("class", []):
            problems.append(f"error output in a cell not tagged raises-exception: {describe(output)}")
    for output in soup.select("div.output.stderr"):
        if PYTHON_WARNING.search(output.get_text()):
            problems.append(
                "a warning printed in a cell's output (fix its cause, or filter that one warning "
                f"in the chapter): {describe(output)}"
            )
    assert not problems, f"{chapter_page.relative_to(ROOT)}:\n" + "\n".join(problems)


def test_no_external_scripts_or_stylesheets(chapter: str, chapter_page: Path):
    soup = parse(chapter_page)
    external = [tag.get("src") for tag in soup.find_all("script", src=True) if EXTERNAL.match(tag["src"])]
    external += [
        tag.get("href")
        for tag in soup.find_all("link", href=True)
        if {"stylesheet", "preload", "modulepreload"} & set(tag.get("rel", [])) and EXTERNAL.match(tag["href"])
    ]
    assert not external, f"{chapter_page.relative_to(ROOT)} loads files from the network: {external}"


def test_each_page_module_has_one_url(chapter: str, chapter_page: Path):
    """The page scripts are ES modules (_ext/live_code.py): the import map, before the first of them,
    maps each one's plain URL, as the modules import each other, to the URL its tag has (Sphinx's
    ``?v=`` digest, of this build's file). Were they to differ, a module would run twice."""
    soup = parse(chapter_page)
    scripts = soup.find_all("script")
    maps = [tag for tag in scripts if tag.get("type") == "importmap"]
    modules = [tag for tag in scripts if tag.get("type") == "module"]
    assert len(maps) == 1 and modules and scripts.index(maps[0]) < scripts.index(modules[0]), (maps, modules)
    imports = json.loads(maps[0].string)["imports"]
    live = chapter_page.parent.joinpath(Path(modules[0]["src"]).parent)
    for tag in modules:
        path, _, version = tag["src"].partition("?v=")
        assert imports.get(path if path.startswith("../") else "./" + path) in (tag["src"], "./" + tag["src"]), tag
        assert version == live_code.digest(live / Path(path).name), f"{tag['src']} is not this build's file"
    for plain, versioned in imports.items():
        if plain.startswith("."):
            target = chapter_page.parent / plain
            assert target.is_file() and versioned == f"{plain}?v={live_code.digest(target)}", (plain, versioned)
    names = {Path(tag["src"].split("?")[0]).name for tag in modules}
    assert {"site.js", "progress.js"} <= names and not names & {"python.js", "live_cells.js", "live_answers.js"}


def test_maths_are_typeset_in_the_page(chapter: str, chapter_page: Path):
    """The maths come typeset (_ext/prerendered_math.py): no MathJax script, no placeholder left,
    each formula MathJax's output with its MathML, and the fonts its stylesheet names in the build."""
    soup = parse(chapter_page)
    name = chapter_page.relative_to(ROOT)
    scripts = [tag["src"] for tag in soup.find_all("script", src=True) if "mathjax" in tag["src"].lower()]
    assert not scripts, f"{name} loads MathJax, although its maths are typeset: {scripts}"
    assert not soup.find("mjx-tex"), f"{name} has maths left for Node to typeset: {soup.find('mjx-tex')}"
    maths = math_elements(soup)
    if not maths:
        return  # no math on this page; test_the_book_has_math guards against a vacuous pass
    bare = [m.get_text()[:60] for m in maths if not m.select_one("mjx-container mjx-assistive-mml math")]
    assert not bare, f"{name}: maths without MathJax's output and MathML: {bare}"
    style = soup.find("style", id="MJX-CHTML-styles")
    assert style, f"{name} has maths but no MathJax stylesheet"
    fonts = re.findall(r'url\("([^"]+)"\)', style.string)
    assert fonts, f"{name}: the MathJax stylesheet names no font"
    missing = [font for font in fonts if not (chapter_page.parent / font).resolve().is_file()]
    assert not missing, f"{name}: MathJax's stylesheet names fonts that are not in the build: {missing}"


def test_the_book_has_math(book_html: Path):
    pages = [book_html / f"{chapter}.html" for chapter in toc_chapters()]
    assert any(page.is_file() and math_elements(parse(page)) for page in pages), (
        "no page of the book contains math, so the MathJax checks checked nothing"
    )


def test_graph_figures_are_inline_svg(chapter: str, chapter_page: Path):
    soup = parse(chapter_page)
    problems = []
    for image in soup.select("div.cell_output img"):
        src = image.get("src", "")
        if src.lower().endswith(".svg") or src.startswith("data:image/svg"):
            problems.append(
                f"cell output shows an SVG as <img src={src[:60]!r}>: display a chainrule Figure "
                "(its _repr_html_ gives inline <svg>), not a raw graphviz object"
            )
    for svg in soup.select("div.cell_output svg"):
        if svg.find_parent("svg") is not None:
            continue  # nested <svg> inside a figure
        if svg.get("role") != "img" or not svg.get("aria-label", "").strip():
            problems.append(f"inline <svg> without role='img' and an aria-label (alt text): {str(svg)[:120]}")
        if "max-width:100%" not in svg.get("style", "").replace(" ", ""):
            problems.append(f"inline <svg> without style max-width:100% (it can overflow the page): {str(svg)[:120]}")
    assert not problems, f"{chapter_page.relative_to(ROOT)}:\n" + "\n".join(problems)


def test_the_book_has_inline_graph_figures(book_html: Path):
    pages = [book_html / f"{chapter}.html" for chapter in toc_chapters()]
    assert any(page.is_file() and parse(page).select("div.cell_output svg") for page in pages), (
        "no chapter shows an inline <svg> figure in a cell output, so the figure checks checked nothing"
    )


# Nothing unrendered may reach a page: MyST or Markdown that the build left as text.
RAW_MARKUP = {
    "a raw Markdown table row": re.compile(
        r"^[ \t]*\|[^|\n]*\|[^\n]*\|[ \t]*$|^[ \t]*\|?[ \t]*:?-{3,}:?[ \t]*\|", re.MULTILINE
    ),
    "a raw role": re.compile(
        r"\{(?:numref|eq|cite|cite:p|cite:t|ref|doc|term|math|download)\}`"
        r"|:(?:func|class|meth|mod|attr|data|ref|doc):"
    ),
    "a directive fence": re.compile(r"(?:`{3,}|:{3,})\{[\w:-]+\}"),
    "TeX outside math": re.compile(
        r"\$\$|\\(?:mathbf|frac|begin|end|partial|boldsymbol|top|sum|left|right|nabla|cdot)\b"
    ),
}


def prose_text(soup: BeautifulSoup) -> str:
    """The page's article text without code, outputs printed as text, or math.

    Inline code stays out too, except that a raw role inside it (``:func:`x` `` shown
    as code) is kept on a line of its own, so the role check still sees it.
    """
    article = soup.select_one("article") or soup
    roles = [code.get_text() for code in article.select("code") if RAW_MARKUP["a raw role"].search(code.get_text())]
    for element in article.select("pre, code, div.highlight, span.math, div.math, mjx-container, script, style"):
        element.decompose()
    return article.get_text("\n") + "".join(f"\n{role}" for role in roles)


def test_nothing_unrendered_reaches_the_page(chapter: str, chapter_page: Path):
    soup = parse(chapter_page, fresh=True)  # prose_text cuts the code and maths out
    unresolved = [describe(span, 80) for span in soup.select("span.xref") if span.find_parent("a") is None]
    text = prose_text(soup)
    found = [
        f"{kind}: {match.group(0).strip()!r}"
        for kind, pattern in RAW_MARKUP.items()
        for match in pattern.finditer(text)
    ]
    found += [f"an unresolved reference: {text!r}" for text in unresolved]
    assert not found, f"{chapter_page.relative_to(ROOT)}:\n" + "\n".join(found[:20])


def test_the_unrendered_markup_check_can_fail():
    page = BeautifulSoup(
        "<article><p>| op | saves |</p><p>|---|---|</p><p>see {numref}`fig-x` and :func:`grad`</p>"
        "<p>```{note}</p><p>the weight \\mathbf{W} and $$x$$</p><span class='xref std'>fig-y</span>"
        "<pre>| fine | in code |</pre><span class='math'>\\mathbf{W}</span><code>by :func:`checkpoint`</code>"
        "</article>",
        "html.parser",
    )
    text = prose_text(page)
    kinds = {kind for kind, pattern in RAW_MARKUP.items() if pattern.search(text)}
    assert kinds == set(RAW_MARKUP)
    assert "fine" not in text and "\\mathbf{W}" in text and text.count("\\mathbf") == 1
    assert "by :func:`checkpoint`" in text  # a role shown as inline code still counts


def test_every_page_of_the_site_says_the_licences_in_its_footer():
    pages = sorted((ROOT / "_build" / "html" / "chapters").glob("*.html"))
    assert len(pages) > 10
    for page in pages:
        footer = parse(page).find("p", class_="licence")
        assert footer is not None and footer.get_text() == "Text and figures: CC BY-SA 4.0. Code: MIT.", page.name


GLUE_CALL = re.compile(r"\bglue\s*\(|chainrule_course\.pages\.glue")


def test_no_cell_a_reader_sees_holds_the_book_s_glue(chapter: str, chapter_page: Path):
    """The prose shows the glued numbers; the calls that hand them over are the book's plumbing
    (_ext/unglued_cells.py), taken out of the shown code as the notebooks take them out."""
    shown = [pre.get_text() for pre in parse(chapter_page).select("div.cell_input pre")]
    glued = [" ".join(code.split())[:120] for code in shown if GLUE_CALL.search(code)]
    assert not glued, f"{chapter_page.relative_to(ROOT)} shows glue in {len(glued)} cells:\n" + "\n".join(glued[:5])
    source = (ROOT / f"{chapter}.md").read_text(encoding="utf-8")
    if "glue(" in source:  # the cells that glue are still shown, without the calls
        assert shown, f"{chapter_page.relative_to(ROOT)} shows no code cell"


def test_each_optional_block_is_folded_under_its_summary(chapter: str, chapter_page: Path):
    """``{optional-start}`` ... ``{optional-end}`` (_ext/optional_blocks.py) is a closed <details> on the
    site, with the block's cells inside it."""
    titles = re.findall(r"^`{3,}\{optional-start\} (.*)$", (ROOT / f"{chapter}.md").read_text(encoding="utf-8"), re.M)
    blocks = parse(chapter_page).select("article details.cr-optional")
    summaries = [" ".join(block.summary.get_text().split()) for block in blocks]
    assert summaries == [f"Under the hood (optional): {title}" for title in titles]
    assert not any(block.has_attr("open") for block in blocks)
