"""Open every built page in headless Chromium, offline, the way a reader would.

The site is served from 127.0.0.1, as a web server serves it: its scripts are ES modules, which
a browser loads over HTTP only (Chromium refuses a module from ``file://``). Every request the page
makes is intercepted: anything that is not from that server or ``data:`` is blocked and fails the
test (the book must work with no network). The
test also fails on JavaScript errors, on math left untypeset or not in MathJax's fonts, on
figures wider than the text column (a figure that scrolls sideways in its own box
counts as its box), and on a page wider than the window, at a desktop width and at a
390 px phone's. At the desktop width no code or output block may scroll sideways; on
the phone no figure text may be smaller than 9 CSS px, and no display equation may be
wider than the column.

The same visit weighs the page and its icons (tests/browser/test_weight.py) and runs
axe-core on it in both colour modes (tests/browser/test_accessibility.py, which measures the
student site's pages): one page load per chapter for the three.

Uses Debian's chromium through Playwright (no browser download).
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote, urlsplit

from browsing import wait_for_fonts
from common import ROOT
from playwright.sync_api import Browser
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError
from test_accessibility import axe_violations
from test_weight import ICONS, icon_problems, weight_problems

from tools.book.pdf import math_fonts_problem

WIDTHS = {"desktop": 1280, "phone": 390}
MIN_TEXT_PX = 9  # chainrule.figures.svg.MIN_TEXT_PX, measured here as the reader sees it
LOCAL_SCHEMES = ("file:", "data:")  # and the origin of the server the page is served from
NETWORK_IDLE_TIMEOUT_MS = 30_000
#: How long the figure check waits for site.js to mark the figures that scroll; a figure still
#: unmarked then is a problem (marking takes a frame; the margin is for a loaded machine).
MARKING_TIMEOUT_MS = 10_000


class PageVisit:
    """A page opened with all requests recorded and every non-local one blocked."""

    def __init__(self, browser: Browser, url: str, width: int, served: Path | None = None):
        """``url``: a ``file:`` URL, or the URL of a page of the folder ``served`` on a local server."""
        self.origin = "/".join(url.split("/", 3)[:3]) + "/" if served else None
        self.served = served
        # No service worker: on a first visit it reloads a page where Python can run (site.js).
        self.context = browser.new_context(viewport={"width": width, "height": 1000}, service_workers="block")
        self.page = self.context.new_page()
        self.blocked: list[str] = []
        self.loaded: dict[str, int] = {}  # the local files requested -> their bytes
        self.errors: list[str] = []
        self.pending: dict[int, str] = {}  # id(request) -> url, from request to finished or failed
        self.page.on("request", lambda request: self.pending.__setitem__(id(request), request.url))
        self.page.on("requestfinished", lambda request: self.pending.pop(id(request), None))
        self.page.route("**/*", self._route)
        self.page.on("pageerror", lambda error: self.errors.append(f"uncaught JavaScript error: {error}"))
        self.page.on(
            "console",
            lambda message: self.errors.append(f"console error: {message.text}") if message.type == "error" else None,
        )
        self.page.on("requestfailed", self._failed)
        self.page.goto(url, wait_until="load")

    def local(self, url: str) -> bool:
        return url.startswith(LOCAL_SCHEMES) or bool(self.origin and url.startswith(self.origin))

    def _route(self, route):
        url = route.request.url
        if self.local(url):
            path = None
            if url.startswith("file:"):
                path = Path(unquote(urlsplit(url).path))
            elif self.origin and url.startswith(self.origin):
                path = self.served / unquote(urlsplit(url).path).lstrip("/")
            if path is not None:
                self.loaded[url.split("?")[0].split("#")[0]] = path.stat().st_size if path.is_file() else 0
            route.continue_()
        else:
            self.blocked.append(url)
            route.abort()

    def _failed(self, request):
        self.pending.pop(id(request), None)
        if self.local(request.url):
            self.errors.append(f"failed to load {request.url}: {request.failure}")

    def settle(self) -> list[str]:
        """Wait until the page has made no request for 500 ms; problems if a request never ends.

        Twice in CI, under load, Playwright's network-idle wait timed out on a page that had
        no request left open (every request it made had finished or been blocked). So the
        timeout is a problem only when a request is still open.
        """
        try:
            self.page.wait_for_load_state("networkidle", timeout=NETWORK_IDLE_TIMEOUT_MS)
        except PlaywrightTimeoutError:
            if self.pending:
                return [f"requests still open after {NETWORK_IDLE_TIMEOUT_MS} ms: {sorted(self.pending.values())}"]
        return []

    def close(self):
        self.context.close()


def untypeset_math(page) -> list[str]:
    """Problems with the math on the page: raw TeX left over, TeX errors, fonts that failed.

    The maths are typeset when the book is built (_ext/prerendered_math.py): every math
    element must hold MathJax's output, with its MathML for screen readers, and draw
    with MathJax's fonts, loaded from the build.
    """
    math_count = page.locator("span.math, div.math").count()
    if math_count == 0:
        return []  # no math on this page (tests/built/test_book.py checks that the book has some)
    wait_for_fonts(page)
    problems = []
    raw = page.evaluate(
        """() => [...document.querySelectorAll('span.math, div.math')]
                 .filter(element => !element.querySelector('mjx-container mjx-assistive-mml math'))
                 .map(element => element.textContent.trim().slice(0, 80))"""
    )
    if raw:
        problems.append(f"math left as raw TeX (not typeset, or without its MathML): {raw}")
    tex_errors = page.evaluate(
        "() => [...document.querySelectorAll('mjx-merror')].map(element => element.getAttribute('data-mjx-error'))"
    )
    if tex_errors:
        problems.append(f"MathJax reported TeX errors: {tex_errors}")
    problem = math_fonts_problem(page)  # tools/book/pdf.py's check before it prints
    if problem:
        problems.append(problem)
    failed_fonts = page.evaluate(
        "() => document.fonts.ready.then(fonts => [...fonts].filter(f => f.status === 'error').map(f => f.family))"
    )
    if failed_fonts:
        problems.append(f"fonts failed to load: {failed_fonts}")
    return problems


def figures_outside_column(page) -> list[str]:
    """Figures (inline SVG in outputs, images in figures) wider than the text column or of zero size."""
    overflowing = page.evaluate(
        """() => {
            const column = document.querySelector('article.bd-article') || document.querySelector('main');
            const limit = column.getBoundingClientRect();
            const figures = [...document.querySelectorAll('div.cell_output svg, figure img, div.cell_output img')]
                .filter(element => !element.parentElement.closest('svg'));
            return figures.map(element => {
                const box = (element.closest('div.chainrule-figure') || element).getBoundingClientRect();
                return {
                    what: element.tagName + ' '
                        + (element.getAttribute('aria-label') || element.getAttribute('alt') || ''),
                    width: Math.round(box.width), height: Math.round(box.height),
                    left: Math.round(box.left), right: Math.round(box.right),
                    columnLeft: Math.round(limit.left), columnRight: Math.round(limit.right),
                };
            }).filter(f => f.width === 0 || f.height === 0 || f.left < f.columnLeft - 1 || f.right > f.columnRight + 1);
        }"""
    )
    return [f"figure outside the text column or of zero size: {figure}" for figure in overflowing]


def page_wider_than_window(page) -> list[str]:
    """The page scrolls sideways as a whole: something is wider than the window."""
    widths = page.evaluate("() => [document.documentElement.scrollWidth, window.innerWidth]")
    if widths[0] <= widths[1]:
        return []
    culprits = page.evaluate(
        """() => [...document.querySelectorAll('article *')]
                 .filter(element => element.getBoundingClientRect().right > window.innerWidth + 1
                                    && !element.closest('.chainrule-figure, pre, .highlight, mjx-container, table'))
                 .slice(0, 3).map(element => element.tagName + ': ' + element.textContent.trim().slice(0, 60))"""
    )
    return [f"the page is {widths[0]} px wide in a {widths[1]} px window; e.g. {culprits}"]


def blocks_that_scroll_sideways(page) -> list[str]:
    """Code and output blocks whose text is wider than their box (the reader must scroll)."""
    wide = page.evaluate(
        """() => [...document.querySelectorAll('div.cell pre, div.highlight pre, div.cell_output pre')]
                 .filter(pre => pre.scrollWidth > pre.clientWidth + 1)
                 .map(pre => {
                     const longest = pre.textContent.split('\\n').reduce((a, b) => b.length > a.length ? b : a, '');
                     return `${pre.scrollWidth} px in ${pre.clientWidth} px: ${longest.slice(0, 90)}`;
                 })"""
    )
    return [f"a code or output block scrolls sideways: {line}" for line in wide]


def maths_that_scroll_sideways(page) -> list[str]:
    """Display equations wider than their box (the theme lets them scroll): on a phone, each line
    of an equation must fit the column, so a long one is broken into aligned lines."""
    wide = page.evaluate(
        """() => [...document.querySelectorAll('mjx-container[display="true"]')]
                 .filter(maths => maths.scrollWidth > maths.clientWidth + 1)
                 .map(maths => `${maths.scrollWidth} px in ${maths.clientWidth} px: `
                      + (maths.closest('div.math')?.id || '')
                      + ' ' + maths.querySelector('mjx-assistive-mml').textContent.slice(0, 60))"""
    )
    return [f"a display equation scrolls sideways: {line}" for line in wide]


def headings_with_a_broken_word(page) -> list[str]:
    """Headings with a word wider than their line, which the page's CSS breaks inside the word
    rather than let the page grow wider than the phone (a hyphenated word may break at its hyphens)."""
    broken = page.evaluate(
        """() => {
            const pen = document.createElement('canvas').getContext('2d');
            return [...document.querySelectorAll('.bd-article :is(h1, h2, h3)')]
                .filter(heading => heading.clientWidth > 0)
                .flatMap(heading => {
                    const style = getComputedStyle(heading);
                    pen.font = style.font;
                    const room = heading.clientWidth - parseFloat(style.paddingLeft)
                        - parseFloat(style.paddingRight);
                    const text = [...heading.childNodes]
                        .filter(node => !node.classList?.contains('headerlink'))
                        .map(node => node.textContent).join('').trim();
                    return text.split(/\\s+|(?<=-)/)
                        .filter(word => pen.measureText(word).width > room)
                        .map(word => `"${word}" ${Math.round(pen.measureText(word).width)} px in `
                             + `${Math.round(room)} px: ${text.slice(0, 60)}`);
                });
        }"""
    )
    return [f"a heading's word is wider than its line: {line}" for line in broken]


UNMARKED_FIGURES = """() => [...document.querySelectorAll('.chainrule-figure')]
    .filter(box => box.clientWidth && box.scrollWidth > box.clientWidth + 1)
    .filter(box => !box.nextElementSibling?.matches('.cr-scroll-hint') || box.tabIndex !== 0)
    .map(box => `${box.scrollWidth} px in ${box.clientWidth} px: `
         + (box.querySelector('[aria-label]')?.getAttribute('aria-label') || '').slice(0, 60))"""


def figures_that_scroll_unmarked(page) -> list[str]:
    """Figures wider than their box (it scrolls) without the line under them that says so, or
    out of the keyboard's reach. The course's site.js marks them when their width changes (a
    ResizeObserver), so this waits, up to a generous timeout, until none is left unmarked."""
    try:
        page.wait_for_function(f"({UNMARKED_FIGURES})().length === 0", timeout=MARKING_TIMEOUT_MS)
    except PlaywrightTimeoutError:  # the figures still unmarked are the problem, said below
        pass
    waited = f" (still unmarked after site.js had {MARKING_TIMEOUT_MS} ms to mark it)"
    return [f"a figure scrolls sideways unmarked: {line}{waited}" for line in page.evaluate(UNMARKED_FIGURES)]


def punctuation_starting_a_line(page) -> list[str]:
    """A comma or full stop after an inline formula that starts the next line (the build keeps a
    formula and the punctuation touching it in one span that does not wrap)."""
    stray = page.evaluate(
        """() => [...document.querySelectorAll('.bd-article span.math')].flatMap(formula => {
                 const after = formula.nextSibling;
                 if (!formula.getBoundingClientRect().width || after?.nodeType !== Node.TEXT_NODE
                     || !/^[.,;:!?)]/.test(after.textContent)) return [];
                 const mark = document.createRange();
                 mark.setStart(after, 0);
                 mark.setEnd(after, 1);
                 return mark.getBoundingClientRect().top > formula.getBoundingClientRect().bottom - 2
                     ? [`"${after.textContent.slice(0, 20).trim()}" after ${formula.textContent.slice(0, 30)}`]
                     : [];
             })"""
    )
    return [f"punctuation starts a line after a formula: {line}" for line in stray[:5]]


def footer_links_cut_off(page) -> list[str]:
    """The footer's links to the previous and the next page, where the theme hides what does not fit."""
    cut = page.evaluate(
        """() => [...document.querySelectorAll('.prev-next-area a')].flatMap(link => {
                 // What overflows on either side: the theme's overflow-x hides it, and scrollWidth
                 // does not count what overflows on the left.
                 const box = link.getBoundingClientRect();
                 return [...link.querySelectorAll('*')]
                     .map(inner => inner.getBoundingClientRect())
                     .filter(rect => rect.width && (rect.left < box.left - 1 || rect.right > box.right + 1))
                     .slice(0, 1)
                     .map(rect => `${Math.round(rect.left)}-${Math.round(rect.right)} px in `
                          + `${Math.round(box.left)}-${Math.round(box.right)} px: ${link.textContent.trim()}`);
             })"""
    )
    return [f"a footer link is cut off: {' '.join(line.split())}" for line in cut]


def figure_text_too_small(page) -> list[str]:
    """SVG text in the chapter's figures rendered smaller than MIN_TEXT_PX CSS pixels."""
    small = page.evaluate(
        """(minimum) => [...document.querySelectorAll('div.cell_output svg text, figure svg text')]
                 // The scale of the text's matrix, rotation or not (a rotated axis label has a = 0).
                 .map(text => ({text: text.textContent.trim(), px:
                     parseFloat(getComputedStyle(text).fontSize)
                     * Math.hypot(text.getScreenCTM().a, text.getScreenCTM().b),
                     figure: text.closest('svg').getAttribute('aria-label') || ''}))
                 .filter(found => found.text && found.px < minimum - 0.05)
                 .map(found =>
                     `${found.px.toFixed(1)} px "${found.text.slice(0, 20)}" in ${found.figure.slice(0, 60)}`)""",
        MIN_TEXT_PX,
    )
    return [f"figure text below {MIN_TEXT_PX} px: {line}" for line in small[:5]]


def test_page_in_browser(browser: Browser, chapter: str, chapter_page: Path, book_html: Path, serve):
    """Offline loading, no JavaScript errors, typeset math, figures inside the column, nothing too wide or
    too small; the page's weight and icons; no WCAG violation (axe-core) in the light or the dark theme.

    One visit per page, at both widths, with every optional block open: the page is loaded at the
    phone's width and checked, then
    the window is widened to the desktop's (the layout follows the window's width) and checked
    again, weighed and measured by axe. The math, the requests and the errors are checked at each
    width, over the whole visit.
    """
    phone, desktop = WIDTHS["phone"], WIDTHS["desktop"]
    url = serve(book_html) + chapter_page.relative_to(book_html).as_posix()
    visit = PageVisit(browser, url, phone, served=book_html)
    problems: dict[str, list[str]] = {}
    try:
        # The optional blocks open, as a reader who opens them all sees the page: their figures,
        # code and maths are checked as they show then.
        visit.page.evaluate("document.querySelectorAll('details.cr-optional').forEach(b => { b.open = true; })")
        for width in (phone, desktop):
            if width != phone:
                visit.page.set_viewport_size({"width": width, "height": 1000})
            found = untypeset_math(visit.page)
            found += figures_outside_column(visit.page)
            found += page_wider_than_window(visit.page) + punctuation_starting_a_line(visit.page)
            found += figures_that_scroll_unmarked(visit.page)
            if width == desktop:
                found += blocks_that_scroll_sideways(visit.page)
            else:
                found += figure_text_too_small(visit.page) + maths_that_scroll_sideways(visit.page)
                found += headings_with_a_broken_word(visit.page) + footer_links_cut_off(visit.page)
            found += visit.settle()
            found += [f"requested a network resource (blocked): {url}" for url in visit.blocked]
            found += visit.errors
            problems[f"at {width}px wide"] = found
        print(f"{chapter}: {sum(visit.loaded.values()) / 1e6:.2f} MB in {len(visit.loaded)} files")
        problems["weight and icons"] = weight_problems(visit.loaded) + icon_problems(visit.page.evaluate(ICONS))
        problems["axe-core, WCAG 2.1 AA"] = axe_violations(visit.page)
    finally:
        visit.close()
    assert not any(problems.values()), "\n".join(
        f"{chapter_page.relative_to(ROOT)}, {what}:\n" + "\n".join(found) for what, found in problems.items() if found
    )


def test_the_layout_checks_can_fail(browser: Browser, tmp_path: Path):
    """A page with a wide code block, a wide paragraph, tiny figure text, a wide equation, a heading
    whose word does not fit, a comma that starts a line, a figure that scrolls unmarked and a cut
    footer link fails each check."""
    page_file = tmp_path / "bad.html"
    page_file.write_text(
        "<html><body><article class='bd-article' style='width:300px'>"
        "<h1 style='font-size:40px'>Backpropagation, at large</h1>"
        "<div class='chainrule-figure' style='overflow-x:auto'>"
        "<svg aria-label='a wide graph' width='600' height='10'></svg></div>"
        "<p style='width:100px'><span class='math' style='display:inline-block;width:100px'>x</span>, y</p>"
        "<div class='prev-next-area'><a style='display:flex;max-width:45%;overflow-x:hidden'>"
        "<p style='font-size:20px'>Backpropagation</p></a></div>"
        f"<div class='cell'><pre>{'x' * 200}</pre></div>"
        f"<p><code style='white-space:nowrap'>{'y' * 200}</code></p>"
        "<div class='cell_output'><svg width='100' height='20' viewBox='0 0 400 80'>"
        "<text x='0' y='40' font-size='12'>tiny</text></svg></div>"
        "<div class='math'><mjx-container display='true' style='display:block;overflow:auto'>"
        f"<span style='display:inline-block;width:900px'>wide</span><mjx-assistive-mml>x</mjx-assistive-mml>"
        "</mjx-container></div></article></body></html>",
        encoding="utf-8",
    )
    visit = PageVisit(browser, page_file.as_uri(), WIDTHS["phone"])
    try:
        assert blocks_that_scroll_sideways(visit.page)
        assert page_wider_than_window(visit.page)
        [problem] = figure_text_too_small(visit.page)
        assert "3.0 px" in problem  # 12 units at a quarter of the viewBox's scale
        [problem] = maths_that_scroll_sideways(visit.page)
        assert "in 300 px" in problem, problem
        [problem] = headings_with_a_broken_word(visit.page)
        assert '"Backpropagation," ' in problem and "px in 300 px" in problem, problem
        [problem] = figures_that_scroll_unmarked(visit.page)
        assert "in 300 px: a wide graph (still unmarked after" in problem, problem
        [problem] = punctuation_starting_a_line(visit.page)
        assert problem.endswith('", y" after x'), problem
        [problem] = footer_links_cut_off(visit.page)
        assert problem.endswith("px in 8-143 px: Backpropagation"), problem
    finally:
        visit.close()
