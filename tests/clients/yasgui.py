#!/usr/bin/env python3
"""Drives YASGUI, the SPARQL editor people point at an endpoint, against
kgbox's /sparql from another origin: @zazuko/yasgui from local files
(tests/browser/yasgui/, `npm ci` by scripts/setup.sh --dev) in Debian's
chromium under the `playwright` package.

Usage: yasgui.py PAGE_ORIGIN ENDPOINT DENIED_ENDPOINT SCREENSHOT_PNG
  e.g. yasgui.py http://127.0.0.1:9123 http://127.0.0.1:8080/sparql \
                 http://127.0.0.1:8081/sparql yasgui.png

PAGE_ORIGIN is where this script serves tests/browser/yasgui (python's
http.server, in a thread); ENDPOINT a `kgbox serve` of the built-in demo
whose `http.cors_origins` lists PAGE_ORIGIN; DENIED_ENDPOINT one whose list
does not.

Against ENDPOINT: runs YASGUI's default query (`SELECT * WHERE { ?sub ?pred
?obj . } LIMIT 10`: ten rows in the results table) with its run button,
then, set in the editor and run with Ctrl+Enter, the films Spike Lee
directed (exactly Malcolm X and Red Hook Summer), then an ASK (True).
YASGUI POSTs a form with a safelisted Accept, a request that needs no
preflight: the script checks that none was sent and that the reply carries
`Access-Control-Allow-Origin: PAGE_ORIGIN` and `Vary: Origin`. Then with an
`X-Request-Id` header added to YASGUI's request settings, which needs one:
the browser sends the OPTIONS preflight, then the POST, and the page reads
the exposed `x-request-id` of the reply. No request may leave 127.0.0.1
(chromium resolves no other host), none may fail and the page may log no
error (a CORS refusal included).

Against DENIED_ENDPOINT the same query must fail in the browser: YASGUI
shows its error (the browser's "Failed to fetch"), no table, the DevTools
protocol reports a CORS error for the POST and chromium logs the refusal;
so the checks above can fail.

Saves screenshots: SCREENSHOT_PNG (the answered query) and, next to it,
-denied (the refused one).

Exits 0 when every check passes; otherwise prints what failed and exits 1
(2 for bad usage or a missing package, browser or YASGUI: run
scripts/setup.sh --dev).
"""

import functools
import http.server
import os
import re
import sys
import threading
from urllib.parse import quote, urlparse

from checklist import check, failures, run
from chromium import CHROMIUM, CHROMIUM_ARGS

YASGUI_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "browser", "yasgui")
YASGUI_FILES = [
    "index.html",
    "node_modules/@zazuko/yasgui/build/yasgui.min.js",
    "node_modules/@zazuko/yasgui/build/yasgui.min.css",
]
DEFAULT_QUERY = re.compile(r"SELECT \* WHERE \{\s*\?sub \?pred \?obj \.\s*\}\s*LIMIT 10\s*$")
PREFIXES = "PREFIX e: <http://kgbox.local/e/>\nPREFIX r: <http://kgbox.local/r/>\n"
FILMS_QUERY = PREFIXES + "SELECT ?film WHERE {\n  ?film r:directed_by e:Spike%20Lee\n} ORDER BY ?film\n"
FILMS = ["Malcolm%20X", "Red%20Hook%20Summer"]
ASK_QUERY = PREFIXES + "ASK { e:Malcolm%20X r:directed_by e:Spike%20Lee }\n"
REQUEST_ID = "yasgui-preflight-1"
TIMEOUT_MS = 20_000


def sibling(path, suffix):
    root, ext = os.path.splitext(path)
    return f"{root}-{suffix}{ext or '.png'}"


def serve_yasgui(origin):
    """Serves YASGUI_DIR on ORIGIN's host and port, in a daemon thread."""

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    url = urlparse(origin)
    handler = functools.partial(Quiet, directory=YASGUI_DIR)
    server = http.server.ThreadingHTTPServer((url.hostname, url.port), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


class Watched:
    """A page and what it did: requests (playwright's view, which has no
    preflights), every request the network stack sent and every failure
    (the DevTools protocol's view, preflights and CORS errors included),
    console errors and foreign requests."""

    def __init__(self, context, endpoint):
        self.endpoint = endpoint
        self.page = context.new_page()
        self.page.set_default_timeout(TIMEOUT_MS)
        self.responses = []  # playwright Response objects for ENDPOINT
        self.sent = []  # (method, url) from Network.requestWillBeSent
        self.failed = []  # Network.loadingFailed params
        self.ids = {}  # requestId -> (method, url)
        self.errors = []  # console errors and script errors
        self.foreign = []
        self.page.on("request", self._on_request)
        self.page.on("response", self._on_response)
        self.page.on("pageerror", lambda e: self.errors.append(f"script error: {e}"))
        self.page.on(
            "console",
            lambda m: self.errors.append(f"console {m.type}: {m.text} ({m.location.get('url')})")
            if m.type == "error"
            else None,
        )
        cdp = context.new_cdp_session(self.page)
        cdp.on("Network.requestWillBeSent", self._on_sent)
        cdp.on("Network.loadingFailed", self._on_failed)
        cdp.send("Network.enable")

    def _on_request(self, r):
        if urlparse(r.url).hostname != "127.0.0.1":
            self.foreign.append(r.url)

    def _on_response(self, r):
        if r.url.split("?")[0] == self.endpoint:
            self.responses.append(r)

    def _on_sent(self, e):
        req = (e["request"]["method"], e["request"]["url"].split("?")[0])
        self.ids[e["requestId"]] = req
        self.sent.append(req)

    def _on_failed(self, e):
        self.failed.append({**e, "request": self.ids.get(e["requestId"])})

    def to_endpoint(self, method):
        return [m for m, u in self.sent if m == method and u == self.endpoint]


def main():
    if len(sys.argv) != 5:
        print(__doc__, file=sys.stderr)
        return 2
    origin, endpoint, denied, shot = sys.argv[1].rstrip("/"), sys.argv[2], sys.argv[3], sys.argv[4]
    try:
        from playwright.sync_api import expect, sync_playwright
    except ImportError as e:
        print(f"yasgui.py: the playwright package is missing ({e}): run scripts/setup.sh --dev", file=sys.stderr)
        return 2
    if not os.access(CHROMIUM, os.X_OK):
        print(f"yasgui.py: {CHROMIUM} is missing: run scripts/setup.sh --dev", file=sys.stderr)
        return 2
    missing = [f for f in YASGUI_FILES if not os.path.isfile(os.path.join(YASGUI_DIR, f))]
    if missing:
        print(
            f"yasgui.py: YASGUI is not installed in {os.path.normpath(YASGUI_DIR)} (missing {missing}):"
            " run scripts/setup.sh --dev (npm ci --prefix tests/browser/yasgui)",
            file=sys.stderr,
        )
        return 2
    if urlparse(origin).hostname == urlparse(endpoint).hostname and urlparse(origin).port == urlparse(endpoint).port:
        print("yasgui.py: PAGE_ORIGIN must differ from ENDPOINT's origin", file=sys.stderr)
        return 2
    try:
        site = serve_yasgui(origin)
    except OSError as e:
        print(f"yasgui.py: cannot serve the page on {origin}: {e}", file=sys.stderr)
        return 1
    expect.set_options(timeout=TIMEOUT_MS)

    def page_url(ep):
        return f"{origin}/index.html?endpoint={quote(ep, safe='')}"

    def open_yasgui(w):
        resp = w.page.goto(page_url(w.endpoint))
        check(resp is not None and resp.status == 200, f"GET {origin}/index.html answers 200")
        expect(w.page.locator(".yasqe .CodeMirror")).to_be_visible()
        got = w.page.evaluate("() => yasgui.getTab().getEndpoint()")
        check(got == w.endpoint, f"YASGUI's endpoint is {got}")

    def set_query(w, text):
        w.page.evaluate("(q) => { yasgui.getTab().setQuery(q); }", text)

    def run_query(w, by_key=False):
        """Runs the editor's query and waits until YASGUI has drawn its
        outcome (results or error); returns the number of POSTs it sent."""
        w.page.evaluate(
            "() => { window.drawn = false;"
            " yasgui.getTab().getYasr().once('drawn', () => { window.drawn = true; }); }"
        )
        before = len(w.to_endpoint("POST"))
        if by_key:
            w.page.locator(".yasqe .CodeMirror").click()
            w.page.keyboard.press("Control+Enter")
        else:
            w.page.locator(".yasqe_queryButton").click()
        w.page.wait_for_function("() => window.drawn")
        return len(w.to_endpoint("POST")) - before

    def table(w):
        """The header and body cells of YASR's table, as text."""
        head = w.page.locator(".yasr table.dataTable thead th").all_inner_texts()
        rows = [
            [c.strip() for c in tr.locator("td").all_inner_texts()]
            for tr in w.page.locator(".yasr table.dataTable tbody tr").all()
        ]
        return [h.strip() for h in head], rows

    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM,
            # Nothing but loopback resolves: an attempt to reach the
            # internet fails at once (and is listed as foreign).
            args=CHROMIUM_ARGS + ["--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"],
        )
        try:
            ctx = browser.new_context(viewport={"width": 1280, "height": 900})
            w = Watched(ctx, endpoint)

            def default_query():
                open_yasgui(w)
                query = w.page.evaluate("() => yasgui.getTab().getYasqe().getValue()")
                check(bool(DEFAULT_QUERY.search(query)), f"the editor holds YASGUI's default query: {query!r}")
                posts = run_query(w)
                check(posts == 1, f"the query was one cross-origin POST to {endpoint} ({posts})")
                head, rows = table(w)
                check(
                    sorted(h for h in head if h) == ["obj", "pred", "sub"],
                    f"the table's columns are sub, pred, obj: {head}",
                )
                check(len(rows) == 10, f"the table shows 10 rows ({len(rows)})")
                check(
                    all("kgbox.local" in " ".join(r) or "e:" in " ".join(r) for r in rows),
                    f"the rows are demo triples: {rows[:1]}",
                )
                resp = w.responses[-1]
                headers = resp.all_headers()
                check(
                    resp.request.method == "POST" and resp.status == 200,
                    f"POST /sparql answered {resp.status}",
                )
                ctype = resp.request.all_headers().get("content-type", "")
                check(
                    ctype.startswith("application/x-www-form-urlencoded"),
                    f"YASGUI sent a form ({ctype})",
                )
                acao = headers.get("access-control-allow-origin")
                check(acao == origin, f"Access-Control-Allow-Origin: {acao}")
                vary = headers.get("vary", "").lower()
                check("origin" in vary and "accept" in vary, f"Vary names Origin and Accept: {vary}")
                check(
                    not w.to_endpoint("OPTIONS"),
                    "no preflight for YASGUI's form POST (a simple request)",
                )

            def films():
                set_query(w, FILMS_QUERY)
                run_query(w, by_key=True)
                head, rows = table(w)
                got = [r[-1] for r in rows]
                want_full = [f"<http://kgbox.local/e/{f}>" for f in FILMS]
                want_short = [f"e:{f}" for f in FILMS]
                check(
                    head[-1:] == ["film"] and got in (want_full, want_short),
                    f"Ctrl+Enter: the films Spike Lee directed are {got} (column {head[-1:]})",
                )
                w.page.screenshot(path=shot, full_page=True)

            def ask():
                set_query(w, ASK_QUERY)
                run_query(w)
                expect(w.page.locator(".yasr .booleanResult")).to_have_text(re.compile(r"^\s*True\s*$"))
                check(True, "ASK shows True")

            def preflight():
                # A header outside the CORS safelist: the browser must ask first.
                w.page.evaluate(
                    """(id) => {
                        const tab = yasgui.getTab();
                        tab.setRequestConfig({ headers: { "X-Request-Id": id } });
                        const yasqe = tab.getYasqe();
                        window.seenRequestId = null;
                        const seen = (_, resp) => {
                            yasqe.off("queryResponse", seen);
                            window.seenRequestId = resp && resp.headers ? resp.headers.get("x-request-id") : "no headers";
                        };
                        yasqe.on("queryResponse", seen);
                    }""",
                    REQUEST_ID,
                )
                set_query(w, FILMS_QUERY)
                options_before = len(w.to_endpoint("OPTIONS"))
                seq_before = len(w.sent)
                run_query(w)
                check(
                    len(w.to_endpoint("OPTIONS")) == options_before + 1,
                    "with X-Request-Id the browser sent an OPTIONS preflight",
                )
                order = [m for m, u in w.sent[seq_before:] if u == endpoint]
                check(order == ["OPTIONS", "POST"], f"preflight, then the query: {order}")
                sent_id = w.responses[-1].request.all_headers().get("x-request-id")
                check(sent_id == REQUEST_ID, f"the POST carried X-Request-Id: {sent_id}")
                _, rows = table(w)
                check(len(rows) == len(FILMS), f"the preflighted query shows {len(rows)} rows")
                seen = w.page.evaluate("() => window.seenRequestId")
                check(seen == REQUEST_ID, f"the page reads the exposed x-request-id: {seen}")
                w.page.evaluate("() => { yasgui.getTab().setRequestConfig({ headers: {} }); }")

            for name, fn in [
                ("default query", default_query),
                ("films", films),
                ("ask", ask),
                ("preflight", preflight),
            ]:
                run(name, fn)
            check(not w.foreign, f"no request leaves 127.0.0.1: {w.foreign[:5]}")
            check(not w.failed, f"no request failed: {w.failed[:3]}")
            check(not w.errors, f"no CORS, console or script errors: {w.errors[:5]}")
            ctx.close()

            # The negative: an endpoint that does not list the page's origin.
            ctx = browser.new_context(viewport={"width": 1280, "height": 900})
            d = Watched(ctx, denied)

            def refused():
                open_yasgui(d)
                set_query(d, FILMS_QUERY)
                run_query(d)
                err = d.page.locator(".yasr .errorResult")
                expect(err).to_be_visible()
                text = " ".join(err.inner_text().split())
                # YASGUI shows the browser's TypeError ("Failed to fetch"), or
                # its own list of reasons when the error has no message.
                check(
                    "Failed to fetch" in text or "Unable to get response from endpoint" in text,
                    f"YASGUI shows its error: {text[:100]!r}",
                )
                check(d.page.locator(".yasr table.dataTable tbody tr").count() == 0, "no results table")
                d.page.screenshot(path=sibling(shot, "denied"), full_page=True)
                cors = [f for f in d.failed if f.get("corsErrorStatus")]
                statuses = [f["corsErrorStatus"].get("corsError") for f in cors]
                check(
                    any(f["request"] == ("POST", denied) for f in cors),
                    f"the POST failed on CORS: {statuses}",
                )
                logged = [e for e in d.errors if "CORS policy" in e]
                check(bool(logged), f"chromium logged the CORS refusal: {logged[:1]}")
                check(not d.foreign, f"no request leaves 127.0.0.1: {d.foreign[:5]}")

            run("refused", refused)
            ctx.close()
        finally:
            browser.close()
            site.shutdown()

    check(os.path.exists(shot) and os.path.getsize(shot) > 0, f"screenshot saved to {shot}")
    if failures:
        print(f"{len(failures)} check(s) failed", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
