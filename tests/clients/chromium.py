"""Debian's chromium as the playwright clients launch it: headless, no
sandbox (CI runs as root), nothing that reaches the network on its own."""

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
