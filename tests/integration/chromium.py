"""Headless Chromium for the dashboard page test: Debian's chromium (never a browser Playwright
downloads), driven by Playwright, so script errors, console errors and every request are recorded as
they happen, not inferred from the DOM."""

from __future__ import annotations

import shutil
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

CHROMIUM = "/usr/bin/chromium"
WIDTH = 1400
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run",
         "--no-default-browser-check", "--hide-scrollbars"]


@contextmanager
def headless_chromium(profile: Path) -> Iterator[Any]:
    """A headless Chromium with a fresh profile in `profile`, as a Playwright browser context."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(profile), executable_path=CHROMIUM, headless=True, args=FLAGS,
            viewport={"width": WIDTH, "height": 1000}, device_scale_factor=1)
        try:
            yield context
        finally:
            context.close()
            shutil.rmtree(profile, ignore_errors=True)


class PageEvents:
    """What a page reported while it loaded: uncaught exceptions, console messages, requests."""

    def __init__(self, page: Any) -> None:
        self.exceptions: list[str] = []
        self.console: list[tuple[str, str]] = []  # (type, text)
        self.requests: list[str] = []
        self.failed: list[str] = []
        page.on("pageerror", lambda error: self.exceptions.append(str(error)))
        page.on("console", lambda message: self.console.append((message.type, message.text)))
        page.on("request", lambda request: self.requests.append(request.url))
        page.on("requestfailed", lambda request: self.failed.append(request.url))

    def errors(self) -> dict[str, list]:
        return {"exceptions": self.exceptions,
                "console": [m for m in self.console if m[0] in ("error", "assert")],
                "failed requests": self.failed}
