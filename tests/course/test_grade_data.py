"""The instructor's data in make grade: ids matched exactly, file names that never collide, a CSV that
runs nothing in a spreadsheet, and ids that never reach a shell."""

from __future__ import annotations

import csv
import subprocess

import pytest
from common import ROOT

from chainrule_course.grading import grade, reports, sandbox


def notebooks(folder, *paths):
    for path in paths:
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_text("{}")


def owners(tmp_path, roster_ids: str) -> dict[str, str]:
    roster = tmp_path / "roster.csv"
    roster.write_text("id\n" + roster_ids.replace(" ", "\n") + "\n")
    found, skipped = grade.find(tmp_path, roster)
    return {s.file: s.student for s in found if s.file}, skipped


def test_roster_ids_own_notebooks_exactly(tmp_path):
    notebooks(tmp_path, "li.wei.ipynb", "s1002/s1001.ipynb", "Grace Hopper_0042/hw.ipynb", "0042_0043.ipynb")
    found, skipped = owners(tmp_path, "li li.wei s1001 s1002 0042 0043")
    assert found["li.wei.ipynb"] == "li.wei", "li is not li.wei"
    assert found["s1002/s1001.ipynb"] == "s1002", "the folder names the student, not the file in it"
    assert found["Grace Hopper_0042/hw.ipynb"] == "0042", "an LMS folder name's part between underscores"
    assert found["0042_0043.ipynb"] == "0042_0043"
    assert "0042_0043.ipynb (graded under its own name: its path names several roster ids (0042, 0043))" in skipped
    rows = grade.find(tmp_path, tmp_path / "roster.csv")[0]
    assert [(s.student, s.file) for s in rows if s.student in ("li", "s1001")] == [("li", ""), ("s1001", "")]


def test_feedback_files_never_collide():
    names = [
        reports.file_name(student, file)
        for student, file in [
            ("李雷", "a.ipynb"),
            ("王芳", "b.ipynb"),
            ("s1", "s1/first.ipynb"),
            ("s1", "s1/second.ipynb"),
            ("Ada", "Ada.ipynb"),
            ("ada", "ada.ipynb"),
            ("s1001", ""),
        ]
    ]
    assert len(set(names)) == len(names) and len({n.casefold() for n in names}) == len(names)
    assert names[4].startswith("Ada-") and all(n.isascii() and "/" not in n for n in names)


def test_the_csv_keeps_formulas_as_text_and_reads_them_back(tmp_path):
    evil = '=HYPERLINK("http://example.org","x")'
    first = [reports.Result(evil, "evil.ipynb", {"q": 1.0}), reports.Result("@sum", "b.ipynb", {"q": 2.0})]
    reports.write_outputs(tmp_path, {"q": 2.0}, first)
    rows = list(csv.DictReader((tmp_path / "grades.csv").open()))
    assert [row["student"] for row in rows] == ["'" + evil, "'@sum"]
    # Regrading one student keeps the other's row once, not a second copy with its quote doubled.
    reports.write_outputs(tmp_path, {"q": 2.0}, [reports.Result("@sum", "b.ipynb", {"q": 0.0})], keep=True)
    rows = list(csv.DictReader((tmp_path / "grades.csv").open()))
    assert [(row["student"], row["q"]) for row in rows] == [("'" + evil, "1"), ("'@sum", "0")]


@pytest.mark.parametrize(
    "given, ids",
    [
        (["s1 s2"], ["s1", "s2"]),
        (["Ada Lovelace_4711,s1"], ["Ada Lovelace_4711", "s1"]),
        (["Ada Lovelace_4711"], ["Ada Lovelace_4711"]),
        (["s1", "s2,s3"], ["s1", "s2", "s3"]),
    ],
)
def test_only_takes_ids_separated_by_commas_or_spaces(given, ids):
    assert grade._only(given, {"s1", "s2", "s3", "Ada Lovelace_4711"}) == ids


def test_make_grade_passes_ids_as_text_never_to_the_shell(tmp_path):
    mark = tmp_path / "ran"
    only = f"`touch {mark}` $$(touch {mark}),Ada Lovelace_4711"
    run = subprocess.run(
        ["make", "--no-print-directory", "--eval", 'show: ; @printf "[%s]\\n" $(GRADE_OPTIONS)', "show"]
        + [f"ONLY={only}", "ROSTER=my roster.csv"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines() == [
        "[--roster]",
        "[my roster.csv]",
        "[--only]",
        f"[`touch {mark}` $(touch {mark}),Ada Lovelace_4711]",
    ]
    assert not mark.exists()


@pytest.mark.parametrize(
    "code, reason",
    [
        ("import sys\nexpected = sys._getframe(2).f_locals['expected']", "stack frames"),
        ("import inspect\nframe = inspect.currentframe().f_back", "stack frames"),
        ("from chainrule_course.exercises import feedback\nanswer = feedback.d2l_gradients", "the grader's own code"),
        ("import os\nif os.fork() == 0:\n    pass", "processes of its own"),
        ("import os\nflags = os.environ['MAKEFLAGS']", "the grader's environment"),
        ("text = open('../s1002/mlp.ipynb').read()", "files outside its answers"),
        ("exec(bytes.fromhex('7072696e74283129').decode())", "code built at run time"),
        ("def f(x):\n    return (g(x + 1e-20j)).imag / 1e-20", "complex numbers"),
        ("import ast\ntree = ast.parse('x * x')", "a differentiator of its own"),
        ("class V:\n    def backward(self):\n        pass", "a differentiator of its own"),
        ("import sys\nset_limit = sys.modules['__main__']._limit_keeper.__defaults__[0]", "the runner's own objects"),
    ],
)
def test_code_a_cheat_needs_puts_the_row_up_for_review(code, reason):
    handed_out = "import os\nimport subprocess\nsubprocess.run(['pip', 'install', 'otter-grader'])"
    lines = frozenset(line.strip() for line in handed_out.splitlines())
    reasons = grade.review_reasons([handed_out, code], lines)
    assert len(reasons) >= 1 and any(r.startswith(reason) for r in reasons), reasons
    honest = [handed_out, "def f(x):\n    return 2 * x"]
    assert grade.review_reasons(honest, lines) == [], "the handed-out set-up cell is not the student's"


def test_the_summary_counts_rows_by_status(tmp_path):
    results = [
        reports.Result("a", "a.ipynb", {"q": 2.0}),
        reports.Result("b", "b.ipynb", {"q": 2.0}, status="review: stack frames or the garbage collector"),
        reports.Result("c", "c.ipynb", status="stopped after 600 s"),
        reports.Result("d", "", status="no submission"),
    ]
    reports.write_outputs(tmp_path, {"q": 2.0}, results)
    summary = (tmp_path / "summary.html").read_text()
    assert "By status: 1 graded, 1 review, 1 not graded, 1 no submission." in summary
    assert "<li>b (b.ipynb): review: stack frames" in summary and "<li>c (c.ipynb): stopped after 600 s" in summary
    assert "<li>a " not in summary


def test_written_work_pages_fetch_nothing_remote_and_set_every_tex_extension(tmp_path):
    shown = reports.render_markdown("![tracker](http://evil.example/p.png) and $\\boldsymbol{x}$ <img src=x>")
    assert "<img" not in shown and "[image: tracker (http://evil.example/p.png)]" in shown
    page = reports._page("s1", [shown], reports._mathjax(tmp_path))
    assert f'content="{reports.POLICY}"' in page and "default-src 'none'" in reports.POLICY
    script = (tmp_path / "mathjax.js").read_text()
    wanted = ("BoldsymbolConfiguration", "CancelConfiguration", "ColorMethods")
    assert all(name in script for name in wanted), "the -full build: tex-svg.js would load them from a server"


def test_a_rerun_skips_the_grader_s_own_outputs_silently(tmp_path):
    notebooks(tmp_path, "s1.ipynb", "written/index.html", "written/s1-0123456789.html", "feedback/s1.txt")
    found, skipped = grade.find(tmp_path)
    assert [s.student for s in found] == ["s1"] and skipped == []


def test_a_submission_sees_none_of_the_instructors_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("MAKEFLAGS", "-j2 --jobserver-auth=3,4")
    monkeypatch.setenv("GITHUB_TOKEN", "secret")
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    environment = sandbox.sandbox_environment(tmp_path)
    assert environment["PATH"] == "/usr/bin:/bin"
    assert environment["HOME"] == str(tmp_path)
    assert not {"MAKEFLAGS", "GITHUB_TOKEN"} & set(environment)
    assert set(environment) <= set(sandbox.PASSED_ON) | {"HOME", "TMPDIR", "PYTHONNOUSERSITE"}


def test_an_error_of_the_grader_on_one_notebook_is_that_row_s_status(tmp_path, monkeypatch):
    """Before: one notebook the grader failed on stopped the run, with no grades.csv and no feedback for anyone."""
    notebooks(tmp_path, "s1.ipynb", "s2.ipynb", "s3.ipynb")
    monkeypatch.setattr(grade, "autograder_zip", lambda *args: tmp_path / "none.zip")
    monkeypatch.setattr(grade, "read_tests", lambda path: {})
    monkeypatch.setattr(grade, "questions", lambda tests: {"q": 2.0})
    monkeypatch.setattr(grade, "_inputs", lambda folder, secret: {})
    monkeypatch.setattr(grade, "sandbox_available", lambda: "")
    monkeypatch.setattr(grade, "_cgroups", lambda: False)
    monkeypatch.setattr(grade, "read_written", lambda path: [])

    def add_scores(result, recorded, tests, secret):
        if result.student == "s3":
            raise KeyError("a record the grader did not expect")
        return result

    def grade_one(inputs, submission, assignment, options):
        if submission.student == "s2":
            raise RuntimeError("the grader's machine went down")
        return reports.Result(submission.student, submission.file, {"q": 2.0}), True

    monkeypatch.setattr(grade, "grade_one", grade_one)
    monkeypatch.setattr(grade, "add_scores", add_scores)
    results = grade.grade_folders([("mlp", tmp_path)], jobs=2)[0]
    rows = {row["student"]: row for row in csv.DictReader((tmp_path / "grades.csv").open())}
    assert rows["s1"]["total"] == "2" and rows["s1"]["status"] == "graded"
    assert rows["s2"]["status"].startswith("not graded (for review): the grader failed on s2.ipynb: RuntimeError")
    assert rows["s3"]["status"].startswith("not graded (for review): the grader failed on s3.ipynb: KeyError")
    assert len(results) == 3 and (tmp_path / "summary.html").is_file()
    for student in ("s1", "s2", "s3"):
        assert (tmp_path / "feedback" / f"{reports.file_name(student, f'{student}.ipynb')}.txt").is_file()


def test_a_link_to_the_solution_is_not_graded(tmp_path):
    solution = tmp_path / "instructor" / "solution.ipynb"
    notebooks(tmp_path, "instructor/solution.ipynb")
    (tmp_path / "submissions").mkdir()
    (tmp_path / "submissions" / "s1.ipynb").symlink_to(solution)
    [found], _ = grade.find(tmp_path / "submissions")
    cells, status, _ = grade.read_submission(found, "mlp")
    assert cells is None and status.startswith("not graded: a symbolic link")


def test_work_that_is_not_a_notebook_gets_a_row_that_says_so(tmp_path):
    notebooks(tmp_path, "s1.py", "s2.zip", ".s3.ipynb", "._s4.ipynb", "readme.txt")
    found, skipped = grade.find(tmp_path)
    assert [(s.student, s.file) for s in found] == [(".s3", ".s3.ipynb"), ("s1", "s1.py"), ("s2", "s2.zip")]
    assert skipped == ["._s4.ipynb (not a notebook)", "readme.txt (not a notebook)"]
    cells, status, _ = grade.read_submission(found[1], "mlp")
    assert cells is None and status == "not graded: a .py file, not a notebook (ask the student for the .ipynb)"
    roster = tmp_path / "roster.csv"
    roster.write_text("id\ns1\n")
    assert [(s.student, s.file) for s in grade.find(tmp_path, roster)[0] if s.student == "s1"] == [("s1", "s1.py")]


def test_submissions_behind_a_link_a_bom_and_jupyter_s_checkpoints(tmp_path):
    """A link above the submissions folder (macOS's /tmp, a linked home) no longer marks every notebook
    "a symbolic link"; a link inside it still is one; a notebook saved with a byte-order mark is read;
    a copy in .ipynb_checkpoints gets a row that says why it was skipped."""
    import nbformat

    real = tmp_path / "real"
    real.mkdir()
    text = nbformat.writes(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("def f(x):\n    return x")]))
    (real / "s1.ipynb").write_bytes(b"\xef\xbb\xbf" + text.encode())
    notebooks(real, ".ipynb_checkpoints/s1-checkpoint.ipynb", "feedback/s0.ipynb")
    (real / "s2.ipynb").symlink_to(real / "s1.ipynb")
    linked = tmp_path / "linked"
    linked.symlink_to(real, target_is_directory=True)
    found, skipped = grade.find(linked)
    assert skipped == [
        ".ipynb_checkpoints/s1-checkpoint.ipynb (skipped: a copy Jupyter or an archive keeps, not the work handed in)"
    ]
    (s1, s2) = found
    cells, status, _ = grade.read_submission(s1, "mlp")
    assert (cells, status) == (["def f(x):\n    return x"], "")
    cells, status, _ = grade.read_submission(s2, "mlp")
    assert cells is None and status.startswith("not graded: a symbolic link")
