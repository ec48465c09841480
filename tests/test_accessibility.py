"""WCAG 2.1 AA, as axe-core measures it, on every page of the site and of the student site.

axe-core (npm, pinned in ``package-lock.json``, read from ``node_modules``: nothing is
fetched) runs in headless Chromium on each page with the rules tagged wcag2a, wcag2aa,
wcag21a and wcag21aa in light mode, and its colour-contrast rule again in dark mode (the
theme's ``data-theme``; no other rule depends on the colours), and must find no violation.
Live code's pages are measured again after "Run all cells" (``tests/test_live_browser.py``
calls :func:`axe_violations`).

Markup that the theme writes and configuration cannot change is fixed by
``_ext/accessible_markup.py``, not by turning rules off.
"""

from __future__ import annotations

import pytest
from conftest import ROOT
from playwright.sync_api import Browser, Page
from test_browser import browser, wait_for_fonts  # noqa: F401  (the module's Chromium, a fixture)

pytestmark = pytest.mark.full  # make test's tier (tests/conftest.py)

AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"
TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
EDITIONS = {"site": ROOT / "_build" / "html", "student": ROOT / "_build" / "html-student"}
PAGES = sorted(path.stem for path in (ROOT / "chapters").glob("*.md"))


def axe_violations(page: Page, modes=("light", "dark")) -> list[str]:
    """axe-core's WCAG 2.1 AA violations on ``page`` in each colour mode, one line per rule and mode.

    The first mode is measured with every rule, the others with colour contrast only.
    """
    if not AXE.is_file():
        pytest.fail(f"{AXE} is missing: run `make setup` (npm ci installs axe-core)", pytrace=False)
    if not page.evaluate("() => typeof window.axe === 'object'"):
        page.add_script_tag(content=AXE.read_text())
        # Measure the colours a mode ends with, not a frame of the theme's transition to them.
        page.add_style_tag(content="*, *::before, *::after { transition: none !important; }")
    found = []
    for index, mode in enumerate(modes):
        page.evaluate("mode => { document.documentElement.dataset.theme = mode; }", mode)
        page.wait_for_timeout(50)
        # Every rule in the first mode; in the others only colour contrast, the one rule a colour
        # mode can change. resultTypes: axe details only the violations, which is faster.
        options = {"runOnly": {"type": "tag", "values": TAGS}, "resultTypes": ["violations"]}
        if index:
            options["runOnly"] = {"type": "rule", "values": ["color-contrast"]}
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


@pytest.mark.parametrize("edition", sorted(EDITIONS))
@pytest.mark.parametrize("name", PAGES)
def test_page_has_no_wcag_violations(browser: Browser, edition: str, name: str):  # noqa: F811
    page_file = EDITIONS[edition] / "chapters" / f"{name}.html"
    if not page_file.is_file():
        pytest.fail(f"{page_file} is missing: run `make book` and `make book-student`", pytrace=False)
    context = browser.new_context(viewport={"width": 1280, "height": 1000})
    try:
        page = context.new_page()
        page.goto(page_file.as_uri(), wait_until="load")
        wait_for_fonts(page)  # the maths' fonts too: their colours are measured as drawn
        found = axe_violations(page)
    finally:
        context.close()
    assert not found, f"{edition} {name}: " + "\n".join(found)


def test_axe_finds_a_violation_when_there_is_one(browser: Browser):  # noqa: F811
    """The measurement can fail: a button named only by an icon's title, and grey text, are found."""
    context = browser.new_context()
    try:
        page = context.new_page()
        page.set_content(
            '<html lang="en"><head><title>t</title></head><body><main>'
            '<button aria-label="Color mode"><span title="Light">Light</span></button>'
            '<p style="color:#aaa;background:#fff">grey text</p></main></body></html>'
        )
        found = " ".join(axe_violations(page, modes=("light",)))
    finally:
        context.close()
    assert "label-content-name-mismatch" in found and "color-contrast" in found, found
