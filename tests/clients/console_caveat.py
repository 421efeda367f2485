#!/usr/bin/env python3
"""Asks one question in kgbox's web console (`GET /`, Debian's chromium under
the `playwright` package) and checks the label above its answers.

Usage: console_caveat.py BASE_URL QUESTION LABEL
       (e.g. http://127.0.0.1:8080 "which comedies did [Ridley Scott] direct"
        "Repaired query, a guess")

Exits 0 when the answers come with a caveat that starts with LABEL;
otherwise prints what it saw and exits 1 (2 for bad usage or a missing
package or browser: run scripts/setup.sh --dev).
"""

import os
import sys

from chromium import CHROMIUM, CHROMIUM_ARGS
from console import TIMEOUT_MS


def main():
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    base, question, label = sys.argv[1].rstrip("/"), sys.argv[2], sys.argv[3]
    try:
        from playwright.sync_api import expect, sync_playwright
    except ImportError as e:
        print(f"console_caveat.py: the playwright package is missing ({e}): run scripts/setup.sh --dev", file=sys.stderr)
        return 2
    if not os.access(CHROMIUM, os.X_OK):
        print(f"console_caveat.py: {CHROMIUM} is missing: run scripts/setup.sh --dev", file=sys.stderr)
        return 2
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            page.set_default_timeout(TIMEOUT_MS)
            expect.set_options(timeout=TIMEOUT_MS)
            page.goto(base + "/#/ask")
            page.fill("#ask-input", question)
            page.click("#ask-button")
            expect(page.locator("#ask-results .answer-name").first).to_be_visible()
            caveat = page.locator("#ask-caveat")
            expect(caveat).to_be_visible()
            text = caveat.inner_text()
            answers = page.locator("#ask-results .answer-name").all_inner_texts()
        finally:
            browser.close()
    print(f"caveat: {text}")
    print(f"answers: {answers}")
    if not text.startswith(label):
        print(f"FAIL the caveat does not start with {label!r}")
        return 1
    print("ok   labelled")
    return 0


if __name__ == "__main__":
    sys.exit(main())
