"""Regenerate the committed figures in img/ (those shown outside executed cells, e.g. in the README).

Figures inside chapters are drawn by their code cells on every build and are not stored.
The few figures needed where no code runs are drawn here with chainrule's drawing module
and committed. The output is deterministic, so tests/engine/test_figures.py can regenerate them
and fail when a committed file is stale.

    python -m tools.book.make_figures              # rewrite img/
    python -m tools.book.make_figures --out DIR    # write into DIR instead (used by the tests)
    make figures                              # the same as the first line, after set-up
"""

from __future__ import annotations

import argparse
from pathlib import Path

from chainrule import dfs_trace
from chainrule_course.exercises.scalar_checks import EXAMPLE_GRAPH
from chainrule_course.explore.dfs_figures import draw_dfs_step

IMG = Path(__file__).resolve().parents[2] / "img"


def seed_dag():
    """The example graph of the course's source text on backprop over a DAG (its second chapter's, where
    ``e`` depends on ``c`` but ``f`` does not depend on ``e``), once the depth-first search
    from ``f`` has finished every node it reaches."""
    last_step = len(dfs_trace("f", parents=EXAMPLE_GRAPH)) - 1
    return draw_dfs_step("f", last_step, parents=EXAMPLE_GRAPH)


#: File name in img/ -> function returning a chainrule Figure.
FIGURES = {
    "seed-dag.svg": seed_dag,
}


def write_figures(out_dir: Path) -> list[Path]:
    """Draw every figure into ``out_dir``; return the written paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, draw in FIGURES.items():
        path = out_dir / name
        draw().save(path)
        written.append(path)
    return written


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=IMG, help="folder to write into (default: img/)")
    args = parser.parse_args(argv)
    for path in write_figures(args.out):
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
