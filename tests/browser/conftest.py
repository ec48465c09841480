"""The full tier's browser/ folder: Chromium and JupyterLab on the built pages, after ``make test``'s builds.

One Chromium per test file (``browser``: a file that drives Playwright itself, as JupyterLab's
does, cannot share a process with another Playwright) and one HTTP server per folder served
(``serve``) for the whole run.
"""

import pytest
from browsing import chromium, serve_folders
from builds import book_html, chapter_page  # noqa: F401  (fixtures of what make test builds)


@pytest.fixture(scope="module")
def browser():
    """Headless Chromium, Debian's, driven by Playwright: one per test file."""
    with chromium() as launched:
        yield launched


@pytest.fixture(scope="module")
def warm_context(browser):
    """A context a test file's visits may share (``Visit(..., shared=warm_context)``): each starts with its
    origin's storage cleared but Cache Storage, so Python starts from the snapshot the first one kept, as on a
    reader's next chapter. A visit that needs a first visit's service worker and reload takes its own."""
    context = browser.new_context(service_workers="block")
    yield context
    context.close()


@pytest.fixture(scope="session")
def serve():
    """``serve(folder)`` -> the base URL of an HTTP server on 127.0.0.1 for that folder."""
    with serve_folders() as start:
        yield start
