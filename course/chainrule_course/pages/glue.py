"""Numbers that a chapter's cells compute, pasted into its prose.

A chapter writes ``glue("speedup", ratio)`` in a cell and ``{glue:text}`speedup:.1f```
in a paragraph; the book shows the number the cell computed, so the prose cannot
disagree with the code.  This is myst-nb's ``glue`` with two differences:

* it displays nothing by default (the number belongs in the prose, not under the cell);
* a numpy scalar is stored as the Python number it holds, since the book formats the
  stored text (``1.5``, not ``np.float64(1.5)``).

Where myst-nb is not installed (Colab), it does nothing: the prose of the notebook
editions already shows the number the book build computed (``tools/book/notebooks.py``).
"""

import numbers


def glue(name, value, display=False):
    """Store ``value`` under ``name`` for ``{glue:text}`name``` in the page's prose.

    ``value`` is a number or a string.  Returns ``value``, so a cell can glue and use a
    number in one line.
    """
    if not isinstance(name, str) or not name:
        raise TypeError(f"glue: the name must be a non-empty string, got {name!r}")
    if not isinstance(value, (numbers.Number, str)):
        raise TypeError(f"glue({name!r}): expected a number or a string, got {type(value).__name__} {value!r}")
    stored = value.item() if hasattr(value, "item") else value  # a numpy scalar as a Python number
    try:
        from myst_nb import glue as myst_glue
    except ImportError:
        return value
    myst_glue(name, stored, display=display)
    return value
