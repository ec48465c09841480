"""Every kind of drill in the book, in the book's order: its chapter, title, levels and answer's form.

Each kind is declared by its builder's decorator (:func:`.registry.drill`), in the module of its
chapter's kinds; this module reads them into :data:`KINDS`, in the book's order. The page's script and
the Practice page's record read that table (the book's build writes it into the page), and
:func:`question` builds a kind's question from a level and a seed: a :class:`~.graph_kinds.Question` on a
drawn graph for the graph and backward chapters, a :class:`~.problems.Problem` for the later ones.
"""

from . import (
    backward_calls,
    costs,
    deep,
    graph_kinds,
    losses,
    matrices,
    network,
    neurons,
    programs,
    recurrences,
    tangents,
    windows,
)
from .registry import REGISTERED, Kind

__all__ = ["KINDS", "MODULES", "Kind", "catalog", "question"]

#: The modules that declare kinds, in the book's order of their chapters (one module per chapter's
#: kinds, the frameworks and profiling chapters' in one): importing them declares their kinds.
MODULES = (
    neurons,
    graph_kinds,
    backward_calls,
    matrices,
    losses,
    tangents,
    deep,
    costs,
    programs,
    windows,
    recurrences,
    network,
)

#: Every kind by name, in the book's order: by module, and within a module in the order it declares them.
KINDS = {name: kind for module in MODULES for name, kind in REGISTERED.items() if kind.module == module.__name__}
if len(KINDS) != len(REGISTERED):
    raise ImportError(
        f"drills.catalog: the kinds {sorted(set(REGISTERED) - set(KINDS))} come from no module of MODULES"
    )


def question(kind, level, seed):
    """The question of ``kind`` at ``level`` for ``seed``; ValueError names a bad kind, level or seed."""
    if kind not in KINDS:
        raise ValueError(f"drills.question: kind must be one of {', '.join(KINDS)}, got {kind!r}")
    if level not in KINDS[kind].levels:
        raise ValueError(
            f"drills.question: level must be one of {sorted(KINDS[kind].levels)} for {kind}, got {level!r}"
        )
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"drills.question: seed must be a whole number >= 0, got {seed!r}")
    return KINDS[kind].build(level, seed)


def catalog():
    """The table as the page reads it: ``{kind: {chapter, title, levels: [[number, name], ...], form}}``."""
    return {
        name: {
            "chapter": kind.chapter,
            "title": kind.title,
            "levels": [[number, f"{number}: {text}"] for number, text in kind.levels.items()],
            "form": kind.form,
        }
        for name, kind in KINDS.items()
    }
