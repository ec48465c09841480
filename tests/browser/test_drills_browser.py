"""The drills in Chromium, on the built book served from 127.0.0.1, as a reader uses them.

On the Practice page, with the keyboard alone: nothing of the runtime is requested before the
first New question; five New questions give at least four different graphs; every kind of
question, from the graph chapter's to the forward chapter's, is asked and answered right (the
answer computed here, in CPython, from the same seed), its question in view; a wrong answer gets
its named mistake within 3 s; a seed typed again after a reload gives the same question; Show the
steps steps through the graph, or lists the worked steps; the last hint hands the focus on; what
was answered is kept in localStorage across the reload; axe-core finds nothing in light or dark
mode after the drills ran; no request leaves 127.0.0.1. The Progress section lists every drill
and every exercise of the book, by chapter; an exercise ticked done gets its mark in its chapter;
Export, Reset (confirmed) and Import round-trip the record. The chapters carry their drills.

Uses Debian's chromium through Playwright. Build the book first (``make book``).
"""

from __future__ import annotations

import html as html_module
import json
import re
import time
from pathlib import Path

import pytest
from browsing import Visit
from common import ROOT, exercise_number
from playwright.sync_api import Browser, expect
from test_accessibility import axe_violations

from chainrule_course.drills import KINDS, question
from chainrule_course.drills.reading import TOLERANCE

VERDICT_LIMIT_S = 3


def typed_answer(q) -> str:
    if isinstance(q.answer, list):
        return ", ".join(f"{a:.6f}" if isinstance(a, float) else a for a in q.answer)
    return f"{q.answer:.6f}"


def lines_of(drill) -> str:
    return drill.locator(".cr-drill-lines").inner_text()


def ask_with_keyboard(page, drill, kind: str | None, level: str) -> tuple[int, float]:
    """Choose the kind and level, press New question with the keyboard; the seed and the seconds it took."""
    if kind:
        drill.get_by_label("Question").select_option(kind)
    drill.get_by_label("Level").select_option(level)
    before = drill.get_attribute("data-drill-asks")
    drill.get_by_role("button", name="New question").focus()
    began = time.perf_counter()
    page.keyboard.press("Enter")
    asked_again(page, drill, before)
    expect(drill.locator(".cr-drill-status")).to_contain_text("a new question", timeout=10_000)
    return int(drill.get_by_label("Seed").input_value()), time.perf_counter() - began


def asked_again(page, drill, before: str | None) -> None:
    """Wait for the drill's next question: its count of questions asked moves on (two questions drawn in the
    same number of milliseconds, or with the same seed, still count)."""
    page.wait_for_function(
        "([root, n]) => root.querySelector('.cr-drill-prompt') && root.getAttribute('data-drill-asks') !== n",
        arg=[drill.element_handle(), before],
        timeout=90_000,
    )


def answer_with_keyboard(page, drill, text: str) -> tuple[str, float]:
    """Type ``text`` in the focused answer box and press Enter; the verdict and the seconds it took."""
    assert page.evaluate("() => document.activeElement.getAttribute('aria-describedby')"), "focus is not on the answer"
    page.keyboard.type(text)
    began = time.perf_counter()
    page.keyboard.press("Enter")
    status = drill.locator(".cr-drill-status")
    expect(status).to_have_class(re.compile(r"cr-drill-(right|wrong)"), timeout=VERDICT_LIMIT_S * 1000)
    return status.inner_text(), time.perf_counter() - began


def test_the_practice_page_drills_with_the_keyboard(browser: Browser, warm_context, book_html: Path, serve, tmp_path):
    url = serve(book_html) + "chapters/practice.html"
    visit = Visit(browser, url, 1280, shared=warm_context)
    requests: list[str] = []
    visit.page.on("request", lambda request: requests.append(request.url))
    page = visit.page
    first = page.locator(".cr-drill").nth(0)
    orders, gradients = page.locator(".cr-drill").nth(2), page.locator(".cr-drill").nth(3)
    expect(first).to_have_attribute("aria-label", "Drill: next for you, from every chapter")
    expect(orders).to_have_attribute("aria-label", "Drill: orders on a new graph")
    # From the top of the page, the keyboard reaches the first drill in three presses: past the theme's
    # skip link, to the drills' own, which puts the focus on the first drill's first button.
    for _ in range(2):
        page.keyboard.press("Tab")
    assert page.evaluate("() => document.activeElement.textContent") == "Skip to the first drill"
    page.keyboard.press("Enter")
    focused = page.evaluate(
        "() => [document.activeElement.textContent, document.activeElement.closest('.cr-drill').id]"
    )
    assert focused == ["Next for you", first.get_attribute("id")], focused
    page.wait_for_timeout(300)
    assert not [u for u in requests if "live_worker" in u or "pyodide" in u], (
        "the runtime was fetched before a question"
    )

    seed, cold = ask_with_keyboard(page, gradients, "adjoint", "2")
    # What a screen reader meets: a named region, and an answer box described by its question and form.
    expect(page.get_by_role("region", name="Drill: gradients on a new graph")).to_be_visible()
    # The answer box says how close counts, in the words of the tolerance the check uses.
    description = re.compile(r"What is the global gradient .* A number: 0\.25.* Counted right " + re.escape(TOLERANCE))
    expect(gradients.get_by_role("textbox", name="Your answer")).to_have_accessible_description(description)
    expect(gradients.locator("[aria-live=polite]").first).to_have_class(re.compile("cr-drill-status"))
    graphs = {lines_of(gradients)}
    warm = []
    for _ in range(4):
        seed, seconds = ask_with_keyboard(page, gradients, None, "2")
        warm.append(seconds)
        graphs.add(lines_of(gradients))
    print(f"\nNew question to a question: {cold:.1f} s cold, {max(warm):.2f} s warm at most")
    assert len(graphs) >= 4, graphs

    q = question("adjoint", 2, seed)
    wrong = q.answer + 7.25
    verdict, seconds = answer_with_keyboard(page, gradients, f"{wrong:.4f}")
    assert verdict.startswith("\u2717 Not right. ") and seconds < VERDICT_LIMIT_S
    # Said once, then what the check says: it read "Not right. Not quite. …" where no named mistake fitted.
    assert verdict == "\u2717 Not right. " + q.check(f"{wrong:.4f}")["message"], verdict

    planted = question("adjoint", 3, 11)
    gradients.get_by_label("Level").select_option("3")
    gradients.get_by_label("Seed").fill("11")
    gradients.get_by_role("button", name="Use this seed").click()
    expect(gradients.locator(".cr-drill-lines")).to_contain_text(planted.graph.description()[-1])
    terms = [child.grad * child.local_grads[i] for child, i in planted.graph.uses(planted.graph.nodes[planted.target])]
    product = terms[0] * terms[1] if len(terms) == 2 else None
    if product is not None and planted.check(repr(product))["mistake"] == "product for sum":
        gradients.get_by_label("Your answer").focus()
        verdict, _ = answer_with_keyboard(page, gradients, repr(product))
        assert "You multiplied the contributions" in verdict

    for drill, kinds in ((orders, ["finish", "topological", "reach"]), (gradients, ["value", "local", "adjoints"])):
        for kind in kinds:
            seed, _ = ask_with_keyboard(page, drill, kind, "3")
            verdict, _ = answer_with_keyboard(page, drill, typed_answer(question(kind, 3, seed)))
            assert verdict.startswith("\u2713 Right"), (kind, seed, verdict)
    names = orders.locator(".cr-drill-lines").inner_text()
    the_later_chapters_drills(page)

    gradients.get_by_role("button", name="Hint (1 of 2)").click()
    expect(gradients.locator(".cr-drill-hints li")).to_have_count(1)
    gradients.get_by_role("button", name="Show the steps").click()
    widget = gradients.locator(".cr-drill-steps [data-explorable]")
    expect(widget).to_have_attribute("data-ready", "true", timeout=20_000)
    widget.get_by_role("button", name="Next step").click()
    expect(widget.locator('[data-role="status"]')).to_contain_text("Step 2")

    assert not axe_violations(page), axe_violations(page)
    progress = json.loads(page.evaluate("() => localStorage.getItem('chainrule-progress')"))
    assert progress["drills"]["adjoint"]["attempts"] >= 1 and progress["drills"]["reach"]["right"] >= 1

    seed = orders.get_by_label("Seed").input_value()
    page.reload(wait_until="load")
    orders = page.locator(".cr-drill").nth(2)
    orders.get_by_label("Question").select_option("reach")
    orders.get_by_label("Level").select_option("3")
    orders.get_by_label("Seed").fill(seed)
    orders.get_by_role("button", name="Use this seed").click()
    expect(orders.locator(".cr-drill-lines li")).to_have_text(names.splitlines(), timeout=90_000)
    again = json.loads(page.evaluate("() => localStorage.getItem('chainrule-progress')"))
    assert again == progress, "the progress did not survive the reload"
    page.set_viewport_size({"width": 390, "height": 844})
    outside = page.evaluate(
        """() => [...document.querySelectorAll('.cr-drill')].flatMap(drill => {
                 const box = drill.getBoundingClientRect();
                 return [...drill.querySelectorAll('select, input, button')]
                     .filter(control => control.getBoundingClientRect().right > box.right)
                     .map(control => (control.labels?.[0] || control).textContent.trim().slice(0, 40));
             })"""
    )
    assert outside == [], f"controls past their drill's box at 390 px: {outside}"
    # The theme's "Back to top" shows on scrolling up: it must pass axe at 390 px too, and go while
    # a drill's answer box has the focus, which it would cover.
    page.evaluate("() => { document.activeElement.blur(); window.scrollTo(0, 3000); }")
    page.mouse.wheel(0, -400)
    expect(page.locator("#pst-back-to-top")).to_be_visible()
    assert not axe_violations(page), f"at 390 px: {axe_violations(page)}"
    page.locator(".cr-drill").nth(2).get_by_label("Your answer").focus()
    expect(page.locator("#pst-back-to-top")).to_be_hidden()
    page.set_viewport_size({"width": 1280, "height": 900})
    the_progress_section(page, tmp_path)
    assert not visit.problems(), visit.problems()
    visit.close()


#: Each chapter's drill kinds, in the book's order, from the registry (tests/repo/test_content.py holds the
#: chapters' markup and the Practice page's to it).
CHAPTER_KINDS: dict[str, list[str]] = {}
for _name, _kind in KINDS.items():
    CHAPTER_KINDS.setdefault(_kind.chapter, []).append(_name)

#: The Practice page's drills by position (Next for you first, then one per chapter, in the book's order),
#: but the graph and backward chapters'.
LATER = tuple(
    (position, tuple(kinds))
    for position, (chapter, kinds) in enumerate(CHAPTER_KINDS.items(), start=1)
    if chapter not in ("graph", "backward")
)


def next_for_you(page, drill) -> dict:
    """Press Next for you; the kind, level and seed it asked, and the reason it gave."""
    before = drill.get_attribute("data-drill-asks")
    drill.get_by_role("button", name="Next for you").click()
    asked_again(page, drill, before)
    expect(drill.locator(".cr-drill-status")).to_contain_text("Next for you:")
    page.wait_for_function(IN_VIEW, arg=drill.element_handle())  # the question scrolled into view, as read
    return json.loads(drill.get_attribute("data-drill-asked")) | {
        "said": drill.locator(".cr-drill-status").inner_text()
    }


def verdict_in_view(page, drill) -> bool:
    """Whether the verdict shows inside the window, below the theme's sticky bars."""
    return page.evaluate(
        """(root) => {
             const box = root.querySelector('.cr-drill-status').getBoundingClientRect();
             return box.bottom <= innerHeight + 1 && box.top >= 0 || [box.top, box.bottom, innerHeight, scrollY];
         }""",
        drill.element_handle(),
    )


def test_next_for_you_brings_a_missed_kind_back_and_moves_a_mastered_one_on(
    browser: Browser, warm_context, book_html: Path, serve
):
    """On a phone, from a fresh record: a kind answered wrong (a named mistake) comes back two questions
    later, three times, each time on an instance where the mistake shows and at its level; a kind answered
    right three times in a row is moved on; an empty answer is not counted; every verdict is in view."""
    from chainrule_course.drills.schedule import wrong_again

    visit = Visit(browser, serve(book_html) + "chapters/practice.html", 390, shared=warm_context)
    page = visit.page
    page.set_viewport_size({"width": 390, "height": 844})
    drill = page.get_by_role("region", name="Drill: next for you, from every chapter")
    asked, mistake, missed = [], None, False
    for turn in range(8):
        chosen = next_for_you(page, drill)
        asked.append(chosen["kind"])
        q = question(chosen["kind"], chosen["level"], chosen["seed"])
        if turn == 0:
            page.keyboard.press("Enter")  # an empty answer: said, not counted
            expect(drill.locator(".cr-drill-status")).to_contain_text("Type an answer first")
            assert record(page).get("answered", 0) == 0
        if chosen["kind"] == "neuron" and missed:  # back after a miss, on an instance that shows it
            assert wrong_again(q, mistake) is not None, (chosen, mistake)
            assert mistake in chosen["said"] and chosen["level"] == 1, chosen
        if chosen["kind"] == "neuron" and turn < 6:
            named = [m.name for m in q.mistakes if wrong_again(q, m.name)]
            typed = wrong_again(q, mistake or named[0])
            verdict, _ = answer_with_keyboard(page, drill, typed)
            mistake, missed = mistake or q.check(typed)["mistake"], True
            assert verdict.startswith("\u2717 Not right") and q.check(typed)["message"] in verdict
        else:
            verdict, _ = answer_with_keyboard(page, drill, typed_answer(q))
            assert verdict.startswith("\u2713 Right"), verdict
            missed = missed and chosen["kind"] != "neuron"
        seen = verdict_in_view(page, drill)
        assert seen is True, f"turn {turn}: the verdict is out of view at 390 px: {seen}"
    # neuron (wrong), finish (new), neuron (back), finish, neuron (back), finish (three right), neuron (back)
    assert asked[:7] == ["neuron", "finish"] * 3 + ["neuron"], asked
    assert asked[7] != "finish", "a kind answered right three times in a row was not moved on"
    page.keyboard.press("Enter")  # the same answer checked again: said, not counted again
    expect(drill.locator(".cr-drill-status")).to_contain_text("the same verdict, check 2")
    # The Practice page's Progress section is drawn again after every answer, without a reload.
    expect(page.locator(".cr-progress-summary")).to_contain_text("Drills: 8 answers")
    kept = record(page)
    assert kept["drills"]["neuron"]["mistakes"] == {mistake: 3} and kept["drills"]["finish"]["streak"] == 3
    assert kept["answered"] == 8 and kept["book"]["name"] == "chainrule"
    assert not axe_violations(page), axe_violations(page)
    assert not visit.problems(), visit.problems()
    visit.close()


IN_VIEW = """(root) => {
    const bars = [...document.querySelectorAll('.bd-header, .bd-header-article')].filter(
        bar => ['sticky', 'fixed'].includes(getComputedStyle(bar).position));
    const covered = Math.max(0, ...bars.map(bar => bar.getBoundingClientRect().bottom));
    const prompt = root.querySelector('.cr-drill-prompt').getBoundingClientRect();
    const answer = root.querySelector('.cr-drill-form input').getBoundingClientRect();
    return prompt.top >= covered - 1 && answer.bottom <= innerHeight;
}"""


def in_view(page, drill) -> bool:
    """Whether the question starts below the theme's sticky bars and its answer box ends inside the window."""
    return page.evaluate(IN_VIEW, drill.element_handle())


def the_later_chapters_drills(page) -> None:
    """Each kind from the engine to the forward chapter: asked, in view, answered right; a mistake named; the
    worked steps shown; the last hint hands the focus on."""
    for index, kinds in LATER:
        drill = page.locator(".cr-drill").nth(index)
        for kind in kinds:
            level = list(KINDS[kind].levels)[-1]
            seed, _ = ask_with_keyboard(page, drill, kind if len(kinds) > 1 else None, str(level))
            assert in_view(page, drill), f"{kind}: the question is out of view after New question"
            verdict, _ = answer_with_keyboard(page, drill, typed_answer(question(kind, level, seed)))
            assert verdict.startswith("\u2713 Right"), (kind, seed, verdict)
    products = page.locator(".cr-drill").nth(5)
    seed, planted = next((s, q) for s in range(100) if (q := question("matmul", 1, s)).told_apart())
    mistake = planted.mistakes[0]
    products.get_by_label("Question").select_option("matmul")
    products.get_by_label("Level").select_option("1")
    products.get_by_label("Seed").fill(str(seed))
    products.get_by_role("button", name="Use this seed").click()
    expect(products.locator(".cr-drill-lines")).to_contain_text(planted.lines[0], timeout=20_000)
    products.get_by_label("Your answer").focus()
    verdict, _ = answer_with_keyboard(page, products, f"{mistake.value:.6f}")
    assert mistake.message in verdict, (mistake, verdict)
    for _ in range(2):
        products.get_by_role("button", name=re.compile("^Hint")).click()
    assert page.evaluate("() => document.activeElement.textContent") == "Show the steps", "the focus fell to the page"
    page.keyboard.press("Enter")
    expect(products.locator(".cr-drill-worked li")).to_have_count(len(planted.steps), timeout=20_000)
    assert page.evaluate("() => document.activeElement.tagName") == "INPUT", "Show the steps left no focus"


def record(page) -> dict:
    return json.loads(page.evaluate("() => localStorage.getItem('chainrule-progress') || '{}'"))


def the_progress_section(page, folder: Path) -> None:
    """Every exercise listed; done marks, export, reset (confirmed) and import round trip."""
    numbers = json.loads((ROOT / "_build" / "numbers.json").read_text())["numbered"]
    exercises = sum(e["kind"] == "exercise" for elements in numbers.values() for e in elements.values())
    section = page.locator(".cr-progress")
    rows = section.locator("table").nth(1).locator("tr:has(a)")
    expect(rows).to_have_count(exercises)
    drills = section.locator("table").nth(0)
    expect(drills.locator("tr.cr-progress-chapter")).to_have_count(len({kind.chapter for kind in KINDS.values()}))
    expect(drills.locator("tr:not(.cr-progress-chapter):has(td)")).to_have_count(len(KINDS))
    expect(drills.locator("tr.cr-progress-chapter").nth(3)).to_contain_text("4. Building a scalar autograd engine")
    drill_row = drills.locator("tr", has_text="A node's global gradient")
    assert int(drill_row.locator("td").nth(1).inner_text()) >= 1
    section.get_by_label(f"Exercise {exercise_number('ex-mlp-shape')} done").check()
    assert record(page)["exercises"]["ex-mlp-shape"]["done"] is True
    with page.expect_download() as download:
        section.get_by_role("button", name="Export progress").click()
    saved = folder / "progress.json"
    download.value.save_as(saved)
    assert json.loads(saved.read_text()) == record(page)
    page.once("dialog", lambda dialog: dialog.accept())
    section.get_by_role("button", name="Reset progress").click()
    expect(section.locator(".cr-progress-status")).to_have_text("Progress reset.")
    assert {key: value for key, value in record(page).items() if key != "book"} == {
        "format": 2,
        "answered": 0,
        "drills": {},
        "exercises": {},
    }
    assert set(record(page)["book"]) == {"name", "version"}
    section.locator("input[type=file]").set_input_files(saved)
    expect(section.locator(".cr-progress-status")).to_contain_text("Progress imported")
    assert record(page) == json.loads(saved.read_text())
    assert not axe_violations(page, modes=("light",)), "the Progress section"
    page.goto(page.url.replace("practice.html", "mlp.html"), wait_until="load")
    expect(page.locator("#ex-mlp-shape .cr-progress-mark")).to_have_text(" \u2713 done")
    # The chapter's own line, at its end: its drills' answers and its exercises done, from the same record.
    kept = record(page)
    answers = sum(kept["drills"].get(kind, {}).get("attempts", 0) for kind in CHAPTER_KINDS["mlp"])
    right = sum(kept["drills"].get(kind, {}).get("right", 0) for kind in CHAPTER_KINDS["mlp"])
    mlp_exercises = sum(e["kind"] == "exercise" for e in numbers["chapters/mlp"].values())
    expect(page.locator(".cr-progress-line")).to_contain_text(
        f"{answers} drill answers, {right} right; 1 of {mlp_exercises} exercises done"
    )
    assert answers >= 2, kept["drills"]


@pytest.mark.parametrize(("name", "kinds"), list(CHAPTER_KINDS.items()))
def test_the_chapters_carry_their_drills(book_html: Path, name: str, kinds: list[str]):
    """Each chapter that teaches kinds has a drill region, and its page's drill.js the catalog and the
    chapter, from which the region takes its kinds (the pages list none)."""
    html = (book_html / "chapters" / f"{name}.html").read_text()
    assert html.count('class="cr-drill"') == 1 and "data-drill-kinds" not in html
    [tag] = re.findall(r"<script[^>]*_static/live/drill\.js[^>]*>", html)
    assert f'data-chapter="{name}"' in tag and "data-wheels=" in tag, tag
    catalog = json.loads(html_module.unescape(re.search(r'data-kinds="([^"]*)"', tag)[1]))
    assert [kind for kind, entry in catalog.items() if entry["chapter"] == name] == kinds
