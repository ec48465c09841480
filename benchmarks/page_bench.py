"""page: how soon the page's Python gives its first output, in Chromium, over a local server.

The built site (``make book``) is served from ``_build/html`` on 127.0.0.1. Each round opens
a fresh browser profile, as a new reader's:

* **cold**: the intro, on a first visit (the page reloads once, isolated by the service
  worker), "Live code", then Run cell 1: the seconds from the press to the first output, with
  the runtime downloaded and Python started from scratch (it keeps a snapshot of itself);
* **next chapter**: the graph chapter, in the same profile: the runtime comes from the
  service worker's cache, Python from the snapshot;
* **next chapter, no snapshot**: the same, with the snapshot deleted first, side by side with
  the row above: what every chapter cost before the snapshot.

Goals (issue 72): the next chapter within 1.5 s, cold within 4 s, on two idle cores. The
detail column gives the bytes each visit fetched from the server.
"""

import functools
import http.server
import statistics
import threading
from pathlib import Path

SECTION = "page"
SITE = Path(__file__).resolve().parent.parent / "_build" / "html"
CHROMIUM = Path("/usr/bin/chromium")


class _Quiet(http.server.SimpleHTTPRequestHandler):
    served = []  # (path, bytes) of every response, in order

    def log_message(self, *args):
        pass

    def copyfile(self, source, outputfile):
        before = source.tell()
        super().copyfile(source, outputfile)
        _Quiet.served.append((self.path, source.tell() - before))


def _serve():
    handler = functools.partial(_Quiet, directory=str(SITE))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def _first_output(page, url):
    page.goto(url, wait_until="load")
    page.get_by_role("button", name="Live code").click()
    page.get_by_role("button", name="Run cell 1", exact=True).click()
    page.wait_for_function("() => document.documentElement.getAttribute('data-live-first-output')", timeout=120_000)
    return float(page.evaluate("() => document.documentElement.getAttribute('data-live-first-output')"))


def _runtime_bytes(start):
    return sum(size for path, size in _Quiet.served[start:] if "/_static/live/" in path)


def _round(browser, origin):
    context = browser.new_context()
    page = context.new_page()
    try:
        start = len(_Quiet.served)
        page.goto(origin + "chapters/intro.html", wait_until="load")
        page.wait_for_function("() => crossOriginIsolated", timeout=20_000)
        cold = _first_output(page, origin + "chapters/intro.html")
        cold_bytes = _runtime_bytes(start)
        page.wait_for_timeout(1_000)  # the snapshot is written after the first output
        start = len(_Quiet.served)
        warm = _first_output(page, origin + "chapters/graph.html")
        warm_bytes = _runtime_bytes(start)
        page.evaluate("() => caches.delete('chainrule-python-snapshot')")
        scratch = _first_output(page, origin + "chapters/backward.html")
        return cold, warm, scratch, cold_bytes, warm_bytes
    finally:
        context.close()


def _row(name, seconds, goal, detail):
    met = None if not goal else bool(seconds <= float(goal.removeprefix("<=").split()[0]))
    return {"section": SECTION, "name": name, "ratio": seconds, "goal": goal, "met": met, "detail": detail}


def run(quick=False):
    if not (SITE / "chapters" / "intro.html").is_file():
        raise FileNotFoundError(f"{SITE} has no built site: run `make book` first")
    from playwright.sync_api import sync_playwright

    server = _serve()
    origin = f"http://127.0.0.1:{server.server_address[1]}/"
    rounds = []
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=str(CHROMIUM) if CHROMIUM.exists() else None)
            try:
                rounds = [_round(browser, origin) for _ in range(1 if quick else 3)]
            finally:
                browser.close()
    finally:
        server.shutdown()
    cold, warm, scratch, cold_bytes, warm_bytes = (list(column) for column in zip(*rounds, strict=True))

    def said(times):
        return f"best {min(times):.2f} s, median {statistics.median(times):.2f} s of {len(times)}"

    return [
        _row("cold: first output (s)", min(cold), "<= 4", f"{said(cold)}; fetched {max(cold_bytes) / 1e6:.1f} MB"),
        _row(
            "next chapter: first output (s)",
            min(warm),
            "<= 1.5",
            f"{said(warm)}; fetched {max(warm_bytes) / 1e6:.2f} MB of the runtime",
        ),
        _row(
            "next chapter / no snapshot",
            min(warm) / min(scratch),
            "",
            f"no snapshot: {said(scratch)}",
        ),
    ]


if __name__ == "__main__":
    for row in run():
        print(row)
