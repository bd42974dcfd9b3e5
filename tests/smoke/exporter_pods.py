"""A DCGM exporter pod on a node, as the project's chart makes one (the labels and port the
gate looks for: fleet.gate.DCGM_EXPORTER_*), serving a recorded exporter text; shared by the
fake API server's tests and the real control plane's."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from fleet.gate import DCGM_EXPORTER_NAMESPACE, DCGM_EXPORTER_PORT_NAME, DCGM_EXPORTER_SELECTOR

DATA = Path(__file__).parent / "data" / "dcgm_exporter"
HEALTHY = DATA / "dcgm-exporter-317-a30-mig.prom"  # recorded: every counter 0
DBE = DATA / "derived-a30-dbe-gpu1.prom"  # GPU 1: one volatile DBE (k8s-device-plugin#267)
# the pod's process on the real plane's node stand-in: serves the file at /metrics
SERVE = ("import http.server, sys\n"
         "body = open(sys.argv[1], 'rb').read()\n"
         "class H(http.server.BaseHTTPRequestHandler):\n"
         "    def do_GET(self):\n"
         "        self.send_response(200 if self.path == '/metrics' else 404)\n"
         "        self.send_header('Content-Type', 'text/plain; version=0.0.4')\n"
         "        self.end_headers()\n"
         "        self.wfile.write(body if self.path == '/metrics' else b'')\n"
         "    def log_message(self, *a): pass\n"
         "http.server.HTTPServer(('0.0.0.0', int(sys.argv[2])), H).serve_forever()\n")


def exporter_pod(name: str, node: str, port: int, text_file: Path, *,
                 daemonset: bool = False) -> dict[str, Any]:
    """`daemonset`: owned by the chart's DaemonSet, as a real exporter pod is (a re-proof
    takes a node that runs nothing else); not on the real plane, whose garbage collector
    deletes a pod whose owner does not exist."""
    key, value = DCGM_EXPORTER_SELECTOR.split("=")
    pod: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": DCGM_EXPORTER_NAMESPACE,
                         "labels": {key: value, "app.kubernetes.io/instance": "dcgm-exporter"},
                         # the real plane's node stand-in runs its command, not the node's
                         # canned proof output (tests.controlplane._kubelet.OWN_COMMAND)
                         "annotations": {"standin.accelfleet.io/own-command": "true"}},
            "spec": {"nodeName": node, "tolerations": [{"operator": "Exists"}],
                     "containers": [{"name": "exporter", "image": "nvcr.io/nvidia/k8s/"
                                     "dcgm-exporter:4.5.3-4.8.2-distroless",
                                     "command": [sys.executable, "-c", SERVE, str(text_file),
                                                 str(port)],
                                     "ports": [{"name": DCGM_EXPORTER_PORT_NAME,
                                                "containerPort": port}]}]}}
    if daemonset:
        pod["metadata"]["ownerReferences"] = [{
            "apiVersion": "apps/v1", "kind": "DaemonSet", "name": "dcgm-exporter",
            "uid": "00000000-0000-4000-8000-00000000d5e7", "controller": True}]
    return pod
