"""What a reader's browser downloads for each page of the site, before Live code.

Each chapter page's one visit (``test_page_in_browser`` in tests/browser/test_browser.py)
adds up the bytes of every file the page loads (uncompressed, as the files are on disk): at
most ``BUDGET``, 1.5 MB, so that a page opens quickly on a phone's connection, with
:func:`weight_problems` and :func:`icon_problems` from here. The weights are printed
(``pytest -s``). What made them light, and what is checked:

* no MathJax script: the maths are typeset when the book is built (_ext/prerendered_math.py;
  tests/built/test_book.py and tests/browser/test_browser.py check them);
* no ``fontawesome.js`` (``_ext/templates/static/webpack-macros.html`` leaves it out): the
  icons are drawn from Font Awesome's web fonts, cut to the book's icons
  (_ext/page_weight.py), and every icon a page draws must be in the font it loads;
* no search index but on the search page, whose search still finds from a chapter page;
* the themes' stylesheets cut by PurgeCSS: every element of a page, light and dark, wide and
  narrow, with the search dialog or a sidebar open, has the same computed style and box with
  the cut stylesheets as with the whole ones (``_build/html-whole-css``).
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

import pydata_sphinx_theme
import pytest
from common import ROOT
from fontTools.ttLib import TTFont
from playwright.sync_api import Browser

WEBFONTS = ROOT / "_build" / "html" / "_static" / "vendor" / "fontawesome" / "webfonts"
BUDGET = 1_500_000  # bytes per page before Live code


#: How the page draws its icons: every glyph in a Font Awesome font, and a shown solid icon.
ICONS = """async () => {
    await document.fonts.ready;
    const drawn = [];  // every icon glyph the page draws, in the font it asks for
    for (const element of document.querySelectorAll('*')) {
        for (const pseudo of ['::before', '::after']) {
            const style = getComputedStyle(element, pseudo);
            const text = style.content.match(/^"(.*)"$/);
            if (!text || !style.fontFamily.includes('Font Awesome')) continue;
            for (const character of text[1])
                drawn.push([style.fontFamily, style.fontWeight, character.codePointAt(0)]);
        }
    }
    const icon = [...document.querySelectorAll('.fa-solid')]
        .find(i => i.getBoundingClientRect().width > 0);  // a shown one: not Back to top
    const glyph = icon && getComputedStyle(icon, '::before');
    return {family: glyph ? glyph.fontFamily : '', content: glyph ? glyph.content : '',
            width: icon ? icon.getBoundingClientRect().width : 0,
            loaded: document.fonts.check('900 16px "Font Awesome 6 Free"'), drawn};
}"""


def weight_problems(sizes: dict[str, int]) -> list[str]:
    """What is wrong with the files a page loaded (URL -> bytes): too many bytes, or a file it must not load."""
    problems = [f"loads {url}" for url in sizes if "fontawesome.js" in url or "searchindex.js" in url]
    total = sum(sizes.values())
    if total > BUDGET:
        problems.append(f"loads {total / 1e6:.2f} MB, over {BUDGET / 1e6:.1f} MB")
    return problems


def icon_problems(icons: dict) -> list[str]:
    """What is wrong with how a page draws its icons (:data:`ICONS`' answer)."""
    if "Font Awesome 6 Free" not in icons["family"] or icons["content"] in ("", "none"):
        return [f"an icon is not drawn from the icon font: {icons}"]
    if not icons["loaded"] or icons["width"] <= 0:
        return [f"the icon font is not loaded or the icon has no width: {icons}"]
    # _ext/page_weight.py cut the fonts to the icons the book shows: every one drawn must be in its font
    missing = {
        (family, weight, hex(code)) for family, weight, code in icons["drawn"] if code not in glyphs(family, weight)
    }
    if not icons["drawn"] or missing:
        return [f"draws icons its cut font lacks: {sorted(missing)}"]
    return []


def test_the_weight_and_icon_checks_can_fail():
    """The checks each page's visit makes (tests/browser/test_browser.py): a page that loads too
    much or a script it must not, and icons missing from the font or not drawn at all, fail."""
    assert weight_problems({"a.css": 1000, "b.woff2": 2000}) == []
    assert weight_problems({"x/fontawesome.js": 10, "big.js": BUDGET}) == [
        "loads x/fontawesome.js",
        f"loads {(BUDGET + 10) / 1e6:.2f} MB, over 1.5 MB",
    ]
    shown = {"family": '"Font Awesome 6 Free"', "content": '"\\f00c"', "width": 14, "loaded": True}
    present = min(glyphs('"Font Awesome 6 Free"', "900"))
    assert icon_problems({**shown, "drawn": [['"Font Awesome 6 Free"', "900", present]]}) == []
    [lacking] = icon_problems({**shown, "drawn": [['"Font Awesome 6 Free"', "900", 0x1F600]]})
    assert "0x1f600" in lacking
    assert icon_problems({**shown, "family": "serif", "drawn": []})
    assert icon_problems({**shown, "loaded": False, "drawn": []})


@functools.cache
def glyphs(family: str, weight: str) -> frozenset[int]:
    """The code points of the build's icon font that a CSS font family and weight select."""
    name = "fa-brands-400" if "Brands" in family else "fa-solid-900" if int(weight) >= 600 else "fa-regular-400"
    return frozenset(TTFont(WEBFONTS / f"{name}.woff2").getBestCmap())


def test_the_icon_fonts_are_cut():
    """Each of the build's Font Awesome fonts is at most a tenth of the theme's."""
    theirs = Path(pydata_sphinx_theme.__file__).parent / "theme" / "pydata_sphinx_theme" / "static"
    fonts = sorted(WEBFONTS.glob("fa-*"))
    assert len(fonts) == 6, fonts
    for font in fonts:
        original = theirs / "vendor" / "fontawesome" / "webfonts" / font.name
        assert font.stat().st_size <= original.stat().st_size / 10, f"{font.name} is not cut"


def test_the_search_box_finds_from_a_chapter_page(browser: Browser, serve):
    """Without the search index on the page, the search box sends its query to the search page."""
    url = serve(ROOT / "_build" / "html")
    # No service worker: on a first visit it reloads a page where Python can run (site.js), which
    # could come between the key presses.
    page = browser.new_page(service_workers="block")
    try:
        page.goto(url + "chapters/backward.html")
        page.keyboard.press("Control+k")
        page.locator("#pst-search-dialog input[name=q]").fill("nudging")
        page.keyboard.press("Enter")
        page.wait_for_url("**/search.html?q=nudging*")
        page.wait_for_function("() => document.querySelectorAll('#search-results li').length > 0")
        assert page.locator("#search-results li a", has_text="chain rule").count() > 0
    finally:
        page.close()


#: What the style comparison reads of every element and its ::before and ::after. Not the margins:
#: an auto margin reads as 0 or as its width while a figure is laid out, and the box shows where it went.
STYLE_PROPERTIES = """display position visibility opacity z-index float clear overflow-x overflow-y color
background-color
background-image border-top-width border-right-width border-bottom-width border-left-width border-top-color
border-top-style border-radius box-shadow outline-style outline-width padding-top padding-right padding-bottom
padding-left font-family font-size font-weight font-style line-height text-align text-decoration-line
text-transform white-space flex-direction flex-wrap justify-content align-items gap grid-template-columns
list-style-type cursor content transform""".split()
#: Every element but MathJax's inner ones: those are styled by the maths' own stylesheet, which is
#: not cut, and reached by the theme's only through its universal rules, which the cut keeps. The
#: maths' box (mjx-container) and its MathML for screen readers, which the theme styles, are compared.
STYLES = """(properties) => [...document.body.querySelectorAll('*')]
  .filter(element => !element.parentElement.closest('mjx-container') || element.tagName === 'MJX-ASSISTIVE-MML')
  .map(element => {
    const box = element.getBoundingClientRect();
    const styles = [null, '::before', '::after'].map(pseudo => {
        const style = getComputedStyle(element, pseudo);
        return properties.map(name => style.getPropertyValue(name)).join(';');
    });
    const name = element.tagName + '.' + element.classList;  // no id: a tooltip's is random
    return [name, [box.x, box.y, box.width, box.height].map(Math.round).join(','), ...styles];
})"""
#: How long what a state opens (a dialog, a tooltip) may take to show, on a loaded machine.
OPENED_MS = 10_000
#: Pages and states the comparison opens: (page, width, colour scheme, what is open).
STATES = [
    ("chapters/backward.html", 1280, "light", None),
    ("chapters/engine.html", 390, "dark", "button.primary-toggle"),
    ("chapters/glossary.html", 1280, "dark", "search"),
    ("chapters/notation.html", 390, "light", "button.secondary-toggle"),
    ("search.html?q=adjoint", 390, "light", None),
]


def computed_styles(browser: Browser, url: str, width: int, scheme: str, opened, whole: Path | None):
    """Every element's name, box and computed styles, with the build's stylesheets or ``whole``'s."""
    # No service worker: on a first visit it reloads a page where Python can run (site.js), which
    # would race with the style tag and the clicks below.
    context = browser.new_context(
        viewport={"width": width, "height": 900}, color_scheme=scheme, service_workers="block"
    )
    try:
        page = context.new_page()
        if whole is not None:
            page.route("**/*.css*", lambda route: serve_whole(route, whole))
        page.goto(url, wait_until="networkidle")
        page.add_style_tag(content="*, ::before, ::after {transition: none !important; animation: none !important}")
        page.evaluate("() => document.fonts.ready.then(() => true)")
        if opened == "search":
            page.keyboard.press("Control+k")
            page.wait_for_function("() => document.querySelector('#pst-search-dialog').open", timeout=OPENED_MS)
        elif opened:
            toggle = page.locator(f"{opened}:visible").first
            toggle.click()
            # Its tooltip (Bootstrap's, shown about 0.5 s after the focus came) is compared too: waited for,
            # not given a fixed time, which a loaded machine can exceed in one of the two visits.
            if toggle.get_attribute("data-bs-toggle") == "tooltip":
                page.locator(".tooltip.show").wait_for(timeout=OPENED_MS)
        return page.evaluate(STYLES, STYLE_PROPERTIES)
    finally:
        context.close()


def serve_whole(route, whole: Path) -> None:
    """Answer a stylesheet's request with its whole copy, where there is one."""
    path = whole / route.request.url.split("?")[0].split("/", 3)[3]
    if path.is_file():
        route.fulfill(path=str(path), content_type="text/css")
    else:
        route.continue_()


@pytest.mark.parametrize(("path", "width", "scheme", "opened"), STATES)
def test_the_cut_stylesheets_style_every_element_as_the_whole_ones(
    browser: Browser,
    serve,
    path: str,
    width: int,
    scheme: str,
    opened: str | None,
):
    whole = ROOT / "_build" / "html-whole-css"
    assert (whole / "_static" / "styles" / "pydata-sphinx-theme.css").is_file(), "run `make book`"
    url = serve(ROOT / "_build" / "html") + path
    cut = computed_styles(browser, url, width, scheme, opened, None)
    kept = computed_styles(browser, url, width, scheme, opened, whole)
    assert len(cut) == len(kept) > 100, (len(cut), len(kept))
    differ = [
        (a[0], *[(x, y) for x, y in zip(a[1:], b[1:], strict=True) if x != y])
        for a, b in zip(cut, kept, strict=True)
        if a != b
    ]
    assert not differ, f"{len(differ)} elements styled otherwise by the cut stylesheets, e.g. {differ[:3]}"


def test_the_template_is_the_themes_without_fontawesome():
    """_ext/templates/static/webpack-macros.html is the installed theme's, less its fontawesome.js line:
    a new theme version (a new digest, other scripts) fails here instead of mixing versions."""
    theme = Path(pydata_sphinx_theme.__file__).parent / "theme" / "pydata_sphinx_theme" / "static"
    theirs = (theme / "webpack-macros.html").read_text(encoding="utf-8")
    ours = (ROOT / "_ext" / "templates" / "static" / "webpack-macros.html").read_text(encoding="utf-8")
    ours = re.sub(r"\A\{#.*?#\}\n", "", ours, flags=re.DOTALL)
    removed = [line for line in theirs.splitlines() if "fontawesome" in line or "custom icons" in line]
    assert len(removed) == 2, removed
    assert ours.splitlines() == [line for line in theirs.splitlines() if line not in removed]
