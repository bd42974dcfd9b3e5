"""The node stand-in: what a kubelet does for the nodes of a test, against the real API server.

For each node it stands in for:
- registers the Node (a recorded real node's labels, taints and allocatable; the address the
  API server reaches it at is this machine's loopback, and its kubelet port is this stand-in's
  log server), reports it Ready through the status subresource and renews its
  `kube-node-lease` Lease every few seconds, so the node lifecycle controller treats it as
  alive (and lifts the `node.kubernetes.io/not-ready` taint the API server's
  TaintNodesByCondition admission put on it at registration);
- runs each pod the scheduler bound to it as a local process: the pod's own command
  (`python` is this interpreter; ConfigMap and downward API volumes written to a folder of the
  pod and the container's paths under a mount rewritten to it; env `fieldRef`s resolved), or
  the node's recorded output (`set_output`) or command (`set_command`); a pod annotated
  `standin.accelfleet.io/own-command` runs its own command even there (a DaemonSet pod beside
  the proofs: the DCGM exporter stand-in);
- writes the pod's status as a kubelet does (Running with the container running; Succeeded
  or Failed with the container terminated, its exit code and reason), through `pods/status`;
  its pod IP is loopback, or this machine's own address for a pod that declares a container
  port (the API server's pods/proxy refuses a loopback pod IP);
- serves container logs on its kubelet endpoint (`/containerLogs/{ns}/{pod}/{container}`,
  HTTPS, `tailLines`, `limitBytes`, `follow`), so the code under test reads them through the
  API's own `pods/log`;
- honours deletion: a pod given a deletionTimestamp has its process killed and is then
  deleted for good (`gracePeriodSeconds: 0`, guarded by its uid), as the kubelet finishes a
  graceful deletion.

Stopping a node's stand-in (`forget`) stops its heartbeats and its pods' processes, as a
machine that went away: the node lifecycle controller then marks it Unknown, and once the Node
is deleted the pod garbage collector collects its pods.
"""

from __future__ import annotations

import copy
import os
import re
import shutil
import signal
import ssl
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.controlplane._kubelet_logs import LogHandler, LogServer
from tests.controlplane._kubelet_status import (
    OWN_COMMAND,
    _conditions,
    merged_conditions,
    micro_now,
    now,
    pod_ip,
    run_code,
)
from tests.controlplane._rest import Rest, RestError
from tests.smoke.fakekube._api import _field_ref as field_ref
from tests.smoke.fakekube._api import _remap as remap
from tests.smoke.fakekube._api import pod_volumes

TERMINAL = ("Succeeded", "Failed")
NODE_LEASE_NS = "kube-node-lease"


@dataclass
class _Run:
    popen: subprocess.Popen[bytes] | None
    log: Path
    workdir: Path
    uid: str
    started: str
    reported: str = ""  # the phase last written
    downward: list[tuple[Path, str]] = field(default_factory=list)


class Kubelet:
    """The kubelet of every stand-in node of one control plane (one process, one log server)."""

    def __init__(self, rest: Rest, root: Path, pki: Path, *, poll_s: float = 0.1,
                 heartbeat_s: float = 4.0) -> None:
        self.rest, self.root, self.poll_s, self.heartbeat_s = rest, root, poll_s, heartbeat_s
        self.root.mkdir(parents=True, exist_ok=True)
        self.nodes: dict[str, str] = {}  # node -> uid of the Node object we registered
        # node -> the readiness this stand-in reports: its own state, as a kubelet knows its
        # own (the heartbeat once read it back from the API and, racing `set_ready`, wrote a
        # stale NotReady over the Ready just reported: a node stayed NotReady for good)
        self.ready: dict[str, bool] = {}
        self.outputs: dict[str, tuple[str, int]] = {}
        self.commands: dict[str, list[str]] = {}
        self.runs: dict[tuple[str, str], _Run] = {}  # (namespace, pod) -> its process
        self._node_of: dict[tuple[str, str], str] = {}  # (namespace, pod) -> its node
        self.registered: dict[str, dict[str, Any]] = {}  # node -> the create's answer
        self.base_env = {k: v for k, v in os.environ.items()
                         if k in ("PATH", "LANG", "LC_ALL", "PYTHONPATH", "SYSTEMROOT")}
        self.lock = threading.RLock()
        self.stop_event = threading.Event()
        self.errors: list[str] = []
        self._server = LogServer(("127.0.0.1", 0), LogHandler)
        self._server.kubelet = self
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(str(pki / "kubelet.crt"), str(pki / "kubelet.key"))
        self._server.socket = ctx.wrap_socket(self._server.socket, server_side=True)
        self.port = int(self._server.server_address[1])
        self._threads = [
            threading.Thread(target=self._server.serve_forever, daemon=True,
                             name="kubelet-logs"),
            threading.Thread(target=self._loop, daemon=True, name="kubelet-pods"),
            threading.Thread(target=self._beat, daemon=True, name="kubelet-heartbeat")]
        for t in self._threads:
            t.start()

    # -- nodes -------------------------------------------------------------------------------
    def register(self, node: dict[str, Any], *, ready: bool = True) -> dict[str, Any]:
        """Register `node` (a Node object) and stand in for it; `ready` False: it registers
        NotReady (its network not up yet) until `set_ready`."""
        node = copy.deepcopy(node)
        name = node["metadata"]["name"]
        status = node.setdefault("status", {})
        status.pop("conditions", None)
        status["addresses"] = [{"type": "InternalIP", "address": "127.0.0.1"},
                               {"type": "Hostname", "address": name}]
        status["daemonEndpoints"] = {"kubeletEndpoint": {"Port": self.port}}
        status.setdefault("capacity", dict(status.get("allocatable") or {}))
        # only what the stand-in knows: a boot ID per registration (a reboot gives another),
        # and the architecture and OS the recorded node's labels say; the recordings carry no
        # nodeInfo, so nothing else is made up
        labels = node["metadata"].get("labels") or {}
        info = {"bootID": os.urandom(8).hex()}
        for field_name, label in (("architecture", "kubernetes.io/arch"),
                                  ("operatingSystem", "kubernetes.io/os")):
            if labels.get(label):
                info[field_name] = labels[label]
        status.setdefault("nodeInfo", info)
        node.pop("apiVersion", None)
        node.pop("kind", None)
        node["metadata"].pop("resourceVersion", None)
        node["metadata"].pop("uid", None)
        created = self.rest.create("nodes", "", node)
        # the API server keeps what the kubelet registers with, conditions aside; the kubelet
        # then reports its conditions through the status subresource
        with self.lock:
            self.nodes[name] = created["metadata"]["uid"]
            self.registered[name] = created  # as the API server answered the create
            self.ready[name] = ready
        self._status(name, ready=ready)
        self._lease(name)
        return self.rest.get("nodes", "", name) or created

    def set_ready(self, name: str) -> dict[str, Any]:
        with self.lock:
            self.ready[name] = True
            self._status(name, ready=True)
        return self.rest.get("nodes", "", name) or {}

    def forget(self, name: str) -> None:
        """Stop standing in for `name`: no heartbeats, its pods' processes killed."""
        with self.lock:
            self.nodes.pop(name, None)
            self.ready.pop(name, None)
            keys = [k for k, r in self.runs.items() if self._node_of.get(k) == name]
        for key in keys:
            self._kill(key)

    def _status(self, name: str, *, ready: bool) -> None:
        t = now()
        cond = ({"type": "Ready", "status": "True", "reason": "KubeletReady",
                 "message": "kubelet is posting ready status"} if ready else
                {"type": "Ready", "status": "False", "reason": "KubeletNotReady",
                 "message": "container runtime network not ready: NetworkReady=false "
                            "reason:NetworkPluginNotReady message:Network plugin returns "
                            "error: cni plugin not initialized"})
        conditions = [{**c, "lastHeartbeatTime": t, "lastTransitionTime": t} for c in (
            {"type": "MemoryPressure", "status": "False", "reason": "KubeletHasSufficientMemory",
             "message": "kubelet has sufficient memory available"},
            {"type": "DiskPressure", "status": "False", "reason": "KubeletHasNoDiskPressure",
             "message": "kubelet has no disk pressure"},
            {"type": "PIDPressure", "status": "False", "reason": "KubeletHasSufficientPID",
             "message": "kubelet has sufficient PID available"}, cond)]
        self.rest.patch("nodes", "", name, {"status": {"conditions": conditions}},
                        subresource="status")

    def _lease(self, name: str) -> None:
        uid = self.nodes.get(name)
        if uid is None:
            return
        body = {"metadata": {"name": name, "namespace": NODE_LEASE_NS, "ownerReferences": [
            {"apiVersion": "v1", "kind": "Node", "name": name, "uid": uid}]},
                "spec": {"holderIdentity": name, "leaseDurationSeconds": 40,
                         "renewTime": micro_now()}}
        try:
            lease = self.rest.get("leases", NODE_LEASE_NS, name)
            if lease is None:
                self.rest.create("leases", NODE_LEASE_NS, body)
            else:
                lease["spec"]["renewTime"] = micro_now()
                lease["spec"]["holderIdentity"] = name
                self.rest.replace("leases", NODE_LEASE_NS, name, lease)
        except RestError as exc:
            if exc.status not in (404, 409):
                raise

    def _beat(self) -> None:
        last_status = 0.0
        while not self.stop_event.wait(self.heartbeat_s):
            with self.lock:
                names = list(self.nodes)
            status_due = time.monotonic() - last_status > 10
            for name in names:
                try:
                    self._lease(name)
                    if status_due:
                        with self.lock:  # never between set_ready's state and its write
                            if name in self.nodes:
                                self._status(name, ready=self.ready.get(name, True))
                except Exception as exc:  # a heartbeat missed; the next one may land
                    self.errors.append(f"heartbeat {name}: {exc}")
            if status_due:
                last_status = time.monotonic()

    # -- pods --------------------------------------------------------------------------------
    def _loop(self) -> None:
        while not self.stop_event.is_set():
            try:
                self._sync()
            except Exception as exc:  # keep going, as a kubelet does
                self.errors.append(f"sync: {type(exc).__name__}: {exc}")
            self.stop_event.wait(self.poll_s)

    def _sync(self) -> None:
        with self.lock:
            mine = dict(self.nodes)
        if not mine and not self.runs:
            return
        pods = self.rest.list("pods", None)["items"]
        seen: set[tuple[str, str]] = set()
        for pod in pods:
            node = pod["spec"].get("nodeName")
            if node not in mine:
                continue
            key = (pod["metadata"]["namespace"], pod["metadata"]["name"])
            seen.add(key)
            run = self.runs.get(key)
            if run is not None and run.uid != pod["metadata"]["uid"]:
                self._kill(key)  # a new pod of the same name
                run = None
            if pod["metadata"].get("deletionTimestamp"):
                self._kill(key)
                self._finish_delete(pod)
                continue
            phase = (pod.get("status") or {}).get("phase")
            if run is None:
                if phase in TERMINAL:
                    continue
                self._start(key, pod)
                continue
            self._refresh_downward(run, pod)
            code = run.popen.poll() if run.popen is not None else run_code(run)
            if code is not None and run.reported != "done":
                self._terminated(pod, run, code)
        for key in [k for k in self.runs if k not in seen]:
            self._kill(key)  # the pod is gone

    def _finish_delete(self, pod: dict[str, Any]) -> None:
        try:
            self.rest.delete("pods", pod["metadata"]["namespace"], pod["metadata"]["name"],
                             grace_period_s=0, uid=pod["metadata"]["uid"])
        except RestError as exc:
            if exc.status not in (404, 409):
                raise

    def _start(self, key: tuple[str, str], pod: dict[str, Any]) -> None:
        node = pod["spec"]["nodeName"]
        workdir = self.root / "pods" / key[0] / f"{key[1]}-{pod['metadata']['uid'][:8]}"
        workdir.mkdir(parents=True, exist_ok=True)
        log = workdir / "log"
        container = pod["spec"]["containers"][0]
        started = now()
        own = OWN_COMMAND in (pod["metadata"].get("annotations") or {})
        canned = None if node in self.commands or own else self.outputs.get(
            node, self.outputs.get("*") if "*" not in self.commands else None)
        self._node_of[key] = node
        if canned is not None:
            text = canned[0] if canned[0].endswith("\n") else canned[0] + "\n"
            log.write_text(text, encoding="utf-8")
            (workdir / "exit").write_text(str(canned[1]), encoding="utf-8")
            run = _Run(None, log, workdir, pod["metadata"]["uid"], started)
            self.runs[key] = run
            self._running(pod, run)
            return
        mounts, downward = self._volumes(pod, container, workdir)
        given = None if own else self.commands.get(node) or self.commands.get("*")
        argv = list(given or [*(container.get("command") or []),
                              *(container.get("args") or [])])
        argv = [remap(a, mounts) for a in argv]
        if argv and argv[0] in ("python", "python3"):
            argv[0] = sys.executable
        env = {**self.base_env, "HOME": str(workdir), "TMPDIR": str(workdir),
               "HOSTNAME": pod["spec"].get("hostname") or pod["metadata"]["name"],
               "KUBERNETES_SERVICE_HOST": "127.0.0.1"}
        for var in container.get("env") or []:
            value = var.get("value")
            if value is None and "valueFrom" in var:
                value = field_ref(pod, (var["valueFrom"].get("fieldRef") or {}).get(
                    "fieldPath"))
            env[var["name"]] = self._resolve(key[0], remap(value or "", mounts))
        run = _Run(None, log, workdir, pod["metadata"]["uid"], started, downward=downward)
        with log.open("wb") as out:
            try:
                run.popen = subprocess.Popen(argv, cwd=workdir, env=env, stdout=out,
                                             stderr=subprocess.STDOUT,
                                             stdin=subprocess.DEVNULL, start_new_session=True)
            except OSError as exc:
                out.write(f"failed to start {argv[:1]}: {exc}\n".encode())
                (workdir / "exit").write_text("128", encoding="utf-8")
        self.runs[key] = run
        self._running(pod, run)

    def _volumes(self, pod: dict[str, Any], container: dict[str, Any],
                 workdir: Path) -> tuple[dict[str, Path], list[tuple[Path, str]]]:
        ns = pod["metadata"]["namespace"]
        return pod_volumes(pod, container, workdir,
                           lambda name: self.rest.get("configmaps", ns, name))

    def _refresh_downward(self, run: _Run, pod: dict[str, Any]) -> None:
        for path, fp in run.downward:
            value = field_ref(pod, fp)
            try:
                if path.read_text(encoding="utf-8") == value:
                    continue
            except OSError:
                continue
            tmp = path.with_name(f".{path.name}.tmp")
            tmp.write_text(value, encoding="utf-8")
            tmp.replace(path)

    def _resolve(self, ns: str, value: str) -> str:
        """Cluster DNS for `<hostname>.<subdomain>[.<ns>.svc[.cluster.local]]`: loopback
        when a Service named like the subdomain exists (every pod runs on this machine)."""
        parts = value.split(".")
        if len(parts) < 2 or parts[2:] not in ([], [ns, "svc"], [ns, "svc", "cluster", "local"]):
            return value
        if not re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", parts[0]):
            return value
        try:
            if self.rest.get("services", ns, parts[1]) is None:
                return value
        except RestError:
            return value
        return "127.0.0.1"

    def _running(self, pod: dict[str, Any], run: _Run) -> None:
        t = run.started
        containers = pod["spec"]["containers"]
        ip = pod_ip(pod)
        status = {"phase": "Running", "hostIP": "127.0.0.1", "hostIPs": [{"ip": "127.0.0.1"}],
                  "podIP": ip, "podIPs": [{"ip": ip}], "startTime": t,
                  "conditions": _conditions(t, ready=True),
                  "containerStatuses": [{
                      "name": c["name"], "ready": True, "restartCount": 0, "started": True,
                      "image": c.get("image", ""), "imageID": c.get("image", ""),
                      "containerID": f"containerd://{run.uid.replace('-', '')}",
                      "state": {"running": {"startedAt": t}}} for c in containers]}
        self._write_status(pod, status)
        run.reported = "running"

    def _terminated(self, pod: dict[str, Any], run: _Run, code: int) -> None:
        if code < 0:  # killed by a signal, as the kubelet reports it
            code = 128 - code
        t = now()
        containers = pod["spec"]["containers"]
        status = {"phase": "Succeeded" if code == 0 else "Failed",
                  "conditions": _conditions(t, ready=False),
                  "containerStatuses": [{
                      "name": c["name"], "ready": False, "restartCount": 0, "started": False,
                      "image": c.get("image", ""), "imageID": c.get("image", ""),
                      "containerID": f"containerd://{run.uid.replace('-', '')}",
                      "state": {"terminated": {
                          "exitCode": code, "reason": "Completed" if code == 0 else "Error",
                          "startedAt": run.started, "finishedAt": t,
                          "containerID": f"containerd://{run.uid.replace('-', '')}"}}}
                      for c in containers]}
        self._write_status(pod, status)
        run.reported = "done"

    def _write_status(self, pod: dict[str, Any], status: dict[str, Any]) -> None:
        ns, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
        status = {**status, "conditions": merged_conditions(
            (pod.get("status") or {}).get("conditions") or [], status.get("conditions") or [])}
        try:
            self.rest.patch("pods", ns, name, {
                "metadata": {"uid": pod["metadata"]["uid"]}, "status": status},
                subresource="status", kind="application/merge-patch+json")
        except RestError as exc:
            if exc.status not in (404, 409):
                raise

    def _kill(self, key: tuple[str, str]) -> None:
        run = self.runs.pop(key, None)
        self._node_of.pop(key, None)
        if run is None:
            return
        if run.popen is not None and run.popen.poll() is None:
            try:
                os.killpg(run.popen.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            run.popen.wait(10)
        shutil.rmtree(run.workdir, ignore_errors=True)

    def log_of(self, namespace: str, pod: str) -> tuple[Path, _Run] | None:
        run = self.runs.get((namespace, pod))
        return (run.log, run) if run is not None else None

    def stop(self) -> None:
        self.stop_event.set()
        self._server.shutdown()
        self._server.server_close()
        for key in list(self.runs):
            self._kill(key)
        for t in self._threads:
            t.join(10)
