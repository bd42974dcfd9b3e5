"""A smoke workload on a pool whose nodes come through Kueue (a GKE queued-provisioning pool).

Such a pool has no node until a ProvisioningRequest brings one, and only Kueue's
ProvisioningRequest admission check makes that request (the queues `accelfleet` deploys carry
it: components/k8s/_kueue.py). So the smoke Job (or JobSet) goes through Kueue, as GKE's and
Cluster Toolkit's examples submit theirs
(GoogleCloudPlatform/cluster-toolkit@1047080375afbb44da4b596be314634e7486af4a:
examples/gke-consumption-options/dws-flex-start-queued-provisioning/sample-job.yaml):

- label `kueue.x-k8s.io/queue-name: <the inventory's kueue_queue>` (a LocalQueue in the smoke
  namespace);
- annotation `provreq.kueue.x-k8s.io/maxRunDurationSeconds`: the run's timeout, which Kueue
  passes to the ProvisioningRequest as its `maxRunDurationSeconds` parameter (GKE releases the
  nodes after it; https://cloud.google.com/kubernetes-engine/docs/how-to/provisioningrequest);
- created suspended: Kueue resumes it once the nodes are provisioned.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

QUEUE_NAME_LABEL = "kueue.x-k8s.io/queue-name"
MAX_RUN_DURATION_ANNOTATION = "provreq.kueue.x-k8s.io/maxRunDurationSeconds"
QUEUED_KINDS = ("Job", "JobSet")


def through_kueue(objs: Sequence[dict[str, Any]], queue: str | None, timeout_s: int
                  ) -> list[dict[str, Any]]:
    """`objs` with their Job or JobSet submitted to Kueue queue `queue` (None: unchanged)."""
    if queue is None:
        return list(objs)
    out = []
    for obj in objs:
        if obj.get("kind") in QUEUED_KINDS:
            meta = obj.setdefault("metadata", {})
            meta["labels"] = {**(meta.get("labels") or {}), QUEUE_NAME_LABEL: queue}
            meta["annotations"] = {**(meta.get("annotations") or {}),
                                   MAX_RUN_DURATION_ANNOTATION: str(timeout_s)}
            obj["spec"]["suspend"] = True
        out.append(obj)
    return out


PROVISIONING_REQUEST = ("autoscaling.x-k8s.io", "v1", "provisioningrequests")


def is_queued(objs: Sequence[dict[str, Any]]) -> bool:
    """Whether the Job or JobSet among `objs` was submitted to Kueue (suspended, queue-named)."""
    return any(o.get("kind") in QUEUED_KINDS
               and QUEUE_NAME_LABEL in ((o.get("metadata") or {}).get("labels") or {})
               for o in objs)


def _owned_by(req: dict[str, Any], kind: str, name: str, uid: str) -> bool:
    """Kueue names a job's request `<workload>-<check>-<attempt>`, its Workload being
    `<kind>-<name>-<hash>` (kubernetes-sigs/kueue pkg/controller/jobframework
    GetWorkloadNameForOwnerWithGVK; admissionchecks/provisioning ProvisioningRequestName)."""
    meta = req.get("metadata") or {}
    owners = meta.get("ownerReferences") or []
    if uid and any(o.get("uid") == uid for o in owners):
        return True
    return str(meta.get("name", "")).startswith(f"{kind.lower()}-{name}-")


def _request_state(req: dict[str, Any]) -> str:
    conds = [c for c in ((req.get("status") or {}).get("conditions") or [])
             if isinstance(c, dict)]
    if not conds:
        return "no condition yet (not accepted by the autoscaler)"
    parts = []
    for c in conds:
        why = ", ".join(str(x) for x in (c.get("reason"), c.get("message")) if x)
        parts.append(f"{c.get('type')}={c.get('status')}" + (f" ({why})" if why else ""))
    return "; ".join(parts)


def held_by_kueue(job: dict[str, Any], requests: Sequence[dict[str, Any]],
                  timeout_s: int, namespace: str) -> str | None:
    """Why a queued pool's workload never ran, when Kueue still holds it (None if it does not):
    the Job/JobSet `job` as read back at the deadline, and the ProvisioningRequests of its
    namespace."""
    if not (job.get("spec") or {}).get("suspend"):
        return None
    meta = job.get("metadata") or {}
    kind, name, uid = str(job.get("kind", "Job")), str(meta.get("name", "")), str(
        meta.get("uid", ""))
    queue = (meta.get("labels") or {}).get(QUEUE_NAME_LABEL, "?")
    mine = [r for r in requests if _owned_by(r, kind, name, uid)]
    if mine:
        state = "; ".join(f"ProvisioningRequest {(r.get('metadata') or {}).get('name')}: "
                          f"{_request_state(r)}" for r in mine)
    else:
        state = "no ProvisioningRequest made for it (not admitted: no quota or flavor yet)"
    return (f"{kind} {name} is still held by Kueue after {timeout_s} s (suspended, not "
            f"admitted; queue {queue}): {state}. Check the DWS request (`kubectl describe "
            f"provisioningrequest -n {namespace}`), the queue's admission check and its "
            f"ClusterQueue's quota (`kubectl get workloads -n {namespace}`, `kubectl describe "
            f"clusterqueue`), or run again with a longer --timeout-s")
