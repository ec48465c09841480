"""WCAG 2.1 AA, as axe-core measures it, on every page of the site and of the student site.

axe-core (npm, pinned in ``package-lock.json``, read from ``node_modules``: nothing is
fetched) runs in headless Chromium on each page with the rules tagged wcag2a, wcag2aa,
wcag21a and wcag21aa in light mode, and its colour-contrast rule again in dark mode (the
theme's ``data-theme``; no other rule depends on the colours), and must find no violation.
The site's pages are measured in their one visit (``test_page_in_browser`` in
tests/browser/test_browser.py); the student site's here, with every rule but colour contrast:
a student page draws nothing its site page does not (tests/built/test_editions.py), so the
site's contrast, in both modes, is the student's.
Live code's pages are measured again after "Run all cells" (``tests/browser/test_live_browser.py``
calls :func:`axe_violations`).

Markup that the theme writes and configuration cannot change is fixed by
``_ext/accessible_markup.py``, not by turning rules off.
"""

from __future__ import annotations

import pytest
from browsing import wait_for_fonts
from common import ROOT
from playwright.sync_api import Browser, Page

AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"
TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
EDITIONS = {"site": ROOT / "_build" / "html", "student": ROOT / "_build" / "html-student"}
PAGES = sorted(path.stem for path in (ROOT / "chapters").glob("*.md"))


def axe_violations(page: Page, modes=("light", "dark"), contrast: bool = True) -> list[str]:
    """axe-core's WCAG 2.1 AA violations on ``page`` in each colour mode, one line per rule and mode.

    The first mode is measured with every rule, the others with colour contrast only. Without
    ``contrast``, the first mode is measured with every rule but colour contrast, and no other.
    """
    if not AXE.is_file():
        pytest.fail(f"{AXE} is missing: run `make setup` (npm ci installs axe-core)", pytrace=False)
    if not page.evaluate("() => typeof window.axe === 'object'"):
        page.add_script_tag(content=AXE.read_text())
        # Measure the colours a mode ends with, not a frame of the theme's transition to them.
        page.add_style_tag(content="*, *::before, *::after { transition: none !important; }")
    found = []
    for index, mode in enumerate(modes if contrast else modes[:1]):
        page.evaluate("mode => { document.documentElement.dataset.theme = mode; }", mode)
        page.evaluate("() => new Promise(done => requestAnimationFrame(() => done()))")  # a frame in the mode
        # Every rule in the first mode; in the others only colour contrast, the one rule a colour
        # mode can change. resultTypes: axe details only the violations, which is faster.
        options = {"runOnly": {"type": "tag", "values": TAGS}, "resultTypes": ["violations"]}
        if index:
            options["runOnly"] = {"type": "rule", "values": ["color-contrast"]}
        if not contrast:
            options["rules"] = {"color-contrast": {"enabled": False}}
        violations = page.evaluate(
            """async options => (await axe.run(document, options))
                 .violations.map(v => ({id: v.id, impact: v.impact, nodes: v.nodes.map(n => n.target.join(' ')),
                                        summary: v.nodes[0].failureSummary}))""",
            options,
        )
        for v in violations:
            where = ", ".join(v["nodes"][:3]) + (" ..." if len(v["nodes"]) > 3 else "")
            summary = " ".join(v["summary"].split())[:240]
            found.append(f"{mode}: {v['id']} ({v['impact']}) on {len(v['nodes'])} elements: {where}. {summary}")
    return found


@pytest.mark.parametrize("name", PAGES)
def test_student_page_has_no_wcag_violations(browser: Browser, name: str, serve):
    """Every rule but colour contrast. Each element the student page draws, the site's page draws
    too, under the same ancestors with the same classes and style (tests/built/test_editions.py),
    and there contrast is measured in both colour modes (tests/browser/test_browser.py)."""
    edition = "student"
    page_file = EDITIONS[edition] / "chapters" / f"{name}.html"
    if not page_file.is_file():
        pytest.fail(f"{page_file} is missing: run `make book` and `make book-student`", pytrace=False)
    # Served over HTTP, as the site's page is: the pages' scripts are ES modules, which no browser loads from file://.
    context = browser.new_context(viewport={"width": 1280, "height": 1000}, service_workers="block")
    try:
        page = context.new_page()
        page.goto(serve(EDITIONS[edition]) + f"chapters/{name}.html", wait_until="load")
        wait_for_fonts(page)
        found = axe_violations(page, contrast=False)
    finally:
        context.close()
    assert not found, f"{edition} {name}: " + "\n".join(found)


def test_axe_finds_a_violation_when_there_is_one(browser: Browser):
    """The measurement can fail: a button named only by an icon's title, and grey text, are found
    (the text not when colour contrast is left out)."""
    context = browser.new_context()
    try:
        page = context.new_page()
        page.set_content(
            '<html lang="en"><head><title>t</title></head><body><main>'
            '<button aria-label="Color mode"><span title="Light">Light</span></button>'
            '<p style="color:#aaa;background:#fff">grey text</p></main></body></html>'
        )
        found = " ".join(axe_violations(page, modes=("light",)))
        without_contrast = " ".join(axe_violations(page, contrast=False))
    finally:
        context.close()
    assert "label-content-name-mismatch" in found and "color-contrast" in found, found
    assert "label-content-name-mismatch" in without_contrast and "contrast" not in without_contrast


#: For the focused element: its outline, and the colour painted under it (opaque ancestors').
FOCUS_RING = """() => {
    const element = document.activeElement;
    const style = getComputedStyle(element);
    const rgba = colour => { const v = colour.match(/[\\d.]+/g).map(Number); return [...v.slice(0, 3), v[3] ?? 1]; };
    let under = [255, 255, 255];
    for (let e = element.parentElement; e; e = e.parentElement) {
        const colour = rgba(getComputedStyle(e).backgroundColor);
        if (colour[3] === 1) { under = colour.slice(0, 3); break; }
    }
    if (document.documentElement.dataset.theme === 'dark' && under.join() === '255,255,255') {
        under = rgba(getComputedStyle(document.body).backgroundColor).slice(0, 3);
    }
    return {what: element.outerHTML.slice(0, 90), style: style.outlineStyle,
            width: parseFloat(style.outlineWidth), colour: rgba(style.outlineColor).slice(0, 3), under};
}"""


def contrast(a, b) -> float:
    def luminance(rgb):
        channels = [v / 255 for v in rgb]
        channels = [v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4 for v in channels]
        return 0.2126 * channels[0] + 0.7152 * channels[1] + 0.0722 * channels[2]

    light, dark = sorted([luminance(a), luminance(b)], reverse=True)
    return (light + 0.05) / (dark + 0.05)


@pytest.mark.parametrize("mode", ["light", "dark"])
def test_every_control_shows_its_focus(browser: Browser, mode: str, serve):
    """Tab through the backward chapter (header buttons, links, drills, widgets): every stop draws
    an outline at least 2 px wide with at least 3:1 against what is under it (WCAG 2.4.7, 1.4.11)."""
    context = browser.new_context(viewport={"width": 1280, "height": 800}, service_workers="block")
    try:
        page = context.new_page()
        page.goto(serve(EDITIONS["site"]) + "chapters/backward.html", wait_until="load")
        page.evaluate("mode => { document.documentElement.dataset.theme = mode; }", mode)
        page.add_style_tag(content="*, *::before, *::after { transition: none !important; }")
        weak = []
        for _ in range(80):
            page.keyboard.press("Tab")
            ring = page.evaluate(FOCUS_RING)
            ratio = contrast(ring["colour"], ring["under"])
            if ring["style"] == "none" or ring["width"] < 2 or ratio < 3:
                weak.append(f"{ring['what']}: {ring['style']} {ring['width']}px, {ratio:.2f}:1")
        icon, text = search_field(page)
    finally:
        context.close()
    assert not weak, f"{len(weak)} of 80 focus stops show no clear focus:\n" + "\n".join(weak[:10])
    assert icon < text, f"the search icon (right edge {icon:.0f} px) covers the query (from {text:.0f} px)"


def search_field(page: Page) -> tuple[float, float]:
    """Open the search (Ctrl+K) and type a query: the magnifier's right edge and where the text starts."""
    page.keyboard.press("Control+k")
    field = page.locator("#pst-search-dialog input[name=q]")
    field.fill("Wide")
    return page.evaluate(
        """() => {
            const field = document.querySelector('#pst-search-dialog input[name=q]');
            const icon = field.closest('form').querySelector('.fa-magnifying-glass, svg');
            const box = field.getBoundingClientRect();
            return [icon.getBoundingClientRect().right,
                    box.left + parseFloat(getComputedStyle(field).paddingLeft)];
        }"""
    )
