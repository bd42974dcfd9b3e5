"""What a launcher run reads of its cluster (smoke.cluster.launcher): the run's pods, a page
at a time; each finished pod's log (its HostReport, or why it has none); a running pod's last
line near its deadline; the scheduler's reason for a pod it cannot place; why Kueue holds a
queued pool. Every read is bounded in wall time and bytes (smoke.cluster._api): a pod list
takes at most MAX_POD_PAGES pages and a pod's log at most LOG_MAX_BYTES, each saying so when
it hits the bound."""

from __future__ import annotations

import json
from typing import Any

from smoke.cluster._api import API_PROBLEM, ApiStopped, ApiTimeout, Body, TooLong, words
from smoke.cluster._pods import _PodState
from smoke.cluster._queue import PROVISIONING_REQUEST, held_by_kueue
from smoke.cluster._rejudge import host_documents, parse_host_report
from smoke.cluster._runstate import JOBSET, REQUEST_TIMEOUT_S, _ClusterBase, _Pool
from smoke.cluster.access import with_retries
from smoke.cluster.run import POD, NodeOutcome
from smoke.probes import verdict as V
from smoke.probes.results import ProbeResult, Verdict

LOG_TAIL_LINES = 5000  # the report line, any second one, and the crash tail all in reach
CRASH_LINES = 6
MAX_POD_PAGES = 100  # pages of a pod list (PAGE_PODS each): a `continue` token past it is not
# followed
LOG_MAX_BYTES = 8 * 2**20  # of a pod's log (the API server's limitBytes, and read no further)
LAST_LINE_BYTES = 64 * 2**10
PAGE_PODS = 200  # pods per list request
PAGE_MAX_BYTES = 16 * 2**20  # of one page of pods (a real page of 200 is 1-2 MiB)


def _pod_state(pod: Any) -> _PodState | None:
    """What the launcher reads of one item of a pod list; None for an item that is not a Pod
    as the API defines one (no name, fields of the wrong type): it tells of no pod."""
    try:
        return _PodState.of(pod)
    except (KeyError, TypeError, ValueError, AttributeError):
        return None


def _obj(resp: Any) -> Any:
    """An answer read as bytes, as JSON ({} when it is none)."""
    try:
        return json.loads(_raw(resp) or b"{}")
    except (ValueError, RecursionError):
        return {}


def _raw(resp: Any) -> bytes:
    data = getattr(resp, "data", None)
    if data is None and hasattr(resp, "read"):
        data = resp.read()
    return data if isinstance(data, bytes) else str(data or "").encode()


class _Reads(_ClusterBase):
    """The reads of one cluster's run."""

    def _pods(self) -> list[_PodState]:
        """The run's pods, a page at a time, each kept only as what the launcher reads of it:
        memory stays flat however many pools and nodes the run has. At most MAX_POD_PAGES
        pages, and a `continue` token never followed twice (TooLong: a list that never
        ends)."""
        states: list[_PodState] = []
        token: str | None = None
        tokens: set[str] = set()
        # no list goes past the first deadline of a pool it follows: a slow answer does not
        # keep a pool from expiring on time
        deadline = min([self.deadline, *(p.deadline for p in self.pools
                                          if p.status is None and p.deadline)])
        for _ in range(MAX_POD_PAGES):
            body = with_retries(self.core.list_namespaced_pod, self.ns, deadline=deadline,
                                stop=self.stop, label_selector=self.selector, limit=PAGE_PODS,
                                _continue=token, _preload_content=False,
                                max_bytes=PAGE_MAX_BYTES, _request_timeout=REQUEST_TIMEOUT_S)
            if isinstance(body, Body) and body.truncated:
                raise TooLong(f"a page of the pod list ran past {len(body.data)} bytes "
                              "(read no further)")
            page = json.loads(_raw(body))
            if not isinstance(page, dict):
                raise ValueError("the pod list is not a PodList")
            items = page.get("items")
            states += [s for s in map(_pod_state, items if isinstance(items, list) else [])
                       if s is not None]
            meta = page.get("metadata")
            token = (meta.get("continue") if isinstance(meta, dict) else None) or None
            if not isinstance(token, str):
                return states
            if token in tokens:
                raise TooLong("the pod list gave the same continue token twice (a list that "
                              "never ends)")
            tokens.add(token)
        raise TooLong(f"the pod list did not end within {MAX_POD_PAGES} pages of "
                      f"{PAGE_PODS} pods: its continue token was followed no further")

    def _last_line(self, pod: str) -> str:
        try:
            resp = self._call(self.core.read_namespaced_pod_log, pod, self.ns, tail_lines=3,
                              limit_bytes=LAST_LINE_BYTES, max_bytes=LAST_LINE_BYTES,
                              _preload_content=False, _request_timeout=REQUEST_TIMEOUT_S)
            lines = _raw(resp).decode("utf-8", "replace").strip().splitlines()
        except Exception as exc:
            return f"(log unreadable: {words(exc)})"
        return lines[-1].strip()[:200] if lines else ""

    def _outcome(self, pod: _PodState) -> tuple[NodeOutcome, ProbeResult | None]:
        name, node, index, code = pod.name, pod.node, pod.index, pod.exit_code
        api = ""  # what the API server did wrong reading the log (not the node's doing)
        try:
            resp = self._call(self.core.read_namespaced_pod_log, name, self.ns,
                              tail_lines=LOG_TAIL_LINES, limit_bytes=LOG_MAX_BYTES,
                              max_bytes=LOG_MAX_BYTES, _preload_content=False,
                              _request_timeout=REQUEST_TIMEOUT_S)
            log = _raw(resp).decode("utf-8", "replace")
            if isinstance(resp, Body) and resp.truncated:
                lines = log[-300:].strip().splitlines()
                api = (f"its log ran past {LOG_MAX_BYTES} bytes, the most a log read takes: "
                       f"read no further (last line read: {(lines[-1] if lines else '')[:200]})")
        except (ApiTimeout, ApiStopped) as exc:
            log, api = "", f"its log could not be read: {words(exc)}"
        except Exception as exc:
            log = f"(log unreadable: {words(exc)})"
        if api and code in (0, None):  # no report taken from it, and no fault of the node's
            return (NodeOutcome(index=index, pod=name, node=node, exit_code=code,
                                slice=pod.slice, timing=pod.timing),
                    ProbeResult(V.HOST, POD, 0, Verdict.FAIL, f"pod {name}: {api}",
                                details={"exit_code": code, "log_tail": log[-4000:],
                                         API_PROBLEM: api}))
        report = parse_host_report(log)
        outcome = NodeOutcome(index=index, pod=name, node=node, report=report, exit_code=code,
                              slice=pod.slice, timing=pod.timing)
        if report is not None and code in (0, None):
            return outcome, None
        tail = " | ".join(line.strip() for line in log.strip().splitlines()[-CRASH_LINES:])
        why = (f"pod {name} exited {code}" if report is None or code not in (0, None)
               else f"pod {name} printed no report")
        docs = len(host_documents(log))
        if report is None and code == 0:
            why = f"pod {name} printed no report" if docs == 0 else (
                f"pod {name} printed {docs} report lines where the agent prints one: its "
                "output cannot be trusted" if docs > 1 else
                f"pod {name} printed a report that does not read as one")
        return outcome, ProbeResult(V.HOST, POD, 0, Verdict.FAIL,
                                    f"{why}; last log lines: {tail or '(empty)'}",
                                    details={"exit_code": code, "log_tail": log[-4000:]})

    def _held_by_kueue(self, p: _Pool) -> str | None:
        """Why Kueue still holds a queued pool's Job/JobSet (None if it does not, or unread)."""
        [obj] = [o for o in p.workload.objects if o.get("kind") in ("Job", "JobSet")]
        t = REQUEST_TIMEOUT_S
        try:
            if obj["kind"] == "Job":
                job = json.loads(_raw(self._call(
                    self.batch.read_namespaced_job, p.workload.name, self.ns,
                    _preload_content=False, _request_timeout=t)))
            else:
                group, version, plural = JOBSET
                job = json.loads(_raw(self._call(
                    self.custom.get_namespaced_custom_object, group, version, self.ns, plural,
                    p.workload.name, _preload_content=False, _request_timeout=t)))
            if not isinstance(job, dict):
                return None
        except Exception:
            return None
        try:
            group, version, plural = PROVISIONING_REQUEST
            listed = _obj(self._call(self.custom.list_namespaced_custom_object, group,
                                     version, self.ns, plural, _preload_content=False,
                                     _request_timeout=t))
            reqs = [r for r in (listed.get("items") or []) if isinstance(r, dict)] if \
                isinstance(listed, dict) else []
        except Exception:
            reqs = []  # no ProvisioningRequest API, or not allowed to read it
        return held_by_kueue(job, reqs, self.timeout_s, self.ns)

    def _scheduler_event(self, pod: str) -> str:
        try:
            resp = self._call(self.core.list_namespaced_event, self.ns,
                              field_selector=f"involvedObject.name={pod}",
                              _preload_content=False, _request_timeout=REQUEST_TIMEOUT_S)
            events = json.loads(_raw(resp)).get("items") or []
        except Exception:
            return ""
        msgs = [e.get("message", "") for e in events if e.get("reason") == "FailedScheduling"]
        return msgs[-1] if msgs else ""
