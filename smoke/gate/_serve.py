"""The controller's endpoints: /healthz and /readyz on the health port (liveness: the loop
turned within the last minute; readiness: `not_ready`, the Kubernetes API answers the node
list and watch), OpenMetrics /metrics on the metrics port. Plain stdlib HTTP servers in daemon
threads."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from smoke.gate.controller import Gate

STALE_LOOP_S = 60.0
OPENMETRICS = "application/openmetrics-text; version=1.0.0; charset=utf-8"


def not_ready(gate: Gate) -> str:
    """Why the controller is not ready ('' when it is): it has not started, its node list
    never answered, or the API's last answer to the node list or watch was a failure (a
    refusal, an error, a dropped stream) and no answer came since (issue 35: /readyz said
    ready while the node list was refused). A watch that waits quietly for events is ready."""
    watch = gate.watch
    if not gate.ready.is_set() or watch is None:
        return "starting"
    if not watch.synced.is_set():
        return f"the node list has not answered ({watch.last_error or 'no answer yet'})"
    if watch.failed_at > watch.answered_at:
        return f"the node list or watch fails: {watch.last_error}"
    return ""


class Servers:
    def __init__(self, gates: Sequence[Gate], *, health_port: int | None,
                 metrics_port: int | None, host: str = "0.0.0.0") -> None:
        self.gates, self.host = list(gates), host
        self.ports = {"health": health_port, "metrics": metrics_port}
        self.servers: list[ThreadingHTTPServer] = []

    def _answer(self, path: str) -> tuple[int, str, str]:
        from smoke.gate._metrics import render

        now = time.monotonic()
        if path == "/healthz":
            alive = all(now - g.last_loop < STALE_LOOP_S for g in self.gates)
            return (200, "ok\n", "text/plain") if alive else (503, "loop stalled\n",
                                                               "text/plain")
        if path == "/readyz":
            problems = [f"{g.cluster}: {why}" for g in self.gates if (why := not_ready(g))]
            return (200, "ok\n", "text/plain") if not problems else (
                503, "\n".join(problems) + "\n", "text/plain")
        if path == "/metrics":
            return 200, render(self.gates), OPENMETRICS
        return 404, "not found\n", "text/plain"

    def start(self) -> Servers:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                code, body, kind = owner._answer(self.path.split("?")[0])
                data = body.encode()
                self.send_response(code)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        ports = {p for p in self.ports.values() if p is not None}
        for port in sorted(ports):
            server = ThreadingHTTPServer((self.host, port), Handler)
            server.daemon_threads = True
            threading.Thread(target=server.serve_forever, daemon=True,
                             name=f"gate-http-{port}").start()
            self.servers.append(server)
        return self

    def bound(self) -> list[int]:
        return [int(s.server_address[1]) for s in self.servers]

    def stop(self) -> None:
        for s in self.servers:
            s.shutdown()
            s.server_close()
