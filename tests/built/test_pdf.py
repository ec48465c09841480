"""Checks on the book as one PDF, _build/pdf/backprop-book.pdf (`make pdf`; `make test` builds it first).

The PDF is read with Debian's poppler-utils (`pdftotext`, `pdfinfo`, `pdfimages`), as a
reader's viewer would: every chapter in order, each on a new page; the math typeset (no TeX
left); the figure and equation numbers the site gives; every solution printed and marked;
no text past the page's edge; no raster picture where the site has vector graphics; and
the site's first page linking to this very file; a Contents that gives each chapter's and
section's page, and an outline (bookmarks) of them that agrees, in the book's PDF and in the
student's (_build/pdf/backprop-book-student.pdf), which has every exercise and no solution. The
checks are functions of the text, so ``test_the_checks_can_fail`` and
``test_the_contents_check_can_fail`` show each one failing on a made-up bad PDF's text.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit

import pytest
from bs4 import BeautifulSoup
from common import BOOK_HTML, ROOT, chapter_source
from pypdf import PdfReader

from tools.book import book_model

PDF = ROOT / "_build" / "pdf" / "backprop-book.pdf"
#: The student's edition (make pdf writes both): the same book without the solutions.
STUDENT_PDF = ROOT / "_build" / "pdf" / "backprop-book-student.pdf"
STUDENT_HTML = ROOT / "_build" / "html-student"
SINGLE_PAGE = ROOT / "_build" / "singlehtml" / "book.html"
NUMBERS = ROOT / "_build" / "numbers.json"
MIN_PAGES, MAX_PAGES = 60, 500
#: TeX that MathJax would have turned into math. `\[` and `\(` are not here: code has regexes;
#: nor is a `$...$` that opens or closes a string, which is code's (a matplotlib label's mathtext).
RAW_TEX = re.compile(
    r"\\(?:frac|partial|begin\{|end\{|mathbf|mathrm|left|right|sum|tanh|lambda|top|cdot|nabla"
    r"|bar|tilde|sigma|odot|text\{)|\$\$|(?<![\"'])\$[^$\n\"']{1,80}\$(?![\"'])"
)
#: Points a word may come within the paper's edge (the margins are 14 mm, about 40 pt).
EDGE = 20.0
#: Three plain words in a row (no apostrophe or hyphen next to them: Sphinx curls quotes).
THREE_WORDS = re.compile(r"(?<![\w'’-])[A-Za-z]+ [A-Za-z]+ [A-Za-z]+(?![\w'’-])")
#: Between two words of a solution's text in the PDF: pdftotext may put a formula's superscripts
#: and short symbols of the next line between words of a line ("the outer ⊤ ¯ product W").
GAP = r"\W+(?:\w{1,3}\W+){0,4}?"
SOLUTION = re.compile(r"^`{3,}\{solution-start\} (\S+)\n(?::.*\n)*`{3,}\n+((?:.+\n)+)", re.MULTILINE)


def run(*command: str) -> str:
    return subprocess.run(command, check=True, capture_output=True, text=True).stdout


def fresh(path: Path) -> Path:
    """``path``, once it exists and is newer than every chapter."""
    if not path.is_file():
        pytest.fail(f"{path.relative_to(ROOT)} does not exist: run `make pdf` (make test runs it)", pytrace=False)
    for chapter in numbered_chapters():
        source = chapter_source(chapter)
        if path.stat().st_mtime < source.stat().st_mtime:
            pytest.fail(
                f"{path.relative_to(ROOT)} is older than {source.relative_to(ROOT)}: run `make pdf`", pytrace=False
            )
    return path


@pytest.fixture(scope="module")
def pdf() -> Path:
    if shutil.which("pdftotext") is None:
        pytest.fail("pdftotext is missing: install Debian's poppler-utils (make setup does)", pytrace=False)
    return fresh(PDF)


@pytest.fixture(scope="module")
def pages(pdf: Path) -> list[str]:
    """The text of each page, as pdftotext reads it (in reading order, not laid out)."""
    return run("pdftotext", "-enc", "UTF-8", str(pdf), "-").split("\f")[:-1]


def flat(text: str) -> str:
    return " ".join(text.split())


def numbers() -> dict:
    if not NUMBERS.is_file():
        pytest.fail(f"{NUMBERS.relative_to(ROOT)} is missing: build the book (make book-html)", pytrace=False)
    return json.loads(NUMBERS.read_text(encoding="utf-8"))


def numbered_chapters() -> list[str]:
    return book_model.numbered_chapters(book_model.read_toc(ROOT))


def headings() -> list[str]:
    """Each page after the first, in _toc.yml's order, as its chapter heading reads ("3. The chain rule ...")."""
    toc = book_model.read_toc(ROOT)
    numbered, chapter_numbers = book_model.numbered_chapters(toc), numbers()["chapters"]
    result = []
    for page in book_model.toc_pages(toc)[1:]:
        source = chapter_source(page).read_text(encoding="utf-8")
        title = re.search(r"^# (.+)$", source, re.MULTILINE).group(1).strip()
        number = chapter_numbers.get(page) if page in numbered else None
        result.append(f"{number}. {title}" if number else title)
    return result


# The checks, each a function of the PDF's text (or its words' boxes) that lists what is wrong.


def chapters_out_of_order(pages: list[str], expected: list[str]) -> list[str]:
    """Each heading must open a page of its own, after the previous chapter's."""
    problems, last = [], -1
    for heading in expected:
        found = [index for index, text in enumerate(pages) if flat(text).startswith(heading)]
        later = [index for index in found if index > last]
        if not later:
            problems.append(
                f"no page after page {last + 1} starts with {heading!r}"
                + (f" (found on page {found[0] + 1})" if found else "")
            )
            continue
        last = later[0]
    return problems


def raw_tex(pages: list[str]) -> list[str]:
    return [
        f"page {index + 1}: {match.group(0)!r}" for index, text in enumerate(pages) for match in RAW_TEX.finditer(text)
    ]


def missing_numbers(text: str, figures: list[str], equations: list[str]) -> list[str]:
    text = flat(text)
    return [f"Fig. {number}" for number in figures if f"Fig. {number}" not in text] + [
        f"({number})" for number in equations if f"({number})" not in text
    ]


def missing_solutions(text: str, solutions: dict[str, str]) -> list[str]:
    """``solutions`` maps "Exercise 3.2" to three words of its solution, which must follow "Solution to Exercise 3.2"
    (not its next exercise: a folded solution prints only its title)."""
    text, problems = flat(text), []
    for exercise, words in solutions.items():
        start = text.find(f"Solution to {exercise}")
        if start < 0:
            problems.append(f"no 'Solution to {exercise}'")
        elif not re.search(GAP.join(map(re.escape, words.split())), text[start : start + 4000]):
            problems.append(f"'Solution to {exercise}' is not followed by its text ({words!r})")
    return problems


def words_past_edge(bbox_html: str) -> list[str]:
    """Words (from ``pdftotext -bbox``) closer than EDGE to the paper's left or right edge: text cut off."""
    problems = []
    for number, page in enumerate(bbox_html.split("<page ")[1:], start=1):
        width = float(re.search(r'width="([\d.]+)"', page).group(1))
        for word in re.finditer(r'xMin="([\d.]+)" yMin="[\d.]+" xMax="([\d.]+)" yMax="[\d.]+">([^<]*)<', page):
            if float(word.group(1)) < EDGE or float(word.group(2)) > width - EDGE:
                problems.append(f"page {number}: {word.group(3)!r}")
    return problems


def solution_words(source: str) -> dict[str, str]:
    """Label of each solution in a chapter source -> three plain words of its first paragraph."""
    result = {}
    for label, paragraph in SOLUTION.findall(source):
        plain = re.sub(r"\$[^$]*\$|`[^`]*`|\{[^}]*\}|\*+", "|", paragraph.replace("\n", " "))
        words = THREE_WORDS.search(plain)
        if words:
            result[label] = words.group(0)
    return result


# The tests.


def test_page_count(pdf: Path):
    info = run("pdfinfo", str(pdf))
    pages = int(re.search(r"^Pages:\s+(\d+)", info, re.MULTILINE).group(1))
    assert MIN_PAGES <= pages <= MAX_PAGES, f"{pages} pages: expected between {MIN_PAGES} and {MAX_PAGES}"


def test_chapters_in_order_each_on_a_new_page(pages: list[str]):
    assert not chapters_out_of_order(pages, headings())


FOOTER = re.compile(r"\s*\d+ / \d+\s*$")


def blank_pages(pages: list[str]) -> list[int]:
    """The pages (from 1) with no text but their footer, "N / M": printed as a picture, or blank."""
    return [index + 1 for index, text in enumerate(pages) if not flat(FOOTER.sub("", text))]


def test_text_is_selectable_on_every_page(pages: list[str]):
    empty = blank_pages(pages)
    assert not empty, (
        f"pages with no text but their number: {empty}. Printed as pictures, or blank: a box left "
        "between a full page and a chapter's forced break prints a blank page (tools/book/pdf.css)"
    )
    assert blank_pages(["Text\n1 / 3", "\n2 / 3\n", "Bibliography\n3 / 3"]) == [2]


#: The one-page build's shape: the Contents tools/book/pdf.py adds (a chapter's line, then its sections'),
#: then each chapter after the empty span Sphinx writes before it. The heading's height moves the
#: Contents' end a pixel at a time across the end of a page.
CHAPTERS = (
    '<nav class="pdf-contents"><h2 style="margin: 0; height: {height}px">Contents</h2><ul>{items}</ul></nav>'
    '<div class="toctree-wrapper compound">\n'
    '<span id="document-a"></span><section><h2>1. A</h2><p>The first chapter.</p></section>\n'
    '<span id="document-b"></span><section><h2>2. B</h2><p>The second chapter.</p></section></div>'
)
ENTRY = '<li class="pdf-contents-{}"><a href="#a"><span class="pdf-contents-title">Entry {}</span></a></li>'


def blank_pages_printed(browser, css: str, heights: range) -> dict[int, list[int]]:
    """For each height of the Contents' heading, the blank pages of the small book printed with ``css``."""
    import io

    page, found = browser.new_page(), {}
    items = "".join(ENTRY.format("chapter" if n % 5 == 0 else "section", n) for n in range(46))  # a page and more
    for height in heights:
        page.set_content(f"<style>{css}</style>" + CHAPTERS.format(height=height, items=items))
        printed = PdfReader(io.BytesIO(page.pdf(prefer_css_page_size=True))).pages
        found[height] = [number + 1 for number, sheet in enumerate(printed) if not flat(sheet.extract_text() or "")]
    page.close()
    return {height: blank for height, blank in found.items() if blank}


def test_a_full_page_before_a_chapter_prints_no_blank_page(chromium):
    """Contents that end anywhere on a page (over two lines' height) run up to the first chapter
    without a blank page between: the span before a chapter once printed one, as the planted rule shows."""
    from tools.book import pdf as pdf_tool

    css = pdf_tool.STYLES.read_text(encoding="utf-8")
    assert blank_pages_printed(chromium, css, range(0, 40)) == {}
    planted = css.replace(".toctree-wrapper > span:empty {", ".toctree-wrapper > section {")
    assert blank_pages_printed(chromium, planted, range(0, 40)) != {}


@pytest.fixture(scope="module")
def chromium():
    """One headless Chromium for the tests that print or open a small page."""
    from browsing import chromium_path
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_path(), args=["--no-sandbox"])
        try:
            yield browser
        finally:
            browser.close()


def test_the_pdf_is_not_printed_when_the_maths_fonts_are_missing(tmp_path, chromium):
    """tools/book/pdf.py stops when MathJax's fonts fail to load (a wrong path from the page, as the
    one-page build once had): the maths would print in a fallback font, misplaced in their boxes."""
    from tools.book import pdf as pdf_tool

    (tmp_path / "MathJax_Main-Regular.woff").write_bytes(
        (ROOT / "_build" / "html" / "_static" / "mathjax" / "woff-v2" / "MathJax_Main-Regular.woff").read_bytes()
    )
    page_text = (
        "<style>@font-face {{font-family: MJXTEX; src: url('{font}')}} mjx-c {{font-family: MJXTEX}}</style>"
        "<mjx-container><mjx-c>x</mjx-c></mjx-container>"
    )
    found = {}
    for font in ("MathJax_Main-Regular.woff", "missing/MathJax_Main-Regular.woff"):
        (tmp_path / "page.html").write_text(page_text.format(font=font))
        page = chromium.new_page()
        page.goto((tmp_path / "page.html").as_uri(), wait_until="load")
        found[font] = pdf_tool.math_fonts_problem(page)
        page.close()
    assert found["MathJax_Main-Regular.woff"] is None, found
    assert "did not load" in found["missing/MathJax_Main-Regular.woff"], found


def test_figure_and_equation_numbers_as_on_the_site(pages: list[str]):
    labels = [label for chapter in numbers()["numbered"].values() for label in chapter.values()]
    figures = sorted({label["number"] for label in labels if label["kind"] == "figure"})
    equations = sorted({label["number"] for label in labels if label["kind"] == "equation"})
    assert len(figures) > 10 and len(equations) > 10
    missing = missing_numbers("".join(pages), figures, equations)
    assert not missing, f"numbers the site has but the PDF lacks: {missing}"


def test_every_solution_is_printed_and_marked(pages: list[str]):
    exercises = {
        label: f"Exercise {entry['number']}"
        for chapter in numbers()["numbered"].values()
        for label, entry in chapter.items()
        if entry["kind"] == "exercise"
    }
    solutions = {}
    for chapter in numbered_chapters():
        for label, words in solution_words(chapter_source(chapter).read_text(encoding="utf-8")).items():
            solutions[exercises[label]] = words
    assert len(solutions) >= 20, f"found only {len(solutions)} solutions in the chapters"
    missing = missing_solutions("".join(pages), solutions)
    assert not missing, missing


def test_no_text_past_the_page_edge(pdf: Path):
    cut = words_past_edge(run("pdftotext", "-bbox", str(pdf), "-"))
    assert not cut, f"text at or past the paper's edge (a code line not wrapped?): {cut[:10]}"


def test_figures_stay_vector_graphics(pdf: Path):
    """Every figure is SVG: the PDF holds no more raster images than the page has raster <img>s."""
    listing = run("pdfimages", "-list", str(pdf)).splitlines()[2:]
    page = SINGLE_PAGE.read_text(encoding="utf-8")
    raster = len(re.findall(r'<img[^>]+src="(?:data:image/(?:png|jpeg)|[^"]+\.(?:png|jpe?g|gif))', page))
    assert len(listing) <= raster, (
        f"{len(listing)} raster images in the PDF, {raster} on the page: "
        f"figures or shadows printed as pictures: {listing[:5]}"
    )


def test_no_site_controls_are_printed(pages: list[str]):
    """The controls as the site shows them: a button's label with what surrounds it, so that
    prose naming a control ("press Live code under the chapter's title") is not one."""
    text = flat("".join(pages))
    controls = [
        "Live code Run and edit this page's Python",
        "Answer in the page Check your answers",
        "Predict, then reveal Check",
        "Toggle primary sidebar",
        "Search Ctrl",
        "Download PDF",
    ]
    for control in controls:
        assert control not in text, f"{control!r} printed"


def first_page_links(site: Path) -> dict[str, tuple[bool, Path]]:
    """The first page's PDF links: their class, whether shown, and the file each leads to."""
    root = book_model.toc_pages(book_model.read_toc(ROOT))[0]
    first = site / f"{root}.html"
    soup = BeautifulSoup(first.read_text(encoding="utf-8"), "html.parser")
    links = {}
    for paragraph in soup.select("p.pdf-download, p.pdf-download-student"):
        href = paragraph.find("a")["href"]
        target = Path(unquote(urlsplit(urljoin(first.as_uri(), href)).path))
        links[paragraph["class"][0]] = (not paragraph.has_attr("hidden"), target)
    return links


def test_first_pages_offer_the_pdfs(pdf: Path):
    """The site offers both PDFs; the student site only the student's, and no link to solutions."""
    student_pdf = fresh(STUDENT_PDF)
    if not STUDENT_HTML.is_dir():
        pytest.fail("no student site: run `make book-student`, then `make pdf` (make test runs both)", pytrace=False)
    sites = {
        BOOK_HTML: {"pdf-download": pdf, "pdf-download-student": student_pdf},
        STUDENT_HTML: {"pdf-download-student": student_pdf},
    }
    for site, offered in sites.items():
        links = first_page_links(site)
        assert set(links) == set(offered), f"{site.name}: PDF links {sorted(links)}, expected {sorted(offered)}"
        for kind, (shown, target) in links.items():
            assert shown, f"{site.name}: the {kind} link is still hidden: run `make pdf`"
            assert target.is_file(), f"{site.name}: the {kind} link leads to {target}, which does not exist"
            assert target.resolve().is_relative_to(site.resolve()), f"{target} is not part of {site.name}"
            assert target.read_bytes() == offered[kind].read_bytes(), f"{target} is not {offered[kind].name}"
    assert not (STUDENT_HTML / "_downloads" / pdf.name).exists(), "the student site serves the solutions' PDF"


def test_publishing_again_keeps_each_sites_links(tmp_path):
    """`make pdf` run twice: the student site, whose link to the solutions' PDF the first run
    removed, is published again without an error, and still offers only the student's PDF. A
    student site built after the PDFs publishes the student's itself, unless the site was built
    again since they were printed."""
    from tools.book import build_book
    from tools.book import pdf as pdf_tool

    (tmp_path / "_toc.yml").write_text("format: jb-book\nroot: index\n", encoding="utf-8")
    links = "".join(
        f'{hidden}<a href="../_downloads/{name}">PDF</a></p>' for name, hidden in pdf_tool.HIDDEN_LINKS.items()
    )
    pages = {site: tmp_path / "_build" / site / "index.html" for site in ("html", "html-student")}
    pages["html"].parent.mkdir(parents=True)
    pages["html"].write_text(f"<main>{links}</main>", encoding="utf-8")
    stamp = tmp_path / "_build" / build_book.SITE_STAMP
    stamp.write_text("built")
    made = tmp_path / "_build" / "pdf"
    made.mkdir()
    pdfs = [made / pdf_tool.NAME, made / pdf_tool.STUDENT_NAME]
    for path in pdfs:
        path.write_bytes(path.name.encode())
    assert len(pdf_tool.publish(tmp_path, *pdfs)) == 2  # no student site yet
    pages["html-student"].parent.mkdir(parents=True)
    pages["html-student"].write_text(f"<main>{links}</main>", encoding="utf-8")
    assert pdf_tool.publish_student_site(tmp_path) == [
        tmp_path / "_build" / "html-student" / "_downloads" / pdfs[1].name
    ]
    for _ in range(2):
        assert len(pdf_tool.publish(tmp_path, *pdfs)) == 3
    student = pages["html-student"].read_text(encoding="utf-8")
    assert pdf_tool.NAME not in student and '<p class="pdf-download-student"><a' in student
    whole = pages["html"].read_text(encoding="utf-8")
    assert " hidden" not in whole and whole.count("<a ") == 2
    assert not list(tmp_path.rglob("*.part"))
    os.utime(stamp, (pdfs[1].stat().st_mtime + 1,) * 2)  # the site built again since the PDFs
    assert pdf_tool.publish_student_site(tmp_path) == []
    pages["html"].write_text("<main></main>", encoding="utf-8")
    with pytest.raises(SystemExit, match="has no link to"):
        pdf_tool.publish(tmp_path, *pdfs)


def test_the_links_are_hidden_until_the_pdfs_exist():
    """A site build writes the links hidden; tools/book/pdf.py shows them once the PDFs are in the site."""
    root = book_model.toc_pages(book_model.read_toc(ROOT))[0]
    source = chapter_source(root).read_text(encoding="utf-8")
    for kind in ("pdf-download", "pdf-download-student"):
        assert f'<p class="{kind}" hidden>' in source, f"{root}.md must write the {kind} link hidden"


def test_the_checks_can_fail():
    good = ["Title\nintro", "1. One\ntext Fig. 1.1 and (1.1)", "2. Two\nSolution to Exercise 2.1 Both rules are"]
    assert not chapters_out_of_order(good, ["1. One", "2. Two"])
    assert chapters_out_of_order(good, ["2. Two", "1. One"])  # out of order
    assert chapters_out_of_order(["1. One two", "text 2. Two"], ["1. One", "2. Two"])  # not on a page of its own
    assert raw_tex(["the slope $\\partial L$ is"]) and raw_tex(["$$x$$"]) and raw_tex(["\\frac{a}{b}"])
    assert not raw_tex(['re.match(r"(\\w+)\\[(.*?)\\]", text)', "%%writefile $script_path"])
    assert not raw_tex(['line_chart({f"Var(w) = {s}/$d_h$": runs, "$W_h$ at 1": runs})'])
    assert raw_tex(["a layer of width $d_h$, with"]), "a formula in prose"
    assert not missing_numbers(good[1], ["1.1"], ["1.1"])
    assert missing_numbers(good[1], ["1.2"], []) == ["Fig. 1.2"]
    assert missing_numbers(good[1], [], ["1.3"]) == ["(1.3)"]
    assert not missing_solutions(good[2], {"Exercise 2.1": "Both rules are"})
    assert missing_solutions(good[2], {"Exercise 2.2": "Both rules are"})  # not printed
    assert missing_solutions("Solution to Exercise 2.1 Exercise 2.2", {"Exercise 2.1": "Both rules are"})  # folded
    bbox = '<page width="595.0" height="842.0"><word xMin="40.0" yMin="1" xMax="{}" yMax="2">word</word></page>'
    assert not words_past_edge(bbox.format(550.0))
    assert words_past_edge(bbox.format(600.0))
    assert solution_words("````{solution-start} ex-a\n:class: dropdown\n````\n\n$x$ is `y`, so the sum is\n") == {
        "ex-a": "so the sum"
    }


def test_the_first_page_names_the_licences(pages: list[str]):
    first = " ".join(pages[0].split())
    assert "licensed under CC BY-SA 4.0 and the code under the MIT licence" in first, first[:800]


# The Contents, the outline, and the student's edition.


def outline_of(path: Path) -> list[tuple[str, int, list[tuple[str, int]]]]:
    """Each bookmark of the PDF at ``path``: (title, page from 1, its children as (title, page))."""
    reader = PdfReader(path)
    entries, items = [], reader.outline
    for index, item in enumerate(items):
        if isinstance(item, list):
            continue
        children = items[index + 1] if index + 1 < len(items) and isinstance(items[index + 1], list) else []
        entries.append(
            (
                item.title,
                reader.get_destination_page_number(item) + 1,
                [(child.title, reader.get_destination_page_number(child) + 1) for child in children],
            )
        )
    return entries


def contents_numbers(pages: list[str], outline) -> list[str]:
    """Each bookmark whose title the Contents does not follow with the bookmark's page number.

    ``pages`` as ``pdftotext -layout`` reads them (a line's title and number on one line); the
    Contents run from the page that starts with "Contents" to the first bookmark's page.
    """
    start = next(index for index, text in enumerate(pages) if flat(text).startswith("Contents"))
    text = flat(" ".join(pages[start : outline[0][1] - 1]))
    problems = []
    for title, number, children in outline:
        for name, page in [(title, number), *children]:
            if not re.search(re.escape(flat(name)) + rf"\s*{page}\b", text):
                problems.append(f"{name!r}: not followed by {page} in the Contents")
    return problems


def section_counts() -> list[int]:
    """The number of sections (## headings outside code) of each page, in _toc.yml's order."""
    counts = []
    for page in book_model.toc_pages(book_model.read_toc(ROOT))[1:]:
        code = r"^(`{3,}).*?^\1"
        source = re.sub(code, "", chapter_source(page).read_text(encoding="utf-8"), flags=re.MULTILINE | re.DOTALL)
        counts.append(len(re.findall(r"^## \S", source, re.MULTILINE)))
    return counts


@pytest.fixture(scope="module")
def student_pages() -> list[str]:
    return run("pdftotext", "-enc", "UTF-8", str(fresh(STUDENT_PDF)), "-").split("\f")[:-1]


@pytest.mark.parametrize("edition", ["book", "student"])
def test_the_outline_and_the_contents_give_every_chapter_and_section_its_page(edition: str, pdf: Path):
    path = fresh(STUDENT_PDF if edition == "student" else pdf)
    outline = outline_of(path)
    pages = run("pdftotext", "-enc", "UTF-8", str(path), "-").split("\f")[:-1]
    laid_out = run("pdftotext", "-layout", "-enc", "UTF-8", str(path), "-").split("\f")[:-1]
    assert [flat(title) for title, _, _ in outline] == headings(), "the outline's chapters"
    assert [len(children) for _, _, children in outline] == section_counts(), "the outline's sections per chapter"
    for title, number, children in outline:
        assert flat(pages[number - 1]).startswith(flat(title)), f"{title!r} is bookmarked at page {number}"
        for name, page in children:
            assert flat(name) in flat(pages[page - 1]), f"{name!r} is bookmarked at page {page}"
    problems = contents_numbers(laid_out, outline)
    assert not problems, problems[:10]
    assert PdfReader(path).page_mode == "/UseOutlines"


def test_the_student_pdf_has_the_exercises_but_no_solution(pages: list[str], student_pages: list[str]):
    book, student = flat("".join(pages)), flat("".join(student_pages))
    exercises = sorted(set(re.findall(r"Exercise \d+\.\d+", book)))
    assert len(exercises) >= 20 and all(exercise in student for exercise in exercises)
    assert "Solution to Exercise" in book and "Solution to Exercise" not in student
    solutions = {}
    for chapter in numbered_chapters():
        solutions.update(solution_words(chapter_source(chapter).read_text(encoding="utf-8")))

    def count(words: str, text: str) -> int:
        return len(re.findall(GAP.join(map(re.escape, words.split())), text))

    # Three words of a solution may occur elsewhere in the book too; in the student's PDF they
    # occur fewer times than in the book's, which prints the solution.
    leaked = [words for words in solutions.values() if count(words, student) >= count(words, book)]
    assert len(solutions) >= 20 and not leaked, leaked
    assert len(student_pages) < len(pages)


def test_the_contents_check_can_fail():
    outline = [("1. One", 4, [("1.1 Start", 4), ("1.2 End", 5)])]
    good = ["Title", "Contents 1. One 4 1.1 Start 4", "1.2 End 5", "1. One"]
    assert not contents_numbers(good, outline)
    assert contents_numbers(["Title", "Contents 1. One 3 1.1 Start 4", "1.2 End", "1. One"], outline) == [
        "'1. One': not followed by 4 in the Contents",
        "'1.2 End': not followed by 5 in the Contents",
    ]


#: Sentences for the screen (_ext/media_only.py), and what paper prints instead.
WEB_ONLY = [
    "click to go to a step",
    "click to open it",
    "Tick Predict",
    "Press Next step",
    "press Live code",
    "Colab · download",
    "click the curve",
    "Point at a line",
]
PRINT_ONLY = [
    "from the book's website",
    "The book's website has a table of every chapter's notebooks",
    "the widget steps through it",
    "On the book's website the widget steps through the pass edge by edge",
]


def test_web_only_sentences_print_as_sentences_fit_for_paper(pages: list[str], student_pages: list[str]):
    for edition, found in [("book", pages), ("student", student_pages)]:
        text = flat("".join(found)).replace("’", "'")  # Sphinx curls the apostrophes
        printed = [phrase for phrase in WEB_ONLY if phrase in text]
        assert not printed, f"web-only sentences in the {edition}'s PDF: {printed}"
        missing = [phrase for phrase in PRINT_ONLY if phrase not in text]
        assert not missing, f"the {edition}'s PDF lacks its sentences for paper: {missing}"
    site = " ".join(
        BeautifulSoup((BOOK_HTML / "chapters" / f"{name}.html").read_text(encoding="utf-8"), "html.parser").get_text()
        for name in ("index", "intro", "graph", "backward", "engine")
    )
    site = flat(site)
    assert all(phrase in site for phrase in WEB_ONLY), [phrase for phrase in WEB_ONLY if phrase not in site]
    css = (ROOT / "_static" / "course.css").read_text(encoding="utf-8")
    assert ".print-only { display: none; }" in css, "the site must hide the text for paper"


def test_every_widget_fits_on_one_printed_page(chromium):
    """Each explorable prints as its still figure, which must not be split between two pages.

    The one-page build is laid out as tools/book/pdf.py prints it (its styles, print media, the width
    between A4's margins): every widget is kept whole (``break-inside: avoid``) and is no taller
    than the space between the top and bottom margins, so Chromium can keep it on one page.
    """
    from tools.book import pdf as printer

    width_mm, height_mm = 210 - 14 - 14, 297 - 16 - 18  # A4 inside the @page margins of tools/pdf.css
    page = chromium.new_page(viewport={"width": round(width_mm * 96 / 25.4), "height": 1000})
    try:
        page.emulate_media(media="print")
        printer.prepare(page, SINGLE_PAGE)
        widgets = page.evaluate(
            """() => [...document.querySelectorAll('.cr-explorable')].map(w => ({
                height: w.getBoundingClientRect().height, avoid: getComputedStyle(w).breakInside,
                text: w.textContent.trim().slice(0, 60)}))"""
        )
    finally:
        page.close()
    limit = height_mm * 96 / 25.4
    assert len(widgets) >= 4, f"found only {len(widgets)} explorables in the one-page build"
    split = [w for w in widgets if w["avoid"] != "avoid" or w["height"] > limit]
    assert not split, f"widgets that can be split (page height {limit:.0f} px): {split}"
