"""The book's tools, each run as ``python -m tools.book.<module>`` from the repository's root.

* ``book_model`` -- the one book model: the chapters, their labels and numbers
* ``myst`` -- MyST read with myst-parser's own parser
* ``reading_time`` -- a chapter's reading time, counted from its source, and the book's table
* ``plain_markdown`` -- a chapter's MyST as the plain Markdown of a notebook
* ``notebooks`` -- the Colab and student notebooks, and their set-up cells (``setup_cells/``)
* ``questions`` -- the exercises with answer and check cells, as the assignments and Live code see them
* ``package`` -- the engine's and the course's wheels and sdists
* ``build_book`` -- ``jupyter-book build`` on every core, then the editions
* ``student_book`` -- the student site's sources, from the build's executed notebooks
* ``pdf`` -- the book and the student's as PDFs, printed by Chromium
* ``make_figures`` -- the committed figures in ``img/``
"""
