#!/usr/bin/env python3
"""Drives kgbox's web console (`GET /`) in a real browser: Debian's chromium
under the `playwright` package, at a phone-size viewport.

Usage: console.py BASE_URL SCREENSHOT_PNG [KEYED_URL KEY]
       (e.g. http://127.0.0.1:8080 out.png)

Against the built-in demo bundle: asks who directed Blade Runner, waits for
Ridley Scott, follows the answer to its entity page and checks its edges,
goes back and forward, runs a DSL query, tries the SPARQL mode (bindings
or the server's error, whether or not /sparql is routed), opens a misspelt
entity (a readable error with a suggestion) and the status view. Checks that
no page is wider than the screen, that no request leaves the server's origin
and that the page logs no script error or policy violation. Saves a
full-page screenshot of the answered question to SCREENSHOT_PNG (and, next
to it, the entity, query, SPARQL and status views and a desktop-size one).
With KEYED_URL and KEY (a server that needs API keys): the console asks for
a key at its first call, answers once given KEY, and sends it from then on
(`-key.png` beside the screenshot shows the dialog).

Exits 0 when every check passes; otherwise prints what failed and exits 1
(2 for bad usage or a missing package or browser: run scripts/setup.sh --dev).
"""

import os
import re
import sys
from urllib.parse import urlparse

from checklist import check, failures, run
from chromium import CHROMIUM, CHROMIUM_ARGS

QUESTION = "who directed [Blade Runner]"
EXPECTED = "Ridley Scott"
FILM = "Blade Runner"
PHONE = {"width": 390, "height": 844}
TIMEOUT_MS = 20_000


def no_overflow(page, where):
    widths = page.evaluate(
        "() => [document.scrollingElement.scrollWidth, window.innerWidth]"
    )
    check(
        widths[0] <= widths[1],
        f"{where}: no horizontal overflow (scrollWidth {widths[0]} <= innerWidth {widths[1]})",
    )


def sibling(path, suffix):
    root, ext = os.path.splitext(path)
    return f"{root}-{suffix}{ext or '.png'}"


def main():
    if len(sys.argv) not in (3, 5):
        print(__doc__, file=sys.stderr)
        return 2
    base, shot = sys.argv[1].rstrip("/"), sys.argv[2]
    keyed, key = (sys.argv[3].rstrip("/"), sys.argv[4]) if len(sys.argv) == 5 else (None, None)
    try:
        from playwright.sync_api import expect, sync_playwright
    except ImportError as e:
        print(f"console.py: the playwright package is missing ({e}): run scripts/setup.sh --dev", file=sys.stderr)
        return 2
    if not os.access(CHROMIUM, os.X_OK):
        print(f"console.py: {CHROMIUM} is missing: run scripts/setup.sh --dev", file=sys.stderr)
        return 2
    host = urlparse(base).hostname

    requests = []
    problems = []

    def watch(page):
        page.on("request", lambda r: requests.append(r.url))
        page.on("pageerror", lambda e: problems.append(f"script error: {e}"))

        def on_console(m):
            # An API error answer (4xx) is logged by the browser as a failed
            # load; that is expected where the test provokes one.
            if m.type == "error" and not m.text.startswith("Failed to load resource"):
                problems.append(f"console error: {m.text}")

        page.on("console", on_console)

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            phone = browser.new_context(
                viewport=PHONE, device_scale_factor=2, is_mobile=True, has_touch=True
            )
            page = phone.new_page()
            page.set_default_timeout(TIMEOUT_MS)
            expect.set_options(timeout=TIMEOUT_MS)
            watch(page)

            def opens():
                resp = page.goto(base + "/")
                check(resp is not None and resp.status == 200, "GET / answers 200")
                ctype = resp.headers.get("content-type", "") if resp else ""
                check(ctype.startswith("text/html"), f"GET / is HTML ({ctype})")
                csp = resp.headers.get("content-security-policy", "") if resp else ""
                check("default-src 'self'" in csp, "GET / sends a Content-Security-Policy")
                expect(page.locator("#bundle-badge")).to_contain_text("demo-movies")
                check(page.url.endswith("/") or "#/ask" in page.url, f"starts on Ask ({page.url})")
                expect(page.locator("#view-ask")).to_be_visible()

            def asks():
                page.fill("#ask-input", QUESTION)
                page.click("#ask-button")
                first = page.locator("#ask-results .answer-name").first
                expect(first).to_have_text(EXPECTED)
                check(True, f"asked {QUESTION!r}: first answer {EXPECTED}")
                expect(page.locator("#ask-query")).to_contain_text("directed_by")
                query = page.locator("#ask-query").inner_text()
                check(FILM in query, f"the query that ran is shown: {query}")
                path = page.locator("#ask-results .path").first.inner_text()
                check(
                    FILM in path and "directed_by" in path and EXPECTED in path,
                    f"the provenance path is shown: {path}",
                )
                meta = page.locator("#view-ask dl.meta").inner_text()
                check("Planner" in meta and "Executor" in meta, "planner and executor shown")
                check("total" in meta, "timings shown")
                no_overflow(page, "ask")
                page.screenshot(path=shot, full_page=True)

            def entity():
                page.locator("#ask-results .answer-name").first.click()
                page.wait_for_url("**#/entity/Ridley%20Scott")
                expect(page.locator("#entity-head h1")).to_have_text(EXPECTED)
                groups = page.locator("#entity-out .edge-group")
                expect(groups.first).to_be_visible()
                check(groups.count() > 0, f"entity page shows {groups.count()} edge groups")
                directed = page.locator('#edges-in .edge-group[data-relation="directed_by"]')
                expect(directed).to_contain_text(FILM)
                check(True, f"incoming directed_by lists {FILM}")
                no_overflow(page, "entity")
                page.screenshot(path=sibling(shot, "entity"), full_page=True)
                # Click through to a neighbour, then back and forward.
                directed.get_by_role("link", name=FILM, exact=True).click()
                page.wait_for_url("**#/entity/Blade%20Runner")
                expect(page.locator("#entity-head h1")).to_have_text(FILM)
                expect(
                    page.locator('#edges-out .edge-group[data-relation="directed_by"]')
                ).to_contain_text(EXPECTED)
                page.go_back()
                expect(page.locator("#entity-head h1")).to_have_text(EXPECTED)
                page.go_forward()
                expect(page.locator("#entity-head h1")).to_have_text(FILM)
                check(True, "neighbour links, back and forward work")
                page.go_back()
                page.go_back()
                expect(page.locator("#ask-results .answer-name").first).to_have_text(EXPECTED)
                check(True, "back to the answered question")

            def query():
                page.goto(base + "/#/query")
                expect(page.locator("#view-query")).to_be_visible()
                page.fill("#query-input", f'"{FILM}" -> directed_by')
                page.click("#query-button")
                expect(page.locator("#query-results .answer-name").first).to_have_text(EXPECTED)
                rendered = page.locator("#view-query pre.code")
                expect(rendered.first).to_contain_text("SELECT")
                expect(rendered.nth(1)).to_contain_text("MATCH")
                check(True, "DSL query answers and renders as SPARQL and openCypher")
                no_overflow(page, "query")
                page.screenshot(path=sibling(shot, "query"), full_page=True)

            def sparql_mode():
                # The rendered SPARQL, run on /sparql. The endpoint may not
                # be routed: either its bindings or the server's error must
                # appear, readably, and nothing may break.
                page.get_by_role("button", name="Run on the SPARQL endpoint").click()
                expect(page.locator("#mode-sparql")).to_have_class(re.compile(r"\bon\b"))
                expect(page.locator("#query-input")).to_have_value(re.compile("SELECT"))
                outcome = page.locator("#query-results, #query-out .notice.error")
                expect(outcome.first).to_be_visible()
                text = " ".join(outcome.first.inner_text().split())
                if page.locator("#query-results").count():
                    check(EXPECTED in text, f"/sparql answers {EXPECTED}: {text[:120]!r}")
                else:
                    check(bool(text), f"/sparql's error is shown: {text[:120]!r}")
                no_overflow(page, "sparql")
                page.screenshot(path=sibling(shot, "sparql"), full_page=True)
                page.click("#mode-dsl")
                expect(page.locator("#query-input")).to_have_value(f'"{FILM}" -> directed_by')

            def bad_query():
                # A bad query: the API's error is shown readably.
                page.fill("#query-input", '"Blade Runer" -> directed_by')
                page.click("#query-button")
                err = page.locator("#query-out .notice.error")
                expect(err).to_contain_text("unknown_entity")
                expect(err.get_by_role("link", name=FILM, exact=True)).to_be_visible()
                check(True, "an unknown entity shows the error and a suggestion link")

            def missing_entity():
                page.goto(base + "/#/entity/Blade%20Runer")
                err = page.locator("#entity-out .notice.error")
                expect(err).to_contain_text("entity_not_found")
                err.get_by_role("link", name=FILM, exact=True).click()
                expect(page.locator("#entity-head h1")).to_have_text(FILM)
                check(True, "a misspelt entity suggests the right one")

            def status():
                page.goto(base + "/#/status")
                expect(page.locator("#bundle-panel")).to_contain_text("demo-movies")
                expect(page.locator("#card-ready")).to_contain_text("ready")
                cards = page.locator("#status-cards").inner_text()
                check("Requests" in cards, "status shows figures from /metrics")
                no_overflow(page, "status")
                page.screenshot(path=sibling(shot, "status"), full_page=True)

            def desktop():
                ctx = browser.new_context(viewport={"width": 1280, "height": 900})
                wide = ctx.new_page()
                wide.set_default_timeout(TIMEOUT_MS)
                watch(wide)
                wide.goto(base + "/#/ask")
                wide.fill("#ask-input", QUESTION)
                wide.press("#ask-input", "Enter")
                expect(wide.locator("#ask-results .answer-name").first).to_have_text(EXPECTED)
                no_overflow(wide, "desktop ask")
                wide.screenshot(path=sibling(shot, "desktop"), full_page=True)
                ctx.close()

            def with_key():
                ctx = browser.new_context(viewport=PHONE, device_scale_factor=2, is_mobile=True, has_touch=True)
                keyed_page = ctx.new_page()
                keyed_page.set_default_timeout(TIMEOUT_MS)
                watch(keyed_page)
                keyed_page.goto(keyed + "/#/ask")
                dialog = keyed_page.locator("#key-dialog")
                expect(dialog).to_be_visible()
                expect(keyed_page.locator("#key-reason")).to_contain_text("API key")
                check(True, "the console asks for a key where reads need one")
                keyed_page.screenshot(path=sibling(shot, "key"), full_page=True)
                keyed_page.fill("#key-input", key)
                keyed_page.click("#key-ok")
                expect(dialog).to_be_hidden()
                expect(keyed_page.locator("#bundle-badge")).to_contain_text("demo-movies")
                keyed_page.fill("#ask-input", QUESTION)
                keyed_page.click("#ask-button")
                expect(keyed_page.locator("#ask-results .answer-name").first).to_have_text(EXPECTED)
                check(True, "with the key given once, the console answers")
                stored = keyed_page.evaluate("() => sessionStorage.getItem('kgbox-api-key')")
                check(stored == key, "the key is kept in the tab's session storage")
                ctx.close()

            steps = [
                ("open", opens),
                ("ask", asks),
                ("entity", entity),
                ("query", query),
                ("sparql mode", sparql_mode),
                ("bad query", bad_query),
                ("missing entity", missing_entity),
                ("status", status),
                ("desktop", desktop),
            ]
            if keyed:
                steps.append(("key", with_key))
            for name, fn in steps:
                run(name, fn)
        finally:
            browser.close()

    check(len(requests) > 0, f"{len(requests)} requests recorded")
    foreign = [u for u in requests if urlparse(u).hostname != host]
    check(not foreign, f"no request leaves {host}: {foreign[:5]}")
    check(not problems, f"no script errors or policy violations: {problems[:5]}")
    check(os.path.getsize(shot) > 0 if os.path.exists(shot) else False, f"screenshot saved to {shot}")

    if failures:
        print(f"{len(failures)} check(s) failed", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
