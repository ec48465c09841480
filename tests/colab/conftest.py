"""The Colab tier, ``make test-colab``: the notebooks in the simulated Colab, as students run them. It runs
every chapter again, so it is outside ``make test``'s CPU budget; CI runs it after ``make test``."""

from builds import colab  # noqa: F401  (the simulated Colab, tests/colab_sim.py)
