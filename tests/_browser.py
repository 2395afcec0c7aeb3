"""Drive a headless Chromium through the DevTools protocol with the standard library only.

The browser tests of ``shapleig dashboard`` load its pages in a real browser, read the rendered
numbers, wait for them to change and collect console errors. Chromium is Debian's package
(``apt-get install chromium``); :func:`find_chromium` finds it, :func:`require_chromium` skips a
test without it unless ``SHAPLEIG_REQUIRE_BROWSER=1`` (CI), then it fails. The protocol runs over
a websocket, spoken here in a few lines (RFC 6455 text frames, masked as a client must).
"""

from __future__ import annotations

import base64
import http.client
import json
import os
import re
import shutil
import socket
import struct
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import pytest

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--window-size=1200,1600", "--remote-debugging-port=0"]
DEADLINE_S = 60.0  # how long a wait may last before the test fails (never how long it waits)


def find_chromium() -> str | None:
    """The Chromium (or Chrome) executable, or None."""
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        found = shutil.which(name)
        if found:
            return found
    return "/usr/bin/chromium" if os.path.exists("/usr/bin/chromium") else None


def require_chromium() -> str:
    """The executable; skip without one, or fail when ``SHAPLEIG_REQUIRE_BROWSER=1``."""
    found = find_chromium()
    if found is None:
        if os.environ.get("SHAPLEIG_REQUIRE_BROWSER") == "1":
            pytest.fail("SHAPLEIG_REQUIRE_BROWSER=1 but no Chromium was found (apt-get install chromium)")
        pytest.skip("no Chromium (apt-get install chromium); set SHAPLEIG_REQUIRE_BROWSER=1 to require it")
    return found


class _Socket:
    """A websocket client connection (text frames only, as the DevTools protocol uses)."""

    def __init__(self, url: str):
        m = re.fullmatch(r"ws://([^:/]+):(\d+)(/.*)", url)
        self.sock = socket.create_connection((m.group(1), int(m.group(2))), timeout=DEADLINE_S)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall((f"GET {m.group(3)} HTTP/1.1\r\nHost: {m.group(1)}:{m.group(2)}\r\nUpgrade: websocket\r\n"
                           f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n")
                          .encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(1)
            if not chunk:
                raise ConnectionError("the browser closed the websocket during the handshake")
            head += chunk
        if b" 101 " not in head.split(b"\r\n", 1)[0]:
            raise ConnectionError(f"websocket handshake refused: {head[:200]!r}")

    def _read(self, n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            if not chunk:
                raise ConnectionError("the browser closed the websocket")
            data += chunk
        return data

    def send(self, text: str) -> None:
        payload = text.encode()
        mask = os.urandom(4)
        n = len(payload)
        head = bytes([0x81]) + (bytes([0x80 | n]) if n < 126 else bytes([0x80 | 126]) + struct.pack(">H", n)
                                if n < 65536 else bytes([0x80 | 127]) + struct.pack(">Q", n))
        self.sock.sendall(head + mask + bytes(b ^ mask[k % 4] for k, b in enumerate(payload)))

    def receive(self) -> str:
        message = b""
        while True:
            b0, b1 = self._read(2)
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack(">H", self._read(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._read(8))[0]
            mask = self._read(4) if b1 & 0x80 else None
            data = self._read(n)
            if mask:
                data = bytes(b ^ mask[k % 4] for k, b in enumerate(data))
            opcode = b0 & 0x0F
            if opcode == 9:  # ping: answer, keep reading
                self.sock.sendall(bytes([0x8A, 0x80]) + os.urandom(4))
                continue
            if opcode == 8:
                raise ConnectionError("the browser closed the websocket")
            message += data
            if b0 & 0x80:
                return message.decode()


class Browser:
    """A headless Chromium with one page, driven through the DevTools protocol.

    Use as a context manager; :attr:`errors` collects console errors, uncaught exceptions and
    error log entries (a Content-Security-Policy violation is one) of every page loaded.
    """

    def __init__(self, executable: str):
        self.profile = tempfile.mkdtemp(prefix="shapleig-chromium-")
        self.proc = subprocess.Popen([executable, *FLAGS, f"--user-data-dir={self.profile}", "about:blank"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        port = None
        deadline = time.monotonic() + DEADLINE_S
        for line in self.proc.stderr:  # the line Chromium prints once its DevTools endpoint listens
            m = re.search(r"DevTools listening on ws://[^:]+:(\d+)/", line)
            if m:
                port = int(m.group(1))
                break
            if time.monotonic() > deadline:
                break
        if port is None:
            self.close()
            raise RuntimeError("Chromium did not start its DevTools endpoint")
        # keep reading its log, so a full pipe never stalls the browser
        threading.Thread(target=lambda: [None for _ in self.proc.stderr], daemon=True).start()
        self.port = port
        target = next(t for t in self._json("/json/list") if t.get("type") == "page")
        self.ws = _Socket(target["webSocketDebuggerUrl"])
        self._id = 0
        self.events: list[dict[str, Any]] = []
        for domain in ("Page", "Runtime", "Log"):
            self.call(f"{domain}.enable")

    def _json(self, path: str) -> Any:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=DEADLINE_S)
        try:
            conn.request("GET", path)
            return json.loads(conn.getresponse().read())
        finally:
            conn.close()

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        """Send one protocol command and return its result (events arriving meanwhile are kept)."""
        self._id += 1
        self.ws.send(json.dumps({"id": self._id, "method": method, "params": params}))
        while True:
            message = json.loads(self.ws.receive())
            if message.get("id") == self._id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})
            self.events.append(message)

    def _event(self, name: str) -> dict[str, Any]:
        for k, event in enumerate(self.events):
            if event.get("method") == name:
                return self.events.pop(k)
        while True:
            message = json.loads(self.ws.receive())
            if message.get("method") == name:
                return message
            self.events.append(message)

    def open(self, url: str) -> None:
        """Load ``url`` and return once its load event fired."""
        self.events = [e for e in self.events if e.get("method") != "Page.loadEventFired"]
        self.call("Page.navigate", url=url)
        self._event("Page.loadEventFired")

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (JSON-serialisable)."""
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait_for(self, expression: str, what: str) -> Any:
        """Poll ``expression`` until it is truthy (a state of the page); fail after ``DEADLINE_S``."""
        deadline = time.monotonic() + DEADLINE_S
        while True:
            value = self.evaluate(expression)
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"the page never showed {what}")
            time.sleep(0.05)

    @property
    def errors(self) -> list[str]:
        """Console errors, uncaught exceptions and error log entries seen so far."""
        self.call("Runtime.evaluate", expression="0")  # collects the events that arrived meanwhile
        out = []
        for e in self.events:
            method, params = e.get("method"), e.get("params", {})
            if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                out.append("console: " + " ".join(str(a.get("value", a.get("description"))) for a in params["args"]))
            elif method == "Runtime.exceptionThrown":
                out.append("exception: " + json.dumps(params.get("exceptionDetails", {}))[:500])
            elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
                out.append("log: " + params["entry"].get("text", ""))
        return out

    def screenshot(self, path: str | os.PathLike[str]) -> Path:
        """A PNG of the whole page at ``path``."""
        height = int(self.evaluate("Math.ceil(document.documentElement.scrollHeight)") or 1600)
        self.call("Emulation.setDeviceMetricsOverride", width=1200, height=min(height, 6000), deviceScaleFactor=1,
                  mobile=False)
        data = self.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)["data"]
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(data))
        return path

    def close(self) -> None:
        if getattr(self, "ws", None) is not None:
            self.ws.sock.close()
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=30)
        shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self) -> "Browser":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
