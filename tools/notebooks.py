"""Generate the notebook editions of the chapters (`make notebooks`).

``chapters/<name>.md`` (MyST Markdown notebooks) are the one source people write. From
each numbered chapter of ``_toc.yml`` this writes

* ``chapters/<name>.ipynb``, the **Colab edition**: every cell of the chapter, no outputs,
  solutions folded (a collapsed "Solution" section in Colab, hidden code in JupyterLab);
* ``student/chapters/<name>.ipynb``, the **student edition**: the same without any
  solution cell, and an answer cell (text, and code when the solution had code) under
  each exercise. A code answer cell raises ``NotImplementedError("Exercise 6.3 ...")``
  until the student replaces it.

Colab shows MyST as raw text, so the Markdown of both editions is plain: admonitions
become a bold title in a block quote, exercises become "Exercise 6.3" headings,
``{eq}``/``{numref}`` become the numbers the book shows, ``{cite}`` becomes author-year
text with a reference list at the end, labels are dropped and figures become images.
A construct without a plain form is an error that names the chapter and line.

The set-up cell (the first code cell of every chapter, tagged ``setup``) is written from
``SETUP_TEMPLATE`` here, the one place that defines where ``chainrule`` is installed
from. This tool also writes each chapter ``.md`` back in the exact form jupytext writes
(what JupyterLab writes on save), so opening and saving a chapter changes nothing.

    python tools/notebooks.py            # write the editions and normalise the chapters
    python tools/notebooks.py --check    # write nothing; list what is out of date (exit 1)
    make notebooks                       # the first line, after set-up
"""

from __future__ import annotations

import argparse
import copy
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import jupytext
import nbformat
import yaml
from pybtex.database import parse_file

ROOT = Path(__file__).resolve().parents[1]
STUDENT_FOLDER = "student"
COLAB = "https://colab.research.google.com/github"
#: The kernel JupyterLab records when it saves a chapter (ipykernel's python3 kernel).
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}

SETUP_TEMPLATE = '''\
# Set-up: makes `import chainrule` work. On Colab it installs it (CHAINRULE_PIP_SPEC overrides).
import importlib.util, os, shutil, subprocess, sys
if importlib.util.find_spec("chainrule") is None:
    spec = os.environ.get("CHAINRULE_PIP_SPEC", "{default_spec}")
    if "google.colab" not in sys.modules and "CHAINRULE_PIP_SPEC" not in os.environ:
        raise ModuleNotFoundError("chainrule is not installed in this kernel. In a clone of the course, run "
                                  "`make setup` and pick the .venv kernel, or run `pip install -e .` in the clone.")
    if shutil.which("dot") is None:  # graphviz draws the figures
        subprocess.run(["apt-get", "install", "-y", "-qq", "graphviz"], capture_output=True)
    pip = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-color", spec],
                         capture_output=True, text=True)
    importlib.invalidate_caches()
    if importlib.util.find_spec("chainrule") is None:
        raise RuntimeError(f"Installing chainrule with `pip install {{spec}}` failed:\\n{{pip.stderr[-2000:]}}\\n"
                           "Check the network, or set CHAINRULE_PIP_SPEC to a source you can reach "
                           "(a wheel file, a git URL or chainrule==x.y), then run this cell again.")'''

DIRECTIVE_OPEN = re.compile(r"^(?P<fence>`{3,}|:{3,})\{(?P<name>[\w:-]+)\}\s*(?P<argument>.*?)\s*$")
CODE_FENCE = re.compile(r"^(?P<fence>`{3,}|~{3,})")
LABEL_LINE = re.compile(r"^\((?P<label>[^()\s]+)\)=\s*$")
LABELLED_MATH_END = re.compile(r"^\$\$\s*\((?P<label>[^()\s]+)\)\s*$")
OPTION = re.compile(r"^:(?P<key>[\w-]+):\s*(?P<value>.*)$")
HEADING = re.compile(r"^(?P<hashes>#{1,6})\s+(?P<title>.*)$")
#: A role, or an inline code span (skipped, so `{eq}` written inside code stays as it is).
ROLE_OR_CODE = re.compile(r"\{(?P<role>[\w:-]+)\}`(?P<target>[^`]*)`|(?P<code>`+)(?:.|\n)*?(?P=code)")
EXPLICIT_TARGET = re.compile(r"^(?P<text>.*?)\s*<(?P<target>[^<>]+)>$")


class ConversionError(ValueError):
    """A chapter uses MyST that has no plain-Markdown form here."""


# ---------------------------------------------------------------------------------------
# The book: configuration, chapters, numbers
# ---------------------------------------------------------------------------------------


@dataclass
class Target:
    kind: str  # "figure", "equation", "exercise", "section" or "chapter"
    chapter: str  # the chapter file, e.g. "chapters/mlp"
    number: str = ""  # "6.1" for numbered targets
    title: str = ""  # section and chapter titles


@dataclass
class Book:
    root: Path
    repo: str  # owner/name on GitHub
    branch: str
    repository_url: str
    chapters: list[str]  # numbered chapters, in order ("chapters/mlp")
    targets: dict[str, Target] = field(default_factory=dict)
    bibliography: object = None

    def chapter_number(self, chapter: str) -> int:
        return self.chapters.index(chapter) + 1

    def colab_url(self, chapter: str, student: bool) -> str:
        return f"{COLAB}/{self.repo}/blob/{self.branch}/{edition_path(chapter, student)}"

    def raw_url(self, path: str) -> str:
        return f"https://raw.githubusercontent.com/{self.repo}/{self.branch}/{path}"

    @property
    def default_pip_spec(self) -> str:
        return f"git+{self.repository_url}@{self.branch}"


def edition_path(chapter: str, student: bool) -> str:
    """The repository path of a chapter's notebook: chapters/mlp.ipynb or student/chapters/mlp.ipynb."""
    return f"{STUDENT_FOLDER}/{chapter}.ipynb" if student else f"{chapter}.ipynb"


def numbered_chapters(toc: dict) -> list[str]:
    chapters = []
    for part in toc.get("parts", []):
        if part.get("numbered"):
            chapters.extend(entry["file"] for entry in part.get("chapters", []))
    if not chapters:
        raise ConversionError("_toc.yml has no numbered part: the editions number chapters as the book does")
    return chapters


def load_book(root: Path = ROOT) -> Book:
    config = yaml.safe_load((root / "_config.yml").read_text(encoding="utf-8"))
    toc = yaml.safe_load((root / "_toc.yml").read_text(encoding="utf-8"))
    url = config["repository"]["url"].rstrip("/")
    parts = urlsplit(url)
    repo = parts.path.strip("/")
    if parts.netloc != "github.com" or repo.count("/") != 1:
        raise ConversionError(f"_config.yml repository.url must be https://github.com/<owner>/<name>, not {url!r}")
    branch = config["repository"].get("branch")
    if not branch:
        raise ConversionError("_config.yml must set repository.branch (Colab links name the branch)")
    book = Book(root=root, repo=repo, branch=branch, repository_url=url, chapters=numbered_chapters(toc))
    bibfiles = config.get("bibtex_bibfiles", [])
    book.bibliography = parse_file(str(root / bibfiles[0])) if bibfiles else None
    for chapter in book.chapters:
        number_targets(book, chapter, read_chapter(root, chapter))
    for page in unnumbered_pages(toc):  # the first page and the back matter: titles and labels only
        number_targets(book, page, jupytext.read(root / f"{page}.md"))
    return book


def unnumbered_pages(toc: dict) -> list[str]:
    pages = [toc["root"]]
    for part in toc.get("parts", []):
        if not part.get("numbered"):
            pages.extend(entry["file"] for entry in part.get("chapters", []))
    return pages


def read_chapter(root: Path, chapter: str):
    return jupytext.read(root / f"{chapter}.md")


def number_targets(book: Book, chapter: str, notebook) -> None:
    """Record the chapter's labels with the numbers the book gives them (Fig. 6.1, (6.2), Exercise 6.3)."""
    prefix = book.chapter_number(chapter) if chapter in book.chapters else None
    counts = {"figure": 0, "equation": 0, "exercise": 0}

    def add(label: str, kind: str, **values) -> None:
        if label in book.targets:
            raise ConversionError(f"{chapter}: label {label!r} is defined twice")
        book.targets[label] = Target(kind=kind, chapter=chapter, **values)

    def numbered(label: str | None, kind: str) -> None:
        if prefix is None:
            raise ConversionError(f"{chapter}.md: numbered {kind}s belong in numbered chapters")
        counts[kind] += 1
        if label:
            add(label, kind, number=f"{prefix}.{counts[kind]}")

    pending_label = None
    for cell in notebook.cells:
        if cell.cell_type == "code":
            figure = cell.metadata.get("mystnb", {}).get("figure")
            if figure and figure.get("name"):
                numbered(figure["name"], "figure")
            continue
        lines = cell.source.split("\n")
        for index, line in enumerate(lines):
            if match := LABEL_LINE.match(line):
                pending_label = match["label"]
                continue
            if pending_label and (heading := HEADING.match(line)):
                kind = "chapter" if len(heading["hashes"]) == 1 else "section"
                add(pending_label, kind, title=heading["title"].strip())
                pending_label = None
            elif line.strip():
                pending_label = None
            if match := LABELLED_MATH_END.match(line):
                numbered(match["label"], "equation")
            elif match := DIRECTIVE_OPEN.match(line):
                options = directive_options(lines[index + 1:])
                if match["name"] == "exercise" and "nonumber" not in options:
                    numbered(options.get("label"), "exercise")
                elif match["name"] == "figure" and options.get("name"):
                    numbered(options["name"], "figure")
    first = next((cell for cell in notebook.cells if "numbering" not in cell.metadata.get("tags", [])), None)
    titles = [HEADING.match(line) for line in first.source.split("\n")] if first else []
    title = next((m["title"].strip() for m in titles if m and len(m["hashes"]) == 1), None)
    if title is None:
        raise ConversionError(f"{chapter}: the first cell must hold the chapter's '# Title'")
    book.targets[f"/{chapter}"] = Target(kind="chapter", chapter=chapter, title=title)


def directive_options(lines: list[str]) -> dict[str, str]:
    options = {}
    for line in lines:
        match = OPTION.match(line)
        if not match:
            break
        options[match["key"]] = match["value"].strip()
    return options


# ---------------------------------------------------------------------------------------
# MyST Markdown to plain Markdown
# ---------------------------------------------------------------------------------------


@dataclass
class Context:
    book: Book
    chapter: str
    student: bool
    cited: list[str] = field(default_factory=list)


def find_directive_end(lines: list[str], start: int, fence: str) -> int:
    """The index of the line that closes the directive opened at ``start``."""
    for index in range(start + 1, len(lines)):
        stripped = lines[index].strip()
        if stripped and set(stripped) == {fence[0]} and len(stripped) >= len(fence):
            return index
    raise ConversionError(f"directive opened with {fence} is never closed")


def convert_markdown(source: str, context: Context) -> str:
    """Plain Markdown for one MyST Markdown cell."""
    lines = source.split("\n")
    out: list[str] = []
    index = 0
    while index < len(lines):
        line = lines[index]
        if fence := CODE_FENCE.match(line):
            if not DIRECTIVE_OPEN.match(line):
                end = find_directive_end(lines, index, fence["fence"])
                out.extend(lines[index:end + 1])
                index = end + 1
                continue
        if match := DIRECTIVE_OPEN.match(line):
            end = find_directive_end(lines, index, match["fence"])
            body = lines[index + 1:end]
            options = directive_options(body)
            body = body[len(options):]
            while body and not body[0].strip():
                body = body[1:]
            out.extend(convert_directive(match["name"], match["argument"], options, "\n".join(body), context))
            index = end + 1
            continue
        if LABEL_LINE.match(line):
            index += 1
            continue
        if line.strip() == "$$" or line.strip() == r"\begin{equation*}":
            end, math = display_math(lines, index, context)
            out.extend(math)
            index = end + 1
            continue
        if line.startswith(("$$", r"\begin{")):
            raise ConversionError(f"{context.chapter}.md: display maths must open with a line of its own, "
                                  f"`$$` or `\\begin{{equation*}}`, not {line!r}")
        if (heading := HEADING.match(line)) and len(heading["hashes"]) == 1:
            number = context.book.chapter_number(context.chapter)
            out.append(f"# {number}. {convert_inline(heading['title'], context)}")
            index += 1
            continue
        out.append(convert_inline(line, context))
        index += 1
    return "\n".join(out).strip("\n")


def display_math(lines: list[str], start: int, context: Context) -> tuple[int, list[str]]:
    """A display equation as ``$$ \\begin{equation*} ... \\tag{6.1} \\end{equation*} $$``.

    MathJax (Colab, JupyterLab) shows the ``\\tag`` as the book's number. jupyterlab-myst
    numbers every display equation except an ``equation*`` one, so the starred environment
    keeps it from adding a second number. In the chapters, a labelled equation is
    ``$$ ... $$ (label)`` and an unlabelled one ``\\begin{equation*} ... \\end{equation*}``
    (a bare ``$$`` block would get a number in JupyterLab that the book does not show).
    """
    opening = lines[start].strip()
    closing = "$$" if opening == "$$" else r"\end{equation*}"
    for end in range(start + 1, len(lines)):
        if lines[end].strip().startswith(closing):
            break
    else:
        raise ConversionError(f"{context.chapter}.md: display maths opened with {opening} is never closed")
    tag = []
    if opening == "$$":
        match = LABELLED_MATH_END.match(lines[end])
        if not match:
            raise ConversionError(
                f"{context.chapter}.md: an unlabelled $$ equation ({lines[start + 1][:60]!r}); write it as "
                r"\begin{equation*} ... \end{equation*}, or give it a label: $$ (eq-name)")
        tag = [rf"\tag{{{context.book.targets[match['label']].number}}}"]
    body = lines[start + 1:end]
    return end, ["$$", r"\begin{equation*}", *body, *tag, r"\end{equation*}", "$$"]


def convert_directive(name: str, argument: str, options: dict, body: str, context: Context) -> list[str]:
    where = f"{context.chapter}.md"
    if name == "admonition":
        title = convert_inline(argument, context) if argument else "Note"
        text = convert_markdown(body, context)
        return [f"> **{title}**", ">"] + [f"> {line}".rstrip() for line in text.split("\n")]
    if name == "exercise":
        number = context.book.targets[options["label"]].number if "label" in options else ""
        title = f" ({convert_inline(argument, context)})" if argument else ""
        return [f"### Exercise {number}{title}", "", convert_markdown(body, context)]
    if name == "solution-start":
        target = context.book.targets.get(argument)
        if target is None or target.kind != "exercise":
            raise ConversionError(f"{where}: solution-start names {argument!r}, which is no exercise label")
        return [f"#### Solution to Exercise {target.number}"]
    if name == "solution-end":
        return []
    if name == "figure":
        path = (context.book.root / context.chapter).parent / argument
        relative = path.resolve().relative_to(context.book.root.resolve()).as_posix()
        if not path.is_file():
            raise ConversionError(f"{where}: figure file {argument} does not exist")
        alt = options.get("alt", "")
        caption = convert_markdown(body, context)
        number = context.book.targets[options["name"]].number if "name" in options else ""
        label = f"**Fig. {number}** " if number else ""
        return [f"![{alt}]({context.book.raw_url(relative)})", "", f"{label}{caption}"]
    raise ConversionError(
        f"{where}: the directive {{{name}}} has no plain-Markdown form for Colab; "
        "add one to tools/notebooks.py or use a directive it knows"
    )


def convert_inline(text: str, context: Context) -> str:
    return ROLE_OR_CODE.sub(lambda match: convert_role(match, context), text)


def convert_role(match: re.Match, context: Context) -> str:
    if match["code"]:
        return match[0]
    role, target = match["role"], match["target"]
    book = context.book
    if role in ("cite", "cite:p", "cite:t"):
        keys = [key.strip() for key in target.split(",")]
        for key in keys:
            if book.bibliography is None or key not in book.bibliography.entries:
                raise ConversionError(f"{context.chapter}.md: {{cite}} key {key!r} is not in references.bib")
            if key not in context.cited:
                context.cited.append(key)
        if role == "cite:t":
            return "; ".join(f"{authors_short(book, key)} [{year(book, key)}]" for key in keys)
        return "[" + "; ".join(f"{authors_short(book, key)}, {year(book, key)}" for key in keys) + "]"
    if role not in ("eq", "numref", "ref", "doc"):
        raise ConversionError(f"{context.chapter}.md: the role {{{role}}} has no plain-Markdown form for Colab")
    explicit = EXPLICIT_TARGET.match(target)
    text, label = (explicit["text"], explicit["target"]) if explicit else (None, target)
    if role == "doc":
        label = "/" + str((Path(context.chapter).parent / label).as_posix()).lstrip("/")
    found = book.targets.get(label)
    if found is None:
        raise ConversionError(f"{context.chapter}.md: {{{role}}}`{target}` names an unknown label")
    if role == "eq":
        return f"({found.number})"
    if role == "numref":
        shown = {"figure": "Fig. {}", "exercise": "Exercise {}", "equation": "({})"}.get(found.kind)
        if shown is None:
            raise ConversionError(f"{context.chapter}.md: {{numref}} to a {found.kind} is not supported")
        return text.replace("%s", found.number) if text else shown.format(found.number)
    title = text or convert_inline(found.title, context)
    if found.chapter != context.chapter and found.chapter in book.chapters:
        return f"[{title}]({book.colab_url(found.chapter, context.student)})"
    return f"*{title}*"


def last_names(book: Book, key: str) -> list[str]:
    entry = book.bibliography.entries[key]
    people = entry.persons.get("author") or entry.persons.get("editor") or []
    return [clean_tex(" ".join(person.last_names)) for person in people] or [clean_tex(entry.fields.get("title", key))]


def authors_short(book: Book, key: str) -> str:
    names = last_names(book, key)
    if len(names) == 1:
        return names[0]
    if len(names) == 2:
        return f"{names[0]} and {names[1]}"
    return f"{names[0]} et al."


def year(book: Book, key: str) -> str:
    return book.bibliography.entries[key].fields.get("year", "n.d.")


def clean_tex(text: str) -> str:
    return text.replace("{", "").replace("}", "").replace("\\&", "&").replace("--", "–").replace("~", " ")


def reference_list(book: Book, keys: list[str]) -> str:
    lines = ["## References", ""]
    for key in sorted(keys, key=lambda key: (last_names(book, key)[0], year(book, key))):
        entry = book.bibliography.entries[key]
        people = entry.persons.get("author") or entry.persons.get("editor") or []
        names = ", ".join(clean_tex(" ".join(person.first_names + person.middle_names + person.last_names))
                          for person in people)
        fields = entry.fields
        venue = fields.get("journal") or fields.get("booktitle") or fields.get("publisher") or fields.get("howpublished", "")
        parts = [f"{names} ({year(book, key)}).", f"*{clean_tex(fields.get('title', key))}*."]
        if venue:
            parts.append(f"{clean_tex(venue)}.")
        if fields.get("url"):
            parts.append(f"<{fields['url']}>")
        lines.append("- " + " ".join(parts))
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------
# Notebooks
# ---------------------------------------------------------------------------------------


def tags(cell) -> list[str]:
    return list(cell.metadata.get("tags", []))


def setup_source(book: Book) -> str:
    return SETUP_TEMPLATE.format(default_spec=book.default_pip_spec)


def numbering_source(book: Book, chapter: str) -> str:
    """Front matter that makes jupyterlab-myst number as the book does (Exercise 6.3, Fig. 6.1).

    jupyterlab-myst reads front matter only from a notebook's first Markdown cell. The cell
    is tagged ``remove-cell``, which MyST-NB drops from the website, and ``numbering``,
    which the editions drop (Colab would show the YAML).
    """
    return f'---\nnumbering:\n  enumerator: "{book.chapter_number(chapter)}.%s"\n---'


def with_front_cells(book: Book, chapter: str, notebook):
    """The chapter with its numbering cell first and its set-up cell written from the template."""
    notebook = copy.deepcopy(notebook)
    cells = [cell for cell in notebook.cells if "numbering" not in tags(cell)]
    numbering = nbformat.v4.new_markdown_cell(numbering_source(book, chapter),
                                              metadata={"tags": ["remove-cell", "numbering"]})
    notebook.cells = [numbering, *cells]
    for cell in notebook.cells:
        if "setup" in tags(cell):
            cell.source = setup_source(book)
    return notebook


def check_solution_marks(chapter: str, notebook) -> None:
    """Every cell from a solution-start to its solution-end is tagged ``solution``, and no other cell is."""
    inside = False
    for number, cell in enumerate(notebook.cells, start=1):
        source = cell.source.lstrip()
        starts = cell.cell_type == "markdown" and "{solution-start}" in cell.source
        if starts and not source.startswith("````{solution-start}"):
            raise ConversionError(f"{chapter}.md, cell {number}: a solution-start must open its own Markdown cell "
                                  "(put `+++ {\"tags\": [\"solution\"]}` before it)")
        inside = inside or starts
        if inside != ("solution" in tags(cell)):
            state = "inside a solution but not" if inside else "outside any solution but"
            raise ConversionError(f"{chapter}.md, cell {number} ({cell.cell_type}) lies {state} tagged `solution`: "
                                  f"{cell.source[:80]!r}")
        if cell.cell_type == "markdown" and "{exercise}" in cell.source and inside:
            raise ConversionError(f"{chapter}.md, cell {number}: an exercise inside a solution")
        if cell.cell_type == "markdown" and "{solution-end}" in cell.source:
            if not cell.source.rstrip().endswith("````{solution-end}\n````"):
                raise ConversionError(f"{chapter}.md, cell {number}: nothing may follow a solution-end in its cell")
            inside = False
    if inside:
        raise ConversionError(f"{chapter}.md: a solution-start has no solution-end")


def solution_label(cell) -> str | None:
    match = re.search(r"\{solution-start\}\s*(\S+)", cell.source)
    return match[1] if match else None


def new_cell(kind: str, source: str, metadata: dict | None = None):
    make = nbformat.v4.new_code_cell if kind == "code" else nbformat.v4.new_markdown_cell
    return make(source, metadata=metadata or {})


SOLUTION_MARKERS = re.compile(r"^`{3,}\{solution-(start|end)\}.*\n(:class:.*\n)?`{3,}$", re.MULTILINE)


def answer_cells(number: str, with_text: bool, with_code: bool) -> list:
    """The student edition's answer cells for one exercise: for its text, and for its code."""
    cells = []
    if with_text:
        cells.append(new_cell("markdown", f"**Your answer to Exercise {number}.** Double-click here to write it.",
                              {"tags": ["exercise-stub"]}))
    if with_code:
        code = (f"# Exercise {number}: replace these lines with your code, then run the cell.\n"
                f'raise NotImplementedError("Exercise {number} is not answered yet: '
                'replace this cell with your code")')
        cells.append(new_cell("code", code, {"tags": ["exercise-stub"]}))
    return cells


def edition(book: Book, chapter: str, notebook, student: bool):
    """The Colab (``student=False``) or student edition of one chapter, as an nbformat notebook."""
    check_solution_marks(chapter, notebook)
    context = Context(book=book, chapter=chapter, student=student)
    number = book.chapter_number(chapter)
    cells = []
    setup_cells = [cell for cell in notebook.cells if "setup" in tags(cell)]
    code_cells = [cell for cell in notebook.cells if cell.cell_type == "code"]
    if len(setup_cells) != 1 or code_cells[0] is not setup_cells[0]:
        raise ConversionError(f"{chapter}.md: the first code cell, and only it, must be the set-up cell (tag `setup`)")
    solution_number, solution_has_code, solution_has_text = None, False, False
    authored_stubs = []
    for cell in notebook.cells:
        if "numbering" in tags(cell) or "hidden-check" in tags(cell):
            continue  # hidden checks go only into the autograder (tools/assignments.py)
        if "exercise-stub" in tags(cell):
            # An answer cell written in the chapter: only the student edition has it, under the
            # exercise (after the text answer cell); the full edition has the solution instead.
            authored_stubs.extend(converted(cell, context, folded=False) if student else [])
            continue
        if "solution" in tags(cell):
            label = solution_label(cell)
            if label:
                solution_number = book.targets[label].number
                solution_has_code = solution_has_text = False
            solution_has_code |= cell.cell_type == "code"
            solution_has_text |= cell.cell_type == "markdown" and bool(SOLUTION_MARKERS.sub("", cell.source).strip())
            ends = cell.cell_type == "markdown" and "{solution-end}" in cell.source
            if not student:
                cells.extend(converted(cell, context, folded=True))
            elif ends:
                cells.extend(answer_cells(solution_number, solution_has_text or not authored_stubs,
                                          solution_has_code and not authored_stubs))
                cells.extend(authored_stubs)
                authored_stubs = []
            continue
        if "check" in tags(cell):
            cells.append(new_cell("markdown", f"The next cell checks the answer to Exercise {solution_number}: "
                                              "it names what is wrong, where, and the mistake it matches."))
        cells.extend(converted(cell, context, folded=False))
    if context.cited:
        cells.append(new_cell("markdown", reference_list(book, context.cited)))
    banner = (f"Chapter {number} of *Backpropagation, from the chain rule up*. Run the first code cell "
              "before the others: it installs `chainrule` when it is missing.")
    if student:
        banner += (" **Student edition:** the solutions are removed. Write each answer in the cells under its "
                   "exercise; a code answer cell raises `NotImplementedError` until you replace it.")
    title = cells[0]
    title_lines = title.source.split("\n")
    title.source = "\n".join([title_lines[0], "", banner, *title_lines[1:]]).rstrip("\n")
    return finish(chapter, cells, student)


def converted(cell, context: Context, folded: bool) -> list:
    """One source cell as edition cells (a figure's code cell gains a caption cell)."""
    cell = copy.deepcopy(cell)
    metadata = {key: value for key, value in cell.metadata.items() if key != "mystnb"}
    if cell.cell_type == "markdown":
        text = convert_markdown(cell.source, context)
        if not text.strip():
            return []
        heading = re.match(r"^(#### Solution to Exercise [\d.]+)\n*", text)
        if heading and folded:
            rest = text[heading.end():]
            # Colab folds it through notebook.metadata.colab.collapsed_sections, JupyterLab through this key.
            folded_heading = {"tags": ["solution"], "jp-MarkdownHeadingCollapsed": True}
            return [new_cell("markdown", heading[1], folded_heading)] + (
                [new_cell("markdown", rest, metadata)] if rest.strip() else [])
        return [new_cell("markdown", text, metadata)]
    source = setup_source(context.book) if "setup" in tags(cell) else cell.source
    result = [new_cell("code", source, metadata)]
    figure = cell.metadata.get("mystnb", {}).get("figure")
    if figure:
        number = context.book.targets[figure["name"]].number if figure.get("name") else ""
        caption = convert_markdown(str(figure.get("caption", "")), context)
        result.append(new_cell("markdown", f"**Fig. {number}** {caption}".strip(), {}))
    return result


def finish(chapter: str, cells: list, student: bool):
    notebook = nbformat.v4.new_notebook()
    stem = ("student-" if student else "") + Path(chapter).name
    collapsed = []
    for index, cell in enumerate(cells):
        cell.id = f"{stem}-{index:03d}"
        cell.metadata["id"] = cell.id  # Colab names cells (and collapsed sections) by metadata.id
        if cell.cell_type == "markdown" and cell.source.startswith("#### Solution to Exercise"):
            collapsed.append(cell.id)
    notebook.cells = cells
    notebook.metadata = {
        "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
        "colab": {"provenance": [], "toc_visible": True, "collapsed_sections": collapsed},
    }
    nbformat.validate(notebook)
    return notebook


def canonical_markdown(notebook) -> str:
    """A chapter as jupytext (and so JupyterLab, on save) writes it."""
    notebook = copy.deepcopy(notebook)
    notebook.metadata["kernelspec"] = dict(KERNELSPEC)
    return jupytext.writes(notebook, fmt="md:myst")


def expected_files(book: Book) -> dict[Path, str]:
    """Every generated file (and every chapter .md, normalised) with the text it must have."""
    files = {}
    for chapter in book.chapters:
        notebook = with_front_cells(book, chapter, read_chapter(book.root, chapter))
        files[book.root / f"{chapter}.md"] = canonical_markdown(notebook)
        for student in (False, True):
            path = book.root / edition_path(chapter, student)
            files[path] = nbformat.writes(edition(book, chapter, notebook, student)) + "\n"
    return files


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 when a file is out of date")
    args = parser.parse_args(argv)
    try:
        book = load_book()
        files = expected_files(book)
    except ConversionError as error:
        print(f"make notebooks: {error}", file=sys.stderr)
        return 2
    stale = [path for path, text in files.items()
             if not path.is_file() or path.read_text(encoding="utf-8") != text]
    if args.check:
        for path in stale:
            print(f"out of date: {path.relative_to(book.root)}")
        if stale:
            print("Run `make notebooks` and commit the result.", file=sys.stderr)
        return 1 if stale else 0
    for path in stale:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(files[path], encoding="utf-8")
        print(f"wrote {path.relative_to(book.root)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
