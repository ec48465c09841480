"""The "Live code" mode in Chromium, on the built book served from 127.0.0.1, as a reader uses it.

For each of the four scalar chapters: nothing of the runtime is requested before
"Live code" is pressed; then "Run all cells" runs every cell in Pyodide, in the page, and

* the text each cell shows live equals the text the build showed (whitespace normalized),
  for every cell with text output except those listed in ``MAY_DIFFER`` with the reason
  (timings, rounding), at most a fifth of them, whose text equals the build's once every
  number is masked;
* every figure the build drew (an ``<svg>``) is drawn live too (graphs by Graphviz in
  WebAssembly, charts by ``chainrule_course.charts.svgchart``);
* at most 10 % of a page's code cells are tagged ``no-live`` (one is always allowed: a short page's
  one check against PyTorch);
* no cell raises, outside those tagged ``raises-exception``; cells tagged ``no-live`` say
  what they need and link to Colab instead of running;
* no request leaves 127.0.0.1, and the time to the first output is printed;
* axe-core finds no WCAG 2.1 AA violation, in light or dark mode, after Run all.

After Run all, each checked exercise (of intro, graph and backward) is answered in the page as a reader
would: the answer cell still holds the empty answer (no solution replaced it), so Check says
it is not answered; a wrong answer gets the message the notebook's check gives for that
mistake (computed here, in CPython); the solution's answer passes, and the progress record
counts the checks. The intro page then goes on at a phone's width: after a reload, Live code
started from the keyboard finds the answer still there, Reset answer empties it, a check past
its time limit and a runaway cell are stopped with every name kept, and the next chapter
starts Python from the service worker's cache.

On the backward page, after Run all, the backward widget steps through an expression the reader
typed. The editor (CodeMirror) indents, colours and runs as a reader expects, in the engine chapter
(``test_the_editor``).

Uses Debian's chromium through Playwright. Build the book first (``make book``).
"""

from __future__ import annotations

import html as html_lib
import json
import re
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from browsing import Visit
from common import BOOK_HTML, book_config, exercise_number
from playwright.sync_api import Browser, expect
from test_accessibility import axe_violations

from _ext import live_code
from chainrule_course.grading.apart import TIME_LIMIT
from chainrule_course.pages import live
from tools.book import questions
from tools.book.book_model import ROOT, read_chapter

#: The pages with Live code, as _config.yml lists them.
PAGES = [page.removeprefix("chapters/") for page in book_config()["sphinx"]["config"]["live_code_pages"]]
#: Cells whose live output may differ from the build's, by page and cell number, and why.
MAY_DIFFER: dict[str, dict[int, str]] = {
    "graph": {
        11: "times the forward pass and the sort, in milliseconds, and the exponents fitted to them",
    },
    "backward": {
        6: "the |diff| column is the rounding error of a central difference, "
        "which differs between the build's libm and WebAssembly's"
    },
}
#: A wrong answer per checked exercise, and the mistake the check names for it.
WRONG_ANSWERS = {
    "intro": ("def tanh_neuron_grads(x, w, b):\n    return w, x, 1.0", "the factor tanh'(z)"),
    "graph": (
        "def dfs_order_with_stack(root, parents):\n    order, stack, seen = [], [root], {root}\n"
        "    while stack:\n        node = stack.pop()\n        order.append(node)\n"
        "        for parent in parents[node]:\n            if parent not in seen:\n"
        "                seen.add(parent)\n                stack.append(parent)\n    return order",
        "",
    ),
    "backward": ("def cube_grads(x):\n    return x, x * x + x * x", ""),
    "engine": (
        "def tape_grads(tape, k):\n    grads = [0.0] * (k + len(tape))\n    grads[-1] = 1.0\n"
        "    for i in reversed(range(len(tape))):\n        for parent, local in zip(*tape[i]):\n"
        "            grads[parent] = grads[k + i] * local\n    return grads",
        "written over",
    ),
}
FIRST_OUTPUT_LIMIT_S = 30
RUN_ALL_TIMEOUT_MS = 120_000


NUMBER = re.compile(r"[-+]?\d[\d.e+-]*")  # a number as a timing or a rounding error shows it


def normalized(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def cells_of(page) -> list[dict]:
    """Per code cell of the page: its state, its live text and SVG count, and the build's."""
    return page.evaluate("""() => [...document.querySelectorAll('article div.cell')]
        .filter(cell => cell.querySelector('.cell_input pre'))
        .map(cell => {
            const live = cell.querySelector('[data-live-output]');
            const built = cell.querySelector('.cell_output');
            const text = element => {
                if (!element) return '';
                const copy = element.cloneNode(true);
                copy.querySelectorAll('svg, style, script, button, figcaption').forEach(e => e.remove());
                return copy.textContent;
            };
            // A figure's SVG, not the icon of a copy button.
            const figures = element => element ? element.querySelectorAll('svg:not(button svg)').length : 0;
            return {state: cell.getAttribute('data-live-state'),
                    tags: cell.className,
                    live: text(live), built: text(built),
                    liveSvg: figures(live), builtSvg: figures(built)};
        })""")


class LiveVisit(Visit):
    """A :class:`Visit` that also keeps the URL of every request the page (and its worker) makes."""

    def __init__(self, *args, **options):
        self.requests: list[str] = []
        self.service_workers = options.get("service_workers", "block")
        super().__init__(*args, **options)

    def _route(self, route):
        self.requests.append(route.request.url)
        super()._route(route)


@pytest.fixture
def live_page(browser: Browser, warm_context, book_html: Path, serve):
    visits = []

    def open_page(name: str, width: int = 1280, service_workers: str = "block") -> LiveVisit:
        assert (book_html / "chapters" / f"{name}.html").is_file(), f"{name} is not built: run `make book`"
        url = serve(book_html) + f"chapters/{name}.html"
        shared = warm_context if service_workers == "block" else None
        visit = LiveVisit(browser, url, width, shared=shared, service_workers=service_workers)
        visits.append(visit)
        return visit

    yield open_page
    for visit in visits:
        visit.close()


def test_a_visit_in_the_shared_context_keeps_only_pythons_snapshot(live_page):
    """What the warm context keeps from one visit to the next is Python's snapshot alone: the next visit
    starts Python from it, with none of the page's other storage (the progress record) left."""
    first = live_page("graph")
    press_live_code(first)
    first.page.evaluate("() => localStorage.setItem('chainrule-test-left', 'yes')")
    # The snapshot is stored once Python is ready, after the status says so: wait until it is there.
    stored = "async () => (await (await caches.open('chainrule-python-snapshot')).keys()).length > 0"
    first.page.wait_for_function(stored, timeout=30_000)
    first.close()
    second = live_page("graph")
    left = second.page.evaluate("() => localStorage.getItem('chainrule-test-left')")
    assert left is None, "a visit saw the storage of the one before"
    press_live_code(second)
    assert second.page.evaluate("() => document.documentElement.getAttribute('data-python-start')") == "snapshot"


#: What every page, or a live or drill page, loads before Live code is pressed.
PAGE_SCRIPTS = (
    "/python.js",
    "/live_answers.js",
    "/live_cells.js",
    "/live.js",
    "/live.css",
    "/progress.js",
    "/progress.css",
    "/drill.js",
    "/drill.css",
    "/site.js",
)


def press_live_code(visit: LiveVisit) -> None:
    page = visit.page
    if visit.service_workers == "allow":  # a first visit reloads once, isolated by the service worker
        page.wait_for_function("() => crossOriginIsolated", timeout=10_000)
    nothing_requested_early(visit)
    page.get_by_role("button", name="Live code").click()
    expect(page.locator("[data-live-status]")).to_contain_text("Python is ready", timeout=60_000)


def nothing_requested_early(visit: LiveVisit) -> None:
    page = visit.page
    page.wait_for_load_state("load")
    early = [url for url in visit.requests if "/_static/live/" in url and not urlsplit(url).path.endswith(PAGE_SCRIPTS)]
    assert not early, f"the runtime was requested before 'Live code' was pressed: {early}"


@pytest.mark.parametrize("name", PAGES)
def test_run_all_cells_matches_the_build(live_page, name):
    visit = live_page(name, service_workers="allow" if name == "intro" else "block")
    page = visit.page
    press_live_code(visit)
    page.get_by_role("button", name="Run all cells").click()
    expect(page.locator("[data-live-status]")).to_contain_text("All cells ran", timeout=RUN_ALL_TIMEOUT_MS)
    first = float(page.evaluate("() => document.documentElement.getAttribute('data-live-first-output')"))
    print(f"{name}: first output {first:.1f} s after pressing 'Live code'")
    assert first <= FIRST_OUTPUT_LIMIT_S

    cells = cells_of(page)
    solutions = [index for index, cell in enumerate(cells) if "tag_solution" in cell["tags"]]
    ran = [index for index in solutions if cells[index]["state"] not in (None, "skipped")]
    assert not ran, f"Run all ran the solution cells {ran} of {name}"
    runnable = [index for index in solutions if cells[index]["state"] is None]
    if runnable:  # a solution's own Run cell still runs it (the solution opened), as the build did
        index = runnable[0]
        button = page.locator("div.cell").nth(index).locator("button[data-live-action=run-cell]")
        button.evaluate("button => button.closest('details')?.setAttribute('open', '')")
        button.evaluate("button => button.click()")  # in a solution the reader has opened
        expect(page.locator("div.cell").nth(index)).to_have_attribute("data-live-state", "done", timeout=30_000)
        cells = cells_of(page)
        assert normalized(cells[index]["live"]) == normalized(cells[index]["built"])
        solutions.remove(index)
    errors = [
        (index, cell["live"][:300])
        for index, cell in enumerate(cells)
        if cell["state"] == "error" and "tag_raises-exception" not in cell["tags"]
    ]
    assert not errors, f"cells that raised live on {name}: {errors}"
    skipped = [index for index, cell in enumerate(cells) if "tag_no-live" in cell["tags"]]
    not_run = set(skipped) | set(solutions)
    for index in skipped:
        assert "run it in Colab" in cells[index]["live"], (index, cells[index]["live"])
    assert len(skipped) <= max(1, 0.1 * len(cells)), (
        f"{len(skipped)} of {len(cells)} cells of {name} are no-live (at most one, or 10 %)"
    )
    for index, cell in enumerate(cells):
        if cell["builtSvg"] and index not in solutions:
            assert index not in skipped and cell["liveSvg"], (
                f"cell {index} of {name} drew a figure in the build but none live"
            )

    # Text outputs: the cells without a figure (a figure's text is its caption and labels).
    with_text = [
        index
        for index, cell in enumerate(cells)
        if normalized(cell["built"]) and not cell["builtSvg"] and index not in not_run
    ]
    differ = {
        index: (normalized(cells[index]["built"])[:200], normalized(cells[index]["live"])[:200])
        for index in with_text
        if normalized(cells[index]["built"]) != normalized(cells[index]["live"])
    }
    unexpected = {index: texts for index, texts in differ.items() if index not in MAY_DIFFER.get(name, {})}
    same = len(with_text) - len(differ)
    print(
        f"{name}: {same} of {len(with_text)} text outputs equal the build's; "
        f"{len(skipped)} of {len(cells)} cells no-live"
    )
    assert not unexpected, f"live output differs from the build's on {name}: {unexpected}"
    exempt = [index for index in with_text if index in MAY_DIFFER.get(name, {})]  # timings and rounding
    assert len(exempt) <= 0.2 * len(with_text), (exempt, len(with_text))
    masked = {
        index: [NUMBER.sub("#", normalized(cells[index][side])) for side in ("built", "live")] for index in exempt
    }
    assert all(built == live for built, live in masked.values()), masked
    if name == "backward":  # in the same visit: one start of Python, one Run all
        step_an_expression_the_reader_typed(visit)
    if name in WRONG_ANSWERS:
        question, editor, right = answer_the_exercise(visit, name)
    assert not visit.problems(), "\n".join(visit.problems())
    # WCAG 2.1 AA after Run all and the exercise (tests/browser/test_accessibility.py measures before).
    found = axe_violations(page)
    assert not found, f"live {name}: " + "\n".join(found)
    if name == "intro":  # what follows is the same on every page: once, on a phone
        after_a_reload_on_a_phone(visit, question, editor, right)
        assert not visit.problems(), "\n".join(visit.problems())


def code_of(editor) -> str:
    """The text in a cell's editor (CodeMirror: ``editor`` is its ``.cm-content``)."""
    return editor.evaluate("element => element.closest('.cm-editor').chainruleCode()")


def notebook_message(answer: str, check: str) -> str:
    """What the notebook's check cell says of ``answer``: run here, in CPython, as the page runs it."""
    namespace = live.new_namespace()
    assert live.run_cell(answer, namespace, "<cell answer>")["error"] is None
    return live.run_cell(check, namespace, "<cell check>")["error"]


def answer_the_exercise(visit: LiveVisit, name: str):
    # The page's first checked exercise, whose wrong answer WRONG_ANSWERS holds (a new one goes after it).
    question = questions.questions_of(None, f"chapters/{name}", read_chapter(ROOT, f"chapters/{name}"))[0]
    page = visit.page
    editor = page.locator(f"#{question.label} ~ .cr-live-answer .cm-content").first

    def checked(answer: str | None, kind: str) -> str:
        return check_answer(page, question.label, answer, kind)

    # Run all ran the solution's cells: the answer cell still holds the empty answer.
    assert code_of(editor) == question.stub.strip()
    # The check runs inside feedback.exercise(number), as in the notebooks: the message names the exercise.
    assert f"Exercise {exercise_number(question.label)} is not answered yet" in checked(None, "wrong")
    wrong, mistake = WRONG_ANSWERS[name]
    expected = notebook_message(wrong, question.check)
    said = checked(wrong, "wrong")
    assert said.startswith("✗ Not yet.") and " ".join(expected.split()) in " ".join(said.split()), (said, expected)
    assert mistake in said, said
    right = questions.solution_code(question, name)
    assert checked(right, "right").startswith("✓ Right. " + question.check.splitlines()[-1].split('"')[1])
    kept = page.evaluate("() => JSON.parse(localStorage.getItem('chainrule-progress'))")["exercises"][question.label]
    assert kept["attempts"] == 3 and kept["passed"] is True, kept  # the progress record counts the checks
    return question, editor, right


def check_answer(page, label: str, answer: str | None, kind: str) -> str:
    """Check Exercise ``label``'s answer in the page (``answer`` typed first, unless None): the
    verdict's text, once it is ``kind``. The verdict is then removed, so the next check waits for its own."""
    box = f"#{label} ~ .cr-live-answer"
    if answer is not None:
        page.locator(f"{box} .cm-content").first.fill(answer)
    page.locator(f"{box} button[data-live-action=check]").first.click()
    verdict = page.locator(f"{box} [data-live-verdict]").first
    expect(verdict).to_have_attribute("data-live-verdict", kind, timeout=30_000)
    text = verdict.text_content()
    verdict.evaluate("element => element.remove()")
    return text


def after_a_reload_on_a_phone(visit: LiveVisit, question, editor, right: str) -> None:
    """The intro page, reloaded at a phone's width: the answer, its progress mark and the page's limits.

    The first load registers the site's service worker, and the page reloads itself once, so
    that it is cross-origin isolated from the first visit on: a runaway cell and a check past
    its time limit are interrupted and the names defined before them kept. Then, reloaded at a
    phone's width, Live code is started from the keyboard: from the top, the skip link after
    "Skip to main content" starts it and puts the cursor in the answer, in at most 5 presses.
    The next chapter starts Python from the service worker's cache."""
    page = visit.page
    assert page.evaluate("() => navigator.serviceWorker.controller !== null && crossOriginIsolated")
    reloads = page.evaluate("() => performance.getEntriesByType('navigation')[0].type")
    assert reloads == "reload", "the first visit was isolated without its one reload?"
    a_runaway_loop_is_stopped_and_the_names_kept(visit)  # on the first visit
    page.set_viewport_size({"width": 390, "height": 844})
    page.reload()
    assert page.evaluate("() => crossOriginIsolated"), "the service worker did not isolate the page"
    note = page.locator(".cr-live-note").text_content()
    expect(page.locator(f"[data-live-hint={question.label}]")).to_contain_text("press \u201cLive code\u201d")
    expect(page.locator(f"#{question.label} .cr-progress-mark")).to_have_text(" \u2713 check passed")
    number = exercise_number(question.label)
    skip = f"Skip to your answer to Exercise {number}"
    for presses in range(1, 5):
        page.keyboard.press("Tab")
        if page.evaluate("() => document.activeElement.textContent") == skip:
            break
    # (the bar slides in: wait until it is in view)
    page.wait_for_function("() => document.activeElement.getBoundingClientRect().top >= 0", timeout=2_000)
    page.keyboard.press("Enter")
    # The editors load before Python (about 1 s here, under load too); a busy CI once took over 5 s.
    expect(page.get_by_role("textbox", name=f"Answer to Exercise {number}")).to_be_focused(timeout=20_000)
    assert presses + 1 <= 5, f"{presses + 1} key presses to the answer"
    expect(page.locator("[data-live-status]")).to_contain_text("Python is ready", timeout=60_000)
    assert code_of(editor) == right, "the answer did not outlive the reload"
    page.locator(f"#{question.label} ~ .cr-live-answer button[data-live-action=reset-answer]").first.click()
    assert code_of(editor) == question.stub.strip()

    def checked(answer: str) -> str:
        return check_answer(page, question.label, answer, "wrong")

    # What the page's Python lacks is said plainly; an answer that never returns gets its verdict.
    numpy_answer = "import numpy as np\ndef tanh_neuron_grads(x, w, b):\n    return np.zeros(3)"
    said = checked(numpy_answer)
    assert "numpy is not available in the page's Python, and this exercise does not allow it anywhere" in said
    assert "its check runs the answer cell with math and Python's standard library only" in said
    # What an answer prints is shown as the notebook shows it: the first lines, then a note.
    printing = "def tanh_neuron_grads(x, w, b):\n    for i in range(20_000):\n        print(i)\n    return 0, 0, 0"
    said = checked(printing)
    assert "tanh_neuron_grads printed:" in said and "... and more, not shown" in said and len(said) < 3_000, said
    # The page's limit on a check is the notebook's; here it is cut to 2 s, so as not to wait 10.
    script = page.locator("script[data-check-limit]")
    assert float(script.get_attribute("data-check-limit")) == TIME_LIMIT
    script.evaluate("script => script.setAttribute('data-check-limit', '2')")
    began = time.monotonic()
    said = checked("def tanh_neuron_grads(x, w, b):\n    while True:\n        pass")
    assert "tanh_neuron_grads did not return within 2 s and was stopped: it is too slow" in said, said
    assert time.monotonic() - began < 7, f"the verdict took {time.monotonic() - began:.0f} s"
    # The check was interrupted, not Python restarted: the answer cell's names are still there.
    expect(page.locator("[data-live-status]")).to_have_text(
        f"Exercise {number}: the check was stopped after 2 s; every name is kept."
    )
    page.get_by_role("textbox", name="Code of cell 1", exact=True).fill("callable(tanh_neuron_grads)")
    page.get_by_role("button", name="Run cell 1", exact=True).click()
    expect(page.locator("div.cell").first.locator("[data-live-output]")).to_have_text("True", timeout=30_000)
    a_run_pressed_while_stop_waits_runs_after_the_restart(visit)
    # At a phone's width code lines scroll sideways in their boxes: each must still be reachable by keys.
    found = axe_violations(page)
    assert not found, "live intro at 390 px: " + "\n".join(found)
    next_chapter_starts_from_the_cache(visit, note)


#: The contrast of a token's colour with what is painted under it: the editor's translucent
#: background laid over the page's (alpha compositing), in JavaScript.
CONTRASTS = """selector => {
    const rgba = colour => { const v = colour.match(/[\\d.]+/g).map(Number); return [...v.slice(0, 3), v[3] ?? 1]; };
    const under = element => {
        const layers = [];
        for (; element; element = element.parentElement) {
            const colour = rgba(getComputedStyle(element).backgroundColor);
            if (colour[3] > 0) layers.push(colour);
            if (colour[3] === 1) break;
        }
        return layers.reverse().reduce((base, [r, g, b, a]) =>
            [r * a + base[0] * (1 - a), g * a + base[1] * (1 - a), b * a + base[2] * (1 - a)], [255, 255, 255]);
    };
    const luminance = channels => {
        const [r, g, b] = channels.map(v => v / 255)
            .map(v => v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4);
        return 0.2126 * r + 0.7152 * g + 0.0722 * b;
    };
    const ratio = element => {
        const [a, b] = [luminance(rgba(getComputedStyle(element).color).slice(0, 3)), luminance(under(element))];
        return (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
    };
    const seen = {};
    document.querySelectorAll(selector).forEach(element => {
        const name = [...element.classList].find(c => c.startsWith('tok-')) || 'text';
        seen[name] = Math.min(seen[name] ?? Infinity, ratio(element));
    });
    return seen;
}"""


def test_the_editor(live_page):
    """CodeMirror in a cell, as a reader types: auto-indent after a colon, Tab indents and keeps
    the focus, Escape then Tab leaves, Shift+Enter runs, an edit above marks the outputs below
    out of date and outlives a reload, and every token's colour reads in both themes. The box
    keeps its looks when focused; a long print is capped; Reset page asks and can be undone.
    Live code started from the keyboard keeps the focus, and its first output waits for one
    editor; Stop (not isolated here) keeps what the cell printed, Ctrl+. stops it from inside the
    editor, and one Python runs at a time (``stop_from_the_keyboard``)."""
    visit = live_visit_with(live_page, "engine", COUNT_WORKERS + ";\n" + EDITORS_AT_FIRST_OUTPUT)
    page = visit.page
    live_code_from_the_keyboard_and_cell_1_at_once(visit)
    expect(page.locator(".cr-live-note")).to_contain_text("Shift+Enter runs it, Tab indents, Esc then Tab")
    editor = page.get_by_role("textbox", name="Code of cell 1", exact=True)
    # The editor keeps its looks when it is focused and typed in (CodeMirror rewrites its class).
    looks = """() => { const box = document.querySelector('div.cell .cm-editor'); const s = getComputedStyle(box);
        return [box.classList.contains('cr-live-editor'), s.borderTopColor, s.backgroundColor, s.fontFamily]; }"""
    before = page.evaluate(looks)
    editor.click()
    page.keyboard.type("# ")
    assert page.evaluate(looks) == before and before[0], (before, page.evaluate(looks))
    focus = page.evaluate("() => getComputedStyle(document.querySelector('div.cell .cm-editor')).outlineColor")
    assert focus == "rgb(184, 98, 0)", f"the focused editor's outline is {focus}"
    editor.fill("total = 0")
    page.keyboard.press("Control+End")
    page.keyboard.press("Enter")
    page.keyboard.type("for i in range(3):")
    page.keyboard.press("Enter")
    page.keyboard.type("total += i")
    assert code_of(editor) == "total = 0\nfor i in range(3):\n    total += i", code_of(editor)
    page.keyboard.press("Home")
    page.keyboard.press("Tab")
    assert code_of(editor).endswith("\n        total += i"), "Tab did not indent"
    assert page.evaluate("() => document.activeElement.classList.contains('cm-content')"), "Tab left the editor"
    page.keyboard.press("Escape")
    page.keyboard.press("Tab")
    assert page.evaluate("() => document.activeElement.getAttribute('aria-label')") == "Run cell 1"

    # Shift+Enter runs the cell; cell 2 runs too; then an edit of cell 1 makes cell 2's output stale.
    editor.fill("print(6 * 7)")
    editor.press("Shift+Enter")
    output = page.locator("div.cell").first.locator("[data-live-output]")
    expect(output).to_have_text("42", timeout=30_000)
    second = page.get_by_role("textbox", name="Code of cell 2", exact=True)
    second.fill("6 * 8")
    second.press("Control+Enter")
    below = page.locator("div.cell").nth(1).locator("[data-live-output]")
    expect(below).to_have_text("48", timeout=30_000)
    assert below.get_attribute("data-live-stale") is None
    editor.fill("print(6 * 8)")
    expect(below).to_have_attribute("data-live-stale", "")
    # The cell that runs says only that it runs, not that its old output is out of date.
    second.fill("import time\ntime.sleep(1.5)\n6 * 8")
    second.press("Shift+Enter")
    expect(below).to_have_text("Running\u2026")
    assert below.get_attribute("data-live-stale") is None
    expect(below).to_have_text("48", timeout=30_000)
    colours = {"light": page.evaluate(CONTRASTS, ".cr-live-editor .cm-line, .cr-live-editor [class*=tok-]")}
    page.evaluate("() => document.documentElement.dataset.theme = 'dark'")
    colours["dark"] = page.evaluate(CONTRASTS, ".cr-live-editor .cm-line, .cr-live-editor [class*=tok-]")
    assert {"tok-keyword", "tok-number", "tok-string", "tok-comment"} <= set(colours["light"]), colours
    low = {theme: {k: round(v, 2) for k, v in seen.items() if v < 4.5} for theme, seen in colours.items()}
    assert not low["light"] and not low["dark"], f"tokens under 4.5:1: {low}"

    # Before the page's first reload the service worker cannot have isolated it: Stop restarts
    # Python, and says that the names are gone.
    assert not page.evaluate("() => crossOriginIsolated")
    stop_from_the_keyboard(visit, second)
    second.fill("6 * 8")

    page.reload()
    page.get_by_role("button", name="Live code").click()
    assert code_of(page.get_by_role("textbox", name="Code of cell 1", exact=True)) == "print(6 * 8)"
    assert code_of(page.get_by_role("textbox", name="Code of cell 2", exact=True)) == "6 * 8"

    # A 200,000-line print: the first 500 lines, in a box that scrolls, and a button for the rest.
    editor = page.get_by_role("textbox", name="Code of cell 1", exact=True)
    editor.fill("for i in range(200_000):\n    print(i)")
    editor.press("Shift+Enter")
    output = page.locator("div.cell").first.locator("[data-live-output]")
    expect(output.get_by_role("button", name="Show all 200000 lines")).to_be_visible(timeout=60_000)
    assert output.bounding_box()["height"] < 2000, output.bounding_box()

    # The bars that follow the reader keep to 12 % of a 1280 x 800 screen, and Shift+Tab never
    # leaves the focused element hidden under them (WCAG 2.4.11).
    page.set_viewport_size({"width": 1280, "height": 800})
    assert bars_bottom(page) <= 0.12 * 800, f"the bars reach {bars_bottom(page)} px of 800"
    page.evaluate("""() => { const all = [...document.querySelectorAll('article a[href], article button')]
        .filter(e => e.offsetParent); all[all.length - 1].focus(); }""")
    hidden = []
    for _ in range(120):
        page.keyboard.press("Shift+Tab")
        where = page.evaluate(FOCUSED_UNDER_BARS)
        if where:
            hidden.append(where)
    assert not hidden, f"{len(hidden)} of 120 Shift+Tab stops hidden under the bars: {hidden[:3]}"

    # Cells show their numbers; Run all stops at a cell that raises, names it and goes there.
    expect(page.locator("div.cell").first.locator(".cr-live-number")).to_have_text("Cell 1")
    editor.fill("1 / 0")
    page.get_by_role("button", name="Run all cells").click()
    expect(page.locator("[data-live-status]")).to_have_text(
        "Stopped at cell 1, which raised ZeroDivisionError; fix it and run again."
    )
    assert page.evaluate("() => document.activeElement.getAttribute('aria-label')") == "Code of cell 1"

    # Reset page asks first; Undo reset brings the edits back.
    editor.fill("print(6 * 8)")
    page.once("dialog", lambda dialog: dialog.dismiss())
    page.get_by_role("button", name="Reset page").click()
    assert code_of(editor) == "print(6 * 8)", "Reset page went ahead without a yes"
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Reset page").click()
    assert code_of(editor) != "print(6 * 8)"
    page.get_by_role("button", name="Undo reset").focus()
    page.keyboard.press("Enter")  # it hides: the focus goes to Reset page beside it
    assert page.evaluate(FOCUS_PLACE) == "live Reset page", page.evaluate(FOCUS_PLACE)
    assert code_of(editor) == "print(6 * 8)" and code_of(second) == "6 * 8"
    assert not visit.problems(), "\n".join(visit.problems())


#: The lowest edge of the bars that stay in view (the theme's header and Live code's panel).
BARS_BOTTOM = """() => Math.max(...['.bd-header-article', '.cr-live']
    .map(s => document.querySelector(s)).filter(Boolean).map(e => e.getBoundingClientRect().bottom))"""
#: The focused element when it lies wholly under the bars, else null (elements in the bars, or
#: outside the article, such as the side bars, are never under them).
FOCUSED_UNDER_BARS = (
    "() => { const e = document.activeElement; if (!e || !e.closest('article') || e.closest('.cr-live')) "
    "return null; const bottom = (" + BARS_BOTTOM + ")(); const r = e.getBoundingClientRect(); "
    "return r.bottom <= bottom ? e.outerHTML.slice(0, 80) + ' at ' + Math.round(r.bottom) : null; }"
)


def bars_bottom(page) -> float:
    return page.evaluate(BARS_BOTTOM)


def step_an_expression_the_reader_typed(visit: LiveVisit) -> None:
    """After Run all on the backward page: the backward widget steps through an expression typed into
    its cell, in place of the chapter's."""
    page = visit.page
    label = page.evaluate("""() => [...document.querySelectorAll('.cm-editor')]
        .find(box => box.chainruleCode().startsWith('flow = explore.backward(L)'))
        .querySelector('.cm-content').getAttribute('aria-label')""")
    page.get_by_role("textbox", name=label, exact=True).fill(
        'flow = explore.backward((Value(0.5, label="x") * Value(-3.0, label="y")).exp())\nflow'
    )
    page.get_by_role("button", name=label.replace("Code of", "Run"), exact=True).click()
    widget = page.locator(f"div.cell:has(.cm-content[aria-label='{label}']) [data-live-output] [data-explorable]")
    expect(widget).to_have_count(1, timeout=30_000)
    status = widget.locator('[data-role="status"]')
    # The root's seed, then one step per edge: into the product, then to x and to y.
    expect(status).to_contain_text("Step 1 of 4")
    widget.get_by_role("button", name="Next step").click()
    expect(status).to_contain_text("Step 2 of 4")
    widget.get_by_role("button", name="Next step").click()
    expect(status).to_contain_text("back to x through a multiplication, whose local gradient is ∂n2/∂x = y = −3")


def a_runaway_loop_is_stopped_and_the_names_kept(visit: LiveVisit) -> None:
    """A runaway cell far down the page: the toolbar, still in view on the phone, says it runs and
    stops it; the loop is interrupted and the names defined before it are kept."""
    page = visit.page
    status = page.locator("[data-live-status]")
    first = page.get_by_role("textbox", name="Code of cell 1", exact=True)
    first.fill("x = 41\nx")
    page.get_by_role("button", name="Run cell 1", exact=True).click()
    expect(page.locator("div.cell").first.locator("[data-live-output]")).to_have_text("41")
    expect(status).to_have_text("Cell 1 ran.")
    last = page.locator("div.cell:not(.tag_solution) .cr-live-editor .cm-content").last
    label = last.get_attribute("aria-label")
    last.fill("while True:\n    pass")
    page.get_by_role("button", name=label.replace("Code of", "Run"), exact=True).click()
    stop = page.get_by_role("button", name="Stop")
    expect(stop).to_be_visible()
    cell = label[len("Code of ") :]
    # The status (the page's one live region) says it once; the seconds tick beside it, not in it.
    expect(status).to_have_text(f"Running {cell}\u2026")
    expect(page.locator("[data-live-clock]")).to_contain_text(f"{cell}: 1 s")
    assert page.locator("[data-live-clock][aria-live], [data-live-output][aria-live]").count() == 0
    page.set_viewport_size({"width": 390, "height": 844})
    assert bars_bottom(page) <= 0.12 * 844, f"the bars reach {bars_bottom(page)} px of 844"
    box, height = stop.bounding_box(), page.viewport_size["height"]
    assert 0 <= box["y"] and box["y"] + box["height"] <= height, f"Stop is at {box}, out of view"
    assert page.evaluate("() => window.scrollY") > 2000, "the cell should be far down the page"
    # While it runs, on the phone, after scrolling up (the theme's Back to top shows then).
    page.evaluate("() => document.activeElement.blur()")
    page.mouse.wheel(0, -300)
    found = axe_violations(page)
    assert not found, "a running cell at 390 px: " + "\n".join(found)
    stop.click()
    expect(status).to_have_text("Stopped. Every name the cells defined is kept.")
    expect(stop).to_be_hidden()
    # The interrupt reached the loop (its cell no longer runs), and Python did not restart meanwhile.
    looped = last.locator("xpath=ancestor::div[contains(concat(' ', @class, ' '), ' cell ')][1]")
    expect(looped).not_to_have_attribute("data-live-state", "running", timeout=10_000)
    expect(status).to_have_text("Stopped. Every name the cells defined is kept.")
    # The cell says when and where it stopped.
    expect(looped.locator("[data-live-output]")).to_have_text(
        re.compile(r"^Stopped after \d+\.\d s, at line [12] \((while True:|pass)\)\.$")
    )
    first.fill("x + 1")
    page.get_by_role("button", name="Run cell 1", exact=True).click()
    expect(page.locator("div.cell").first.locator("[data-live-output]")).to_have_text("42")
    widths = page.evaluate("() => [document.documentElement.scrollWidth, window.innerWidth]")
    assert widths[0] <= widths[1], f"the page is {widths[0]} px wide in a {widths[1]} px window"


def a_run_pressed_while_stop_waits_runs_after_the_restart(visit: LiveVisit) -> None:
    """``time.sleep`` does not see Pyodide's interrupt, so Stop waits, then restarts Python (the wait is
    cut from 10 s to 2 s here). A cell run meanwhile runs in the new Python; it was once dropped."""
    page = visit.page
    page.locator("script[data-check-limit]").evaluate("script => script.setAttribute('data-stop-wait', '2')")
    page.get_by_role("textbox", name="Code of cell 2", exact=True).fill("print('asleep')\nimport time\ntime.sleep(15)")
    page.get_by_role("button", name="Run cell 2", exact=True).click()
    asleep = page.locator("div.cell").nth(1).locator("[data-live-output]")
    expect(asleep).to_contain_text("asleep", timeout=30_000)  # shown while the cell runs
    page.get_by_role("button", name="Stop").click()
    page.get_by_role("textbox", name="Code of cell 1", exact=True).fill("y = 5\ny")
    page.get_by_role("button", name="Run cell 1", exact=True).click()
    expect(page.locator("div.cell").first.locator("[data-live-output]")).to_have_text("5", timeout=30_000)
    # What it printed outlives the Python that printed it (streamed from the worker as it ran).
    expect(asleep).to_have_text(re.compile(r"^asleep\s*Stopped after \d+\.\d s\.$"))


def next_chapter_starts_from_the_cache(visit: LiveVisit, note: str) -> None:
    """The graph chapter, in the same browser: its Python starts without the runtime's download,
    and the intro's panel gave the runtime's true size."""
    page = visit.page

    def served() -> list[str]:
        return [path for path in visit.served() if "/_static/live/" in path]

    runtime = [path for path in served() if not path.endswith(PAGE_SCRIPTS)]
    wasm = [path for path in runtime if path.endswith("pyodide.asm.wasm")]
    assert len(wasm) == 1, f"the runtime reached the network {len(wasm)} times: {wasm}"
    folder = BOOK_HTML / "_static" / "live"
    size = sum((folder / path.split("/_static/live/", 1)[1]).stat().st_size for path in set(runtime))
    assert f"{size / 1e6:.1f} MB" in note, f"the panel says {note!r}; the page downloaded {size / 1e6:.2f} MB"
    page.goto(page.url.replace("intro.html", "graph.html"), wait_until="load")
    page.get_by_role("button", name="Live code").click()
    expect(page.locator("[data-live-status]")).to_contain_text("Python is ready", timeout=60_000)
    page.get_by_role("button", name="Run cell 1", exact=True).click()
    expect(page.locator("div.cell").first.locator("[data-live-output]")).not_to_be_empty()
    again = [path for path in served() if path.endswith("pyodide.asm.wasm")]
    assert again == wasm, "the next chapter fetched the runtime again"
    # Python itself came from the snapshot the intro kept, and a restored Python draws new random numbers.
    assert page.evaluate("() => document.documentElement.getAttribute('data-python-start')") == "snapshot"
    drawn = []
    for _ in range(2):
        page.get_by_role("textbox", name="Code of cell 1", exact=True).fill("import random\nrandom.random()")
        page.get_by_role("button", name="Run cell 1", exact=True).click()
        expect(page.locator("div.cell").first.locator("[data-live-output]")).to_contain_text("0.", timeout=30_000)
        drawn.append(page.locator("div.cell").first.locator("[data-live-output]").text_content())
        page.once("dialog", lambda dialog: dialog.accept())
        page.get_by_role("button", name="Reset page").click()  # Python restarts: restored again
        expect(page.locator("div.cell").first.locator("[data-live-output]")).to_be_empty()
    assert drawn[0] != drawn[1], f"two restored Pythons drew the same number: {drawn}"


#: A wrong answer to an exercise checked in a chapter whose own code needs numpy, and the mistake named.
ANSWER_ONLY_PAGE = (
    "profiling",
    "import math\ndef first_bad_entry(tape, k):\n    grads = [0.0] * (k + len(tape))\n    grads[-1] = 1.0\n"
    "    for i in reversed(range(len(tape))):\n        parents, local_grads = tape[i]\n"
    "        made = [grads[k + i] * local for local in local_grads]\n"
    "        if any(math.isnan(c) for c in made):\n            return i\n"
    "        for parent, c in zip(parents, made):\n            grads[parent] += c",
    "only nan was looked for",
)


def page_exercises(name: str) -> tuple[str | None, list[str]]:
    """The built page's Live code mode and the labels of the exercises it checks in the page."""
    html = (BOOK_HTML / "chapters" / f"{name}.html").read_text()
    script = re.search(r"<script[^>]*live\.js[^>]*>", html)
    if not script:
        return None, []
    mode = re.search(r'data-live-mode="(\w+)"', script.group(0)).group(1)
    exercises = json.loads(html_lib.unescape(re.search(r"data-exercises=\"([^\"]*)\"", script.group(0)).group(1)))
    return mode, [exercise["label"] for exercise in exercises]


def test_every_exercise_answered_without_numpy_is_checked_in_its_page(live_page):
    """Chapters whose code needs numpy still check, in the page, each exercise whose answer may use only
    math: one Python starts for the answers alone, the cells stay as built. Answered on a phone."""
    for path in sorted((ROOT / "chapters").glob("*.md")):
        name = path.stem
        found = questions.questions_of(None, f"chapters/{name}", read_chapter(ROOT, f"chapters/{name}"))
        without_numpy = [q.label for q in found if "numpy" not in questions.allowed(q)]
        mode, in_page = page_exercises(name)
        assert in_page == without_numpy, (name, in_page, without_numpy)
        assert mode == ("cells" if name in PAGES else "answers" if in_page else None), (name, mode)
    name, wrong, mistake = ANSWER_ONLY_PAGE
    visit = live_page(name, width=390)
    page = visit.page
    nothing_requested_early(visit)
    question = questions.questions_of(None, f"chapters/{name}", read_chapter(ROOT, f"chapters/{name}"))[0]
    expect(page.locator(f"[data-live-hint={question.label}]")).to_contain_text("press \u201cAnswer in the page\u201d")
    page.get_by_role("button", name="Answer in the page").click()
    number = page.locator(f"#{question.label} .caption-number").first.text_content().split()[-1]
    # The editors load before Python (about 1 s here, under load too); a busy CI once took over 5 s.
    expect(page.get_by_role("textbox", name=f"Answer to Exercise {number}")).to_be_focused(timeout=20_000)
    expect(page.locator("[data-live-status]")).to_contain_text("Python is ready", timeout=60_000)
    assert page.locator("button[data-live-action=run-cell]").count() == 0, "the chapter's cells became editors"
    assert page.get_by_role("button", name="Run all cells").is_hidden()
    said = check_answer(page, question.label, wrong, "wrong")
    assert normalized(notebook_message(wrong, question.check)) in normalized(said), said
    assert mistake in normalized(said), said
    right = questions.solution_code(question, name)
    assert check_answer(page, question.label, right, "right").startswith("✓ Right. ")
    assert not visit.problems(), "\n".join(visit.problems())
    found = axe_violations(page)
    assert not found, f"{name} at 390 px, answered in the page: " + "\n".join(found)


def test_a_drill_and_live_code_share_one_python(live_page):
    """The graph page has drills and Live code: one Python serves both. A drill started first
    leaves Live code nothing to wait for; Live code's Reset restarts it, and the drill's next
    question imports the drills' module again in the new interpreter."""
    visit = live_page("graph")
    page = visit.page
    drill = page.locator(".cr-drill").first
    drill.get_by_role("button", name="New question").click()
    expect(drill.locator(".cr-drill-status")).to_contain_text("a new question", timeout=60_000)
    assert len(page.workers) == 1, [worker.url for worker in page.workers]
    page.get_by_role("button", name="Live code").click()
    expect(page.locator("[data-live-status]")).to_contain_text("Python is ready", timeout=10_000)
    # The drills' module is loaded in this Python, and nothing of it is in the reader's names.
    code = "import sys; ('chainrule_course.drills.page' in sys.modules, '_drill' in dir())"
    page.get_by_role("textbox", name="Code of cell 1", exact=True).fill(code)
    page.get_by_role("button", name="Run cell 1", exact=True).click()
    output = page.locator("div.cell").first.locator("[data-live-output]")
    expect(output).to_have_text("(True, False)", timeout=30_000)
    assert len(page.workers) == 1, [worker.url for worker in page.workers]
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Reset page").click()
    expect(page.locator("[data-live-status]")).to_contain_text("Reset:")
    drill.get_by_role("button", name="New question").click()
    expect(drill.locator(".cr-drill-status")).to_contain_text("a new question", timeout=60_000)
    page.wait_for_function("() => true")
    assert len(page.workers) == 1, [worker.url for worker in page.workers]
    assert not visit.problems(), "\n".join(visit.problems())
    # drill.js and live.js both import python.js, and every module imports site.js: each page module
    # was fetched once, under the one URL the import map gives it (a second URL would run it twice).
    fetched = {}
    for url in visit.requests:
        name = urlsplit(url).path.rsplit("/_static/live/", 1)[-1]
        if name in live_code.PAGE_MODULES:
            fetched.setdefault(name, []).append(url)
    assert set(fetched) == set(live_code.PAGE_MODULES), sorted(fetched)
    assert all(len(urls) == 1 and "?v=" in urls[0] for urls in fetched.values()), fetched


#: Before the page's scripts: counts the workers the page makes and has not ended (python.js
#: makes them), the most at once in ``window.__workers.most``.
COUNT_WORKERS = """(() => {
    const Real = window.Worker, seen = window.__workers = {live: 0, most: 0};
    window.Worker = function (url, options) {
        const worker = new Real(url, options), end = worker.terminate.bind(worker);
        let ended = false;
        seen.live += 1;
        seen.most = Math.max(seen.most, seen.live);
        worker.terminate = () => { if (!ended) { ended = true; seen.live -= 1; } end(); };
        return worker;
    };
    window.Worker.prototype = Real.prototype;
})()"""
#: Before the page's scripts: how many cells had an editor when the first output was shown.
EDITORS_AT_FIRST_OUTPUT = """new MutationObserver((changes, observer) => {
    observer.disconnect();
    const made = document.querySelectorAll('div.cell .cr-live-editor').length;
    document.documentElement.dataset.editorsAtFirstOutput = made;
}).observe(document, {subtree: true, attributes: true, attributeFilter: ['data-live-first-output']})"""
#: Records, every 5 ms, whether the keyboard's focus has fallen to the page's body (``window.__dropped``).
WATCH_FOCUS = """() => { window.__dropped = 0; window.setInterval(() => {
    if (!document.activeElement || document.activeElement === document.body) window.__dropped += 1; }, 5); }"""
#: Where the focus is: a button or an editor of Live code's panel, cells or answers, else what it is.
FOCUS_PLACE = """() => { const e = document.activeElement;
    const useful = e && (e.tagName === 'BUTTON' || e.classList.contains('cm-content'))
        && e.closest('.cr-live, div.cell, .cr-live-answer');
    return useful ? 'live ' + (e.getAttribute('aria-label') || e.textContent) : (e ? e.tagName : 'nothing'); }"""


def live_visit_with(live_page, name: str, script: str) -> LiveVisit:
    """The page ``name`` with ``script`` run before its own scripts (added, then the page reloaded)."""
    visit = live_page(name)
    visit.page.add_init_script(script)
    visit.page.reload(wait_until="load")
    return visit


def most_workers_until(visit: LiveVisit, done) -> int:
    """The most workers alive at once, as Chromium lists them, until ``done()`` (at most 30 s)."""
    most, began = len(visit.page.workers), time.monotonic()
    while not done() and time.monotonic() - began < 30:
        visit.page.wait_for_timeout(25)
        most = max(most, len(visit.page.workers))
    return most


def live_code_from_the_keyboard_and_cell_1_at_once(visit: LiveVisit) -> None:
    """The "Live code" button, pressed from the keyboard, keeps the focus until Run all cells takes it; cell 1,
    run as soon as it can be, shows its output before most of the page's 45 editors are made
    (all of them come after)."""
    page = visit.page
    nothing_requested_early(visit)
    cells = page.evaluate("""() => [...document.querySelectorAll('article div.cell')]
        .filter(cell => cell.querySelector('.cell_input pre') && !cell.classList.contains('tag_no-live')).length""")
    page.get_by_role("button", name="Live code").focus()
    page.evaluate(WATCH_FOCUS)
    page.keyboard.press("Enter")
    page.get_by_role("button", name="Run cell 1", exact=True).evaluate("button => button.click()")  # keeps the focus
    page.wait_for_function("() => document.documentElement.dataset.editorsAtFirstOutput", timeout=60_000)
    made = int(page.evaluate("() => document.documentElement.dataset.editorsAtFirstOutput"))
    print(f"engine: {made} of {cells} editors made at the first output")
    assert cells >= 40 and made <= cells // 4, f"{made} of {cells} editors were made before the first output"
    expect(page.locator("div.cell .cr-live-editor")).to_have_count(cells, timeout=20_000)
    expect(page.get_by_role("button", name="Run all cells")).to_be_focused()
    assert page.evaluate("() => window.__dropped") == 0, "the focus fell to the page while the editors loaded"


def stop_from_the_keyboard(visit: LiveVisit, editor) -> None:
    """Not isolated, where Stop restarts Python: Ctrl+. in the running cell's editor stops it, the
    editor keeps the focus, and the cell keeps what it printed, then says after how long it stopped.
    A cell run right after Stop runs in the one Python there is: terminate() leaves a worker busy in a
    loop running for up to 2 s, and the next waits for it to end. Stop pressed from the keyboard
    gives the focus to the stopped cell's Run button."""
    page = visit.page
    status = page.locator("[data-live-status]")
    output = page.locator("div.cell").nth(1).locator("[data-live-output]")
    described = page.locator("#" + editor.get_attribute("aria-describedby")).text_content()
    assert "Ctrl+. stops the code that runs" in described, described
    assert "Control+." in page.locator("[data-live-action=stop]").get_attribute("aria-keyshortcuts")
    editor.fill("for i in range(3):\n    print('tick', i)\nwhile True:\n    pass")
    editor.press("Shift+Enter")
    expect(output).to_contain_text("tick 2", timeout=30_000)  # shown while it runs
    editor.press("Control+Period")
    expect(status).to_contain_text("Stopped. Python has restarted")
    expect(output).to_have_text(re.compile(r"^tick 0\s*tick 1\s*tick 2\s*Stopped after \d+\.\d s\.$"))
    expect(editor).to_be_focused()
    assert "." not in code_of(editor).split("pass")[-1], "Ctrl+. typed into the editor"
    page.get_by_role("button", name="Run cell 1", exact=True).click()  # right after Stop: print(6 * 8)
    answered = page.locator("div.cell").first.locator("[data-live-output]")
    most = most_workers_until(visit, lambda: answered.text_content() == "48")
    expect(answered).to_have_text("48")
    assert most <= 1, f"{most} workers (Pythons) alive at once after Stop"
    assert page.evaluate("() => window.__workers.most") <= 1, page.evaluate("() => window.__workers")

    editor.fill("while True:\n    pass")
    page.get_by_role("button", name="Run cell 2", exact=True).click()
    stop = page.get_by_role("button", name="Stop")
    expect(stop).to_be_visible(timeout=30_000)
    stop.focus()
    page.keyboard.press("Enter")
    expect(status).to_contain_text("Stopped. Python has restarted")
    assert page.evaluate(FOCUS_PLACE) == "live Run cell 2", page.evaluate(FOCUS_PLACE)


def test_the_keyboard_reaches_the_live_code_controls(live_page):
    """A keyboard user reaches Live code's controls in a few presses (WCAG 2.4.1, 2.4.7, 2.1.2). From the top of
    the intro, "Skip to Live code", on the theme's skip-link bar after "Skip to main content", is the second Tab
    stop, shown when focused, and Enter puts the focus on Live code (without it: the 34th Tab stop); axe finds
    nothing on the bar, light or dark. Once Live code is on, Alt+Shift+L in a cell's editor goes to the
    toolbar: to Stop while the cell runs (without it: 74 Shift+Tabs back from cell 2), where Enter stops it
    and hands the focus back to the cell's Run button."""
    visit = live_page("intro")
    page = visit.page
    for presses in range(1, 6):
        page.keyboard.press("Tab")
        if page.evaluate("() => document.activeElement.textContent").startswith("Skip to Live code"):
            break
    skip = page.get_by_role("link", name="Skip to Live code (Alt+Shift+L from anywhere)")
    expect(skip).to_be_focused()
    expect(skip).to_have_attribute("aria-keyshortcuts", "Alt+Shift+L")
    # (the bar slides in: wait until it is in view)
    page.wait_for_function("() => document.activeElement.getBoundingClientRect().top >= 0", timeout=2_000)
    assert not axe_violations(page), axe_violations(page)
    page.keyboard.press("Enter")
    expect(page.get_by_role("button", name="Live code")).to_be_focused()
    assert presses + 1 <= 3, f"{presses + 1} key presses to Live code"

    page.keyboard.press("Enter")
    expect(page.get_by_role("button", name="Run all cells")).to_be_focused(timeout=20_000)
    assert "Alt+Shift+L goes to these buttons" in page.locator(".cr-live-note").text_content()
    editor = page.get_by_role("textbox", name="Code of cell 2", exact=True)
    editor.fill("while True:\n    pass")
    editor.press("Shift+Enter")
    expect(page.get_by_role("button", name="Stop")).to_be_visible()
    expect(editor).to_be_focused()
    page.keyboard.press("Alt+Shift+L")
    expect(page.get_by_role("button", name="Stop")).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.locator("[data-live-status]")).to_contain_text("Stopped.")
    assert page.evaluate(FOCUS_PLACE) == "live Run cell 2", page.evaluate(FOCUS_PLACE)
    assert "while True" in code_of(editor), "Alt+Shift+L typed into the editor"
