"""``make progress``'s page in Chromium, on a phone (390 px) and a desktop (1280 px), light and dark.

The class of tests/progress_records.py, with a name of 100 characters without a space, slash,
underscore or hyphen: in the folder's name, a counted student's, a record not counted, a drill
kind's (quoted, cut to 40 characters, in why that record is not counted) and a named mistake.
In each of the page's states (a class, no record counted, no record at all) nothing makes the
page itself scroll sideways; every table is in a box the keyboard reaches and scrolls, and only
the two tables of many numbers need to scroll in it (the long names wrap); axe-core finds no
WCAG 2.1 AA violation. The page is a file: it needs no server.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import Browser
from progress_records import NOW, START, class_folder, iso, write
from test_accessibility import axe_violations

from tools.progress.edition import load_edition
from tools.progress.page import report

#: A name with nowhere to break: 100 characters, wider than a phone at any of the page's sizes.
LONG = "unbreakable" * 9 + "x"
SCHEMES = ("light", "dark")


@pytest.fixture(scope="module")
def pages(tmp_path_factory) -> dict[str, str]:
    """The page's three states, each written to a file: its URL by state."""
    edition = load_edition()
    root = tmp_path_factory.mktemp("progress")
    class_ = root / "class" / LONG
    class_folder(class_, edition)
    kind = next(iter(edition.kinds))
    write(class_ / f"{LONG}.json", {"drills": {kind: {"attempts": 3, "right": 1, "mistakes": {LONG: 2}}}})
    write(class_ / f"{LONG}-2.json", {"drills": {LONG: {"attempts": 1, "right": 2, "last": iso(START)}}})
    none_counted = root / "none-counted" / LONG
    write(none_counted / f"{LONG}.json", {"drills": {kind: {"attempts": 1, "right": 2, "last": iso(START)}}})
    empty = root / "empty" / LONG
    empty.mkdir(parents=True)
    urls = {}
    for state, folder in (("class", class_), ("none counted", none_counted), ("empty", empty)):
        out = folder / "progress.html"
        out.write_text(report(folder, edition, NOW, out)[0], encoding="utf-8")
        urls[state] = out.as_uri()
    return urls


#: The widths of the page and of the window, and each table's box: its role, tabindex, name and whether it scrolls.
LAYOUT = """() => ({
    page: document.documentElement.scrollWidth, window: window.innerWidth,
    tables: [...document.querySelectorAll('table')].map(table => {
        const box = table.parentElement;
        return {id: table.id, role: box.getAttribute('role'), tabindex: box.getAttribute('tabindex'),
                name: box.getAttribute('aria-label'), scrolls: box.scrollWidth > box.clientWidth};
    }),
})"""


@pytest.mark.parametrize("width", [390, 1280])
@pytest.mark.parametrize("scheme", SCHEMES)
def test_the_page_fits_the_window_and_its_tables_scroll_in_boxes(browser: Browser, pages, width: int, scheme: str):
    # bypass_csp: the page's policy runs no script, and axe-core is one.
    context = browser.new_context(viewport={"width": width, "height": 900}, color_scheme=scheme, bypass_csp=True)
    try:
        page = context.new_page()
        found = []
        for state, url in pages.items():
            page.goto(url, wait_until="load")
            layout = page.evaluate(LAYOUT)
            if layout["page"] > layout["window"]:
                found.append(f"{state}: the page is {layout['page']} px wide in a {layout['window']} px window")
            for table in layout["tables"]:
                if table["role"] != "region" or table["tabindex"] != "0" or not table["name"]:
                    found.append(f"{state}: table {table['id']} is not in a named region the keyboard reaches")
                # Only the tables of many numbers are wider than a phone; a long name wraps in the others.
                if table["scrolls"] and table["id"] not in ("chapters", "each-student"):
                    found.append(f"{state}: table {table['id']} is wider than its box")
            # The colours are the scheme's (prefers-color-scheme): the one mode measured is this context's.
            found += [f"{state}, {scheme}: {v}" for v in axe_violations(page, modes=(scheme,))]
        if width == 390:  # the students' table is wider than a phone: the keyboard scrolls its box
            page.goto(pages["class"], wait_until="load")
            assert page.evaluate(LAYOUT)["tables"][-1] == {
                "id": "each-student", "role": "region", "tabindex": "0", "name": "Each counted record", "scrolls": True
            }  # fmt: skip
            page.locator("#each-student").locator("..").focus()
            page.keyboard.press("ArrowRight")
            page.wait_for_function("() => document.querySelector('#each-student').parentElement.scrollLeft > 0")
    finally:
        context.close()
    assert not found, "\n".join(found)
