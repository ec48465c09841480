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
detail column gives the best, median and worst of the rounds, the bytes each visit fetched from
the server, the CPU seconds the browser's processes used meanwhile (a busy machine changes them
much less than the wall-clock seconds), and the load average over the section.

``--against DIR`` (repeatable; or ``PAGE_AGAINST=DIR[:DIR...]`` in the environment, for ``make
bench``) measures other built sites, e.g. an earlier commit's, in the same run: each round
visits every site, in an order that turns round by round, so that a busy moment of the machine
hits them all. Their rows say ``[against DIR]``.
"""

import argparse
import functools
import http.server
import os
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


def _serve(site):
    handler = functools.partial(_Quiet, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def _browser_cpu():
    """Seconds of CPU the browser's processes (this process's descendants) have used, from /proc: what a
    visit costs, which a busy machine changes much less than the wall-clock seconds."""
    parents, times = {}, {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # ended meanwhile
            continue
        pid = int(stat.parent.name)
        parents[pid], times[pid] = int(fields[1]), int(fields[11]) + int(fields[12])  # ppid, utime + stime
    mine, found = {os.getpid()}, True
    while found:
        found = {pid for pid, parent in parents.items() if parent in mine and pid not in mine}
        mine |= found
    return sum(times[pid] for pid in mine - {os.getpid()}) / os.sysconf("SC_CLK_TCK")


def _first_output(page, url):
    """The seconds from pressing Live code to cell 1's first output, and the browser's CPU seconds meanwhile."""
    page.goto(url, wait_until="load")
    cpu = _browser_cpu()
    page.get_by_role("button", name="Live code").click()
    page.get_by_role("button", name="Run cell 1", exact=True).click()
    page.wait_for_function("() => document.documentElement.getAttribute('data-live-first-output')", timeout=120_000)
    seconds = float(page.evaluate("() => document.documentElement.getAttribute('data-live-first-output')"))
    return seconds, _browser_cpu() - cpu


def _runtime_bytes(start):
    return sum(size for path, size in _Quiet.served[start:] if "/_static/live/" in path)


def _round(browser, origin):
    context = browser.new_context()
    page = context.new_page()
    try:
        start = len(_Quiet.served)
        page.goto(origin + "chapters/intro.html", wait_until="load")
        page.wait_for_function("() => crossOriginIsolated", timeout=20_000)
        cold, cold_cpu = _first_output(page, origin + "chapters/intro.html")
        cold_bytes = _runtime_bytes(start)
        # The snapshot is written after the first start: the next chapter waits for it.
        page.wait_for_function(
            "async () => (await (await caches.open('chainrule-python-snapshot')).keys()).length > 0", timeout=30_000
        )
        start = len(_Quiet.served)
        warm, warm_cpu = _first_output(page, origin + "chapters/graph.html")
        warm_bytes = _runtime_bytes(start)
        page.evaluate("() => caches.delete('chainrule-python-snapshot')")
        scratch, _ = _first_output(page, origin + "chapters/backward.html")
        return cold, warm, scratch, cold_bytes, warm_bytes, cold_cpu, warm_cpu
    finally:
        context.close()


def _row(name, seconds, goal, detail):
    met = None if not goal else bool(seconds <= float(goal.removeprefix("<=").split()[0]))
    return {"section": SECTION, "name": name, "ratio": seconds, "goal": goal, "met": met, "detail": detail}


def run(quick=False, against=(), rounds=None):
    """This build's rows, and those of each site in ``against`` (built sites' folders), measured in turn."""
    against = against or [folder for folder in os.environ.get("PAGE_AGAINST", "").split(os.pathsep) if folder]
    sites = {"": SITE} | {f" [against {folder}]": Path(folder) for folder in against}
    for site in sites.values():
        if not (site / "chapters" / "intro.html").is_file():
            raise FileNotFoundError(f"{site} has no built site: run `make book` first")
    from playwright.sync_api import sync_playwright

    servers = {label: _serve(site) for label, site in sites.items()}
    found = {label: [] for label in sites}
    load = [os.getloadavg()[0]]
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=str(CHROMIUM) if CHROMIUM.exists() else None)
            try:
                for number in range(rounds or (1 if quick else 3)):
                    order = list(sites)[number % len(sites) :] + list(sites)[: number % len(sites)]
                    for label in order:
                        origin = f"http://127.0.0.1:{servers[label].server_address[1]}/"
                        found[label].append(_round(browser, origin))
                    load.append(os.getloadavg()[0])
            finally:
                browser.close()
    finally:
        for server in servers.values():
            server.shutdown()
    loaded = f"load average {min(load):.1f}-{max(load):.1f}"
    return [row for label in sites for row in _rows(label, found[label], loaded)]


def _rows(label, rounds, loaded):
    cold, warm, scratch, cold_bytes, warm_bytes, cold_cpu, warm_cpu = (list(c) for c in zip(*rounds, strict=True))

    def said(times):
        middle = statistics.median(times)
        return f"best {min(times):.2f} s, median {middle:.2f} s, worst {max(times):.2f} s of {len(times)}"

    return [
        _row(
            f"cold: first output (s){label}",
            min(cold),
            "<= 4",
            f"{said(cold)}; browser CPU {said(cold_cpu)}; fetched {max(cold_bytes) / 1e6:.1f} MB; {loaded}",
        ),
        _row(
            f"next chapter: first output (s){label}",
            min(warm),
            "<= 1.5",
            f"{said(warm)}; browser CPU {said(warm_cpu)}; fetched {max(warm_bytes) / 1e6:.2f} MB of the runtime",
        ),
        _row(f"next chapter / no snapshot{label}", min(warm) / min(scratch), "", f"no snapshot: {said(scratch)}"),
    ]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", action="append", default=[], help="another built site, measured in turn")
    parser.add_argument("--rounds", type=int, help="rounds per site (default 3)")
    options = parser.parse_args()
    for row in run(against=options.against, rounds=options.rounds):
        print(row)
