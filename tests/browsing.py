"""Chromium for the tests, and the pages they open in it: Debian's chromium driven by Playwright
(no browser download), and the built site served on 127.0.0.1 with every request recorded."""

from __future__ import annotations

import contextlib
import functools
import http.server
import shutil
import threading
from pathlib import Path

import pytest
from playwright.sync_api import Browser, BrowserContext, sync_playwright

FONTS_TIMEOUT_MS = 20_000


def wait_for_fonts(page) -> None:
    """Wait until the fonts the page draws (MathJax's for its maths, the icons') have loaded."""
    page.wait_for_function("() => document.fonts.status === 'loaded'", timeout=FONTS_TIMEOUT_MS)


def chromium_path() -> str:
    path = shutil.which("chromium") or "/usr/bin/chromium"
    if not Path(path).is_file():
        pytest.fail(
            "Chromium is not installed (looked for `chromium` on PATH and /usr/bin/chromium): "
            "run `make setup`, or `apt-get install -y chromium`.",
            pytrace=False,
        )
    return path


@contextlib.contextmanager
def chromium():
    """Headless Chromium, launched once for the ``with`` block."""
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=chromium_path(),
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"],
        )
        yield browser
        browser.close()


#: Every path the test servers answered, as "port/path": what reached the network.
SERVED: list[str] = []


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # keep the test output clean
        pass

    def log_request(self, code="-", size="-"):
        SERVED.append(f"{self.server.server_address[1]}{self.path}")


@contextlib.contextmanager
def serve_folders():
    """``start(folder)`` -> the base URL of an HTTP server on 127.0.0.1 for that folder, one server
    per folder, all shut down at the end of the ``with`` block."""
    servers = {}

    def start(folder: Path) -> str:
        key = Path(folder).resolve()
        if key not in servers:
            handler = functools.partial(QuietHandler, directory=str(key))
            server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
            threading.Thread(target=server.serve_forever, daemon=True).start()
            servers[key] = server
        return f"http://127.0.0.1:{servers[key].server_address[1]}/"

    yield start
    for server in servers.values():
        server.shutdown()
        server.server_close()


#: What a visit in a shared context starts without, as Chrome DevTools Protocol names the kinds of storage:
#: everything a page keeps but Cache Storage, where Live code keeps the Python it started (a snapshot).
FRESH_STORAGE = "cookies,file_systems,indexeddb,local_storage,service_workers,shader_cache,websql"


class Visit:
    """A page opened with every request off the server's origin blocked and recorded, and errors kept.

    In a context of its own; or, given ``shared`` (a context of the same ``chromium``), in a new page of
    that one, with its origin's storage cleared first but Cache Storage: then Live code starts Python from
    the snapshot an earlier visit kept, in about a second instead of a cold start's ten CPU-seconds, as it
    does for a reader's second chapter."""

    def __init__(self, chromium: Browser, url: str, width: int = 1280, shared: BrowserContext | None = None, **options):
        # No service worker unless a test asks for one: on a first visit it reloads a page where
        # Python can run (site.js), which would race with what the test does meanwhile.
        options.setdefault("service_workers", "block")
        origin = url.split("/", 3)[:3]
        self.origin = "/".join(origin) + "/"
        self.shared = shared is not None
        if shared is None:
            self.context = chromium.new_context(viewport={"width": width, "height": 900}, **options)
            self.page = self.context.new_page()
        else:
            self.context = shared
            self.page = shared.new_page()
            self.page.set_viewport_size({"width": width, "height": 900})
            storage = shared.new_cdp_session(self.page)
            storage.send(
                "Storage.clearDataForOrigin", {"origin": self.origin.rstrip("/"), "storageTypes": FRESH_STORAGE}
            )
            storage.detach()
        self.blocked: list[str] = []
        self.errors: list[str] = []
        self.page.route("**/*", self._route)
        self.page.on("pageerror", lambda error: self.errors.append(f"uncaught JavaScript error: {error}"))
        self.page.on(
            "console",
            lambda message: self.errors.append(f"console error: {message.text}") if message.type == "error" else None,
        )
        self.first_served = len(SERVED)  # the server is shared: what it answered from here on is ours
        self.page.goto(url, wait_until="load")

    def served(self) -> list[str]:
        """The paths this visit's server answered since the visit began (tests run one at a time)."""
        port = self.origin.rstrip("/").rsplit(":", 1)[1]
        return [path.split("?")[0][len(port) :] for path in SERVED[self.first_served :] if path.startswith(port + "/")]

    def _route(self, route):
        url = route.request.url
        if url.startswith((self.origin, "data:")):
            route.continue_()
        else:
            self.blocked.append(url)
            route.abort()

    def problems(self) -> list[str]:
        return self.errors + [f"request off 127.0.0.1 (blocked): {url}" for url in self.blocked]

    def close(self):
        if self.shared:
            self.page.close()
        else:
            self.context.close()
