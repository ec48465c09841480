"""The registry of drill kinds: each kind's builder declares itself, with :func:`drill`, where it is written.

A kind is declared once, by its builder's decorator: its name, the chapter (its page's name) that
teaches it, a title, levels and the answer's form. :mod:`.catalog` reads the registry into the
book's order; the page's script, the Practice page's record and ``make progress`` read the catalog.
"""

from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["REGISTERED", "Kind", "drill"]


@dataclass(frozen=True)
class Kind:
    """One kind of drill: the chapter (its page's name) that teaches it, a title, levels and the answer's form."""

    chapter: str
    title: str
    levels: dict
    form: str  # "number", "count" (a whole number, right only when exact), "numbers" or "names"
    build: Callable[[int, int], object]  # build(level, seed) -> Question or Problem
    module: str  # the module that declares it: the catalog orders the kinds by their modules


#: Every kind declared so far, by name, in the order its module was imported.
REGISTERED: dict[str, Kind] = {}


def drill(name, chapter, title, levels, form):
    """Declare the decorated ``build(level, seed)`` as the drill kind ``name``."""

    def register(build):
        if name in REGISTERED:
            raise ValueError(f"two drill kinds are named {name!r}")
        REGISTERED[name] = Kind(chapter, title, levels, form, build, build.__module__)
        return build

    return register
