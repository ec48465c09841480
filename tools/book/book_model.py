"""The book as the tools see it: ``_toc.yml``, ``_config.yml``, the chapters, their labels and numbers.

:func:`load_book` reads the table of contents (the numbered chapters, in order), the
repository and branch of ``_config.yml``, the release the set-up cell installs, the
bibliography, and the numbers Sphinx gave every figure, equation, exercise and chapter
(``_build/numbers.json``, written by every book build). The notebook editions, the
student site, the assignments, the PDF and ``_ext/`` read the book from here.

:func:`outline` and :func:`book_version` need no build: the numbered chapters' titles and
exercise labels, read from the sources, and the edition of the book's drills and exercises
that a reader's practice record names (``make progress`` reads those records).
"""

from __future__ import annotations

import copy
import functools
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import jupytext
import yaml
from packaging.version import InvalidVersion, Version
from pybtex.database import BibliographyData, parse_file

from chainrule_course.drills.catalog import catalog
from tools.book.myst import ConversionError, blocks, is_directive, read_directive

ROOT = Path(__file__).resolve().parents[2]
STUDENT_FOLDER = "student"
#: The numbers Sphinx gave the book's figures, equations, exercises and chapters, written by
#: every book build (_ext/edition_numbers.py); the editions print the same ones.
NUMBERS = Path("_build") / "numbers.json"
COLAB = "https://colab.research.google.com/github"


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
    chapter_numbers: dict[str, str] = field(default_factory=dict)  # "chapters/mlp": "6", from the book build
    targets: dict[str, Target] = field(default_factory=dict)
    bibliography: BibliographyData | None = None  # references.bib, where _config.yml names it
    glue: dict[str, dict[str, str]] = field(default_factory=dict)  # page -> key -> text/plain, from the build
    mark_glue: bool = False  # print GLUE_MARK instead of each glued number (see same_but_glued)
    release: str = ""  # _config.yml chainrule_release: a version on PyPI the set-up cell installs, or "" (git)

    def chapter_number(self, chapter: str) -> str:
        return self.chapter_numbers[chapter]

    def colab_url(self, chapter: str, student: bool) -> str:
        return f"{COLAB}/{self.repo}/blob/{self.branch}/{edition_path(chapter, student)}"

    def raw_url(self, path: str) -> str:
        return f"https://raw.githubusercontent.com/{self.repo}/{self.branch}/{path}"

    @property
    def default_pip_spec(self) -> str:
        """What the set-up cell installs: ``chainrule==<chainrule_release>`` when _config.yml sets a release,
        else the repository itself, ``git+<repository.url>@<branch>``."""
        return f"chainrule=={self.release}" if self.release else f"git+{self.repository_url}@{self.branch}"


def edition_path(chapter: str, student: bool) -> str:
    """The repository path of a chapter's notebook: chapters/mlp.ipynb or student/chapters/mlp.ipynb."""
    return f"{STUDENT_FOLDER}/{chapter}.ipynb" if student else f"{chapter}.ipynb"


def read_toc(root: Path) -> dict:
    """The book's ``_toc.yml``: its ``root`` page and its parts of chapters."""
    return yaml.safe_load((root / "_toc.yml").read_text(encoding="utf-8"))


def toc_pages(toc: dict) -> list[str]:
    """Every page of the book, in ``_toc.yml``'s order: its root, then each part's chapters. The tools read
    a book of parts of chapters only: a page nested deeper would escape them, so it is refused."""
    nested = [
        entry["file"] for part in toc.get("parts", []) for entry in part.get("chapters", []) if "sections" in entry
    ]
    if "chapters" in toc or nested:
        raise ConversionError(
            f"_toc.yml: the book's tools read parts of chapters, without sections: {nested or 'chapters at the top'}"
        )
    return [toc["root"], *(entry["file"] for part in toc.get("parts", []) for entry in part.get("chapters", []))]


def numbered_chapters(toc: dict) -> list[str]:
    chapters: list[str] = []
    for part in toc.get("parts", []):
        if part.get("numbered"):
            chapters.extend(entry["file"] for entry in part.get("chapters", []))
    if not chapters:
        raise ConversionError("_toc.yml has no numbered part: the editions number chapters as the book does")
    return chapters


def load_book(root: Path = ROOT) -> Book:
    config = yaml.safe_load((root / "_config.yml").read_text(encoding="utf-8"))
    toc = read_toc(root)
    url = config["repository"]["url"].rstrip("/")
    parts = urlsplit(url)
    repo = parts.path.strip("/")
    if parts.netloc != "github.com" or repo.count("/") != 1:
        raise ConversionError(f"_config.yml repository.url must be https://github.com/<owner>/<name>, not {url!r}")
    branch = config["repository"].get("branch")
    if not branch:
        raise ConversionError("_config.yml must set repository.branch (Colab links name the branch)")
    release = read_release(config)
    numbers = read_numbers(root)
    book = Book(
        root=root,
        repo=repo,
        branch=branch,
        repository_url=url,
        chapters=numbered_chapters(toc),
        chapter_numbers=numbers["chapters"],
        glue=numbers.get("glue", {}),
        release=release,
    )
    unnumbered = [chapter for chapter in book.chapters if chapter not in book.chapter_numbers]
    if unnumbered:
        raise ConversionError(
            f"{NUMBERS} gives no number to {', '.join(unnumbered)}: the book build is older "
            "than _toc.yml. Run `make notebooks`, which builds the book first"
        )
    bibfiles = config.get("bibtex_bibfiles", [])
    book.bibliography = parse_file(str(root / bibfiles[0])) if bibfiles else None
    for page in book.chapters + unnumbered_pages(toc):  # unnumbered: the first page and the back matter
        number_targets(book, page, read_chapter(root, page), numbers["numbered"].get(page, {}))
    return book


def read_release(config: dict) -> str:
    """_config.yml's ``chainrule_release``: a version of chainrule on PyPI ("0.1.0"), or "" when unset."""
    release = config.get("chainrule_release")
    if release is None or release == "":
        return ""
    if not isinstance(release, str):  # YAML reads 0.10 as the number 0.1
        raise ConversionError(
            f'_config.yml chainrule_release must be a quoted version, such as "0.1.0", '
            f"not the {type(release).__name__} {release!r}"
        )
    try:
        Version(release)
    except InvalidVersion:
        raise ConversionError(
            f'_config.yml chainrule_release {release!r} is not a version (such as "0.1.0"): '
            "the set-up cell would run `pip install chainrule==<it>`"
        ) from None
    return release


def unnumbered_pages(toc: dict) -> list[str]:
    pages = [toc["root"]]
    for part in toc.get("parts", []):
        if not part.get("numbered"):
            pages.extend(entry["file"] for entry in part.get("chapters", []))
    return pages


def read_chapter(root: Path, chapter: str):
    """The chapter as a notebook, a copy of its own: the tools read a chapter many times in one process
    (each edition's reading time, say), and jupytext parses each text once."""
    return copy.deepcopy(parsed_chapter((root / f"{chapter}.md").read_text(encoding="utf-8")))


@functools.lru_cache(maxsize=64)
def parsed_chapter(text: str):
    return jupytext.reads(text, fmt=".md")


def read_numbers(root: Path) -> dict:
    """What Sphinx numbered in the last book build (``_ext/edition_numbers.py`` writes it)."""
    path = root / NUMBERS
    if not path.is_file():
        raise ConversionError(
            f"{NUMBERS} is missing: the editions take their numbers from the book build. "
            "Run `make notebooks`, which builds the book first"
        )
    return json.loads(path.read_text(encoding="utf-8"))


def number_targets(book: Book, chapter: str, notebook, numbered: dict) -> None:
    """Record the chapter's labels: numbers as the book build gave them, titles from the source.

    ``numbered`` is the build's numbered elements of this chapter, by HTML id. Every one of
    them must carry a label the chapter defines, and every numbered label the chapter
    defines must be among them: otherwise the build is older than the chapter.
    """
    by_label = {element["label"]: element for element in numbered.values() if "label" in element}
    unlabelled = [f"{element['kind']} {element['number']}" for element in numbered.values() if "label" not in element]
    if unlabelled:
        raise ConversionError(
            f"{chapter}.md: the book numbers {', '.join(unlabelled)}, which has no label; "
            "give it one (:name: or :label:) so that the editions can print its number"
        )
    found = set()

    def add(label: str, kind: str, **values) -> None:
        if label in book.targets:
            raise ConversionError(f"{chapter}: label {label!r} is defined twice")
        book.targets[label] = Target(kind=kind, chapter=chapter, **values)

    def numbered_label(label: str | None, kind: str) -> None:
        element = by_label.get(label)
        if label is None or element is None or element["kind"] != kind:
            what = f"the {kind} {label!r}" if label else f"a {kind} without a label"
            raise ConversionError(
                f"{chapter}.md: {what} has no number in {NUMBERS}, so the book build is "
                "older than the chapter (or the book does not number it). Run `make notebooks`, "
                "which builds the book first"
            )
        found.add(label)
        add(label, kind, number=element["number"])

    def label_markdown(source: str) -> None:
        label = None  # a (label)= line names the heading right after it
        for block in blocks(source):
            token = block[0]
            if label and token.type == "heading_open":
                add(label, "chapter" if token.tag == "h1" else "section", title=block[1].content)
            label = token.content if token.type == "myst_target" else None
            if token.type == "math_block_label":
                numbered_label(token.info, "equation")
            elif is_directive(token):
                directive = read_directive(token)
                if directive.name == "exercise" and "nonumber" not in directive.options:
                    numbered_label(directive.options.get("label"), "exercise")
                elif directive.name == "figure" and directive.options.get("name"):
                    numbered_label(directive.options["name"], "figure")
                label_markdown(directive.body)

    for cell in notebook.cells:
        if cell.cell_type == "markdown":
            label_markdown(cell.source)
        elif figure := cell.metadata.get("mystnb", {}).get("figure"):
            if figure.get("name"):
                numbered_label(figure["name"], "figure")
    if set(by_label) - found:
        raise ConversionError(
            f"{chapter}.md: the book build numbers {sorted(set(by_label) - found)}, which the "
            "chapter no longer defines. Run `make notebooks`, which builds the book first"
        )
    book.targets[f"/{chapter}"] = Target(kind="chapter", chapter=chapter, title=chapter_title(chapter, notebook))


def chapter_title(chapter: str, notebook) -> str:
    """The chapter's '# Title', the first heading of its first cell (after the numbering cell)."""
    first = next((cell for cell in notebook.cells if "numbering" not in cell.metadata.get("tags", [])), None)
    headings = blocks(first.source) if first and first.cell_type == "markdown" else []
    title = next((block[1].content for block in headings if block[0].tag == "h1"), None)
    if title is None:
        raise ConversionError(f"{chapter}: the first cell must hold the chapter's '# Title'")
    return title


# ---------------------------------------------------------------------------------------
# The book's outline and the edition of its drills and exercises, from the sources alone
# ---------------------------------------------------------------------------------------


@dataclass
class ChapterOutline:
    chapter: str  # "chapters/mlp"
    number: int  # its place in _toc.yml's numbered part, from 1: the book's chapter number
    title: str  # its '# Title'
    exercises: list[str]  # the labels of its numbered exercises, in the book's order (<number>.1, .2, ...)


def outline(root: Path = ROOT) -> list[ChapterOutline]:
    """The numbered chapters in order, with their titles and exercise labels, read from the sources.

    Unlike :func:`load_book` it needs no book build (no ``_build/numbers.json``): a tool run on a
    fresh clone, or the build itself before it has numbered anything, can call it.
    """
    chapters = []
    for number, chapter in enumerate(numbered_chapters(read_toc(root)), start=1):
        notebook = read_chapter(root, chapter)
        chapters.append(ChapterOutline(chapter, number, chapter_title(chapter, notebook), exercise_labels(notebook)))
    return chapters


def book_from_sources(root: Path, chapters: list[ChapterOutline] | None = None) -> Book:
    """The book numbered from its sources (``chapters``: its :func:`outline`), as :func:`load_book`
    numbers it from a build: chapter N is the Nth numbered entry of ``_toc.yml``, its exercises N.1,
    N.2, ... in order. Enough for the assignments (:func:`tools.book.questions.load_assignments`)
    before, or during, a build."""
    book = Book(root, "owner/name", "main", "https://github.com/owner/name", chapters=[])
    for chapter in outline(root) if chapters is None else chapters:
        book.chapters.append(chapter.chapter)
        book.chapter_numbers[chapter.chapter] = str(chapter.number)
        book.targets[f"/{chapter.chapter}"] = Target("chapter", chapter.chapter, title=chapter.title)
        for index, label in enumerate(chapter.exercises, start=1):
            book.targets[label] = Target("exercise", chapter.chapter, number=f"{chapter.number}.{index}")
    return book


def exercise_labels(notebook) -> list[str]:
    """The labels of a chapter's numbered exercises, in order, found as :func:`number_targets` finds them."""
    labels = []

    def walk(source: str) -> None:
        for block in blocks(source):
            if not is_directive(block[0]):
                continue
            directive = read_directive(block[0])
            if directive.name == "exercise" and "nonumber" not in directive.options and directive.options.get("label"):
                labels.append(directive.options["label"])
            walk(directive.body)

    for cell in notebook.cells:
        if cell.cell_type == "markdown" and "{exercise}" in cell.source:  # parsing every cell took 0.3 s a book
            walk(cell.source)
    return labels


def book_version(root: Path = ROOT, chapters: list[ChapterOutline] | None = None) -> str:
    """The edition of the book's drills and exercises, as 12 hex digits: what a practice record names.

    The first 12 hex digits of the SHA-256 of the JSON of the sorted drill kinds, each with its
    level numbers (``chainrule_course.drills.catalog``), and the sorted exercise labels of the
    numbered chapters. It changes when a kind, a kind's levels or an exercise label is added,
    removed or renamed, and with nothing else (not with a title or a chapter's prose): a record
    of the same edition names only what the book has. The pages write it into the reader's
    record (``progress.js``, given it by ``_ext/live_code.py``), and ``make progress``
    (``tools/progress``) compares each record's with it. ``chapters`` is :func:`outline`'s
    result when the caller has read it already.
    """
    chapters = outline(root) if chapters is None else chapters
    drills = {name: sorted(number for number, _ in kind["levels"]) for name, kind in catalog().items()}
    labels = sorted(label for chapter in chapters for label in chapter.exercises)
    text = json.dumps({"drills": drills, "exercises": labels}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]
