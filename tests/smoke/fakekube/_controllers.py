"""The controllers a smoke run relies on, as the fake runs them each tick: the node lifecycle
controller (the parts a run sees), JobSet, Job, the scheduler and the kubelet (pods as local
processes). The kubelet's part is in _kubelet.py, the base of _Controllers."""

from __future__ import annotations

import copy
import secrets
import threading
import time
from pathlib import Path
from typing import Any

from tests.smoke.fakekube._api import (
    INDEX,
    TERMINAL,
    Key,
    _now,
    _quantity,
    _requests,
    _tolerates,
    node_affinity_matches,
)
from tests.smoke.fakekube._kubelet import _Kubelet, _Proc

UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"
# the letters of a generated name's suffix (apimachinery pkg/util/rand: no vowels, no 0/1/3)
NAME_SUFFIX = "bcdfghjklmnpqrstvwxz2456789"


class _Controllers(_Kubelet):
    """The FakeCluster's controllers (a mixin: the state is the cluster's)."""

    store: dict[Key, dict[str, Any]]
    lock: threading.RLock
    tick_s: float
    root: Path
    base_env: dict[str, str]
    _procs: dict[Key, _Proc]
    _commands: dict[str, list[str]]
    _outputs: dict[str, tuple[str, int]]
    _stop: threading.Event
    _expanded: set[str]
    _pull_s: dict[str, float]  # node -> how long its image pull holds a pod (set_node_pull_s)
    _placed: dict[Key, float]  # pod -> when the kubelet first saw it on its node
    _downward: dict[Key, list[tuple[Path, str]]]  # pod -> downward API files and their fields
    controller_errors: list[str]  # what a controller tick raised (the loop goes on)
    _registered: dict[str, str]  # Node name -> uid: the nodes the node controller has seen

    def create(self, plural: str, namespace: str, body: dict[str, Any]) -> dict[str, Any]:
        raise NotImplementedError

    def delete(self, plural: str, namespace: str, name: str, propagation: str | None) -> None:
        raise NotImplementedError

    def _control_loop(self) -> None:
        while not self._stop.wait(self.tick_s):
            with self.lock:
                try:
                    self._tick()
                except Exception as exc:  # one bad object must not stop every controller
                    # (a test would hang on a deadline instead of failing on what it checks)
                    self.controller_errors.append(f"{type(exc).__name__}: {exc}")

    def _tick(self) -> None:
        self._node_lifecycle()
        self._jobsets()
        self._jobs()
        self._schedule()
        self._kubelet()

    def _node_lifecycle(self) -> None:
        """What the real node lifecycle controller does that a run sees (seen on the real
        control plane, Kubernetes v1.36.2, tests.controlplane; source:
        pkg/controller/nodelifecycle/node_lifecycle_controller.go, read 2026-11-28):
        - a cordoned node (`spec.unschedulable`) gets the taint
          `node.kubernetes.io/unschedulable:NoSchedule` (with its `timeAdded`), appended to
          its taints, and loses it when uncordoned (doNoScheduleTaintingPass);
        - a Node it first sees gets a Normal Event `RegisteredNode`, one it sees deleted a
          Normal Event `RemovingNode`, both in namespace `default` from `node-controller`.
          It knows nodes by name (classifyNodes against its knownNodeSet, on each monitor
          pass): a Node deleted and registered again between two passes is neither."""
        nodes = {o["metadata"]["name"]: o for _k, o in self._of_kind("nodes")}
        for name, node in nodes.items():
            spec = node.get("spec")
            if not isinstance(spec, dict) or not isinstance(spec.get("taints") or [], list) \
                    or not all(isinstance(t, dict) for t in spec.get("taints") or []):
                continue  # a hostile answer's node: the real API server refuses such a Node
            if name not in self._registered:
                self._registered[name] = node["metadata"]["uid"]
                self._node_event(node, "RegisteredNode",
                                 f"Node {name} event: Registered Node {name} in Controller")
            taints = list((node.get("spec") or {}).get("taints") or [])
            has = any(t.get("key") == UNSCHEDULABLE_TAINT for t in taints)
            cordoned = bool((node.get("spec") or {}).get("unschedulable"))
            if cordoned != has:
                taints = [t for t in taints if t.get("key") != UNSCHEDULABLE_TAINT]
                if cordoned:
                    taints.append({"key": UNSCHEDULABLE_TAINT, "effect": "NoSchedule",
                                   "timeAdded": _now()})
                node.setdefault("spec", {})["taints"] = taints
                self._touched("nodes", node)
        for name in [n for n in self._registered if n not in nodes]:
            uid = self._registered.pop(name)
            self._node_event({"kind": "Node", "metadata": {"name": name, "uid": uid}},
                             "RemovingNode",
                             f"Node {name} event: Removing Node {name} from Controller")

    def _node_event(self, node: dict[str, Any], reason: str, message: str) -> None:
        m = node["metadata"]
        self.create("events", "default", {
            "metadata": {"name": f"{m['name']}.{secrets.token_hex(8)}"},
            "involvedObject": {"kind": "Node", "name": m["name"], "uid": m["uid"],
                               "apiVersion": "v1"},
            "reason": reason, "message": message, "type": "Normal", "count": 1,
            "firstTimestamp": _now(), "lastTimestamp": _now(),
            "source": {"component": "node-controller"}})

    def _of_kind(self, plural: str) -> list[tuple[Key, dict[str, Any]]]:
        return [(k, o) for k, o in self.store.items() if k[0] == plural]

    def _pods_by_owner(self) -> dict[str, list[dict[str, Any]]]:
        out: dict[str, list[dict[str, Any]]] = {}
        for _, pod in self._of_kind("pods"):
            for ref in pod["metadata"].get("ownerReferences") or []:
                out.setdefault(ref.get("uid", ""), []).append(pod)
        return out

    @staticmethod
    def _owner_ref(obj: dict[str, Any]) -> dict[str, Any]:
        m = obj["metadata"]
        return {"apiVersion": obj["apiVersion"], "kind": obj["kind"], "name": m["name"],
                "uid": m["uid"], "controller": True, "blockOwnerDeletion": True}

    def _jobsets(self) -> None:
        for (_, ns, name), js in self._of_kind("jobsets"):
            if js["metadata"]["uid"] in self._expanded or js["spec"].get("suspend"):
                continue  # a suspended JobSet (Kueue holds it) makes no Job yet
            self._expanded.add(js["metadata"]["uid"])
            for rjob in js["spec"]["replicatedJobs"]:
                for i in range(int(rjob.get("replicas", 1))):
                    tmpl = copy.deepcopy(rjob["template"])
                    meta = tmpl.setdefault("metadata", {})
                    meta["name"] = f"{name}-{rjob['name']}-{i}"
                    meta["labels"] = {**(meta.get("labels") or {}),
                                      "jobset.sigs.k8s.io/jobset-name": name,
                                      "jobset.sigs.k8s.io/replicatedjob-name": rjob["name"],
                                      "jobset.sigs.k8s.io/job-index": str(i)}
                    meta["ownerReferences"] = [self._owner_ref(js)]
                    pod_meta = tmpl["spec"]["template"].setdefault("metadata", {})
                    pod_meta["labels"] = {**(pod_meta.get("labels") or {}),  # as the real one
                                          **{k: v for k, v in meta["labels"].items()
                                             if k.startswith("jobset.sigs.k8s.io/")}}
                    if js["spec"].get("network", {}).get("enableDNSHostnames", True):
                        tmpl["spec"]["template"]["spec"].setdefault("subdomain", name)
                    self.create("jobs", ns, tmpl)

    def _jobs(self) -> None:
        now = time.time()
        jobs = [(k, j) for k, j in self._of_kind("jobs")
                if not (j.get("status") or {}).get("conditions")
                and not j["spec"].get("suspend")]  # a suspended Job makes no pod
        for (_, ns, _), job in jobs:
            if "startTime" not in job.setdefault("status", {}):
                job["status"].update(startTime=_now(), started=now)
                self._create_job_pods(ns, job)
        owned = self._pods_by_owner() if jobs else {}
        for (_, ns, _), job in jobs:
            spec, status = job["spec"], job["status"]
            pods = owned.get(job["metadata"]["uid"], [])
            failed = [q for q in pods if q["status"].get("phase") == "Failed"]
            done = [q for q in pods if q["status"].get("phase") == "Succeeded"]
            status.update(active=len(pods) - len(failed) - len(done), failed=len(failed),
                          succeeded=len(done))
            why = None
            # backoffLimit defaults to 6, or to 2147483647 with backoffLimitPerIndex (JobSpec)
            per_index = spec.get("backoffLimitPerIndex") is not None
            limit = 2147483647 if per_index else 6
            deadline = spec.get("activeDeadlineSeconds")
            if deadline is not None and now - status["started"] >= deadline:
                why = ("DeadlineExceeded", "Job was active longer than specified deadline")
            elif len(failed) > int(spec.get("backoffLimit", limit)):
                why = ("BackoffLimitExceeded", "Job has reached the specified backoff limit")
            elif per_index and spec.get("maxFailedIndexes") is not None and \
                    len(failed) > int(spec["maxFailedIndexes"]):
                why = ("MaxFailedIndexesExceeded", "Job has exceeded maxFailedIndexes")
            elif per_index and failed and len(failed) + len(done) == len(pods):
                why = ("FailedIndexes", "Job has failed indexes")
            if why is not None:
                status["conditions"] = [{"type": "Failed", "status": "True", "reason": why[0],
                                         "message": why[1]}]
                self._touched("jobs", job)
                for q in pods:  # the controller deletes the failed Job's active pods
                    if q["status"].get("phase") not in TERMINAL:
                        self.delete("pods", ns, q["metadata"]["name"], None)
            elif pods and len(done) == len(pods):
                # as the real controller (v1.36.2, seen on tests.controlplane): the success
                # criteria met first, then Complete, both CompletionsReached
                t = _now()
                status["conditions"] = [
                    {"type": c, "status": "True", "reason": "CompletionsReached",
                     "message": "Reached expected number of succeeded pods",
                     "lastProbeTime": t, "lastTransitionTime": t}
                    for c in ("SuccessCriteriaMet", "Complete")]
                status["completionTime"] = t
                self._touched("jobs", job)

    def _create_job_pods(self, ns: str, job: dict[str, Any]) -> None:
        spec = job["spec"]
        name = job["metadata"]["name"]
        indexed = spec.get("completionMode") == "Indexed"
        for i in range(int(spec.get("completions", 1))):
            tmpl = copy.deepcopy(spec["template"])
            meta = tmpl.setdefault("metadata", {})
            uid = job["metadata"]["uid"]
            labels = {**(meta.get("labels") or {}), "job-name": name,
                      "batch.kubernetes.io/job-name": name, "controller-uid": uid,
                      "batch.kubernetes.io/controller-uid": uid}
            pod_spec = tmpl["spec"]
            # names as the real controller makes them (generateName `<job>-`, or
            # `<job>-<index>-` for an Indexed Job, then 5 random characters); an Indexed
            # pod's hostname is `<job>-<index>` with or without a subdomain, and its index
            # env reads the label (v1.36.2, seen on tests.controlplane)
            generate = f"{name}-"
            if indexed:
                generate = f"{name}-{i}-"
                labels[INDEX] = str(i)
                meta["annotations"] = {**(meta.get("annotations") or {}), INDEX: str(i)}
                pod_spec.setdefault("hostname", f"{name}-{i}")
                for c in pod_spec.get("containers", []) + pod_spec.get("initContainers", []):
                    c["env"] = [*(c.get("env") or []), {"name": "JOB_COMPLETION_INDEX",
                                "valueFrom": {"fieldRef": {
                                    "fieldPath": f"metadata.labels['{INDEX}']"}}}]
            suffix = "".join(secrets.choice(NAME_SUFFIX) for _ in range(5))
            meta.update(labels=labels, generateName=generate, name=generate + suffix,
                        ownerReferences=[self._owner_ref(job)])
            self.create("pods", ns, tmpl)

    def _schedule(self) -> None:
        pods = self._of_kind("pods")
        pending = [(k, o) for k, o in pods if not o["spec"].get("nodeName")]
        if not pending:
            return
        nodes = [o for _, o in sorted(self._of_kind("nodes"))]
        on_node: dict[str, list[dict[str, Any]]] = {}
        for _, o in pods:
            if o["spec"].get("nodeName") and o["status"].get("phase") not in TERMINAL:
                on_node.setdefault(o["spec"]["nodeName"], []).append(o)
        by_label: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for node in nodes:
            for kv in (node["metadata"].get("labels") or {}).items():
                by_label.setdefault(kv, []).append(node)
        for (_, ns, _), pod in pending:
            # Only nodes with the pod's first selector label can fit: the same placement as
            # trying every node, in far fewer checks on a large fake cluster.
            first = list((pod["spec"].get("nodeSelector") or {}).items())[:1]
            for node in by_label.get(first[0], []) if first else nodes:
                here = on_node.setdefault(node["metadata"]["name"], [])
                if self._unfit(pod, node, here) is None:
                    here.append(pod)
                    pod["spec"]["nodeName"] = node["metadata"]["name"]
                    pod["status"]["conditions"] = [{"type": "PodScheduled", "status": "True",
                                                    "lastTransitionTime": _now()}]
                    self._touched("pods", pod)
                    break
            else:
                reasons: dict[str, int] = {}
                for node in nodes:
                    why = self._unfit(pod, node, on_node.get(node["metadata"]["name"], []))
                    reasons[str(why)] = reasons.get(str(why), 0) + 1
                detail = ", ".join(f"{n} {r}" for r, n in sorted(reasons.items()))
                message = (f"0/{len(nodes)} nodes are available: {detail}. no new claims to "
                           f"deallocate, preemption: "
                           f"0/{len(nodes)} nodes are available: {len(nodes)} Preemption is "
                           "not helpful for scheduling.")
                old = (pod["status"].get("conditions") or [{}])[0].get("message")
                pod["status"]["conditions"] = [{"type": "PodScheduled", "status": "False",
                                                "reason": "Unschedulable", "message": message}]
                if old != message:
                    self._event(ns, pod, "FailedScheduling", message, "Warning")

    def _event(self, ns: str, obj: dict[str, Any], reason: str, message: str,
               type_: str = "Normal") -> None:
        m = obj["metadata"]
        self.create("events", ns, {
            "metadata": {"name": f"{m['name']}.{secrets.token_hex(8)}"},
            "involvedObject": {"kind": obj["kind"], "name": m["name"], "namespace": ns,
                               "uid": m["uid"]},
            "reason": reason, "message": message, "type": type_, "count": 1,
            "firstTimestamp": _now(), "lastTimestamp": _now(),
            "source": {"component": "default-scheduler"}})

    @staticmethod
    def _unfit(pod: dict[str, Any], node: dict[str, Any],
               here: list[dict[str, Any]]) -> str | None:
        """Why `pod` cannot go on `node` (where the pods `here` run), or None."""
        spec, labels = pod["spec"], node["metadata"].get("labels") or {}
        if node.get("spec", {}).get("unschedulable"):
            return "node(s) were unschedulable"
        if any(labels.get(k) != v for k, v in (spec.get("nodeSelector") or {}).items()) or \
                not node_affinity_matches(spec, labels):
            return "node(s) didn't match Pod's node affinity/selector"
        for taint in node.get("spec", {}).get("taints") or []:
            if taint.get("effect") in ("NoSchedule", "NoExecute") and not any(
                    _tolerates(t, taint) for t in spec.get("tolerations") or []):
                # kube-scheduler v1.36.2 names no taint (tests/controlplane/test_gate_real.py)
                return "node(s) had untolerated taint(s)"
        alloc = node.get("status", {}).get("allocatable") or {}
        for resource, want in _requests(pod).items():
            used = sum(_requests(o).get(resource, 0.0) for o in here)
            if resource not in alloc or _quantity(alloc[resource]) - used < want:
                return f"Insufficient {resource}"
        anti = ((spec.get("affinity") or {}).get("podAntiAffinity") or {}).get(
            "requiredDuringSchedulingIgnoredDuringExecution") or []
        for term in anti:
            if term.get("topologyKey") != "kubernetes.io/hostname":
                continue
            match = (term.get("labelSelector") or {}).get("matchLabels") or {}
            if any(all((o["metadata"].get("labels") or {}).get(k) == v
                       for k, v in match.items()) for o in here):
                return "node(s) didn't match pod anti-affinity rules"
        return None
