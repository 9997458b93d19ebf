"""Opens a page in Debian's headless Chromium and talks to it over the DevTools protocol, through
--remote-debugging-pipe (file descriptors 3 and 4, messages ended by a NUL), with only the standard
library. The report tests and the page-load benchmark use it: evaluate JavaScript, wait for the
report to say it has drawn, take a screenshot, and collect every console error and uncaught
exception the page raised.

Environment: CHROMIUM (default: chromium).
"""
import base64
import fcntl
import json
import os
import pathlib
import shutil
import subprocess
import tempfile
import time

CHROMIUM = os.environ.get("CHROMIUM", "chromium")


class PageError(AssertionError):
    pass


class Browser:
    """One headless Chromium with one page; use as a context manager."""

    def __init__(self, width=1400, height=1000):
        self.width, self.height = width, height
        self.errors = []  # console errors, uncaught exceptions, failed loads: text each
        self._next_id = 0
        self._buffer = b""
        self._events = []

    def __enter__(self):
        if shutil.which(CHROMIUM) is None:
            raise RuntimeError(f"{CHROMIUM} not found (scripts/install-deps.sh installs chromium)")
        self._profile = tempfile.mkdtemp(prefix="memtrail_chromium_")
        to_browser_read, self._to_browser = os.pipe()
        self._from_browser, from_browser_write = os.pipe()

        def descriptors_3_and_4():
            # Through copies above 4, so neither end overwrites the other on its way down.
            reading = fcntl.fcntl(to_browser_read, fcntl.F_DUPFD, 10)
            writing = fcntl.fcntl(from_browser_write, fcntl.F_DUPFD, 10)
            os.dup2(reading, 3)
            os.dup2(writing, 4)

        self._process = subprocess.Popen(
            [CHROMIUM, "--headless=new", "--remote-debugging-pipe", "--no-sandbox",
             "--disable-gpu", "--no-first-run", "--no-default-browser-check",
             "--disable-extensions", "--hide-scrollbars", f"--user-data-dir={self._profile}",
             f"--window-size={self.width},{self.height}", "about:blank"],
            pass_fds=(3, 4), preexec_fn=descriptors_3_and_4,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_browser_read)
        os.close(from_browser_write)
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self._session = self.call("Target.attachToTarget", targetId=target,
                                  flatten=True)["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            self.call(f"{domain}.enable", session=True)
        return self

    def __exit__(self, *exc):
        try:
            self.call("Browser.close")
        except (OSError, PageError):
            pass
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        os.close(self._to_browser)
        os.close(self._from_browser)
        shutil.rmtree(self._profile, ignore_errors=True)

    # --- the protocol --------------------------------------------------------------------------

    def _read_message(self, deadline):
        while b"\0" not in self._buffer:
            if time.monotonic() > deadline:
                raise PageError("Chromium did not answer in time")
            chunk = os.read(self._from_browser, 1 << 20)
            if not chunk:
                raise PageError("Chromium closed its DevTools pipe")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def _note_event(self, message):
        method, params = message.get("method"), message.get("params", {})
        if method == "Runtime.exceptionThrown":
            details = params["exceptionDetails"]
            text = details.get("exception", {}).get("description") or details.get("text")
            self.errors.append(f"uncaught: {text}")
        elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            self.errors.append("console.error: " + " ".join(
                str(a.get("value", a.get("description", ""))) for a in params.get("args", [])))
        elif method == "Log.entryAdded" and params["entry"]["level"] == "error":
            self.errors.append(f"log: {params['entry']['text']}")
        self._events.append(message)

    def call(self, method, session=False, timeout=60, **params):
        self._next_id += 1
        message = {"id": self._next_id, "method": method, "params": params}
        if session:
            message["sessionId"] = self._session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            answer = self._read_message(deadline)
            if answer.get("id") == self._next_id:
                if "error" in answer:
                    raise PageError(f"{method}: {answer['error']}")
                return answer.get("result", {})
            self._note_event(answer)

    # --- what the tests use --------------------------------------------------------------------

    def evaluate(self, expression, timeout=60):
        """The value of a JavaScript expression (JSON-serialisable), awaited if a promise."""
        result = self.call("Runtime.evaluate", session=True, timeout=timeout,
                           expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise PageError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def open_report(self, path, timeout=60):
        """Opens the page and waits until it says it has drawn; returns window.__memtrailDrawnMs,
        the milliseconds from navigation to drawn."""
        self.call("Page.navigate", session=True, url=pathlib.Path(path).resolve().as_uri())
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            drawn = self.evaluate("window.__memtrailDrawnMs ?? null")
            if drawn is not None:
                return drawn
            if self.errors:
                raise PageError("the page failed before it drew: " + "; ".join(self.errors))
            time.sleep(0.05)
        raise PageError(f"{path} did not draw within {timeout}s: {self.errors}")

    def screenshot(self, path):
        """The whole page (beyond the window) as a PNG at `path`."""
        height = self.evaluate("document.documentElement.scrollHeight")
        self.call("Emulation.setDeviceMetricsOverride", session=True, width=self.width,
                  height=min(int(height), 16000), deviceScaleFactor=1, mobile=False)
        data = self.call("Page.captureScreenshot", session=True, format="png")["data"]
        pathlib.Path(path).write_bytes(base64.b64decode(data))
        self.call("Emulation.clearDeviceMetricsOverride", session=True)
