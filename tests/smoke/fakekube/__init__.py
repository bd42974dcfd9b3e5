"""A small stateful fake Kubernetes API server on loopback, owned by the tests (stdlib only).

The real `kubernetes` client talks to it over HTTP. It keeps Namespaces, Nodes, ConfigMaps,
Services, Events, Pods, PodTemplates, batch/v1 Jobs, jobset.x-k8s.io/v1alpha2 JobSets, Kueue's
v1beta2 objects, autoscaling.x-k8s.io/v1 ProvisioningRequests and coordination.k8s.io/v1
Leases, and runs the
controllers a smoke run relies on, the way the real ones behave where it matters here:

- JobSet controller: one Job per replicated job and replica (`<jobset>-<rjob>-<i>`).
- Job controller: one pod per index of an Indexed Job (labels `job-name`,
  `batch.kubernetes.io/job-completion-index`, hostname `<job>-<i>`, the JOB_COMPLETION_INDEX
  env); `activeDeadlineSeconds`, `backoffLimit` and `backoffLimitPerIndex` end the Job and
  delete its active pods as the real controller does.
- Scheduler: nodeSelector, taints against tolerations, resource requests against allocatable,
  cordoned nodes, required pod anti-affinity on the hostname; a pod that fits nowhere gets the
  `PodScheduled=False/Unschedulable` condition and a `FailedScheduling` Event with the real
  scheduler's wording (`0/4 nodes are available: 4 node(s) didn't match Pod's node
  affinity/selector.`).
- Kubelet: each bound pod's container command runs as a local subprocess on this machine
  (`python` is this interpreter); ConfigMap volumes are written to a directory per pod and
  the container's paths under a mount are rewritten to it; env `valueFrom.fieldRef` is
  resolved; a pod DNS name (`<hostname>.<subdomain>`, backed by a headless Service) resolves to
  127.0.0.1. Its combined stdout and stderr is the pod log.
- Deletion honours `propagationPolicy` (Orphan, the API's default for Jobs, leaves the pods).
- PATCH takes a JSON merge patch, a strategic merge patch (lists merged by their key where the
  API types declare one, e.g. a Node's `status.conditions` by `type`; atomic lists such as a
  Node's `spec.taints` replaced whole) or a JSON patch; PUT replaces. A write that carries a
  stale `metadata.resourceVersion` is refused with 409 Conflict, as the real server's
  optimistic concurrency does (a Lease's too). A Node's and a Pod's status change only
  through their `status` subresource (GET, PATCH, PUT `.../status`).
- Watch (`?watch=true`) with resource versions, as the API server serves it: every change is
  kept with its resourceVersion (`changes()`); a watch from a version streams the changes
  after it (none given: the current objects as ADDED first), a BOOKMARK every `bookmark_s`
  when `allowWatchBookmarks`, and ends at `timeoutSeconds`. A version older than the kept
  changes (`compact()`, or past `watch_window`) is answered as the real server does: HTTP 200
  and one ERROR event with the 410 Expired Status. Changes the controllers make to pods
  (scheduled, running, terminated) are changes too.
- Kueue and GKE's queued-provisioning autoscaler (`_kueue.py`): a suspended Job or JobSet
  naming a Kueue queue is admitted through the Kueue objects loaded into the fake; on a flavor
  with Kueue's ProvisioningRequest check a ProvisioningRequest is made, and the autoscaler
  adds a registered pool's nodes when it accepts it.

Nodes come from recorded real GKE and EKS nodes (`tests.smoke.nodes`, `add_node_object`).
Test hooks: `add_node_object` (`ready=False`: as a node registers, NotReady with the
not-ready taint), `set_ready`, `join` (a scale-up replayed: nodes register over time, NotReady,
then turn Ready), `add_node` (a bare node: labels and taints as given), `compact`, `changes`,
`add_autoscaled_pool` (a pool the autoscaler grows), `set_node_command` (run this argv
instead on a node), `set_node_output` (no process at all: the pod prints this and exits; for
benchmarks), `fail_next` (answer the next N matching requests with an error), `objects`
(everything left, by label selector). A hostile or broken server (issue 29): `lie` (change an
answer), `hostile` (send it as a drip, byte by byte, status line and headers included, or as
a chunked body that never ends: a list's items or a pod log's lines over and over) and
`endless_pages` (a `continue` token on every page, for ever), `hostile_watch` (every watch
answered 410 Expired at once, or one watch line that never ends).
"""

from tests.smoke.fakekube._api import ApiError, selector_matches
from tests.smoke.fakekube._cluster import FakeCluster

__all__ = ["ApiError", "FakeCluster", "selector_matches"]
