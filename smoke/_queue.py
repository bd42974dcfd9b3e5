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
