"""The gate's view of the nodes: list, then watch from the list's resourceVersion (with
bookmarks), resume a dropped watch from the last version seen, re-list when the server
answers 410 Expired (the version is too old: changes may have been missed)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from smoke.cluster.access import pages, transient, with_retries
from smoke.gate._kube import REQUEST_TIMEOUT_S, raw, refused

if TYPE_CHECKING:
    from kubernetes.client import CoreV1Api

PAGE = 500
GONE = 410


class Expired(Exception):
    """The watch's resourceVersion is too old (410): re-list."""


class NodeWatch:
    """A live cache of every node; `changed(name)` is called after each change (name None:
    a full re-list)."""

    def __init__(self, core: CoreV1Api, changed: Callable[[str | None], None],
                 stop: threading.Event, *, watch_timeout_s: int = 300) -> None:
        self.core, self.changed, self.stop = core, changed, stop
        self.watch_timeout_s = watch_timeout_s
        self.lock = threading.Lock()
        self.nodes: dict[str, dict[str, Any]] = {}
        self.synced = threading.Event()
        self.lists = 0  # full lists made (the first, then one per 410)
        self.resumes = 0  # watches resumed from the last version seen
        self.errors = 0  # watch or list errors (each retried with backoff)
        self.resource_version = ""
        self.last_refusal = ""  # the last list or watch the API server refused (403), if any

    def snapshot(self) -> dict[str, dict[str, Any]]:
        with self.lock:
            return dict(self.nodes)

    def get(self, name: str) -> dict[str, Any] | None:
        with self.lock:
            return self.nodes.get(name)

    def run(self) -> None:
        rv: str | None = None
        delay = 0.2
        while not self.stop.is_set():
            try:
                if rv is None:
                    rv = self._list()
                rv = self._watch(rv)
                self.resumes += 1
                delay = 0.2
            except Expired:
                rv = None
            except Exception as exc:
                # a dropped connection or a server error: resume from `rv`; anything else
                # (an answer that does not read): list again. Never give up: a controller
                # whose watch died would leave every new node gated, unseen.
                self.errors += 1
                self.last_refusal = refused(exc, "listing or watching the nodes") or \
                    self.last_refusal
                if not transient(exc) and not isinstance(exc, ConnectionError):
                    rv = None
                self.stop.wait(delay)
                delay = min(5.0, delay * 2)

    def _list(self) -> str:
        items, meta = pages(lambda token: raw(with_retries(
            self.core.list_node, limit=PAGE, _continue=token, _preload_content=False,
            _request_timeout=REQUEST_TIMEOUT_S)), what="the node list")  # bounded (issue 29)
        rv = str(meta.get("resourceVersion", ""))
        with self.lock:
            self.nodes = {n["metadata"]["name"]: n for n in items}
            self.resource_version = rv
        self.lists += 1
        self.synced.set()
        self.changed(None)
        return rv

    def _watch(self, rv: str) -> str:
        from kubernetes.watch.watch import iter_resp_lines

        resp: Any = self.core.list_node(watch=True, resource_version=rv, allow_watch_bookmarks=True,
                                   timeout_seconds=self.watch_timeout_s, _preload_content=False,
                                   _request_timeout=(5.0, self.watch_timeout_s + 30.0))
        try:
            for line in iter_resp_lines(resp):  # type: ignore[no-untyped-call]
                if self.stop.is_set():
                    break
                if not line or not line.strip():
                    continue
                event = json.loads(line)
                obj = event.get("object") or {}
                kind = event.get("type")
                if kind == "ERROR":
                    if obj.get("code") == GONE:
                        raise Expired(obj.get("message", ""))
                    raise ConnectionError(f"watch error {obj.get('code')}: "
                                          f"{obj.get('message')}")
                rv = str((obj.get("metadata") or {}).get("resourceVersion") or rv)
                if kind == "BOOKMARK":
                    with self.lock:
                        self.resource_version = rv
                    continue
                name = (obj.get("metadata") or {}).get("name", "")
                with self.lock:
                    if kind == "DELETED":
                        self.nodes.pop(name, None)
                    else:
                        self.nodes[name] = obj
                    self.resource_version = rv
                self.changed(name)
        finally:
            resp.close()
            resp.release_conn()
        return rv

    def wait_synced(self, timeout_s: float) -> bool:
        end = time.monotonic() + timeout_s
        while not self.synced.is_set() and not self.stop.is_set() and time.monotonic() < end:
            self.synced.wait(0.1)
        return self.synced.is_set()
