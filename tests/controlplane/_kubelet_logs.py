"""The node stand-in's kubelet endpoint: `/containerLogs/{namespace}/{pod}/{container}` over
HTTPS (`tailLines`, `limitBytes`, `follow`), which the API server's `pods/log` fetches from the
node's InternalIP and `status.daemonEndpoints.kubeletEndpoint` port
(tests.controlplane._kubelet)."""

from __future__ import annotations

import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Protocol


class Logs(Protocol):
    def log_of(self, namespace: str, pod: str) -> tuple[Path, Any] | None: ...


class LogServer(ThreadingHTTPServer):
    daemon_threads = True
    kubelet: Logs


class LogHandler(BaseHTTPRequestHandler):
    """The kubelet's `/containerLogs/{namespace}/{pod}/{container}` (what `pods/log` fetches)."""

    server: LogServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        return

    def do_GET(self) -> None:
        url = urllib.parse.urlsplit(self.path)
        query = dict(urllib.parse.parse_qsl(url.query))
        parts = url.path.strip("/").split("/")
        if len(parts) != 4 or parts[0] != "containerLogs":
            self._send(404, b"404 page not found\n")
            return
        found = self.server.kubelet.log_of(parts[1], parts[2])
        if found is None:
            self._send(404, f"container {parts[3]!r} in pod {parts[2]!r} is not available\n"
                       .encode())
            return
        path, run = found
        follow = query.get("follow") == "true"
        tail = int(query["tailLines"]) if "tailLines" in query else None
        limit = int(query["limitBytes"]) if "limitBytes" in query else None
        data = _read(path)
        if tail is not None:
            lines = data.splitlines(keepends=True)
            data = b"".join(lines[-tail:]) if tail > 0 else b""
        if not follow:
            self._send(200, data[:limit] if limit is not None else data)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        sent, offset = 0, len(_read(path))
        chunk = data
        while True:
            if limit is not None:
                chunk = chunk[:max(0, limit - sent)]
            if chunk:
                self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
                self.wfile.flush()
                sent += len(chunk)
            if limit is not None and sent >= limit:
                break
            done = (run.popen.poll() is not None) if run.popen is not None else True
            if done and len(_read(path)) == offset:
                break
            time.sleep(0.05)
            now_data = _read(path)
            chunk, offset = now_data[offset:], len(now_data)
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _send(self, code: int, body: bytes) -> None:
        self.send_response(code)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b""
