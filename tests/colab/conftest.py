"""The full tier's colab/ folder: the notebooks in the simulated Colab, after ``make test``'s builds."""

from builds import book_html, chapter_page, colab  # noqa: F401  (fixtures of what make test builds)
