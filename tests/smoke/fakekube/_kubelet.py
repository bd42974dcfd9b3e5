"""The fake cluster's kubelet (a mixin of its controllers, tests.smoke.fakekube._controllers):
each pod bound to a node runs as a local process (`python` is this interpreter), its ConfigMap
and downward API volumes written to a directory per pod, `fieldRef` env resolved, a pod DNS
name behind a headless Service mapped to loopback; or, for a node given canned output, no
process at all. It writes the pod's status as a kubelet does (ContainerCreating while an image
pulls, Running, terminated with the exit code)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.smoke.fakekube._api import Key, _field_ref, _now, _remap, pod_volumes


@dataclass
class _Proc:
    popen: subprocess.Popen[bytes] | None
    log: Path
    workdir: Path


class _Kubelet:
    """The pods' side of the FakeCluster's controllers (a mixin: the state is the cluster's)."""

    store: dict[Key, dict[str, Any]]
    root: Path
    base_env: dict[str, str]
    _procs: dict[Key, _Proc]
    _commands: dict[str, list[str]]
    _outputs: dict[str, tuple[str, int]]
    _pull_s: dict[str, float]  # node -> how long its image pull holds a pod (set_node_pull_s)
    _placed: dict[Key, float]  # pod -> when the kubelet first saw it on its node
    _downward: dict[Key, list[tuple[Path, str]]]  # pod -> downward API files and their fields

    def _of_kind(self, plural: str) -> list[tuple[Key, dict[str, Any]]]:
        raise NotImplementedError

    def _kubelet(self) -> None:
        now = time.monotonic()
        for key, pod in self._of_kind("pods"):
            if not pod["spec"].get("nodeName"):
                continue
            phase = pod["status"].get("phase")
            if phase == "Pending" and key not in self._procs:
                pull_s = self._pull_s.get(pod["spec"]["nodeName"], 0.0)
                if now - self._placed.setdefault(key, now) < pull_s:
                    self._pulling(pod)
                    continue
                self._start(key, pod)
            elif phase == "Running":
                proc = self._procs.get(key)
                if proc is None:  # a status a test wrote itself (a pod it stands in for)
                    continue
                self._refresh_downward(key, pod)
                code = proc.popen.poll() if proc.popen is not None else 0
                if code is not None:
                    self._terminated(pod, code)

    def _start(self, key: Key, pod: dict[str, Any]) -> None:
        node = pod["spec"]["nodeName"]
        workdir = self.root / "pods" / key[1] / key[2]
        workdir.mkdir(parents=True, exist_ok=True)
        log = workdir / "log"
        container = pod["spec"]["containers"][0]
        canned = self._outputs.get(node) if node not in self._commands else None
        if canned is None and node not in self._commands:
            canned = self._outputs.get("*")
        if canned is not None:
            log.write_text(canned[0] if canned[0].endswith("\n") else canned[0] + "\n",
                           encoding="utf-8")
            self._procs[key] = _Proc(None, log, workdir)
            self._running(pod)
            self._terminated(pod, canned[1])
            return
        mounts = self._volumes(key, pod, container, workdir)
        argv = self._commands.get(node) or [*(container.get("command") or []),
                                            *(container.get("args") or [])]
        argv = [_remap(a, mounts) for a in argv]
        if argv and argv[0] in ("python", "python3"):
            argv[0] = sys.executable
        env = {**self.base_env, "HOME": str(workdir), "TMPDIR": str(workdir),
               "HOSTNAME": pod["spec"].get("hostname") or pod["metadata"]["name"]}
        for var in container.get("env") or []:
            value = var.get("value")
            if value is None and "valueFrom" in var:
                value = _field_ref(pod, var["valueFrom"].get("fieldRef", {}).get("fieldPath"))
            env[var["name"]] = self._resolve(key[1], _remap(value or "", mounts))
        with log.open("wb") as out:
            try:
                popen = subprocess.Popen(argv, cwd=workdir, env=env, stdout=out,
                                         stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         start_new_session=True)
            except OSError as exc:
                out.write(f"failed to start {argv[:1]}: {exc}\n".encode())
                self._procs[key] = _Proc(None, log, workdir)
                self._running(pod)
                self._terminated(pod, 128)
                return
        self._procs[key] = _Proc(popen, log, workdir)
        self._running(pod)

    def _pulling(self, pod: dict[str, Any]) -> None:
        """A pod whose image is still being pulled: Pending, its containers waiting in
        ContainerCreating (as the kubelet reports a pull in progress)."""
        waiting = [{"name": c["name"], "ready": False, "restartCount": 0, "started": False,
                    "image": c.get("image", ""), "imageID": "",
                    "state": {"waiting": {"reason": "ContainerCreating"}}}
                   for c in pod["spec"]["containers"]]
        if pod["status"].get("containerStatuses") != waiting:
            pod["status"]["containerStatuses"] = waiting
            self._touched("pods", pod)

    def _refresh_downward(self, key: Key, pod: dict[str, Any]) -> None:
        """The kubelet refreshes a downward API volume's label and annotation files when they
        change (atomically: a new file renamed over the old)."""
        for path, field_path in self._downward.get(key, []):
            value = _field_ref(pod, field_path)
            try:
                if path.read_text(encoding="utf-8") == value:
                    continue
            except OSError:
                continue  # the pod's directory is gone: it was deleted
            tmp = path.with_name(f".{path.name}.tmp")
            tmp.write_text(value, encoding="utf-8")
            tmp.replace(path)

    def _volumes(self, key: Key, pod: dict[str, Any], container: dict[str, Any],
                 workdir: Path) -> dict[str, Path]:
        """Each volume the container mounts as a local directory: mountPath -> directory."""
        mounts, downward = pod_volumes(
            pod, container, workdir,
            lambda name: self.store.get(("configmaps", key[1], name)))
        self._downward.setdefault(key, []).extend(downward)
        return mounts

    def _resolve(self, ns: str, value: str) -> str:
        """Cluster DNS for a pod name `<hostname>.<subdomain>[.<ns>.svc[.cluster.local]]`:
        loopback, when a Service named like the subdomain exists and such a pod does."""
        parts = value.split(".")
        if len(parts) < 2 or ("services", ns, parts[1]) not in self.store:
            return value
        if parts[2:] not in ([], [ns, "svc"], [ns, "svc", "cluster", "local"]):
            return value
        for (p, pns, _), o in self.store.items():
            if p == "pods" and pns == ns and o["spec"].get("hostname") == parts[0] and \
                    o["spec"].get("subdomain") == parts[1]:
                return "127.0.0.1"
        return value

    def _touched(self, plural: str, obj: dict[str, Any]) -> None:
        """An object a controller changed in place: a new resourceVersion, and a MODIFIED
        event for watchers (the cluster records it)."""
        raise NotImplementedError

    def _running(self, pod: dict[str, Any]) -> None:
        pod["status"].update(phase="Running", podIP="127.0.0.1", startTime=_now(),
                             containerStatuses=[{"name": c["name"], "ready": True,
                                                 "restartCount": 0, "state": {
                                                     "running": {"startedAt": _now()}}}
                                                for c in pod["spec"]["containers"]])
        self._touched("pods", pod)

    def _terminated(self, pod: dict[str, Any], code: int) -> None:
        if code < 0:  # killed by a signal, as the kubelet reports it
            code = 128 - code
        pod["status"]["phase"] = "Succeeded" if code == 0 else "Failed"
        for cs in pod["status"].get("containerStatuses") or []:
            cs["ready"] = False
            started = ((cs.get("state") or {}).get("running") or {}).get("startedAt")
            # the kubelet keeps the start beside the finish (ContainerStateTerminated)
            cs["state"] = {"terminated": {"exitCode": code, "reason": "Completed" if code == 0
                                          else "Error", "startedAt": started or _now(),
                                          "finishedAt": _now()}}
        self._touched("pods", pod)

    def _kill(self, key: Key) -> None:
        self._downward.pop(key, None)
        self._placed.pop(key, None)
        proc = self._procs.pop(key, None)
        if proc is None:
            return
        if proc.popen is not None and proc.popen.poll() is None:
            try:
                os.killpg(proc.popen.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.popen.wait(10)
        shutil.rmtree(proc.workdir, ignore_errors=True)
