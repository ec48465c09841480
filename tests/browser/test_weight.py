"""What a reader's browser downloads for each page of the site, before Live code.

Every chapter page is opened in headless Chromium, from a local server with the cache off,
and the bytes of every response are added up (uncompressed, as the files are on disk): at
most ``BUDGET``, 1.5 MB, so that a page opens quickly on a phone's connection. The weights
are printed (``pytest -s``). What made them light, and what is checked here:

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

PAGES = sorted(path.stem for path in (ROOT / "chapters").glob("*.md"))
WEBFONTS = ROOT / "_build" / "html" / "_static" / "vendor" / "fontawesome" / "webfonts"
BUDGET = 1_500_000  # bytes per page before Live code


def page_weight(browser: Browser, url: str) -> tuple[int, list[str], dict]:
    """The bytes of every response the page loads, the URLs, and how its icons are drawn."""
    context = browser.new_context(viewport={"width": 1280, "height": 1000})
    try:
        page = context.new_page()
        session = context.new_cdp_session(page)
        session.send("Network.enable")
        session.send("Network.setCacheDisabled", {"cacheDisabled": True})
        responses = []
        page.on("response", lambda response: responses.append(response))
        page.goto(url, wait_until="networkidle")
        total = sum(len(response.body()) for response in responses if response.status < 300)
        icons = page.evaluate(
            """async () => {
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
        )
        return total, [response.url for response in responses], icons
    finally:
        context.close()


@pytest.mark.parametrize("name", PAGES)
def test_page_weight_and_icons(browser: Browser, serve, name: str):
    url = serve(ROOT / "_build" / "html") + f"chapters/{name}.html"
    total, urls, icons = page_weight(browser, url)
    print(f"{name}: {total / 1e6:.2f} MB in {len(urls)} files")
    assert not [u for u in urls if "fontawesome.js" in u], "the page loads fontawesome.js"
    assert "Font Awesome 6 Free" in icons["family"] and icons["content"] not in ("", "none"), icons
    assert icons["loaded"] and icons["width"] > 0, f"the icon font is not loaded or the icon has no width: {icons}"
    # _ext/page_weight.py cut the fonts to the icons the book shows: every one drawn must be in its font
    missing = {
        (family, weight, hex(code)) for family, weight, code in icons["drawn"] if code not in glyphs(family, weight)
    }
    assert icons["drawn"] and not missing, f"{name} draws icons its cut font lacks: {sorted(missing)}"
    assert not [u for u in urls if "searchindex.js" in u], f"{name} loads the search index (search-as-you-type is off)"
    assert total <= BUDGET, f"{name} loads {total / 1e6:.2f} MB, over {BUDGET / 1e6:.1f} MB"


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
    page = browser.new_page()
    try:
        page.goto(url + "chapters/backward.html")
        page.keyboard.press("Control+k")
        page.locator("#pst-search-dialog input[name=q]").fill("adjoint")
        page.keyboard.press("Enter")
        page.wait_for_url("**/search.html?q=adjoint*")
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
STYLES = """(properties) => [...document.body.querySelectorAll('*')].map(element => {
    const box = element.getBoundingClientRect();
    const styles = [null, '::before', '::after'].map(pseudo => {
        const style = getComputedStyle(element, pseudo);
        return properties.map(name => style.getPropertyValue(name)).join(';');
    });
    const name = element.tagName + '.' + element.classList;  // no id: a tooltip's is random
    return [name, [box.x, box.y, box.width, box.height].map(Math.round).join(','), ...styles];
})"""
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
    context = browser.new_context(viewport={"width": width, "height": 900}, color_scheme=scheme)
    try:
        page = context.new_page()
        if whole is not None:
            page.route("**/*.css*", lambda route: serve_whole(route, whole))
        page.goto(url, wait_until="networkidle")
        page.add_style_tag(content="*, ::before, ::after {transition: none !important; animation: none !important}")
        page.evaluate("() => document.fonts.ready.then(() => true)")
        if opened == "search":
            page.keyboard.press("Control+k")
        elif opened:
            page.locator(f"{opened}:visible").first.click()
        page.wait_for_timeout(600)  # the toggle's tooltip is shown too
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
