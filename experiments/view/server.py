"""The viewer served on 127.0.0.1: the same page, with its documents built from the store on request
(the index rebuilt only when the store changed), and the run's figures and report.

Only the page's own paths are answered; everything else is a 404, and nothing outside the run's
``plots/`` and ``report.html`` is read from disk.
"""

from __future__ import annotations

import re
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

from .build import Builder, as_script
from .index import PLOT_NAME
from .site import ASSETS

HOST = "127.0.0.1"
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
REPORT_CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'"
)
"""The report is one self-contained page with its style inline and no script at all."""
STATIC = {
    "/": ("page.html", "text/html; charset=utf-8"),
    "/index.html": ("page.html", "text/html; charset=utf-8"),
    "/view.js": ("view.js", "text/javascript; charset=utf-8"),
    "/view.css": ("view.css", "text/css; charset=utf-8"),
}
EPISODE = re.compile(r"/data/episode-([0-9]{1,12})\.js")
JS = "text/javascript; charset=utf-8"


class ViewServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, run_dir: Path, port: int, *, refresh_s: float, report_every_s: float | None) -> None:
        self.run_dir = run_dir
        self.builder = Builder(run_dir, base="run/", refresh_s=refresh_s, report_every_s=report_every_s)
        self.lock = threading.Lock()
        super().__init__((HOST, port), _Handler)

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.server_address[1]}/"

    def server_close(self) -> None:
        super().server_close()
        self.builder.close()


class _Handler(BaseHTTPRequestHandler):
    server: ViewServer

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base class's name
        return None

    def do_GET(self) -> None:  # noqa: N802 - the base class's name
        path = urlsplit(self.path).path
        if path in STATIC:
            name, kind = STATIC[path]
            self._send((ASSETS / name).read_bytes(), kind)
            return
        if path == "/favicon.ico":  # browsers ask for it; the page has none
            self.send_response(HTTPStatus.NO_CONTENT)
            self.end_headers()
            return
        if path == "/data/index.js":
            with self.server.lock:
                doc = self.server.builder.index()
            self._send(as_script(doc), JS)
            return
        match = EPISODE.fullmatch(path)
        if match:
            with self.server.lock:
                doc = self.server.builder.episode(int(match.group(1)))
            if doc is not None:
                self._send(as_script(doc), JS)
                return
        if path == "/run/report.html" and (self.server.run_dir / "report.html").is_file():
            report = (self.server.run_dir / "report.html").read_bytes()
            self._send(report, "text/html; charset=utf-8", REPORT_CSP)
            return
        if path.startswith("/run/plots/") and PLOT_NAME.fullmatch(name := path[len("/run/plots/") :]):
            file = self.server.run_dir / "plots" / name
            if file.is_file():
                self._send(file.read_bytes(), "image/png")
                return
        self.send_error(HTTPStatus.NOT_FOUND)

    def _send(self, body: bytes, kind: str, csp: str = CSP) -> None:
        self.send_response(HTTPStatus.OK)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Content-Security-Policy", csp)
        self.end_headers()
        self.wfile.write(body)
