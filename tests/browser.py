"""Headless Chromium driven over the DevTools protocol on a pipe (`--remote-debugging-pipe`): loads a page and
reports what a person would see go wrong — console errors, uncaught exceptions, failed loads — and every
request the page made, and takes a screenshot. No library: the protocol is JSON messages ended by NUL on
file descriptors 3 (to the browser) and 4 (from it).
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import itertools
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


def chromium_path() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    assert found, "Debian's chromium is needed: apt-get install -y chromium (make test installs it)"
    return found


@dataclass
class PageLoad:
    url: str
    requests: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # console errors, exceptions, failed loads, CSP refusals
    screenshot: bytes = b""


class Chromium:
    """One headless browser for several pages; use as a context manager."""

    def __init__(self, width: int = 1200, height: int = 1400) -> None:
        self._ids = itertools.count(1)
        self._buffer = b""
        self._profile = tempfile.TemporaryDirectory(prefix="chromium-profile-")
        to_browser_r, to_browser_w = os.pipe()
        from_browser_r, from_browser_w = os.pipe()
        # Out of the way of 3 and 4, so that the child's dup2 cannot overwrite one with the other.
        high_r = fcntl.fcntl(to_browser_r, fcntl.F_DUPFD, 10)
        high_w = fcntl.fcntl(from_browser_w, fcntl.F_DUPFD, 10)

        def wire() -> None:  # in the child, before exec
            os.dup2(high_r, 3)
            os.dup2(high_w, 4)

        self._process = subprocess.Popen(
            [
                chromium_path(),
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--no-first-run",
                "--hide-scrollbars",
                f"--window-size={width},{height}",
                f"--user-data-dir={self._profile.name}",
                "--remote-debugging-pipe",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            close_fds=False,
            preexec_fn=wire,
        )
        for fd in (to_browser_r, from_browser_w, high_r, high_w):
            os.close(fd)
        self._write, self._read = to_browser_w, from_browser_r
        self._session = self._attach()

    def __enter__(self) -> Chromium:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._send("Browser.close", session=None, wait=False)
        try:
            self._process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        for fd in (self._write, self._read):
            with contextlib.suppress(OSError):
                os.close(fd)
        self._profile.cleanup()

    # -- the protocol ----------------------------------------------------------------------------------------
    def _message(self, timeout: float) -> dict[str, Any] | None:
        deadline = time.monotonic() + timeout
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([self._read], [], [], left)
            if not ready:
                return None
            chunk = os.read(self._read, 1 << 20)
            if not chunk:
                raise RuntimeError("chromium closed the DevTools pipe")
            self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(raw)  # type: ignore[no-any-return]

    def _send(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        session: str | None = "",
        wait: bool = True,
    ) -> dict[str, Any]:
        ident = next(self._ids)
        message: dict[str, Any] = {"id": ident, "method": method, "params": params or {}}
        target = self._session if session == "" else session
        if target:
            message["sessionId"] = target
        os.write(self._write, json.dumps(message).encode() + b"\0")
        if not wait:
            return {}
        while True:
            reply = self._message(60)
            if reply is None:
                raise TimeoutError(f"no answer to {method}")
            if reply.get("id") == ident:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})  # type: ignore[no-any-return]
            self._events.append(reply)

    def _attach(self) -> str:
        self._events: list[dict[str, Any]] = []
        self._current = PageLoad("")
        targets = self._send("Target.getTargets", session=None)["targetInfos"]
        page = next(t for t in targets if t["type"] == "page")
        session = self._send(
            "Target.attachToTarget", {"targetId": page["targetId"], "flatten": True}, session=None
        )
        return str(session["sessionId"])

    # -- a page ----------------------------------------------------------------------------------------------
    def load(self, url: str, screenshot: bool = False) -> PageLoad:
        """Navigate to `url`, wait for its load event and a quiet moment, and say what happened."""
        self._events = []
        self._current = PageLoad(url)
        for domain in ("Page", "Runtime", "Log", "Network"):
            self._send(f"{domain}.enable")
        self._send("Page.navigate", {"url": url})
        loaded, quiet_until = False, None
        while True:
            event = self._events.pop(0) if self._events else self._message(0.5 if loaded else 30)
            if event is None:
                if loaded:
                    break
                raise TimeoutError(f"{url} did not load")
            self._record(event)
            if event.get("method") == "Page.loadEventFired":
                loaded = True
                quiet_until = time.monotonic() + 0.5
            if quiet_until is not None and time.monotonic() > quiet_until and not self._events:
                break
        result = self._current
        if screenshot:
            shot = self._send("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True})
            result.screenshot = base64.b64decode(shot["data"])
        return result

    def _record(self, event: dict[str, Any]) -> None:
        method, params = event.get("method"), event.get("params", {})
        if method == "Network.requestWillBeSent":
            self._current.requests.append(params["request"]["url"])
        elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert", "warning"):
            text = " ".join(str(a.get("value", a.get("description", ""))) for a in params.get("args", []))
            self._current.errors.append(f"console.{params['type']}: {text}")
        elif method == "Runtime.exceptionThrown":
            self._current.errors.append(f"exception: {params['exceptionDetails'].get('text')}")
        elif method == "Log.entryAdded" and params["entry"].get("level") in ("error", "warning"):
            entry = params["entry"]
            self._current.errors.append(f"{entry.get('source')}: {entry.get('text')} {entry.get('url', '')}")
        elif method == "Network.loadingFailed":
            self._current.errors.append(f"failed load: {params.get('errorText')}")


def load_pages(urls: list[str], screenshots: dict[str, Path] | None = None) -> dict[str, PageLoad]:
    """Load each URL in one browser; `screenshots` maps a URL to the PNG file to save it as."""
    out: dict[str, PageLoad] = {}
    with Chromium() as browser:
        for url in urls:
            target = (screenshots or {}).get(url)
            page = browser.load(url, screenshot=target is not None)
            if target is not None:
                target.write_bytes(page.screenshot)
            out[url] = page
    return out
