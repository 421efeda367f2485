"""Named checks for the client scripts: each prints `ok` or `FAIL` and the
failures are kept for the script's exit status; a group of checks that
raises counts as one failed check, and the script goes on."""

from __future__ import annotations

from typing import Callable

failures: list[str] = []


def check(ok: bool, what: str) -> None:
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def run(name: str, fn: Callable[[], None]) -> None:
    """Runs one group of checks; an exception is a failure, not a crash."""
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - any client error is a failed check
        check(False, f"{name}: {type(e).__name__}: {e}")
