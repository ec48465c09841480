"""The whole book as one PDF (``make pdf``): ``_build/pdf/backprop-book.pdf``, and the student's.

    python -m tools.book.pdf [BOOK]    # after the site's build (make book-html)

No TeX: the book is printed by a browser, as a reader would print a page.

1. Sphinx's ``singlehtml`` builder writes every page into one (``_build/singlehtml``), with
   the site's chapter, figure, equation and exercise numbers. After the site's build nothing
   executes (the execution cache) and nothing is read again (the shared environment): it
   only writes. Sphinx writes that page's links as if it sat at the book's root although
   it is ``chapters/index.html``, so it is written again as ``book.html`` at the root, with
   its links inside itself as ``#anchor`` (they become the PDF's own links).
2. Headless Chromium (Playwright) opens it, waits until the maths' fonts have loaded,
   opens every folded solution, adds a linked list of the chapters and ``tools/pdf.css``
   (no sidebars or buttons, a chapter per new page, code lines wrapped, solutions marked),
   and prints it to A4 with page numbers. Explorables keep their still figure of the final
   state (their script is not run). Inline SVG figures stay vector graphics, and the text,
   the math's included, can be selected.
3. The Contents link to every chapter and section (each heading is the link's target), so
   Chromium makes a named destination of each: pypdf reads each entry's page from them,
   writes the numbers into the Contents' empty boxes, and adds an outline (bookmarks) of
   the same entries. The PDF is not tagged: Chromium's tags, from which it would derive
   bookmarks, made it three times the size, about 10 MB instead of 3 MB.
4. The solutions are removed from the page and it is printed again, with its own page
   numbers and outline: the student's PDF, ``_build/pdf/backprop-book-student.pdf``.
5. Both PDFs are copied into the site, ``_build/html/_downloads/``, and the first page's two
   links to them, which every site build writes hidden (the PDFs are made after the site, and
   may not exist), are shown. The student site (``_build/html-student``), when it has been
   built, gets the student's PDF and its link only; the link to the book's PDF, with its
   solutions, is removed from it.
"""

from __future__ import annotations

import argparse
import contextlib
import re
import shutil
import sys
import time
from pathlib import Path

from playwright.sync_api import sync_playwright
from pypdf import PdfReader, PdfWriter
from pypdf.generic import ArrayObject, DecodedStreamObject, DictionaryObject, NameObject

from tools.book import book_model, build_book

NAME = "backprop-book.pdf"
#: The student's edition: the same book without the solutions.
STUDENT_NAME = "backprop-book-student.pdf"
CHROMIUM = "/usr/bin/chromium"
STYLES = Path(__file__).with_name("pdf.css")
#: The first page's links, as chapters/index.md writes them (hidden), for each PDF.
HIDDEN_LINKS = {NAME: '<p class="pdf-download" hidden>', STUDENT_NAME: '<p class="pdf-download-student" hidden>'}
#: Where the sites serve the PDFs (chapters/index.md links to ../_downloads/...).
DOWNLOADS = Path("_downloads")
FOOTER = (
    '<div style="font-size: 8pt; width: 100%; text-align: center; color: #555;">'
    '<span class="pageNumber"></span> / <span class="totalPages"></span></div>'
)
TIMEOUT_MS = 120_000
PRINT_OPTIONS = {
    "prefer_css_page_size": True,
    "print_background": True,
    "display_header_footer": True,
    "header_template": "<span></span>",
    "footer_template": FOOTER,
}
#: Run in the page before printing: every folded solution and cell opened, and the Contents,
#: before the first chapter: each chapter and its sections, linked to them, with an empty box
#: for the page number (the site's sidebar is empty here). Returns the entries, for the outline.
PREPARE = """() => {
    document.querySelectorAll('.toggle-hidden').forEach(e => e.classList.remove('toggle-hidden'));
    document.querySelectorAll('details').forEach(e => { e.open = true; });
    const titleOf = heading => {
        const copy = heading.cloneNode(true);
        copy.querySelectorAll('.headerlink').forEach(link => link.remove());
        return copy.textContent.trim();
    };
    const entry = (id, title, level) => `<li class="pdf-contents-${level}"><a href="#${id}">` +
        `<span class="pdf-contents-title">${title}</span><span class="pdf-contents-page"></span></a></li>`;
    // Each heading is the anchor of its entry (a block, so the PDF's destination is where it
    // prints): in the one-page build, sections of different chapters share ids ("summary").
    let count = 0;
    const anchor = heading => {
        heading.id = heading.id || `pdf-entry-${count++}`;
        return {id: heading.id, title: titleOf(heading)};
    };
    const chapters = [...document.querySelectorAll('.toctree-wrapper > section')]
        .filter(section => section.querySelector(':scope > h2'));
    const entries = chapters.map(chapter => ({
        ...anchor(chapter.querySelector(':scope > h2')),
        sections: [...chapter.querySelectorAll(':scope > section > h3')].map(anchor),
    }));
    const items = entries.map(chapter => entry(chapter.id, chapter.title, 'chapter') +
        chapter.sections.map(section => entry(section.id, section.title, 'section')).join(''));
    const contents = document.createElement('nav');
    contents.className = 'pdf-contents';
    contents.id = 'pdf-contents';  // linked from its own heading: the PDF then knows its first page
    contents.innerHTML = `<h2><a href="#pdf-contents">Contents</a></h2><ul>${items.join('')}</ul>`;
    chapters[0].parentElement.before(contents);
    return entries;
}"""
#: Removes the solutions, for the student's PDF: each folded solution and each solution cell.
WITHOUT_SOLUTIONS = """() => {
    document.querySelectorAll('.solution, .cell.tag_solution').forEach(e => e.remove());
}"""


def first_page(book: Path) -> str:
    """The book's first page, as _toc.yml names it (``chapters/index``)."""
    return book_model.read_toc(book)["root"]


def build_single_page(book: Path) -> Path:
    """Sphinx's singlehtml build of the book; returns the page, rewritten as ``book.html`` at its root."""
    # It leaves the site build's numbers (_build/numbers.json) alone, so that the other steps
    # that read them (make assignments, the tests) can run beside it.
    status = build_book.build(1, [str(book), "--builder", "singlehtml", "-W", "-n", "--keep-going"])
    if status:
        sys.exit(f"pdf: the single-page build failed (exit {status})")
    folder = book / "_build" / "singlehtml"
    root = first_page(book)
    page = (folder / f"{root}.html").read_text(encoding="utf-8")
    target = folder / "book.html"
    target.write_text(page.replace(f'href="{root}.html#', 'href="#'), encoding="utf-8")
    return target


def destinations(pdf_path: Path) -> dict[str, int]:
    """The page (from 1) of each anchor the PDF links to: Chromium makes a named destination of each."""
    reader = PdfReader(pdf_path)
    pages = {}
    for name, destination in reader.named_destinations.items():
        number = reader.get_destination_page_number(destination)
        if number is None:  # a destination on no page of the document: no page to print for its links
            continue
        pages[name.lstrip("/")] = number + 1
    return pages


def _dictionary(value, what: str) -> DictionaryObject:
    """``value`` (or the object it refers to), which the PDF format makes a dictionary."""
    found = value.get_object()
    if not isinstance(found, DictionaryObject):
        raise ValueError(f"{what} is a {type(found).__name__}, not a dictionary as the PDF format says")
    return found


def add_outline(writer: PdfWriter, entries: list[dict], pages: dict[str, int]) -> None:
    """Bookmark every chapter, and its sections under it, at their pages; the viewer opens with them shown."""
    for chapter in entries:
        parent = writer.add_outline_item(title=chapter["title"], page_number=pages[chapter["id"]] - 1)
        for section in chapter["sections"]:
            writer.add_outline_item(title=section["title"], page_number=pages[section["id"]] - 1, parent=parent)
    writer.page_mode = "/UseOutlines"


#: Helvetica's width of a digit, in units of the font size (every digit has the same width).
DIGIT_WIDTH = 0.556


def stamp_page_numbers(writer: PdfWriter, pages: dict[str, int], first: int, before: int) -> int:
    """Write each Contents line's page number at the right end of its link, on pages ``first`` to ``before`` - 1.

    Chromium prints each line of the Contents as a link to its anchor, whose box spans the line
    and ends with the empty box left for the number (tools/pdf.css). The numbers are text in
    Helvetica, one of the fonts every PDF reader has, so they can be selected and searched.
    Returns how many were written.
    """
    font = DictionaryObject(
        {
            NameObject("/Type"): NameObject("/Font"),
            NameObject("/Subtype"): NameObject("/Type1"),
            NameObject("/BaseFont"): NameObject("/Helvetica"),
            NameObject("/Encoding"): NameObject("/WinAnsiEncoding"),
        }
    )
    font_ref = writer._add_object(font)
    written = 0
    for page in writer.pages[first - 1 : before - 1]:
        text = []
        for annotation in page.get("/Annots", []):
            link = annotation.get_object()
            anchor = str(link.get("/Dest", "")).lstrip("/")
            if anchor not in pages:
                continue
            left, bottom, right, top = (float(v) for v in link["/Rect"])
            size = min(10.0, 0.62 * (top - bottom))
            number = str(pages[anchor])
            x = right - len(number) * DIGIT_WIDTH * size
            y = bottom + 0.3 * (top - bottom)
            text.append(f"BT /CRContentsFont {size:.2f} Tf {x:.2f} {y:.2f} Td ({number}) Tj ET")
        if not text:
            continue
        resources = _dictionary(page["/Resources"], "a page's /Resources")
        if "/Font" not in resources:
            resources[NameObject("/Font")] = DictionaryObject()
        _dictionary(resources["/Font"], "a page's /Font")[NameObject("/CRContentsFont")] = font_ref
        # The page's own drawing inside q ... Q, so that what it leaves set does not move ours.
        streams = []
        for data in (b"q\n", b"\nQ\n", ("0 g\n" + "\n".join(text) + "\n").encode()):
            stream = DecodedStreamObject()
            stream.set_data(data)
            streams.append(writer._add_object(stream))
        contents = page[NameObject("/Contents")]
        own = list(contents) if isinstance(contents, ArrayObject) else [page.raw_get("/Contents")]
        page[NameObject("/Contents")] = ArrayObject([streams[0], *own, streams[1], streams[2]])
        written += len(text)
    return written


def print_edition(page, entries: list[dict], pdf_path: Path) -> None:
    """Print the page, then write the Contents' page numbers and the outline into the PDF."""
    anchors = {entry["id"] for chapter in entries for entry in [chapter, *chapter["sections"]]}
    page.pdf(path=str(pdf_path), **PRINT_OPTIONS)
    found = destinations(pdf_path)
    pages = {anchor: number for anchor, number in found.items() if anchor in anchors}
    missing = sorted(anchors - set(pages))
    if missing:
        sys.exit(f"pdf: the Contents link to {missing}, which the PDF has no destination for")
    writer = PdfWriter(clone_from=PdfReader(pdf_path))
    written = stamp_page_numbers(writer, pages, first=found["pdf-contents"], before=min(pages.values()))
    if written != len(anchors):
        sys.exit(f"pdf: wrote {written} page numbers into the Contents, for {len(anchors)} entries")
    add_outline(writer, entries, pages)
    with replacing(pdf_path) as partial, partial.open("wb") as file:
        writer.write(file)


def math_fonts_problem(page) -> str | None:
    """Why the page's maths would print in the wrong font, or None: every formula is drawn in
    MathJax's fonts, which its stylesheet (_ext/prerendered_math.py) finds from the page."""
    fonts = page.evaluate(
        """() => document.fonts.ready.then(fonts => [...fonts].filter(f => f.family.startsWith('MJXTEX'))
                 .map(f => [f.family, f.status]))"""
    )
    failed = sorted({family for family, status in fonts if status == "error"})
    if failed:
        return f"MathJax's fonts did not load, so the maths would print in another font: {failed}"
    if page.locator("mjx-container").count() and not any(status == "loaded" for _, status in fonts):
        return "the page has maths but no MathJax font loaded"
    return None


def prepare(page, page_path: Path) -> list[dict]:
    """Open the one-page build in ``page`` as it is printed; return the Contents' entries.

    The maths' fonts have loaded (the maths were typeset when the book was built), the
    solutions are open, the Contents are in place and tools/pdf.css is applied
    (tests/built/test_pdf.py lays the widgets out with it too).
    """
    # The book is self-contained: anything not from the disk would be a mistake, not a wait.
    page.route("**/*", lambda route: route.continue_() if route.request.url.startswith("file:") else route.abort())
    # Explorables stay as their page has them, each a still figure of its final state: their
    # script (chainrule_course/explore/explorable.js) would set them up at their first step.
    page.add_init_script("window.chainruleExplorable = {setup() {}, setupAll() {}};")
    page.goto(page_path.resolve().as_uri(), wait_until="load", timeout=TIMEOUT_MS)
    page.wait_for_function("() => document.fonts.status === 'loaded'", timeout=TIMEOUT_MS)
    problem = math_fonts_problem(page)
    if problem:
        sys.exit(f"pdf: {problem}")
    entries = page.evaluate(PREPARE)
    page.add_style_tag(content=STYLES.read_text(encoding="utf-8"))
    page.evaluate("() => document.fonts.ready.then(() => true)")
    return entries


def print_to_pdf(page_path: Path, pdf_path: Path, student_path: Path) -> None:
    """Open the page in headless Chromium, open the solutions and print it;
    then remove the solutions and print the student's edition."""
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"],
        )
        try:
            page = browser.new_page()
            entries = prepare(page, page_path)
            pdf_path.parent.mkdir(parents=True, exist_ok=True)
            print_edition(page, entries, pdf_path)
            page.evaluate(WITHOUT_SOLUTIONS)
            print_edition(page, entries, student_path)
        finally:
            browser.close()


def publish(book: Path, pdf_path: Path, student_path: Path) -> list[Path]:
    """Copy the PDFs into the sites and show the first pages' links to them.

    The site offers both; the student site, when it has been built, the student's alone, and its
    link to the other is removed. Publishing again changes nothing. A student site that is being
    built meanwhile is left to its build, which publishes the PDFs itself (:func:`publish_student_site`).
    """
    copies = publish_site(book, book / "_build" / "html", [pdf_path, student_path], pdf_path, student_path)
    try:
        copies += publish_site(book, book / "_build" / "html-student", [student_path], pdf_path, student_path)
    except FileNotFoundError:
        pass
    return copies


def publish_site(book: Path, site: Path, offered: list[Path], pdf_path: Path, student_path: Path) -> list[Path]:
    first = site / f"{first_page(book)}.html"
    text = first.read_text(encoding="utf-8")
    copies = []
    for path in (pdf_path, student_path):
        hidden = HIDDEN_LINKS[path.name]
        if path not in offered:  # the student site offers no solutions, not even hidden
            text = re.sub(re.escape(hidden) + ".*?</p>", "", text, flags=re.DOTALL)
            continue
        if hidden not in text and hidden.replace(" hidden", "") not in text:
            sys.exit(f"pdf: {first} has no link to {path.name} ({hidden!r}, from {first_page(book)}.md)")
        copy = site / DOWNLOADS / path.name
        copy.parent.mkdir(exist_ok=True)
        with replacing(copy) as partial:
            shutil.copyfile(path, partial)
        copies.append(copy)
        text = text.replace(hidden, hidden.replace(" hidden", ""))
    with replacing(first) as partial:
        partial.write_text(text, encoding="utf-8")
    return copies


@contextlib.contextmanager
def replacing(path: Path):
    """A file beside ``path`` to write, renamed onto it once written: a site built meanwhile (``make pdf``
    and ``make book-student`` run side by side) reads the whole old file or the whole new one."""
    partial = path.with_name(path.name + ".part")
    yield partial
    partial.replace(path)


def publish_student_site(book: Path) -> list[Path]:
    """After the student site's build: its PDF, when one was printed since the site was last built
    (``make pdf`` may run beside ``make book-student``, and publish before the student site exists)."""
    student_path = book / "_build" / "pdf" / STUDENT_NAME
    stamp = book / "_build" / build_book.SITE_STAMP
    if not student_path.is_file() or not stamp.is_file() or student_path.stat().st_mtime < stamp.stat().st_mtime:
        return []
    return publish_site(
        book, book / "_build" / "html-student", [student_path], student_path.with_name(NAME), student_path
    )


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description="Print the built book as one PDF (make pdf).")
    parser.add_argument("book", type=Path, nargs="?", default=Path("."), help="the book's folder (default: .)")
    parser.add_argument(
        "--student-site",
        action="store_true",
        help="only publish the PDF printed since the last site build into the student site",
    )
    arguments = parser.parse_args(argv)
    book = arguments.book
    if arguments.student_site:
        copies = publish_student_site(book)
        print(f"pdf: {', '.join(map(str, copies)) or 'no PDF printed since the last site build'} in the student site")
        return 0
    if not (book / "_build" / "html").is_dir():
        sys.exit("pdf: build the site first (make book-html)")
    start = time.monotonic()
    page = build_single_page(book)
    built = time.monotonic()
    pdf_path = book / "_build" / "pdf" / NAME
    student_path = pdf_path.with_name(STUDENT_NAME)
    print_to_pdf(page, pdf_path, student_path)
    printed = time.monotonic()
    copies = publish(book, pdf_path, student_path)
    size = pdf_path.stat().st_size / 1e6
    print(
        f"pdf: {pdf_path} ({size:.1f} MB); the student's, without solutions: {student_path}; "
        f"copied to {', '.join(map(str, copies))}; "
        f"single-page build {built - start:.0f} s, "
        f"printing {printed - built:.0f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
