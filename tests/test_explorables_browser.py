"""Step the explorables in Chromium, on the built book served from 127.0.0.1, as a reader would.

For the ``toposort`` explorable of the graph chapter: three presses of "Next step" each
change the status sentence and the picture (a node's class), "Previous step" goes back,
ArrowRight steps when the widget has focus, End reaches the final state with the full
order, the slider and Play step too. The page logs no console error and makes no request
off 127.0.0.1, and at 390 px it never scrolls sideways. With JavaScript off the widget
is the still figure of the final state. Two widgets on one page step independently.

Uses Debian's chromium through Playwright (no browser download). Build the book first
(``make book``).
"""

from __future__ import annotations

import functools
import http.server
import threading
from pathlib import Path

import pytest
from playwright.sync_api import Browser, expect

from chainrule import explore
from test_browser import browser  # noqa: F401  (the module's Chromium, a fixture)
from test_draw import SEED_PARENTS

WIDGET = '[data-explorable="toposort"]'
READY = WIDGET + '[data-ready="true"]'
FINAL_ORDER = "x, a, b, c, d, f"


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # keep the test output clean
        pass


@pytest.fixture(scope="module")
def serve():
    """``serve(folder)`` -> the base URL of an HTTP server on 127.0.0.1 for that folder."""
    servers = []

    def start(folder: Path) -> str:
        handler = functools.partial(QuietHandler, directory=str(folder))
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}/"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


class Visit:
    """A page opened with every request off the server's origin blocked and recorded, and errors kept."""

    def __init__(self, browser: Browser, url: str, width: int = 1280, **options):
        origin = url.split("/", 3)[:3]
        self.origin = "/".join(origin) + "/"
        self.context = browser.new_context(viewport={"width": width, "height": 900}, **options)
        self.page = self.context.new_page()
        self.blocked: list[str] = []
        self.errors: list[str] = []
        self.page.route("**/*", self._route)
        self.page.on("pageerror", lambda error: self.errors.append(f"uncaught JavaScript error: {error}"))
        self.page.on("console", lambda message: self.errors.append(f"console error: {message.text}")
                     if message.type == "error" else None)
        self.page.goto(url, wait_until="load")

    def _route(self, route):
        url = route.request.url
        if url.startswith((self.origin, "data:")):
            route.continue_()
        else:
            self.blocked.append(url)
            route.abort()

    def problems(self) -> list[str]:
        return self.errors + [f"request off 127.0.0.1 (blocked): {url}" for url in self.blocked]

    def close(self):
        self.context.close()


@pytest.fixture
def graph_page(browser: Browser, book_html: Path, serve):  # noqa: F811
    page_file = book_html / "chapters" / "graph.html"
    assert page_file.is_file(), "the graph chapter is not built: run `make book`"
    visits = []

    def open_page(width: int = 1280, **options) -> Visit:
        visit = Visit(browser, serve(book_html) + "chapters/graph.html", width, **options)
        visits.append(visit)
        return visit

    yield open_page
    for visit in visits:
        visit.close()


def node_classes(widget) -> dict[str, str]:
    return widget.evaluate(
        "root => Object.fromEntries([...root.querySelectorAll('svg g.node')]"
        ".map(g => [g.id, g.getAttribute('class')]))"
    )


def status_of(widget) -> str:
    return widget.locator('[data-role="status"]').inner_text()


def test_toposort_steps_forward_and_back(graph_page):
    visit = graph_page()
    page = visit.page
    page.wait_for_selector(READY)
    widget = page.locator(WIDGET)
    expect(widget).to_have_count(1)
    status = widget.locator('[aria-live="polite"]')
    expect(status).to_have_text("Step 1 of 12. Visit f: the root, where the search starts. Visited: f.")
    assert "cr-on-path" in node_classes(widget)["node-f"]

    seen = [(status_of(widget), node_classes(widget))]
    for _ in range(3):
        widget.get_by_role("button", name="Next step").click()
        now = (status_of(widget), node_classes(widget))
        assert now[0] != seen[-1][0], "Next step did not change the status"
        assert now[1] != seen[-1][1], "Next step did not change the picture"
        seen.append(now)
    expect(status).to_have_text("Step 4 of 12. Finish x: it has no parents, so it joins the order: x. "
                                "The search backs up to d.")
    assert "cr-finished" in node_classes(widget)["node-x"]
    expect(widget.locator('[data-list="order"]')).to_have_text("x")

    widget.get_by_role("button", name="Previous step").click()
    assert (status_of(widget), node_classes(widget)) == seen[2]
    assert "cr-on-path" in node_classes(widget)["node-x"] and "cr-current" in node_classes(widget)["node-x"]
    path = widget.evaluate("root => [...root.querySelectorAll('svg g.edge.cr-path')].map(g => g.id).sort()")
    assert path == ["edge-d-f", "edge-x-d"]

    widget.focus()
    page.keyboard.press("ArrowRight")
    expect(status).to_contain_text("Step 4 of 12. Finish x")
    page.keyboard.press("ArrowLeft")
    expect(status).to_contain_text("Step 3 of 12. Visit x")
    page.keyboard.press("End")
    expect(status).to_contain_text("Step 12 of 12. Finish f")
    expect(widget.locator('[data-list="order"]')).to_have_text(FINAL_ORDER)
    expect(widget.locator('[data-list="visited"]')).to_have_text("f, d, x, c, a, b")
    classes = node_classes(widget)
    assert all("cr-finished" in classes[f"node-{name}"] for name in "xabcdf") and "cr-not-reached" in classes["node-e"]
    page.keyboard.press("Home")
    expect(status).to_contain_text("Step 1 of 12. Visit f")
    expect(widget.locator('[data-list="order"]')).to_have_text("none yet")

    widget.get_by_label("Step", exact=True).fill("9")
    expect(status).to_contain_text("Step 10 of 12. Finish c")
    widget.get_by_role("button", name="Reset").click()
    expect(status).to_contain_text("Step 1 of 12")
    assert not visit.problems(), "\n".join(visit.problems())


def test_toposort_plays_and_pauses(graph_page):
    visit = graph_page(reduced_motion="reduce")
    widget = visit.page.locator(READY)
    widget.get_by_role("button", name="Play").click()
    expect(widget.get_by_role("button", name="Pause")).to_be_visible()
    expect(widget.locator('[data-role="status"]')).to_contain_text("Step 2 of 12", timeout=5000)
    widget.get_by_role("button", name="Pause").click()
    expect(widget.get_by_role("button", name="Play")).to_be_visible()
    stopped = status_of(widget)
    visit.page.wait_for_timeout(2500)
    assert status_of(widget) == stopped, "the widget kept stepping after Pause"
    transitions = widget.evaluate("root => getComputedStyle(root.querySelector('g.node > ellipse')).transitionDuration")
    assert transitions == "0s", "transitions run although the reader asked for reduced motion"
    assert not visit.problems(), "\n".join(visit.problems())


def test_toposort_fits_a_phone(graph_page):
    visit = graph_page(width=390)
    page = visit.page
    widget = page.locator(READY)
    widget.scroll_into_view_if_needed()
    widths = page.evaluate("() => [document.documentElement.scrollWidth, window.innerWidth]")
    assert widths[0] <= widths[1], f"the page is {widths[0]} px wide in a {widths[1]} px window"
    box = widget.bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= 390, f"the widget sticks out: {box}"
    for name in ("Reset", "Previous step", "Play", "Next step"):
        button = widget.get_by_role("button", name=name).bounding_box()
        assert button["x"] >= box["x"] and button["x"] + button["width"] <= box["x"] + box["width"] + 0.5, name
    widget.get_by_role("button", name="Next step").click()
    expect(widget.locator('[data-role="status"]')).to_contain_text("Step 2 of 12")
    assert not visit.problems(), "\n".join(visit.problems())


def test_toposort_without_javascript_is_the_final_state(graph_page):
    visit = graph_page(java_script_enabled=False)
    widget = visit.page.locator(WIDGET)
    expect(widget.locator('[data-role="status"]')).to_contain_text("Step 12 of 12. Finish f")
    expect(widget.locator('[data-role="controls"]')).to_be_hidden()
    expect(widget.locator('[data-list="order"]')).to_have_text(FINAL_ORDER)
    label = widget.locator("svg").get_attribute("aria-label")
    assert label.startswith("Depth-first search from f, step 12 of 12") and "finished: x, a, b, c, d, f" in label
    assert "cr-finished" in node_classes(widget)["node-x"]


def test_toposort_reads_in_dark_mode(graph_page):
    """In the dark theme the text keeps its contrast with whatever the widget sits on.

    (The theme puts HTML outputs on a light card in dark mode; the widget takes its colours
    from there, so the check measures against the nearest background actually painted.)
    """
    visit = graph_page(color_scheme="dark")
    page = visit.page
    page.wait_for_selector(READY)
    assert page.evaluate("() => document.documentElement.dataset.theme") == "dark"
    ratios = page.evaluate("""() => {
        const rgb = colour => colour.match(/[\\d.]+/g).map(Number);
        const luminance = colour => {
            const [r, g, b] = rgb(colour).slice(0, 3).map(v => {
                v /= 255;
                return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
            });
            return 0.2126 * r + 0.7152 * g + 0.0722 * b;
        };
        const painted = element => {
            for (; element; element = element.parentElement) {
                const colour = getComputedStyle(element).backgroundColor;
                const alpha = rgb(colour)[3];
                if (alpha === undefined || alpha > 0) return colour;
            }
            return 'rgb(255, 255, 255)';
        };
        const contrast = element => {
            const [a, b] = [luminance(getComputedStyle(element).color), luminance(painted(element))];
            return (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
        };
        const root = document.querySelector('[data-explorable]');
        return ['[data-role="status"]', 'button', '[data-list]', '.cr-x-legend li']
            .map(selector => [selector, contrast(root.querySelector(selector))]);
    }""")
    low = [(selector, round(ratio, 1)) for selector, ratio in ratios if ratio < 4.5]
    assert not low, f"text with too little contrast in dark mode: {low}"


def test_two_widgets_on_one_page_step_independently(browser: Browser, serve, tmp_path: Path):  # noqa: F811
    one = explore.toposort("f", parents=SEED_PARENTS).html()
    two = explore.toposort("c", parents={"a": [], "b": [], "c": ["a", "b"]}).html()
    (tmp_path / "two.html").write_text(f"<!DOCTYPE html><html><body>{one}<p>text</p>{two}</body></html>",
                                       encoding="utf-8")
    visit = Visit(browser, serve(tmp_path) + "two.html")
    try:
        page = visit.page
        expect(page.locator(READY)).to_have_count(2)
        first, second = page.locator(WIDGET).nth(0), page.locator(WIDGET).nth(1)
        second.get_by_role("button", name="Next step").click()
        expect(second.locator('[data-role="status"]')).to_contain_text("Step 2 of 6. Visit a")
        expect(first.locator('[data-role="status"]')).to_contain_text("Step 1 of 12")
        first.get_by_role("button", name="Next step").click()
        expect(first.locator('[data-role="status"]')).to_contain_text("Step 2 of 12. Visit d")
        expect(second.locator('[data-role="status"]')).to_contain_text("Step 2 of 6")
        assert not visit.problems(), "\n".join(visit.problems())
    finally:
        visit.close()
