"""The full tier's built/ folder: the book, its editions, the PDF, the packages and the
assignments, after ``make test``'s builds."""

from builds import book_html, chapter_page  # noqa: F401  (fixtures of what make test builds)
