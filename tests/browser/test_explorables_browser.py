"""Step the explorables in Chromium, on the built book served from 127.0.0.1, as a reader would.

For the ``toposort`` explorable of the graph chapter: three presses of "Next step" each
change the status sentence and the picture (a node's class), "Previous step" goes back,
ArrowRight steps when the widget has focus, End reaches the final state with the full
order, the slider and Play step too. The page logs no console error and makes no request
off 127.0.0.1, and at 390 px it never scrolls sideways. With JavaScript off the widget
is the still figure of the final state. Two widgets on one page step independently.

For the ``forward`` and ``backward`` explorables of the backward chapter: Next, Previous
and the arrow keys change the status, the classes and the numbers in the boxes; the last
step of the backward pass shows every gradient; in "Predict, then reveal" mode a step
hides its local gradient and product until a guess is checked, and says whether the
guess was right, naming a slip (a product's factors swapped) as the drills do. No id is used twice on the page.

For the ``training`` explorable of the engine chapter: the steps move the regions, the
weights and the loss curve's cursor; a weight chosen by pointing at its line or in the
list shows its value and its recorded gradient; a click on the loss curve goes to that
step; the widget fits 640 px at 1280 px and a phone screen at 390 px.

For every explorable, in the light and in the dark theme: every text and control is at
least 4.5:1 against what is painted behind it, and buttons with nothing to do say
``aria-disabled="true"``.

Uses Debian's chromium through Playwright (no browser download). Build the book first
(``make book``).
"""

from __future__ import annotations

import functools
from pathlib import Path

import pytest
from browsing import Visit
from examples import SEED_PARENTS, worked_example
from playwright.sync_api import Browser, expect

from chainrule_course import explore

WIDGET = '[data-explorable="toposort"]'
READY = WIDGET + '[data-ready="true"]'
FINAL_ORDER = "x, a, b, c, d, f"


@pytest.fixture
def book_page(browser: Browser, book_html: Path, serve):
    """``open_page(chapter, width, **options)``: a built chapter, opened as in :class:`Visit`."""
    visits = []

    def open_page(chapter: str, width: int = 1280, **options) -> Visit:
        assert (book_html / "chapters" / f"{chapter}.html").is_file(), f"{chapter} is not built"
        visit = Visit(browser, serve(book_html) + f"chapters/{chapter}.html", width, **options)
        visits.append(visit)
        # A widget in an optional block (the engine chapter's training run) is read as a reader
        # reads it: with its block opened.
        visit.page.evaluate(
            "() => document.querySelectorAll('details.cr-optional').forEach(block => {"
            " if (block.querySelector('[data-explorable]')) block.open = true; })"
        )
        return visit

    yield open_page
    for visit in visits:
        visit.close()


@pytest.fixture
def graph_page(book_page):
    return functools.partial(book_page, "graph")


@pytest.fixture
def backward_page(book_page):
    return functools.partial(book_page, "backward")


# The widget's element ids start with its prefix, kept in its steps' JSON.
PREFIX = "const prefix = JSON.parse(root.querySelector('script[data-role=\"steps\"]').textContent).prefix;"


def node_classes(widget) -> dict[str, str]:
    return widget.evaluate(
        "root => {" + PREFIX + " return Object.fromEntries([...root.querySelectorAll('svg g.node')]"
        ".map(g => [g.id.slice(prefix.length), g.getAttribute('class')])); }"
    )


def texts(widget) -> dict[str, str]:
    """The SVG's texts that the steps write, by id without the prefix."""
    return widget.evaluate(
        "root => {" + PREFIX + " return Object.fromEntries([...root.querySelectorAll('svg text[id]')]"
        ".map(t => [t.id.slice(prefix.length), t.textContent])); }"
    )


def highlighted_edges(widget) -> list[str]:
    return widget.evaluate(
        "root => {" + PREFIX + " return [...root.querySelectorAll('svg g.edge.cr-path')]"
        ".map(g => g.id.slice(prefix.length)).sort(); }"
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
    expect(status).to_have_text(
        "Step 4 of 12. Finish x: it has no parents, so it joins the order: x. The search backs up to d."
    )
    assert "cr-finished" in node_classes(widget)["node-x"]
    expect(widget.locator('[data-list="order"]')).to_have_text("x")

    widget.get_by_role("button", name="Previous step").click()
    assert (status_of(widget), node_classes(widget)) == seen[2]
    assert "cr-on-path" in node_classes(widget)["node-x"] and "cr-current" in node_classes(widget)["node-x"]
    assert highlighted_edges(widget) == ["edge-d-f", "edge-x-d"]

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


KINDS = [("graph", "toposort"), ("backward", "forward"), ("backward", "backward"), ("engine", "training")]


# The contrast of every text and control of a widget (its own text nodes, buttons, selects and
# text inputs, the SVG's texts), against what is painted behind it: the colours of the
# elements under its centre, composited from the page's background up, and the element's
# own (and its ancestors') opacity. WCAG 2.1's relative luminance and contrast ratio. With
# ``"swatches"``, the legend's swatches instead: the best contrast of their drawn parts (a border
# or a fill) against what they sit on, which must reach 3:1 (WCAG 2.1 SC 1.4.11, non-text).
CONTRAST = r"""(root, what) => {
    const parse = text => {
        const v = (text.match(/[\d.]+/g) || []).map(Number);
        const k = text.startsWith('color(') ? 255 : 1;  // color(srgb r g b / a), from color-mix()
        return v.length < 3 ? null : {r: v[0] * k, g: v[1] * k, b: v[2] * k, a: v.length > 3 ? v[3] : 1};
    };
    const over = (top, under) => ({r: top.r * top.a + under.r * (1 - top.a),
        g: top.g * top.a + under.g * (1 - top.a), b: top.b * top.a + under.b * (1 - top.a), a: 1});
    const channel = v => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
    const lum = c => 0.2126 * channel(c.r) + 0.7152 * channel(c.g) + 0.0722 * channel(c.b);
    const ratio = (a, b) => {
        const [x, y] = [lum(a), lum(b)];
        return (Math.max(x, y) + 0.05) / (Math.min(x, y) + 0.05);
    };
    const paintOf = el => {  // the colour an element paints its box with, or null
        const s = getComputedStyle(el);
        if (el instanceof SVGElement && !(el instanceof SVGSVGElement)) {
            if (['text', 'tspan', 'g', 'title', 'line', 'polyline'].includes(el.tagName)) return null;
            const c = s.fill === 'none' ? null : parse(s.fill);
            if (c) c.a *= +s.fillOpacity * +s.opacity;
            return c && c.a > 0 ? c : null;
        }
        const c = parse(s.backgroundColor);
        if (c) c.a *= +s.opacity;
        return c && c.a > 0 ? c : null;
    };
    const behind = (el, x, y) => {  // what is painted under (x, y), the page's canvas up
        const stack = document.elementsFromPoint(x, y).filter(e => e !== el && !el.contains(e));
        let colour = {r: 255, g: 255, b: 255, a: 1};
        for (const e of stack.reverse()) { const p = paintOf(e); if (p) colour = over(p, colour); }
        return colour;
    };
    const shown = el => {
        const r = el.getBoundingClientRect();
        return r.width > 0 && r.height > 0 && getComputedStyle(el).visibility !== 'hidden';
    };
    if (what === 'swatches') return [...root.querySelectorAll('.cr-x-swatch')].filter(shown).map(el => {
        el.scrollIntoView({block: 'center', inline: 'nearest'});
        const r = el.getBoundingClientRect(), s = getComputedStyle(el);
        const bg = behind(el, r.left + r.width / 2, r.top + r.height / 2);
        const parts = ['Top', 'Left']
            .filter(side => parseFloat(s[`border${side}Width`]) > 0 && s[`border${side}Style`] !== 'none')
            .map(side => parse(s[`border${side}Color`]));
        const fill = paintOf(el);
        if (fill) parts.push(fill);
        const best = Math.max(0, ...parts.map(c => ratio(over(c, bg), bg)));
        return {swatch: el.parentElement.textContent.trim(), ratio: Math.round(best * 100) / 100};
    });
    const ownText = el => [...el.childNodes].some(n => n.nodeType === 3 && n.textContent.trim());
    const control = el => ['BUTTON', 'SELECT'].includes(el.tagName) || el.tagName === 'INPUT' && el.type === 'text';
    return [...root.querySelectorAll('*')]
        .filter(el => shown(el) && (ownText(el) || control(el)) && !el.closest('script, style, title, option'))
        .map(el => {
            el.scrollIntoView({block: 'center', inline: 'nearest'});
            const r = el.getBoundingClientRect();
            const [x, y] = [r.left + Math.min(r.width / 2, 6), r.top + r.height / 2];
            const s = getComputedStyle(el);
            const own = el instanceof SVGElement ? null : paintOf(el);
            const bg = own ? over(own, behind(el, x, y)) : behind(el, x, y);
            let opacity = 1;
            for (let e = el; e; e = e.parentElement) opacity *= +getComputedStyle(e).opacity;
            const ink = parse(el instanceof SVGElement ? s.fill : s.color);
            const fg = over({...ink, a: ink.a * opacity}, bg);
            return {tag: el.tagName, text: (el.textContent || el.value || '').trim().slice(0, 30),
                    ratio: Math.round(ratio(fg, bg) * 100) / 100,
                    fg: [fg.r, fg.g, fg.b].map(Math.round).join(), bg: [bg.r, bg.g, bg.b].map(Math.round).join(),
                    disabled: el.getAttribute('aria-disabled') || (el.disabled ? 'disabled' : '')};
        });
}"""


def contrasts(widget) -> list[dict]:
    return widget.evaluate(CONTRAST, "text")


def check_swatches(widget, scheme: str) -> None:
    """Every swatch of the legend is drawn at least 3:1 against what it sits on."""
    found = widget.evaluate(CONTRAST, "swatches")
    assert len(found) >= 3, f"only {len(found)} swatches in the legend"
    low = [m for m in found if m["ratio"] < 3]
    assert not low, f"legend swatches under 3:1 in the {scheme} theme: {low}"


def luminance_behind(widget, selector) -> float:
    """The relative luminance of what is painted behind the first ``selector`` of the widget."""
    return widget.evaluate(
        "(root, selector) => { const el = root.querySelector(selector); el.scrollIntoView({block: 'center'});"
        " const r = el.getBoundingClientRect();"
        " const stack = document.elementsFromPoint(r.left + 2, r.top + r.height / 2).reverse();"
        " let c = [255, 255, 255];"
        " for (const e of stack) { const m = getComputedStyle(e).backgroundColor.match(/[\\d.]+/g).map(Number);"
        "   const a = m.length > 3 ? m[3] : 1; c = c.map((v, i) => m[i] * a + v * (1 - a)); }"
        " const f = v => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };"
        " return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]); }",
        selector,
    )


def use_scheme(page, scheme: str) -> None:
    """The reader's colour scheme becomes ``scheme``; the page (in the theme's auto mode) follows it."""
    page.emulate_media(color_scheme=scheme)
    page.wait_for_function("scheme => document.documentElement.dataset.theme === scheme", arg=scheme)
    assert page.evaluate("() => document.documentElement.dataset.theme") == scheme


def measure_contrasts(page, widget, scheme: str) -> list[dict]:
    """The contrasts of the widget at the first, a middle and the last step, in ``scheme``; checks that
    in the dark theme the widget sits on the dark page, not on a light card."""
    behind = luminance_behind(widget, '[data-role="status"]')
    assert (behind < 0.05) if scheme == "dark" else (behind > 0.9), f"the widget sits on luminance {behind:.2f}"
    measured = []
    widget.focus()
    for key in ("Home", "ArrowRight", "ArrowRight", "End"):
        page.keyboard.press(key)
        measured += contrasts(widget)
    return measured


def check_contrasts(measured: list[dict], scheme: str, kind: str) -> None:
    if kind == "backward":
        assert any(m["text"] == "Check" for m in measured) and any("Not quite" in m["text"] for m in measured)
    texts_seen = {m["text"] for m in measured}
    assert {"Reset", "Previous step", "Next step"} <= texts_seen and len(measured) > 40
    low = sorted({(m["tag"], m["text"], m["ratio"], m["fg"], m["bg"]) for m in measured if m["ratio"] < 4.5})
    assert not low, f"text with less than 4.5:1 contrast in the {scheme} theme: {low[:10]}"
    assert any(m["disabled"] == "true" for m in measured), "no greyed-out button was measured"


def check_buttons_with_nothing_to_do_are_aria_disabled(page, widget) -> None:
    """At the first step Reset and Previous step, at the last Next step, say aria-disabled="true";
    they keep the keyboard focus, and pressing one changes nothing."""
    names = ("Reset", "Previous step", "Next step")
    buttons = {name: widget.get_by_role("button", name=name, exact=True) for name in names}

    def states():
        return {name: button.get_attribute("aria-disabled") for name, button in buttons.items()}

    assert states() == {"Reset": "true", "Previous step": "true", "Next step": "false"}
    first = status_of(widget)
    buttons["Previous step"].focus()
    page.keyboard.press("Enter")
    assert status_of(widget) == first
    assert page.evaluate("() => document.activeElement.textContent") == "Previous step"
    buttons["Next step"].click()
    assert states() == {"Reset": "false", "Previous step": "false", "Next step": "false"}
    widget.focus()
    page.keyboard.press("End")
    assert states() == {"Reset": "false", "Previous step": "false", "Next step": "true"}
    last = status_of(widget)
    buttons["Next step"].click(force=True)  # (Playwright waits for an aria-disabled button to be enabled)
    assert status_of(widget) == last


@pytest.mark.parametrize("page_name, kind", KINDS)
def test_explorable_contrast_in_both_themes_and_aria_disabled_buttons(book_page, page_name, kind):
    """Every text and control of the widget is at least 4.5:1 against its background, at the
    first, a middle and the last step, in the light and in the dark theme (greyed-out buttons
    too); in the dark theme the widget sits on the dark page, not on a light card. Buttons with
    nothing to do say aria-disabled="true" (checked first, on the page as loaded).

    One visit per widget: the page follows the reader's colour scheme (the theme's auto mode), so
    the dark theme is measured after switching the scheme, the state of each measurement as in a
    visit of its own."""
    # (Reduced motion: no colour is caught half-way through a transition.)
    visit = book_page(page_name, color_scheme="light", reduced_motion="reduce")
    page = visit.page
    widget = page.locator(f'[data-explorable="{kind}"][data-ready="true"]').first
    widget.wait_for()
    assert page.evaluate("() => document.documentElement.dataset.theme") == "light"
    check_buttons_with_nothing_to_do_are_aria_disabled(page, widget)
    measured = {"light": measure_contrasts(page, widget, "light")}
    check_swatches(widget, "light")
    use_scheme(page, "dark")
    measured["dark"] = measure_contrasts(page, widget, "dark")
    check_swatches(widget, "dark")
    if kind == "backward":  # the guess, its buttons and the verdict of "Predict, then reveal", in each theme
        page.keyboard.press("Home")
        widget.get_by_label("Predict, then reveal").check()
        widget.get_by_role("button", name="Next step").click()
        widget.get_by_label("Your guess", exact=False).fill("0.5")
        widget.get_by_role("button", name="Check").click()
        measured["dark"] += contrasts(widget)
        use_scheme(page, "light")
        measured["light"] += contrasts(widget)
    for scheme, found in measured.items():
        check_contrasts(found, scheme, kind)
    assert not visit.problems(), "\n".join(visit.problems())


@pytest.mark.parametrize("page_name, kind", KINDS[1:])
def test_explorable_without_javascript_is_the_final_state(book_page, page_name, kind):
    visit = book_page(page_name, java_script_enabled=False)
    widget = visit.page.locator(f'[data-explorable="{kind}"]').first
    status = widget.locator('[data-role="status"]')
    last = {"forward": "Step 6 of 6.", "backward": "Step 6 of 6.", "training": "Step 60 of 60."}[kind]
    expect(status).to_contain_text(last)
    expect(widget.locator('[data-role="controls"]')).to_be_hidden()
    for svg in widget.locator("svg").all():
        assert svg.get_attribute("role") == "img" and len(svg.get_attribute("aria-label")) > 40
    if kind == "backward":
        assert texts(widget)["text-grad-b"] == "grad 1.573"
        expect(widget.get_by_text("Predict, then reveal")).to_be_hidden()


def test_two_widgets_on_one_page_step_independently(browser: Browser, serve, tmp_path: Path):
    one = explore.toposort("f", parents=SEED_PARENTS).html()
    two = explore.toposort("c", parents={"a": [], "b": [], "c": ["a", "b"]}).html()
    (tmp_path / "two.html").write_text(
        f"<!DOCTYPE html><html><body>{one}<p>text</p>{two}</body></html>", encoding="utf-8"
    )
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


def step_and_compare(widget, presses=3):
    """Press Next step ``presses`` times; each must change the status and the picture. Returns the states."""
    seen = [(status_of(widget), node_classes(widget), texts(widget))]
    for _ in range(presses):
        widget.get_by_role("button", name="Next step").click()
        now = (status_of(widget), node_classes(widget), texts(widget))
        assert now[0] != seen[-1][0], "Next step did not change the status"
        assert now[1:] != seen[-1][1:], "Next step did not change the picture"
        seen.append(now)
    return seen


def test_forward_fills_in_the_values(backward_page):
    visit = backward_page()
    page = visit.page
    widget = page.locator('[data-explorable="forward"][data-ready="true"]')
    expect(widget.locator('[data-role="status"]')).to_have_text("Step 1 of 6. a is a leaf: an input, with the value 2.")
    assert texts(widget)["text-value-p"] == "data ?"
    seen = step_and_compare(widget)
    expect(widget.locator('[data-role="formula"]')).to_have_text("c = 0.5")
    widget.get_by_role("button", name="Previous step").click()
    assert (status_of(widget), node_classes(widget), texts(widget)) == seen[2]
    expect(widget.locator('[data-role="formula"]')).to_have_text("p = a \u00d7 b = 2 \u00d7 (\u22120.5) = \u22121")
    assert texts(widget)["text-value-p"] == "data \u22121" and texts(widget)["text-value-c"] == "data ?"
    assert highlighted_edges(widget) == ["edge-a-p", "edge-b-p"]
    assert "cr-current" in node_classes(widget)["node-p"]
    widget.focus()
    page.keyboard.press("End")
    expect(widget.locator('[data-role="status"]')).to_contain_text("Step 6 of 6. L is tanh of n")
    assert texts(widget)["text-value-L"] == "data \u22120.4621"
    page.keyboard.press("ArrowLeft")
    expect(widget.locator('[data-role="status"]')).to_contain_text("Step 5 of 6. n is an addition of p and c")
    assert not visit.problems(), "\n".join(visit.problems())


def test_backward_fills_in_the_gradients_edge_by_edge(backward_page):
    visit = backward_page()
    page = visit.page
    widget = page.locator('[data-explorable="backward"][data-ready="true"]').first
    status = widget.locator('[data-role="status"]')
    expect(status).to_contain_text("Step 1 of 6. Start at the root")
    assert texts(widget)["text-grad-a"] == "grad 0" and texts(widget)["text-grad-L"] == "grad 1"
    step_and_compare(widget)
    expect(status).to_contain_text("Step 4 of 6. n sends its gradient back to c")
    assert highlighted_edges(widget) == ["edge-c-n"]
    classes = node_classes(widget)
    assert "cr-current" in classes["node-n"] and "cr-target" in classes["node-c"]
    assert "cr-waiting" in classes["node-a"]
    widget.focus()
    page.keyboard.press("ArrowRight")
    expect(widget.locator('[data-role="formula"]')).to_have_text(
        "a\u0304 += p\u0304 \u00b7 \u2202p/\u2202a = 0.7864 \u00d7 (\u22120.5) = \u22120.3932"
    )
    page.keyboard.press("End")
    final = texts(widget)
    assert [final[f"text-grad-{name}"] for name in "abcpnL"] == [
        "grad \u22120.3932",
        "grad 1.573",
        "grad 0.7864",
        "grad 0.7864",
        "grad 0.7864",
        "grad 1",
    ]
    assert all("cr-complete" in c for c in node_classes(widget).values())
    assert not visit.problems(), "\n".join(visit.problems())


def test_backward_predict_then_reveal(backward_page):
    visit = backward_page()
    widget = visit.page.locator('[data-explorable="backward"][data-ready="true"]').first
    status = widget.locator('[data-role="status"]')
    formula = widget.locator('[data-role="formula"]')
    widget.get_by_label("Predict, then reveal").check()
    assert texts(widget)["text-local-a-p"] == "?", "edges still to come show their local gradient"
    widget.get_by_role("button", name="Next step").click()
    expect(formula).to_have_text("n\u0304 += L\u0304 \u00b7 \u2202L/\u2202n = 1 \u00d7 ? = ?")
    assert texts(widget)["text-grad-n"] == "grad ?" and texts(widget)["text-local-n-L"] == "?"
    classes = node_classes(widget)["node-n"]
    assert "cr-waiting" in classes and "cr-complete" not in classes, "the box gives the answer away"
    guess = widget.get_by_label("Your guess for L\u0304 \u00b7 \u2202L/\u2202n")
    guess.fill("one")
    widget.get_by_role("button", name="Check").click()
    expect(status).to_contain_text("Step 2 of 6. Type a number")
    expect(status).to_contain_text("guess the product L\u0304 \u00b7 \u2202L/\u2202n")
    guess = widget.get_by_label("Your guess for L\u0304 \u00b7 \u2202L/\u2202n")
    verdict, score = widget.locator('[data-role="verdict"]'), widget.locator('[data-role="score"]')
    guess.fill("0.5")
    widget.get_by_role("button", name="Check").click()
    # A first wrong guess may be tried again: the answer stays hidden, the verdict is red with a cross.
    expect(status).to_contain_text("Not quite: 0.5 is not it. Try once more")
    expect(verdict).to_have_text("\u2717 Not quite")
    expect(verdict).to_have_class("cr-x-verdict cr-wrong")
    assert texts(widget)["text-grad-n"] == "grad ?"
    guess.fill("0.4")
    widget.get_by_role("button", name="Check").click()
    expect(status).to_contain_text("Not quite: you said 0.4, and it is 0.7864.")
    expect(score).to_have_text("Score: 0 of 1 right at the first try")
    assert "cr-complete" in node_classes(widget)["node-n"]
    assert texts(widget)["text-grad-n"] == "grad 0.7864" and texts(widget)["text-local-n-L"] == "0.7864"
    widget.get_by_role("button", name="Next step").click()
    expect(formula).to_contain_text("= 0.7864 \u00d7 ? = ?")
    expect(verdict).to_be_hidden()  # a verdict stays on the step it was given at
    widget.get_by_label("Your guess", exact=False).fill("0.786")
    widget.get_by_label("Your guess", exact=False).press("Enter")
    expect(status).to_contain_text("Right: 0.786.")
    expect(verdict).to_have_text("\u2713 Right")
    expect(verdict).to_have_class("cr-x-verdict cr-right")
    expect(score).to_have_text("Score: 1 of 2 right at the first try")
    # Next on a step still to guess shows its answer first, then moves on.
    widget.get_by_role("button", name="Next step").click()
    expect(formula).to_contain_text("? = ?")
    widget.get_by_role("button", name="Next step").click()
    expect(status).to_contain_text("Shown without a guess.")
    expect(formula).to_have_text("c\u0304 += n\u0304 \u00b7 \u2202n/\u2202c = 0.7864 \u00d7 1 = 0.7864")
    widget.get_by_role("button", name="Reset").click()
    widget.get_by_role("button", name="Next step").click()
    expect(formula).to_contain_text("1 \u00d7 ? = ?")  # Reset hides the answers again
    expect(score).to_be_hidden()  # and starts the score again
    # A minus sign on any keyboard: the ± button changes the sign of the guess.
    guess = widget.get_by_label("Your guess", exact=False)
    guess.fill("0.39")
    widget.get_by_role("button", name="Change the sign of the guess").click()
    expect(guess).to_have_value("\u22120.39")
    widget.get_by_role("button", name="Change the sign of the guess").click()
    expect(guess).to_have_value("0.39")
    widget.get_by_label("Predict, then reveal").uncheck()
    assert texts(widget)["text-local-a-p"] == "\u22120.5"
    predict_the_second_term(visit.page.locator('[data-explorable="backward"][data-ready="true"]').nth(1))
    assert not visit.problems(), "\n".join(visit.problems())


def predicting_at(widget, step, steps):
    """Ticks "Predict, then reveal" and presses Next until the widget shows step ``step`` (from 0) of
    ``steps``; returns its status line."""
    widget.get_by_label("Predict, then reveal").check()
    status = widget.locator('[data-role="status"]')
    for _ in range(2 * steps):  # Next shows a hidden answer first, then moves on
        if f"Step {step + 1} of {steps}." in status.text_content():
            break
        widget.get_by_role("button", name="Next step").click()
    return status


def predict_the_second_term(widget):
    """The fan-out widget, L = tanh(ab + a): the step where a's running sum gains its second
    term asks for the new sum, and the sum is right."""
    L = worked_example(fan_out=True)
    a = L.parents[0].parents[1]
    steps = explore.backward(L).steps
    (second,) = [number for number, step in enumerate(steps) if step.get("parent") == "a" and step["before"]]
    status = predicting_at(widget, second, len(steps))
    expect(status).to_contain_text("a already holds")
    expect(widget.locator('[data-role="formula"]')).to_have_text(steps[second]["quiz"]["formula"])
    guess = widget.get_by_label("Your guess for a\u0304 after this step")
    # The slip the step is there for: the new term alone, where it must be added to the held one.
    guess.fill(f"{steps[second]['product']:.4f}")
    guess.press("Enter")
    expect(status).to_contain_text("that is only what this edge adds")
    guess.fill(f"{a.grad:.4f}")
    guess.press("Enter")
    expect(status).to_contain_text(f"Right: {a.grad:.4f}.")
    # Right at the second try: the score counts first tries only.
    expect(widget.locator('[data-role="score"]')).to_have_text("Score: 0 of 1 right at the first try")


def test_backward_predict_names_a_product_s_factors_swapped(backward_page):
    """At the step ā += p̄ · ∂p/∂a, p̄ times a (a's own value, where ∂p/∂a = b) was told only "Not quite: … is not
    it."; the widget now names the slip with the words of the drill of a local gradient."""
    visit = backward_page()
    widget = visit.page.locator('[data-explorable="backward"][data-ready="true"]').first
    steps = explore.backward(worked_example()).steps
    (into_a,) = [number for number, step in enumerate(steps) if (step.get("child"), step.get("parent")) == ("p", "a")]
    status = predicting_at(widget, into_a, len(steps))
    guess = widget.get_by_label("Your guess for p\u0304 \u00b7 \u2202p/\u2202a")
    guess.fill(f"{steps[into_a]['child_grad'] * 2.0:.4f}")  # p̄ times a = 2, where ∂p/∂a = b = −0.5
    guess.press("Enter")
    expect(status).to_contain_text(
        "Not quite: your \u2202p/\u2202a is wrong. That is \u2202p/\u2202b, the local gradient of the other edge "
        "into p. Try once more"
    )
    assert not visit.problems(), "\n".join(visit.problems())


@pytest.mark.parametrize("width", [390, 1280])
def test_backward_page_fits_and_has_unique_ids(backward_page, width):
    visit = backward_page(width=width)
    page = visit.page
    # forward, backward, and the backward pass of the fan-out example
    expect(page.locator('[data-explorable][data-ready="true"]')).to_have_count(3)
    widths = page.evaluate("() => [document.documentElement.scrollWidth, window.innerWidth]")
    assert widths[0] <= widths[1], f"the page is {widths[0]} px wide in a {widths[1]} px window"
    for widget in page.locator("[data-explorable]").all():
        box = widget.bounding_box()
        kind = widget.get_attribute("data-explorable")
        assert box["x"] >= 0 and box["x"] + box["width"] <= width, f"{kind} sticks out: {box}"
    repeated = page.evaluate("""() => {
        // (sphinx-exercise repeats ids of its own; the widgets' ids must be unique on the page.)
        const seen = {};
        document.querySelectorAll('[id]').forEach(e => { seen[e.id] = (seen[e.id] || 0) + 1; });
        const ours = [...document.querySelectorAll('[data-explorable] [id]')].map(e => e.id);
        return ours.length > 20 ? ours.filter(id => seen[id] > 1) : ['too few ids in the widgets'];
    }""")
    assert not repeated, f"ids used more than once on the page: {repeated[:10]}"
    names = [w.get_attribute("aria-label") for w in page.locator('[data-explorable="backward"]').all()]
    assert len(set(names)) == len(names) == 2, f"the backward widgets share a name: {names}"
    assert not visit.problems(), "\n".join(visit.problems())


@pytest.fixture
def engine_page(book_page):
    return functools.partial(book_page, "engine")


def training_view(widget) -> dict:
    """What the training widget shows: region fills, the cursor, a weight's line, the readout."""
    return widget.evaluate(
        "root => {"
        + PREFIX
        + """
        const by = id => root.querySelector(`[id="${prefix}${id}"]`);
        return {cells: [...root.querySelectorAll('[data-cell]')].map(c => c.getAttribute('fill')).join(),
                cursor: by('part-cursor').getAttribute('x1'),
                weight: by('part-w0').getAttribute('stroke-width') + by('part-w0').getAttribute('stroke'),
                readout: root.querySelector('[data-role="parameter-readout"]').textContent};
        }"""
    )


def recorded(widget) -> dict:
    """The widget's recorded steps and the names of its weights (its JSON)."""
    return widget.evaluate("root => JSON.parse(root.querySelector('script[data-role=\"steps\"]').textContent)")


TRAINING = '[data-explorable="training"][data-ready="true"]'


def test_training_steps_through_the_run(engine_page):
    visit = engine_page()
    page = visit.page
    widget = page.locator(TRAINING)
    status = widget.locator('[data-role="status"]')
    expect(status).to_contain_text("Step 0 of 60. After 0 updates of the weights")
    seen = [training_view(widget)]
    for _ in range(3):
        widget.get_by_role("button", name="Next step").click()
        now = training_view(widget)
        for key in ("cursor", "weight", "readout"):
            assert now[key] != seen[-1][key], f"Next step did not change the {key}"
        seen.append(now)
    assert seen[-1]["cells"] != seen[0]["cells"], "the regions did not move in three steps"
    expect(status).to_contain_text("Step 6 of 60. After 6 updates")
    widget.get_by_role("button", name="Previous step").click()
    assert training_view(widget) == seen[2]
    widget.focus()
    page.keyboard.press("ArrowRight")
    expect(status).to_contain_text("Step 6 of 60")
    page.keyboard.press("End")
    expect(status).to_contain_text("Step 60 of 60. After 60 updates")
    assert not visit.problems(), "\n".join(visit.problems())


def test_training_shows_a_weight_and_its_recorded_gradient(engine_page):
    """Pointing at a weight's line, or choosing it in the list (the keyboard's way), reads out
    its value and the gradient of the loss with respect to it, as recorded at that step."""
    visit = engine_page()
    page = visit.page
    widget = page.locator(TRAINING)
    data = recorded(widget)
    readout = widget.locator('[data-role="parameter-readout"]')
    assert readout.get_attribute("aria-live") == "polite"
    choice = widget.get_by_role("combobox", name="Weight")
    for _ in range(5):
        widget.get_by_role("button", name="Next step").click()
    step = data["steps"][5]
    line = widget.locator('[data-param="4"]')
    # The pointer 70% along the line from x2 to h2, away from where it crosses another line.
    point = line.locator("line").last.evaluate("""line => {
        const [x1, y1, x2, y2] = ['x1', 'y1', 'x2', 'y2'].map(name => +line.getAttribute(name));
        const p = line.ownerSVGElement.createSVGPoint();
        [p.x, p.y] = [x1 + 0.7 * (x2 - x1), y1 + 0.7 * (y2 - y1)];
        const screen = p.matrixTransform(line.getScreenCTM());
        return [screen.x, screen.y];
    }""")
    page.mouse.move(*point)
    expect(choice).to_have_value("4")
    name = data["parameters"][4]
    assert name == "h2 \u2190 x2"
    expect(readout).to_have_text(f"= {step['weights'][4]}, gradient of the loss {step['grads'][4]}")
    assert "cr-x-chosen" in line.get_attribute("class")
    last = len(data["parameters"]) - 1
    choice.select_option(label="bias of oC")
    expect(readout).to_have_text(f"= {step['weights'][last]}, gradient of the loss {step['grads'][last]}")
    assert "cr-x-chosen" in widget.locator(f'[data-param="{last}"]').get_attribute("class")
    widget.get_by_role("button", name="Next step").click()  # the readout follows the steps
    after = data["steps"][6]
    expect(readout).to_have_text(f"= {after['weights'][last]}, gradient of the loss {after['grads'][last]}")
    assert after["grads"][last] != step["grads"][last]
    assert not visit.problems(), "\n".join(visit.problems())


def test_training_loss_curve_goes_to_the_clicked_step(engine_page):
    visit = engine_page()
    page = visit.page
    widget = page.locator(TRAINING)
    status = widget.locator('[data-role="status"]')
    chart = widget.locator('[data-role="loss-chart"] svg')
    chart.scroll_into_view_if_needed()
    data = recorded(widget)
    box = chart.bounding_box()
    width = chart.evaluate("svg => svg.viewBox.baseVal.width")
    for index in (10, 30, 0, 17):
        x = data["steps"][index]["attrs"]["part-cursor"]["x1"]
        page.mouse.click(box["x"] + x * box["width"] / width + 1, box["y"] + box["height"] / 2)
        expect(status).to_contain_text(f"Step {data['steps'][index]['step']} of 60.")
        assert training_view(widget)["cursor"] == str(x)
    # The keyboard's way to a step: the Step slider (and the arrow keys, Home and End).
    slider = widget.get_by_label("Step", exact=True)
    slider.focus()
    page.keyboard.press("ArrowRight")
    expect(status).to_contain_text("Step 36 of 60.")  # the next recorded step after 34
    assert not visit.problems(), "\n".join(visit.problems())


@pytest.mark.parametrize("width", [1280, 390])
def test_training_is_compact(engine_page, width):
    """At 1280 px the whole widget is at most 640 px tall; at 390 px the page never scrolls
    sideways and the controls are within one phone screen (844 px) of the top of the regions.
    No text is under 9 px."""
    visit = engine_page(width=width)
    page = visit.page
    widget = page.locator(TRAINING)
    widget.scroll_into_view_if_needed()
    sizes = widget.evaluate("""root => {
        const box = s => root.querySelector(s).getBoundingClientRect();
        const top = box('.cr-x-regions svg').top;
        const scale = svg => svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
        const svgText = [...root.querySelectorAll('svg text')].map(t =>
            parseFloat(t.getAttribute('font-size') || getComputedStyle(t).fontSize) * scale(t.ownerSVGElement));
        const htmlText = [...root.querySelectorAll('p, span, label, button, select, figcaption, li')]
            .filter(e => e.getBoundingClientRect().height > 0).map(e => parseFloat(getComputedStyle(e).fontSize));
        return {height: root.getBoundingClientRect().height, left: root.getBoundingClientRect().left,
                right: root.getBoundingClientRect().right, smallest: Math.min(...svgText, ...htmlText),
                toControls: Math.max(box('[data-role="slider"]').bottom, box('[data-action="next"]').bottom,
                                     box('[data-action="previous"]').bottom) - top,
                page: document.documentElement.scrollWidth};
    }""")
    if width == 1280:
        assert sizes["height"] <= 640, f"the widget is {sizes['height']:.0f} px tall at 1280 px"
    else:
        assert sizes["page"] <= width, f"the page is {sizes['page']} px wide in a {width} px window"
        assert sizes["left"] >= 0 and sizes["right"] <= width, f"the widget sticks out: {sizes}"
        assert sizes["toControls"] <= 844, f"the controls end {sizes['toControls']:.0f} px below the regions' top"
    assert sizes["smallest"] >= 9, f"text of {sizes['smallest']:.1f} px"
    widget.get_by_role("button", name="Play").click()
    expect(widget.locator('[data-role="status"]')).to_contain_text("Step 2 of 60", timeout=5000)
    widget.get_by_role("button", name="Pause").click()
    assert not visit.problems(), "\n".join(visit.problems())
