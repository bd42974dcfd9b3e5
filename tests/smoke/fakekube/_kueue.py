"""Kueue's ProvisioningRequest admission check and GKE's queued-provisioning autoscaler, as the
fake cluster runs them each tick, from the Kueue objects loaded into it (the ones
components/k8s/_kueue.py makes):

- Kueue: a suspended Job or JobSet labelled `kueue.x-k8s.io/queue-name` is admitted through
  its LocalQueue's ClusterQueue to the first flavor whose node labels its pods' nodeSelector
  allows. Without an admission check on that flavor it is resumed at once, with the flavor's
  node labels and tolerations added to its pods; one naming a WorkloadPriorityClass
  (`kueue.x-k8s.io/priority-class`) that does not exist stays suspended, as Kueue makes no
  Workload for it. With Kueue's ProvisioningRequest check
  (`kueue.x-k8s.io/provisioning-request`), Kueue makes a PodTemplate and a ProvisioningRequest
  (`autoscaling.x-k8s.io/v1`: the config's class and parameters, the job's
  `provreq.kueue.x-k8s.io/*` annotations as parameters, one pod set of all its pods) and
  resumes the job once the request is Provisioned, adding the config's podSetUpdates (e.g.
  `autoscaling.gke.io/provisioning-request` from the request's ResizeRequestName).
- Autoscaler: a request of class `queued-provisioning.gke.io` whose pods fit a registered
  node pool (its nodes' labels satisfy the pods' nodeSelector, its taints are tolerated) is
  accepted, and the pool's nodes are added (count: the pod set's) carrying the request's
  label; a request no pool fits stays unprovisioned, as a queued request waits; with
  `accept_requests = False` every request is Accepted and never Provisioned (no capacity).
Quota and priorities (preemption) are not modelled. Read from kubernetes-sigs/kueue v0.19.2
(8eab68778fc1b52affe165fdf5af29d1e9b4f3cb): pkg/controller/admissionchecks/provisioning/
controller.go (a PodTemplate per pod set, the request's class and parameters from the config)
and provisioning.go `passProvReqParams` (the Workload's `provreq.kueue.x-k8s.io/` annotations,
prefix removed, become request parameters).
"""

from __future__ import annotations

import copy
import secrets
from collections.abc import Callable
from typing import Any

from tests.smoke.fakekube._api import _tolerates
from tests.smoke.fakekube._controllers import _Controllers

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_CLASS_LABEL = "kueue.x-k8s.io/priority-class"
PROVREQ_PREFIX = "provreq.kueue.x-k8s.io/"
CHECK_CONTROLLER = "kueue.x-k8s.io/provisioning-request"
QUEUED_CLASS = "queued-provisioning.gke.io"
# pool name -> (node factory: name, ResizeRequestName -> Node)
NodeFactory = Callable[[str, str], dict[str, Any]]


def _pod_specs(obj: dict[str, Any]) -> list[dict[str, Any]]:
    if obj["kind"] == "JobSet":
        return [r["template"]["spec"]["template"]["spec"] for r in obj["spec"]["replicatedJobs"]]
    return [obj["spec"]["template"]["spec"]]


def _pod_count(obj: dict[str, Any]) -> int:
    if obj["kind"] == "JobSet":
        return sum(int(r.get("replicas", 1)) * int(r["template"]["spec"].get("parallelism", 1))
                   for r in obj["spec"]["replicatedJobs"])
    return int(obj["spec"].get("parallelism", 1))


class _KueueControllers(_Controllers):
    """Kueue's admission and GKE's autoscaler for queued provisioning (a mixin)."""

    _autoscaled: dict[str, NodeFactory]
    _admitting: dict[str, dict[str, Any]]  # job uid -> {flavor, check, request}
    accepted: list[dict[str, Any]]  # every ProvisioningRequest the autoscaler accepted
    accept_requests: bool  # False: no capacity, every request waits (as a queued one does)

    def add_autoscaled_pool(self, name: str, make_node: NodeFactory) -> None:
        """A node pool the autoscaler grows for a ProvisioningRequest: `make_node(name,
        resize_request_name)` builds one of its nodes."""
        self._autoscaled[name] = make_node

    def _tick(self) -> None:
        self._kueue()
        self._autoscaler()
        super()._tick()

    # -- Kueue ---------------------------------------------------------------------------------
    def _kueue(self) -> None:
        for plural in ("jobs", "jobsets"):
            for (_, ns, _), obj in self._of_kind(plural):
                queue = (obj["metadata"].get("labels") or {}).get(QUEUE_LABEL)
                if queue and obj["spec"].get("suspend"):
                    self._admit(ns, obj, queue)

    def _admit(self, ns: str, obj: dict[str, Any], queue: str) -> None:
        uid = obj["metadata"]["uid"]
        state = self._admitting.get(uid)
        if state is None:
            lq = self.store.get(("localqueues", ns, queue))
            cq = lq and self.store.get(("clusterqueues", "", lq["spec"]["clusterQueue"]))
            if not cq:
                return  # no such queue: the job stays suspended, as Kueue leaves it
            priority = (obj["metadata"].get("labels") or {}).get(PRIORITY_CLASS_LABEL)
            if priority and not self.store.get(("workloadpriorityclasses", "", priority)):
                return  # no Workload is made for a class that does not exist (jobframework
                # ExtractPriority -> GetPriorityFromWorkloadPriorityClass errors): suspended
            flavor = self._flavor(cq, obj)
            if flavor is None:
                return
            checks = [c["name"] for c in (cq["spec"].get("admissionChecksStrategy") or {}).get(
                "admissionChecks", []) if flavor["metadata"]["name"] in c.get("onFlavors", [])]
            state = {"flavor": flavor, "check": checks[0] if checks else None, "request": None}
            self._admitting[uid] = state
        if state["check"] is None:
            self._resume(obj, state["flavor"], {})
            return
        check = self.store.get(("admissionchecks", "", state["check"]))
        if check is None or check["spec"]["controllerName"] != CHECK_CONTROLLER:
            return
        config = self.store.get(("provisioningrequestconfigs", "",
                                 check["spec"]["parameters"]["name"]))
        if config is None:
            return
        if state["request"] is None:
            state["request"] = self._request(ns, obj, state["check"], config["spec"],
                                             state["flavor"])
        req = self.store.get(("provisioningrequests", ns, state["request"]))
        if req is None:
            return
        conds = {c["type"]: c["status"] for c in (req.get("status") or {}).get(
            "conditions", [])}
        if conds.get("Provisioned") != "True":
            return
        details = req["status"].get("provisioningClassDetails") or {}
        updates = {u["key"]: details[u["valueFromProvisioningClassDetail"]]
                   for u in (config["spec"].get("podSetUpdates") or {}).get("nodeSelector", [])
                   if u["valueFromProvisioningClassDetail"] in details}
        self._resume(obj, state["flavor"], updates)

    def _flavor(self, cq: dict[str, Any], obj: dict[str, Any]) -> dict[str, Any] | None:
        selector = _pod_specs(obj)[0].get("nodeSelector") or {}
        for group in cq["spec"]["resourceGroups"]:
            for f in group["flavors"]:
                rf = self.store.get(("resourceflavors", "", f["name"]))
                if rf is None:
                    continue
                labels = (rf.get("spec") or {}).get("nodeLabels") or {}
                if all(selector.get(k, v) == v for k, v in labels.items()):
                    return rf
        return None

    def _request(self, ns: str, obj: dict[str, Any], check: str, config: dict[str, Any],
                 flavor: dict[str, Any]) -> str:
        name = f"{obj['kind'].lower()}-{obj['metadata']['name']}-{check}-1"
        owner = [self._owner_ref(obj)]
        spec = copy.deepcopy(_pod_specs(obj)[0])
        fspec = flavor.get("spec") or {}
        spec["nodeSelector"] = {**(spec.get("nodeSelector") or {}),
                                **(fspec.get("nodeLabels") or {})}
        spec["tolerations"] = [*(spec.get("tolerations") or []),
                               *(fspec.get("tolerations") or [])]
        template = f"ppt-{name}-main"
        self.create("podtemplates", ns, {"metadata": {"name": template,
                                                      "ownerReferences": owner},
                                         "template": {"spec": spec}})
        params = {**(config.get("parameters") or {}),
                  **{k[len(PROVREQ_PREFIX):]: v for k, v in (
                      obj["metadata"].get("annotations") or {}).items()
                     if k.startswith(PROVREQ_PREFIX)}}
        self.create("provisioningrequests", ns, {
            "metadata": {"name": name, "ownerReferences": owner},
            "spec": {"provisioningClassName": config["provisioningClassName"],
                     "parameters": params,
                     "podSets": [{"podTemplateRef": {"name": template},
                                  "count": _pod_count(obj)}]}})
        return name

    def _resume(self, obj: dict[str, Any], flavor: dict[str, Any],
                updates: dict[str, str]) -> None:
        fspec = flavor.get("spec") or {}
        for spec in _pod_specs(obj):
            spec["nodeSelector"] = {**(spec.get("nodeSelector") or {}),
                                    **(fspec.get("nodeLabels") or {}), **updates}
            spec["tolerations"] = [*(spec.get("tolerations") or []),
                                   *(fspec.get("tolerations") or [])]
        obj["spec"]["suspend"] = False
        self._touched(obj["kind"].lower() + "s", obj)  # a change watchers (and tests) see

    # -- the autoscaler -------------------------------------------------------------------------
    def _autoscaler(self) -> None:
        for (_, ns, _), req in self._of_kind("provisioningrequests"):
            if req["spec"]["provisioningClassName"] != QUEUED_CLASS or req.get("status"):
                continue
            if not self.accept_requests:  # as cluster-autoscaler marks a request it cannot
                # fill (kubernetes/autoscaler cluster-autoscaler/provisioningrequest/
                # conditions: CapacityIsNotFoundReason), retried later
                req["status"] = {"conditions": [
                    {"type": "Accepted", "status": "True", "reason": "Accepted"},
                    {"type": "Provisioned", "status": "False", "reason": "CapacityIsNotFound",
                     "message": "Capacity is not found, CA will try to find it later."}]}
                continue
            [pod_set] = req["spec"]["podSets"]
            tmpl = self.store.get(("podtemplates", ns, pod_set["podTemplateRef"]["name"]))
            if tmpl is None:
                continue
            resize = f"gke-{ns}-{secrets.token_hex(8)}"
            pod = tmpl["template"]["spec"]
            for pool, make in self._autoscaled.items():
                probe = make(f"{pool}-probe", resize)
                if self._fits(pod, probe):
                    for i in range(int(pod_set["count"])):
                        node = make(f"{pool}-{resize[-8:]}-{i}", resize)
                        self.create("nodes", "", node)
                    self.accepted.append(copy.deepcopy(req))
                    req["status"] = {
                        "conditions": [
                            {"type": "Accepted", "status": "True", "reason": "Accepted"},
                            {"type": "Provisioned", "status": "True",
                             "reason": "Provisioned"}],
                        "provisioningClassDetails": {"ResizeRequestName": resize}}
                    break

    @staticmethod
    def _fits(pod: dict[str, Any], node: dict[str, Any]) -> bool:
        labels = node["metadata"].get("labels") or {}
        if any(labels.get(k) != v for k, v in (pod.get("nodeSelector") or {}).items()):
            return False
        tolerations = pod.get("tolerations") or []
        return all(t.get("effect") not in ("NoSchedule", "NoExecute")
                   or any(_tolerates(tol, t) for tol in tolerations)
                   for t in node["spec"].get("taints") or [])
