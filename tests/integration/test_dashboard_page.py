"""The dashboard page after `lakewatch demo`: rendered from the demo's tables with the local engine,
opened in headless Chromium, it loads without script errors or network requests, every data widget
shows data, and a full-page screenshot is left in tests/artifacts/ for people to look at.

Chromium is driven over the DevTools protocol with a small standard-library WebSocket client, so
console errors and uncaught exceptions are captured as they happen, not inferred from the DOM.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from pipelines.dashboard.lvdash import load_dashboard
from tests.integration.helpers import PROJECT_ROOT

pytestmark = pytest.mark.integration

CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = PROJECT_ROOT / "tests" / "artifacts"
LVDASH = PROJECT_ROOT / "dashboards" / "lakewatch.lvdash.json"
WIDTH = 1400

class DevTools:
    """A minimal Chrome DevTools Protocol client over one WebSocket (RFC 6455, client side)."""

    def __init__(self, ws_url: str, timeout: float = 30.0) -> None:
        host_port, _, path = ws_url.removeprefix("ws://").partition("/")
        host, _, port = host_port.partition(":")
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall((f"GET /{path} HTTP/1.1\r\nHost: {host_port}\r\nUpgrade: websocket\r\n"
                           f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
        response = b""
        while b"\r\n\r\n" not in response:
            response += self.sock.recv(4096)
        head, _, self.buffer = response.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 101"), head
        self.next_id = 0
        self.events: list[dict] = []

    def _read(self, n: int) -> bytes:
        while len(self.buffer) < n:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("DevTools closed the connection")
            self.buffer += chunk
        data, self.buffer = self.buffer[:n], self.buffer[n:]
        return data

    def _send_frame(self, opcode: int, payload: bytes) -> None:
        header = bytes([0x80 | opcode])
        n = len(payload)
        if n < 126:
            header += bytes([0x80 | n])
        elif n < 65536:
            header += bytes([0x80 | 126]) + struct.pack("!H", n)
        else:
            header += bytes([0x80 | 127]) + struct.pack("!Q", n)
        mask = os.urandom(4)
        self.sock.sendall(header + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))

    def _message(self) -> dict:
        parts = []
        while True:
            first, second = self._read(2)
            n = second & 0x7F
            if n == 126:
                n = struct.unpack("!H", self._read(2))[0]
            elif n == 127:
                n = struct.unpack("!Q", self._read(8))[0]
            payload = self._read(n)
            opcode = first & 0x0F
            if opcode == 0x9:  # ping
                self._send_frame(0xA, payload)
                continue
            if opcode == 0x8:
                raise ConnectionError("DevTools closed the connection")
            parts.append(payload)
            if first & 0x80:
                return json.loads(b"".join(parts))

    def call(self, method: str, **params: Any) -> dict:
        self.next_id += 1
        self._send_frame(0x1, json.dumps({"id": self.next_id, "method": method, "params": params}).encode())
        while True:
            message = self._message()
            if message.get("id") == self.next_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})
            self.events.append(message)

    def wait_for(self, event: str, timeout: float = 30.0) -> dict:
        deadline = time.monotonic() + timeout
        for seen in self.events:
            if seen.get("method") == event:
                return seen
        while time.monotonic() < deadline:
            message = self._message()
            self.events.append(message)
            if message.get("method") == event:
                return message
        raise TimeoutError(event)

    def close(self) -> None:
        self.sock.close()


@pytest.fixture(scope="module")
def page_html(demo_home: Path) -> Path:
    """The dashboard HTML `lakewatch demo` rendered from its tables with the local engine (the demo
    exits non-zero when a widget fails), copied next to the screenshot for people to open."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    rendered = demo_home / "lakewatch_observability.html"
    assert rendered.is_file(), f"the demo wrote no dashboard page at {rendered}"
    output = ARTIFACTS / "dashboard.html"
    shutil.copyfile(rendered, output)
    return output


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory):
    """Headless Chromium with a fresh profile; yields its DevTools HTTP address and stops it by its id."""
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: `make browser` installs Debian's chromium")
    profile = tmp_path_factory.mktemp("chromium-profile")
    process = subprocess.Popen(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--no-first-run", "--no-default-browser-check", "--hide-scrollbars", f"--user-data-dir={profile}",
         "--remote-debugging-port=0", f"--window-size={WIDTH},1000", "about:blank"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        port_file = profile / "DevToolsActivePort"
        deadline = time.monotonic() + 30
        while not (port_file.exists() and port_file.read_text().strip()):
            assert process.poll() is None and time.monotonic() < deadline, "Chromium did not start"
            time.sleep(0.2)
        yield f"127.0.0.1:{port_file.read_text().split()[0]}"
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=15)
        shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture(scope="module")
def loaded(browser: str, page_html: Path) -> dict:
    """Opens the page, records what the browser reported, measures every widget, saves a screenshot."""
    with urllib.request.urlopen(f"http://{browser}/json/list", timeout=10) as r:
        target = next(t for t in json.load(r) if t["type"] == "page")
    tools = DevTools(target["webSocketDebuggerUrl"])
    try:
        for domain in ("Page", "Runtime", "Log", "Network"):
            tools.call(f"{domain}.enable")
        tools.call("Emulation.setDeviceMetricsOverride", width=WIDTH, height=1000, deviceScaleFactor=1, mobile=False)
        tools.call("Page.navigate", url=page_html.resolve().as_uri())
        tools.wait_for("Page.loadEventFired")
        widgets = tools.call("Runtime.evaluate", returnByValue=True, expression="""
            Array.from(document.querySelectorAll('[data-widget]')).map(e => {
              const box = e.getBoundingClientRect();
              return {name: e.dataset.widget, kind: e.dataset.kind, rows: e.dataset.rows, error: e.dataset.error || null,
                      width: box.width, height: box.height,
                      marks: e.querySelectorAll('svg rect, svg circle, svg path').length,
                      cells: e.querySelectorAll('td').length, value: (e.querySelector('.counter-value') || {}).textContent};
            })""")["result"]["value"]
        height = tools.call("Page.getLayoutMetrics")["cssContentSize"]["height"]
        shot = tools.call("Page.captureScreenshot", format="png", captureBeyondViewport=True,
                          clip={"x": 0, "y": 0, "width": WIDTH, "height": height, "scale": 1})
        (ARTIFACTS / "dashboard.png").write_bytes(base64.b64decode(shot["data"]))
        return {"widgets": widgets, "events": list(tools.events), "height": height}
    finally:
        tools.close()


def test_page_loads_without_script_errors_or_network_requests(loaded, page_html):
    events = loaded["events"]
    exceptions = [e["params"]["exceptionDetails"] for e in events if e.get("method") == "Runtime.exceptionThrown"]
    console = [e["params"] for e in events if e.get("method") == "Runtime.consoleAPICalled"
               and e["params"]["type"] in ("error", "assert")]
    logged = [e["params"]["entry"] for e in events if e.get("method") == "Log.entryAdded"
              and e["params"]["entry"]["level"] == "error"]
    assert not exceptions and not console and not logged, (exceptions, console, logged)
    requests = [e["params"]["request"]["url"] for e in events if e.get("method") == "Network.requestWillBeSent"]
    assert requests and all(url == page_html.resolve().as_uri() or url.startswith("data:") for url in requests), requests


def test_every_widget_shows_data(loaded):
    dashboard = load_dashboard(LVDASH)
    expected = {w.name: w.kind for _, w in dashboard.widgets()}
    shown = {w["name"]: w for w in loaded["widgets"]}
    assert set(shown) == set(expected)
    for name, kind in expected.items():
        w = shown[name]
        assert w["width"] > 100 and w["height"] > 20, w
        if kind == "text":
            continue
        assert w["error"] is None and int(w["rows"]) > 0, w
        if kind in ("line", "bar"):
            assert w["marks"] > 0, w
        elif kind == "table":
            assert w["cells"] > 0, w
        else:
            assert w["value"] and w["value"].strip() != "—", w


def test_screenshot_is_saved_for_people(loaded):
    png = (ARTIFACTS / "dashboard.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack("!II", png[16:24])
    assert width == WIDTH and height == int(loaded["height"]) > 3000  # six pages, one long page
