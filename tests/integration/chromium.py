"""Headless Chromium for the dashboard page test, driven over the DevTools protocol with a small
standard-library WebSocket client, so console errors and uncaught exceptions are captured as they
happen, not inferred from the DOM."""

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
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

CHROMIUM = "/usr/bin/chromium"
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


@contextmanager
def headless_chromium(profile: Path) -> Iterator[str]:
    """Headless Chromium with a fresh profile; yields its DevTools HTTP address and stops it by its id."""
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
