"""Leader election on a coordination.k8s.io/v1 Lease, as client-go's leaderelection does it
(k8s.io/client-go/tools/leaderelection/leaderelection.go, read 2026-11-28):

- three durations, LeaseDuration > RenewDeadline > RetryPeriod (client-go's defaults for
  controllers: 15 s, 10 s, 2 s; here `lease_s`, 2/3 of it and 2/15 of it);
- the holder tries to renew every RetryPeriod; when no renewal has succeeded for
  RenewDeadline it steps down (`is_leader()` is false from that instant, whatever the
  renewing thread is doing: a hung call, a stopped process resumed, a slow machine), and every
  Lease call is bounded by the time left to that deadline;
- a candidate takes the lease over only once it has seen no change to it for a whole
  LeaseDuration (its own clock, never the holder's renewTime);
- every write carries the resourceVersion read, so of two candidates one wins (the other
  gets 409 Conflict).

Because RenewDeadline < LeaseDuration, a leader that cannot renew stops acting before any
candidate can take over: never two leaders at once."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from smoke.gate._kube import REQUEST_TIMEOUT_S, raw, refused, status_of

if TYPE_CHECKING:
    from kubernetes.client import ApiClient


def _micro_now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class Elector:
    def __init__(self, client: ApiClient, namespace: str, name: str, identity: str, *,
                 lease_s: float, stop: threading.Event,
                 annotations: Callable[[], dict[str, str]] | None = None) -> None:
        from kubernetes import client as k

        self.coord, self.core = k.CoordinationV1Api(client), k.CoreV1Api(client)
        self.namespace, self.name, self.identity = namespace, name, identity
        self.lease_s, self.stop = lease_s, stop
        self.renew_deadline_s = lease_s * 2 / 3
        self.retry_s = lease_s * 2 / 15
        self.leader = threading.Event()
        self.transitions = 0
        self.holder = ""  # who holds the lease, as last read
        self._seen: tuple[str, float] = ("", 0.0)  # (resourceVersion, when first seen)
        self._renewed = 0.0
        self.malformed = 0  # reads of a Lease that did not read as one (never acted on)
        # what the holder keeps on the Lease: `annotations()` is written with every renewal
        # (and on release); `stored` is what the Lease carried when last read
        self.annotations = annotations
        self.stored: dict[str, str] = {}
        self.last_refusal = ""  # the last Lease call the API server refused (403), if any

    def is_leader(self) -> bool:
        """Leader now: the last renewal succeeded less than RenewDeadline ago (by this
        process's monotonic clock, which runs on while the process is stopped)."""
        if not self.leader.is_set():
            return False
        if time.monotonic() - self._renewed >= self.renew_deadline_s:
            self.leader.clear()  # step down: a candidate may take over after LeaseDuration
            return False
        return True

    def _timeout_s(self) -> tuple[float, float]:
        """A Lease call's (connect, read) bound: the request timeout, and for the holder no
        later than its renew deadline (client-go renews under a context of RenewDeadline)."""
        connect_s, read_s = REQUEST_TIMEOUT_S
        if not self.is_leader():
            return connect_s, read_s
        left = max(0.05, self._renewed + self.renew_deadline_s - time.monotonic())
        return min(connect_s, left), min(read_s, left)

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                self.step()
            except Exception as exc:  # an API error: leader only until the renew deadline
                self.last_refusal = refused(exc, f"the Lease {self.namespace}/{self.name}") \
                    or self.last_refusal
            self.is_leader()  # steps down once the renew deadline has passed
            self.stop.wait(self.retry_s)
        self.release()

    def _body(self, lease: dict[str, Any] | None, *, take: bool) -> dict[str, Any]:
        spec = dict((lease or {}).get("spec") or {})
        now = _micro_now()
        if take:
            spec.update(holderIdentity=self.identity, acquireTime=now,
                        leaseTransitions=int(spec.get("leaseTransitions") or 0) + (
                            1 if lease is not None else 0))
        spec.update(renewTime=now, leaseDurationSeconds=max(1, round(self.lease_s)))
        meta: dict[str, Any] = {"name": self.name, "namespace": self.namespace}
        if lease is not None:
            meta["resourceVersion"] = lease["metadata"]["resourceVersion"]
        kept = dict(((lease or {}).get("metadata") or {}).get("annotations") or {})
        if self.annotations is not None:
            kept.update(self.annotations())
        if kept:
            meta["annotations"] = kept
        return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": meta,
                "spec": spec}

    def step(self) -> None:
        """One round: create, renew or (once expired) take over the lease."""
        t = self._timeout_s()
        try:
            lease: dict[str, Any] | None = raw(self.coord.read_namespaced_lease(
                self.name, self.namespace, _preload_content=False, _request_timeout=t))
        except Exception as exc:
            if status_of(exc) != 404:
                raise
            lease = None
        from smoke.cluster.objects import lease_problem

        now = time.monotonic()
        problem = "" if lease is None else lease_problem(lease)
        if problem:  # neither renewed nor taken over: not leader past the renew deadline
            self.malformed += 1
            raise ValueError(f"the Lease {self.namespace}/{self.name} does not read: {problem}")
        if lease is None:
            self._ensure_namespace()
            try:
                self.coord.create_namespaced_lease(self.namespace, self._body(None, take=True),  # type: ignore[arg-type]
                                                   _preload_content=False, _request_timeout=t)
            except Exception as exc:
                if status_of(exc) == 409:  # another candidate created it first
                    self.leader.clear()
                    return
                raise
            self._won(now)
            return
        spec = lease.get("spec") or {}
        self.stored = dict((lease.get("metadata") or {}).get("annotations") or {})
        self.holder = str(spec.get("holderIdentity") or "")
        rv = lease["metadata"]["resourceVersion"]
        if rv != self._seen[0]:
            self._seen = (rv, now)
        mine = spec.get("holderIdentity") == self.identity
        duration = float(spec.get("leaseDurationSeconds") or self.lease_s)
        expired = not spec.get("holderIdentity") or now - self._seen[1] > duration
        if not mine and not expired:
            self.leader.clear()
            return
        t = self._timeout_s()
        try:
            self.coord.replace_namespaced_lease(self.name, self.namespace,
                                                self._body(lease, take=not mine),  # type: ignore[arg-type]
                                                _preload_content=False, _request_timeout=t)
        except Exception as exc:
            if status_of(exc) == 409:  # somebody wrote it since we read it
                self.leader.clear()
                return
            raise
        if not mine:
            self.transitions += 1
        self._won(now)

    def _won(self, now: float) -> None:
        self._renewed = now
        self.leader.set()

    def _ensure_namespace(self) -> None:
        try:
            self.core.read_namespace(self.namespace, _request_timeout=REQUEST_TIMEOUT_S)
        except Exception as exc:
            if status_of(exc) != 404:
                raise
            try:
                body: Any = {"metadata": {"name": self.namespace, "labels": {
                    "app.kubernetes.io/managed-by": "accelfleet"}}}
                self.core.create_namespace(body, _request_timeout=REQUEST_TIMEOUT_S)
            except Exception as exc2:
                if status_of(exc2) != 409:
                    raise

    def release(self) -> None:
        """Step down at once (the next candidate need not wait the lease out)."""
        if not self.leader.is_set():
            return
        self.leader.clear()
        try:
            lease = raw(self.coord.read_namespaced_lease(
                self.name, self.namespace, _preload_content=False,
                _request_timeout=REQUEST_TIMEOUT_S))
            if (lease.get("spec") or {}).get("holderIdentity") != self.identity:
                return
            body = self._body(lease, take=False)
            body["spec"]["holderIdentity"] = None
            body["spec"]["leaseDurationSeconds"] = 1
            self.coord.replace_namespaced_lease(self.name, self.namespace,
                                                body,  # type: ignore[arg-type]
                                                _preload_content=False,
                                                _request_timeout=REQUEST_TIMEOUT_S)
        except Exception:  # it runs out by itself
            return
