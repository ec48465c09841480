"""A chapter's exercises as assignment questions: the answer cell, the checks, the solution, the parts.

A question is an exercise that has an answer cell (tag ``exercise-stub``) and a check cell
(tag ``check``); each ``hidden-check`` cell after it is a hidden test. The exercises are
found with the MyST parser (``tools/book/myst.py``), the solution's names with ``ast``.
``tools/grader/assignments.py`` writes the otter-grader assignments from these.
"""

from __future__ import annotations

import ast
import builtins
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

from chainrule_course.exercises import answers
from tools.book.book_model import Book, read_chapter
from tools.book.myst import directives
from tools.book.notebooks import (
    SOLUTION_MARKERS,
    bound_and_read,
    check_solution_marks,
    numbered_stub,
    solution_label,
    tags,
    with_front_cells,
)


class AssignmentError(ValueError):
    """A chapter's exercise cannot become an assignment question."""


def question_name(number: str) -> str:
    """The grader's id of the exercise numbered ``number``: ``exN_M`` for N.M."""
    return "ex" + number.replace(".", "_")


@dataclass
class Question:
    label: str  # the exercise label, ex-mlp-bias
    number: str  # the book's number, 6.2
    text: str  # the exercise's MyST source
    stub: str = ""  # the answer cell
    solution_cells: list[str] = field(default_factory=list)
    check: str = ""
    hidden: list[str] = field(default_factory=list)
    solution_text: list[str] = field(default_factory=list)  # the solution's prose: the question has written work

    @property
    def written_name(self) -> str:
        return self.name + "_written"

    @property
    def name(self) -> str:
        return question_name(self.number)


@dataclass
class Assignment:
    chapter: str  # chapters/mlp
    number: str  # the chapter's number, "6"
    title: str
    questions: list[Question]

    @property
    def name(self) -> str:
        return Path(self.chapter).name


def questions_of(book: Book | None, chapter: str, notebook) -> list[Question]:
    """The chapter's exercises that have an answer cell and a check cell, in order.

    Without ``book`` (during the book build, before it has numbered them), their numbers are "".
    """
    check_solution_marks(chapter, notebook)
    found: dict[str, Question] = {}
    current: Question | None = None
    for cell in notebook.cells:
        exercises = directives(cell.source, "exercise") if cell.cell_type == "markdown" else []
        label = next((exercise.options["label"] for exercise in exercises if "label" in exercise.options), None)
        if label:
            number = book.targets[label].number if book is not None else ""
            current = found[label] = Question(label, number, cell.source)
            continue
        if "solution" in tags(cell):
            label = solution_label(cell)
            if label:
                current = found.get(label)
            if current is not None and cell.cell_type == "code":
                current.solution_cells.append(cell.source)
            elif current is not None and SOLUTION_MARKERS.sub("", cell.source).strip():
                current.solution_text.append(SOLUTION_MARKERS.sub("", cell.source).strip())
            continue
        if current is None:
            continue
        if "exercise-stub" in tags(cell):
            current.stub = numbered_stub(cell.source, current.number) if current.number else cell.source
        elif "check" in tags(cell):
            current.check = cell.source
        elif "hidden-check" in tags(cell):
            current.hidden.append(cell.source)
    questions = [q for q in found.values() if q.check]
    for q in questions:
        if not q.stub:
            raise AssignmentError(f"{chapter}.md: Exercise {q.number} has a check cell but no answer cell")
    return questions


def target_names(node: ast.stmt) -> list[str] | None:
    """The names a top-level ``def`` or plain assignment defines (None for any other statement)."""
    if isinstance(node, ast.FunctionDef):
        return [node.name]
    if isinstance(node, ast.Assign):
        names = []
        for target in node.targets:
            elements = target.elts if isinstance(target, ast.Tuple) else [target]
            for element in elements:
                if not isinstance(element, ast.Name):
                    return None
                names.append(element.id)
        return names
    return None


def bound_names(node: ast.stmt) -> list[str] | None:
    """What :func:`target_names` finds, and the names an import binds (a solution's ``from chainrule.rules
    import Rule``, which its definitions read)."""
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return [alias.asname or alias.name.split(".")[0] for alias in node.names]
    return target_names(node)


def defined_names(source: str) -> list[str]:
    """The names an answer cell defines at top level: functions and assigned names."""
    return [name for node in ast.parse(source).body for name in (target_names(node) or [])]


def solution_code(question: Question, chapter: str) -> str:
    """The solution's statements that define the answer's names, with the assignments and imports they read.

    Only top-level ``def`` statements, plain assignments and imports are taken, so the graph drawing,
    the comparisons with PyTorch and the asserts of a solution stay in the book.
    """
    statements = [
        (source, node, bound_names(node)) for source in question.solution_cells for node in ast.parse(source).body
    ]
    wanted = set(defined_names(question.stub))
    chosen: list[int] = []
    for index in range(len(statements) - 1, -1, -1):  # the last definition of each name, then what it reads
        source, node, names = statements[index]
        if names and wanted & set(names):
            chosen.append(index)
            wanted = (wanted - set(names)) | free_names(statement_text(source, node))
    missing = [
        name for name in defined_names(question.stub) if not any(name in (statements[i][2] or []) for i in chosen)
    ]
    if missing:
        raise AssignmentError(
            f"{chapter}.md: the solution of Exercise {question.number} does not define "
            f"{missing} at the top level of a solution code cell"
        )
    pieces = [statement_text(statements[i][0], statements[i][1]) for i in sorted(chosen)]
    return "\n\n\n".join(pieces) if any(p.startswith("def ") for p in pieces) else "\n".join(pieces)


def statement_text(source: str, node: ast.stmt) -> str:
    """The text of ``node``, a statement :func:`ast.parse` read from ``source`` (so it knows where it is)."""
    text = ast.get_source_segment(source, node)
    if text is None:
        raise ValueError(f"a statement at line {node.lineno} with no end position in its source")
    return text


def free_names(source: str) -> set[str]:
    """Names a cell reads that it does not define itself (nor are builtins)."""
    bound, read = bound_and_read(source)
    return read - bound - set(dir(builtins))


def test_function(question: Question, source: str, suffix: str, chapter: str) -> str:
    """A check cell as an otter test function whose parameters are the answer's names."""
    answer_names = defined_names(question.stub)
    unknown = free_names(source) - set(answer_names)
    if unknown:
        raise AssignmentError(
            f"{chapter}.md: the check of Exercise {question.number} uses {sorted(unknown)}, which "
            "it does not define; a check cell may use only the answer's names and what it "
            "imports or defines itself"
        )
    used = [name for name in answer_names if name in free_names(source)]
    return f"def test_{question.name}{suffix}({', '.join(used)}):\n{textwrap.indent(source, '    ')}"


def question_parts(question: Question, chapter: str) -> tuple[list[list], str]:
    """The parts a question's points are shared between, and the reference solution they need.

    A question with several answers (``matmul_vjp`` and ``ce_grad``) has one part per answer:
    each is scored with the others replaced by the reference solution, so a missing one costs
    only its own share. A question with one answer has one part per quantity its check
    reports (∂J/∂W1 and ∂J/∂W2), found by running the public check on the solution.
    """
    names = [name for name in defined_names(question.stub) if name in free_names(question.check)]
    reference = reference_code(question, chapter)
    if len(names) > 1:
        return [[name, None] for name in names], reference
    # The check's own print goes nowhere. (Not redirect_stdout: assignments are written in threads,
    # and a redirect of one thread's output would swallow the others'.)
    namespace: dict = {"print": lambda *args, **kwargs: None}
    with answers.quantities() as seen:
        exec(compile(reference, f"<solution of Exercise {question.number}>", "exec"), namespace)
        exec(compile(question.check, f"<check of Exercise {question.number}>", "exec"), namespace)
    return ([[names[0], quantity] for quantity in seen] if len(seen) > 1 else []), reference


def reference_code(question: Question, chapter: str) -> str:
    """The reference solution as the grader runs it: the solution's definitions, with math and numpy."""
    return REFERENCE_PRELUDE + solution_code(question, chapter) + "\n"


#: What the grader's reference solution starts with; an answer cell gets its exercise's own imports instead.
REFERENCE_PRELUDE = "import math\n\nimport numpy as np\n\n\n"


def allowed(question: Question) -> list[str]:
    """The modules the question's answer cells may import besides the standard library: the ``allowed`` of
    the checks its check cells call (:func:`chainrule_course.grading.contract.allowed`), in order, each once."""
    from chainrule_course.exercises import feedback

    found: list[str] = []
    for source in (question.check, *question.hidden):
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "feedback":
                for module in getattr(getattr(feedback, node.attr, None), "allowed", ()):
                    if module not in found:
                        found.append(module)
    return found


def load_assignments(book: Book, only: list[str] | None = None) -> list[Assignment]:
    assignments = []
    for chapter in book.chapters:
        if only and Path(chapter).name not in only:
            continue
        notebook = with_front_cells(book, chapter, read_chapter(book.root, chapter))
        questions = questions_of(book, chapter, notebook)
        if questions:
            title = book.targets[f"/{chapter}"].title
            assignments.append(Assignment(chapter, book.chapter_number(chapter), title, questions))
    return assignments
