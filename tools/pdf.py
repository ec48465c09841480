"""The whole book as one PDF (``make pdf``): ``_build/pdf/backprop-book.pdf``.

    python tools/pdf.py [BOOK]    # after the site's build (make book-html)

No TeX: the book is printed by a browser, as a reader would print a page.

1. Sphinx's ``singlehtml`` builder writes every page into one (``_build/singlehtml``), with
   the site's chapter, figure, equation and exercise numbers. After the site's build nothing
   executes (the execution cache) and nothing is read again (the shared environment): it
   only writes. Sphinx writes that page's links as if it sat at the book's root although
   it is ``chapters/index.html``, so it is written again as ``book.html`` at the root, with
   its links inside itself as ``#anchor`` (they become the PDF's own links).
2. Headless Chromium (Playwright) opens it, waits until MathJax has typeset every formula,
   opens every folded solution, adds a linked list of the chapters and ``tools/pdf.css``
   (no sidebars or buttons, a chapter per new page, code lines wrapped, solutions marked),
   and prints it to A4 with page numbers. Explorables keep their still figure of the final
   state (their script is not run). Inline SVG figures stay vector graphics, and the text,
   the math's included, can be selected.
3. The PDF is copied into the site, ``_build/html/_downloads/backprop-book.pdf``, and the
   first page's "Download PDF" link, which every site build writes hidden (the PDF is made
   after the site, and may not exist), is shown.

The PDF is not tagged: Chromium's tags (and the bookmarks it derives from them) made it
three times the size, about 10 MB instead of 3 MB.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

import book_model  # tools/book_model.py
import build_book  # tools/build_book.py
from playwright.sync_api import sync_playwright

NAME = "backprop-book.pdf"
CHROMIUM = "/usr/bin/chromium"
STYLES = Path(__file__).with_name("pdf.css")
#: The first page's link, as chapters/index.md writes it and once the PDF is in the site.
HIDDEN_LINK = '<p class="pdf-download" hidden>'
SHOWN_LINK = '<p class="pdf-download">'
#: Where the site serves the PDF, under _build/html (chapters/index.md links to ../_downloads/...).
SITE_COPY = Path("_downloads") / NAME
FOOTER = (
    '<div style="font-size: 8pt; width: 100%; text-align: center; color: #555;">'
    '<span class="pageNumber"></span> / <span class="totalPages"></span></div>'
)
TIMEOUT_MS = 120_000
#: Run in the page before printing: every folded solution and cell opened, and a list of
#: the chapters, linked to them, before the first (the site's sidebar is empty here).
PREPARE = """() => {
    document.querySelectorAll('.toggle-hidden').forEach(e => e.classList.remove('toggle-hidden'));
    document.querySelectorAll('details').forEach(e => { e.open = true; });
    const chapters = [...document.querySelectorAll('.toctree-wrapper > section')];
    const items = chapters.filter(section => section.querySelector(':scope > h2')).map(section => {
        const title = section.querySelector(':scope > h2').cloneNode(true);
        title.querySelectorAll('.headerlink').forEach(link => link.remove());
        return `<li><a href="#${section.id}">${title.textContent.trim()}</a></li>`;
    });
    const contents = document.createElement('nav');
    contents.className = 'pdf-contents';
    contents.innerHTML = `<h2>Contents</h2><ul>${items.join('')}</ul>`;
    chapters[0].parentElement.before(contents);
}"""


def first_page(book: Path) -> str:
    """The book's first page, as _toc.yml names it (``chapters/index``)."""
    return book_model.read_toc(book)["root"]


def build_single_page(book: Path) -> Path:
    """Sphinx's singlehtml build of the book; returns the page, rewritten as ``book.html`` at its root."""
    # It leaves the site build's numbers (_build/numbers.json) alone, so that the other steps
    # that read them (make assignments, notebooks-check) can run beside it.
    status = build_book.build(1, [str(book), "--builder", "singlehtml", "-W", "-n", "--keep-going"])
    if status:
        sys.exit(f"pdf: the single-page build failed (exit {status})")
    folder = book / "_build" / "singlehtml"
    root = first_page(book)
    page = (folder / f"{root}.html").read_text(encoding="utf-8")
    target = folder / "book.html"
    target.write_text(page.replace(f'href="{root}.html#', 'href="#'), encoding="utf-8")
    return target


def print_to_pdf(page_path: Path, pdf_path: Path) -> None:
    """Open the page in headless Chromium, let MathJax typeset it, open the solutions and print it."""
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"],
        )
        try:
            page = browser.new_page()
            # The book is self-contained: anything not from the disk would be a mistake, not a wait.
            page.route(
                "**/*", lambda route: route.continue_() if route.request.url.startswith("file:") else route.abort()
            )
            # Explorables stay as their page has them, each a still figure of its final state: their
            # script (chainrule/explore/explorable.js) would set them up at their first step.
            page.add_init_script("window.chainruleExplorable = {setup() {}, setupAll() {}};")
            page.goto(page_path.resolve().as_uri(), wait_until="load", timeout=TIMEOUT_MS)
            page.wait_for_function(
                "() => window.MathJax && MathJax.startup && MathJax.startup.promise", timeout=TIMEOUT_MS
            )
            page.evaluate("() => MathJax.startup.promise")
            page.evaluate(PREPARE)
            page.add_style_tag(content=STYLES.read_text(encoding="utf-8"))
            page.evaluate("() => document.fonts.ready.then(() => true)")
            pdf_path.parent.mkdir(parents=True, exist_ok=True)
            page.pdf(
                path=str(pdf_path),
                prefer_css_page_size=True,
                print_background=True,
                display_header_footer=True,
                header_template="<span></span>",
                footer_template=FOOTER,
            )
        finally:
            browser.close()


def publish(book: Path, pdf_path: Path) -> Path:
    """Copy the PDF into the site and show the first page's link to it."""
    site = book / "_build" / "html"
    first = site / f"{first_page(book)}.html"
    copy = site / SITE_COPY
    copy.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(pdf_path, copy)
    text = first.read_text(encoding="utf-8")
    if HIDDEN_LINK not in text and SHOWN_LINK not in text:
        sys.exit(f"pdf: {first} has no link to the PDF ({HIDDEN_LINK!r}, from {first_page(book)}.md)")
    first.write_text(text.replace(HIDDEN_LINK, SHOWN_LINK), encoding="utf-8")
    return copy


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description="Print the built book as one PDF (make pdf).")
    parser.add_argument("book", type=Path, nargs="?", default=Path("."), help="the book's folder (default: .)")
    book = parser.parse_args(argv).book
    if not (book / "_build" / "html").is_dir():
        sys.exit("pdf: build the site first (make book-html)")
    start = time.monotonic()
    page = build_single_page(book)
    built = time.monotonic()
    pdf_path = book / "_build" / "pdf" / NAME
    print_to_pdf(page, pdf_path)
    printed = time.monotonic()
    copy = publish(book, pdf_path)
    size = pdf_path.stat().st_size / 1e6
    print(
        f"pdf: {pdf_path} ({size:.1f} MB), also {copy}; single-page build {built - start:.0f} s, "
        f"printing {printed - built:.0f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
