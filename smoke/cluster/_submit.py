"""How a launcher run submits its objects (smoke.cluster.launcher): the run's namespace
objects, then each pool's, SUBMIT_WORKERS pools at a time. A create whose object exists
already is fine only where that object may stand for ours: the shared namespace, or an object
of this run (a create retried after its answer was lost)."""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from fleet.labels import RUN_LABEL
from smoke.cluster._api import ApiStopped, ApiTimeout, words
from smoke.cluster._reads import _obj
from smoke.cluster._runstate import JOBSET, REQUEST_TIMEOUT_S, _ClusterBase, _Pool
from smoke.cluster.run import PoolStatus

SUBMIT_WORKERS = 8  # pools submitted at once, per cluster


class _Submit(_ClusterBase):
    """The submit step of one cluster's run."""

    def _create(self, obj: dict[str, Any]) -> None:
        """Create `obj`; what may already exist is fine: the namespace (runs share it; another
        run may make it between our read and our create) and an object of THIS run (a create
        retried after its answer was lost). Anything else already there is a conflict."""
        from kubernetes.client.exceptions import ApiException

        kind, name = obj["kind"], obj["metadata"]["name"]
        body: Any = obj  # the client takes its models or plain dicts alike
        group, version, plural = JOBSET
        # the answers are read as bytes (bounded), the objects are not needed but to check
        # whose they are
        kw: dict[str, Any] = {"_request_timeout": REQUEST_TIMEOUT_S, "_preload_content": False}
        calls: dict[str, tuple[Callable[[], Any], Callable[[], Any]]] = {
            "Namespace": (lambda: self.core.create_namespace(body, **kw),
                          lambda: self.core.read_namespace(name, **kw)),
            "ConfigMap": (lambda: self.core.create_namespaced_config_map(
                self.ns, body, **kw), lambda: self.core.read_namespaced_config_map(
                name, self.ns, **kw)),
            "Service": (lambda: self.core.create_namespaced_service(
                self.ns, body, **kw), lambda: self.core.read_namespaced_service(
                name, self.ns, **kw)),
            "Job": (lambda: self.batch.create_namespaced_job(self.ns, body, **kw),
                    lambda: self.batch.read_namespaced_job(name, self.ns, **kw)),
            "JobSet": (lambda: self.custom.create_namespaced_custom_object(
                group, version, self.ns, plural, body, **kw),
                lambda: self.custom.get_namespaced_custom_object(
                group, version, self.ns, plural, name, **kw)),
        }
        if kind not in calls:
            raise ValueError(f"the launcher cannot create a {kind}")
        create, read = calls[kind]
        if kind == "Namespace":
            try:
                self._call(read)
                return
            except ApiException as exc:
                if exc.status != 404:
                    raise
        try:
            self._call(create)
        except ApiException as exc:
            if exc.status != 409 or not self._ours(kind, _obj(self._call(read))):
                raise

    def _ours(self, kind: str, existing: Any) -> bool:
        """Whether an object found where ours was to be created may stand for it: the shared
        namespace always; otherwise one labelled with this run's id."""
        if kind == "Namespace":
            return True
        meta = existing.get("metadata") if isinstance(existing, dict) else getattr(
            existing, "metadata", None)
        labels = (meta.get("labels") if isinstance(meta, dict) else
                  getattr(meta, "labels", None)) or {}
        return isinstance(labels, dict) and labels.get(RUN_LABEL) == self.run.run_id

    def submit(self) -> bool:
        """Shared objects, then each pool's; a pool that cannot be submitted is named."""
        from kubernetes.client.exceptions import ApiException

        try:
            for obj in self.run.shared[self.name]:
                self._create(obj)
        except (ApiException, ApiTimeout, ApiStopped) as exc:
            for p in self.pools:
                p.finish(PoolStatus.ERROR, f"cluster {self.name}: creating the run's "
                         f"namespace objects failed: {words(exc)}")
            return False
        with ThreadPoolExecutor(max_workers=SUBMIT_WORKERS) as pool_submits:
            list(pool_submits.map(self._submit_pool, self.pools))
        return not self.stop.is_set()

    def _submit_pool(self, p: _Pool) -> None:
        """One pool's objects, in order (its Service before its Job)."""
        from kubernetes.client.exceptions import ApiException

        if self.stop.is_set():
            return
        p.started = time.monotonic()
        p.deadline = p.started + self.timeout_s + 15
        try:
            for obj in p.workload.objects:
                self._create(obj)
        except (ApiException, ApiTimeout, ApiStopped) as exc:
            hint = ""
            if isinstance(exc, ApiException) and exc.status == 404 and \
                    p.workload.kind == "jobset":
                hint = " (the JobSet CRD is not installed: `pulumi up` installs the JobSet " \
                       "controller on clusters with TPU pools)"
            p.finish(PoolStatus.ERROR, f"submitting {p.workload.name} failed: "
                     f"{words(exc)}{hint}")
            self.display.update(p.name, "failed", 0, p.workload.pods, p.reason[:80])
            return
        self.display.update(p.name, "pending", 0, p.workload.pods, "submitted")
