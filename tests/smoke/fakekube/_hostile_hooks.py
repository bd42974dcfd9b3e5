"""The fake cluster's hostile test hooks (a mixin of FakeCluster, tests.smoke.fakekube._cluster):
injected failures (`fail_next`), lying rules (`lie`, `endless_pages`), answers sent as a
hostile or broken server sends them (`hostile`, `hostile_watch`), and the API server's RBAC
authorizer for one user (`enforce_rbac`); the HTTP side (tests.smoke.fakekube._http) asks
them of every request (`take_failure`, `take_hostile`, `take_hostile_watch`, `denied`,
`rewritten`)."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tests.smoke.fakekube._http import Hostile


@dataclass
class _Failure:
    remaining: int
    status: int
    path_contains: str


class _HostileHooks:
    """The hostile hooks of the FakeCluster (a mixin: the state is the cluster's)."""

    lock: threading.RLock
    _failures: list[_Failure]
    _lies: list[list[Any]]  # [method, path part, rule, times left]
    _hostile: list[list[Any]]  # [method, path part, Hostile, times left]
    _hostile_watches: list[list[Any]]  # [plural, how, times left]
    denials: list[str]  # requests RBAC refused (enforce_rbac), as answered

    def fail_next(self, count: int, *, status: int = 500, path_contains: str = "") -> None:
        """Answer the next `count` requests whose path contains `path_contains` with `status`
        (0: close the connection without an answer, as a dropped connection does)."""
        with self.lock:
            self._failures.append(_Failure(count, status, path_contains))

    def lie(self, method: str, path_contains: str,
            rule: Callable[[Any], Any], *, times: int = -1) -> None:
        """A lying rule in front of the server: the answer to each `method` request whose path
        contains `path_contains` goes through `rule` (which may change it, or raise an
        ApiError), `times` times (-1: every time). What a hostile or broken API server says."""
        with self.lock:
            self._lies.append([method, path_contains, rule, times])

    def hostile(self, method: str, path_contains: str, how: str, *, delay_s: float = 0.0,
                times: int = -1) -> None:
        """Send the answer to each `method` request whose path contains `path_contains` as a
        hostile or broken server would, `times` times (-1: every time): "drip" (every byte of
        the answer, status line and headers included, after `delay_s`: a read timeout that
        restarts with each byte never fires), "endless" (a chunked body that never ends: a
        list's items again and again, a pod log's lines again and again; `delay_s` between
        64 KiB chunks). Over real HTTP/1.1, chunked transfer encoding."""
        if how not in ("drip", "endless"):
            raise ValueError(f"no hostile answer {how!r}")
        with self.lock:
            self._hostile.append([method, path_contains, Hostile(how, delay_s), times])

    def endless_pages(self, path_contains: str, *, times: int = -1) -> None:
        """Lists whose path contains `path_contains` never end: every page carries a new
        `continue` token (the same items again), as a server whose paging is broken would."""
        offsets = itertools.count(10**9)  # this fake's tokens are offsets: past the end,
        # each page is empty, and still says there is more

        def rule(answer: Any) -> Any:
            if isinstance(answer, dict) and isinstance(answer.get("metadata"), dict):
                answer["metadata"]["continue"] = str(next(offsets))
            return answer

        self.lie("GET", path_contains, rule, times=times)

    def hostile_watch(self, plural: str, how: str, *, times: int = -1) -> None:
        """Answer each watch of `plural` as a hostile or broken server would, `times` times
        (-1: every time): "expired" (at once the 410 Expired ERROR event, whatever the
        version asked, then the end: a server that has compacted past every version), or
        "endless" (one event line that never ends: its object's annotation grows for ever,
        64 KiB a chunk, until the client hangs up)."""
        if how not in ("expired", "endless"):
            raise ValueError(f"no hostile watch {how!r}")
        with self.lock:
            self._hostile_watches.append([plural, how, times])

    def take_hostile_watch(self, plural: str) -> str | None:
        with self.lock:
            for h in self._hostile_watches:
                if h[0] == plural and h[2] != 0:
                    h[2] -= 1 if h[2] > 0 else 0
                    return str(h[1])
        return None

    def take_hostile(self, method: str, path: str) -> Hostile | None:
        """How the answer to this request is sent wrong (None: as the real server sends it)."""
        with self.lock:
            for h in self._hostile:
                if h[0] == method and h[1] in path and h[3] != 0:
                    h[3] -= 1 if h[3] > 0 else 0
                    return h[2]  # type: ignore[no-any-return]
        return None

    def enforce_rbac(self, user: str, cluster_rules: list[dict[str, Any]],
                     namespace: str, namespace_rules: list[dict[str, Any]],
                     more: dict[str, list[dict[str, Any]]] | None = None) -> None:
        """Answer every request as the API server's RBAC authorizer would for `user` bound to a
        ClusterRole of `cluster_rules`, a Role of `namespace_rules` in `namespace` and, `more`,
        a Role of those rules in each such namespace: a request no rule allows gets the real
        403 Forbidden (recorded in `denials`)."""
        with self.lock:
            self._rbac = (user, cluster_rules, {**(more or {}), namespace: namespace_rules})

    def denied(self, method: str, path: str, query: dict[str, str]) -> str:
        """'' when the request is allowed (or no RBAC is enforced); else the API server's
        Forbidden message (kubernetes apiserver/pkg/endpoints/handlers/responsewriters
        forbidden(): `<resource> "<name>" is forbidden: User "<user>" cannot <verb> resource
        "<resource>" in API group "<group>" in the namespace "<ns>"` or `at the cluster
        scope`)."""
        rbac = getattr(self, "_rbac", None)
        if rbac is None:
            return ""
        user, cluster_rules, roles = rbac
        parts = path.rstrip("/").split("/")[1:]
        if parts[:2] == ["api", "v1"]:
            group, rest = "", parts[2:]
        elif len(parts) >= 3 and parts[0] == "apis":
            group, rest = parts[1], parts[3:]
        else:
            return ""  # /version and other non-resource URLs: every authenticated user
        ns = ""
        if len(rest) >= 3 and rest[0] == "namespaces":
            ns, rest = rest[1], rest[2:]
        if not rest:
            return ""
        resource = "/".join([rest[0], *rest[2:3]])
        name = rest[1] if len(rest) > 1 else ""
        if rest[0] == "namespaces" and not ns and name:  # the Namespace object itself
            resource = "namespaces"
        verb = {"POST": "create", "PUT": "update", "PATCH": "patch"}.get(method)
        if method == "GET":
            verb = "get" if name else (
                "watch" if query.get("watch") in ("true", "1") else "list")
        elif method == "DELETE":
            verb = "delete" if name else "deletecollection"

        def allows(rules: list[dict[str, Any]]) -> bool:
            return any(group in r.get("apiGroups", []) and resource in r.get("resources", [])
                       and verb in r.get("verbs", []) and (not r.get("resourceNames") or
                                                           name in r["resourceNames"])
                       for r in rules)

        if allows(cluster_rules) or (ns and ns in roles and allows(roles[ns])):
            return ""
        where = f'in the namespace "{ns}"' if ns else "at the cluster scope"
        what = f'{rest[0]} "{name}"' if name else rest[0]
        message = (f'{what} is forbidden: User "{user}" cannot {verb} resource "{resource}" '
                   f'in API group "{group}" {where}')
        with self.lock:
            self.denials.append(message)
        return message

    def rewritten(self, method: str, path: str, result: Any) -> Any:
        """`result` as the lying rules tell it (the HTTP side calls this for every answer)."""
        with self.lock:
            rules = [r for r in self._lies if r[0] == method and r[1] in path and r[3] != 0]
            for r in rules:
                r[3] -= 1 if r[3] > 0 else 0
        for _, _, rule, _ in rules:
            result = rule(result)
        return result

    def failures_left(self) -> int:
        """Injected failures not yet served."""
        with self.lock:
            return sum(f.remaining for f in self._failures)

    def take_failure(self, path: str) -> int | None:
        with self.lock:
            for f in self._failures:
                if f.remaining > 0 and f.path_contains in path:
                    f.remaining -= 1
                    return f.status
        return None
