"""The gate's view of the nodes: list, then watch from the list's resourceVersion (with
bookmarks), resume a dropped watch from the last version seen, re-list when the server
answers 410 Expired (the version is too old: changes may have been missed).

Against a hostile or broken API server (issue 35):
- every re-list and every failed watch waits on a backoff as client-go's reflector does
  (kubernetes/client-go v0.35.7 `tools/cache/reflector.go`, read 2026-11-28:
  `wait.NewExponentialBackoffManager(800*time.Millisecond, 30*time.Second, 2*time.Minute,
  2.0, 1.0, ...)`: from 0.8 s, doubling, at most 30 s, each wait jittered up to twice its
  length, back to 0.8 s after 2 minutes without a failure). A 410 on every watch made 50-221
  full node lists a second without it; with it, the lists thin out to one every 30-60 s. A
  watch that ends within a second having delivered nothing counts as a failure too
  (client-go: "very short watch");
- a watch line (one event, one object) is read at most MAX_LINE_BYTES: a longer one (a line
  that never ends) drops the stream, and the nodes are listed again after the backoff, so
  memory stays bounded whatever the server sends;
- an object that is not a Node as the API defines one (`smoke.cluster.objects.node_problem`)
  is kept out of the cache (a changed node that turns malformed leaves it), counted, and
  reported once per resourceVersion to `rejected(name, node, problem)` (the controller's
  Warning Event and metric): one bad object never stops the view of the others.

The loop is `Reflector`'s, for any kind: the nodes here (`NodeWatch`), the pods bound to
nodes in `smoke.gate._informer` (issue 35, at scale: the idle check reads that cache)."""

from __future__ import annotations

import json
import random
import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from smoke.cluster import objects
from smoke.cluster.access import MAX_PAGES, pages, transient, with_retries
from smoke.gate._kube import REQUEST_TIMEOUT_S, raw, refused

if TYPE_CHECKING:
    from kubernetes.client import CoreV1Api

PAGE = 500
GONE = 410
# One watch event's line: a Node is stored in etcd within its request limit (etcd's
# --max-request-bytes, 1.5 MiB by default: https://etcd.io/docs/v3.6/dev-guide/limit/, read
# 2026-11-28); its JSON on the wire is larger than etcd's protobuf, so four times that leaves
# room, and nothing larger is a Node.
MAX_LINE_BYTES = 6 * 2**20
READ_BYTES = 64 * 2**10  # what one read of the stream takes at most
SHORT_WATCH_S = 1.0  # a watch that ends this soon with no event is a failure (client-go)

# client-go's reflector backoff (v0.35.7 tools/cache/reflector.go, above)
BACKOFF_FIRST_S = 0.8
BACKOFF_MAX_S = 30.0
BACKOFF_RESET_S = 120.0
BACKOFF_FACTOR = 2.0
BACKOFF_JITTER = 1.0


class Expired(Exception):
    """The watch's resourceVersion is too old (410): re-list."""


class LineTooLong(Exception):
    """A watch line past its bound: the stream is dropped, the nodes listed again."""


class Backoff:
    """client-go's exponential backoff manager: `next()` is the wait before the next try,
    from `first_s`, times `factor` each time, at most `max_s`, plus up to `jitter` times
    itself at random; a quiet spell of `reset_s` since the last wait starts again from
    `first_s`."""

    def __init__(self, first_s: float = BACKOFF_FIRST_S, max_s: float = BACKOFF_MAX_S, *,
                 reset_s: float = BACKOFF_RESET_S, factor: float = BACKOFF_FACTOR,
                 jitter: float = BACKOFF_JITTER,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.first_s, self.max_s, self.reset_s = first_s, max_s, reset_s
        self.factor, self.jitter, self.clock = factor, jitter, clock
        self._step_s = 0.0
        self._last = -float("inf")

    def next(self) -> float:
        now = self.clock()
        if now - self._last > self.reset_s:
            self._step_s = 0.0
        self._last = now
        self._step_s = self.first_s if self._step_s == 0.0 else min(
            self.max_s, self._step_s * self.factor)
        return self._step_s * (1.0 + random.random() * self.jitter)


def lines(resp: Any, max_line_bytes: int = MAX_LINE_BYTES) -> Iterator[bytes]:
    """The stream's lines, each at most `max_line_bytes` (LineTooLong past it), read
    READ_BYTES at a time (urllib3 hands a chunked body over in reads of at most that)."""
    buffer = bytearray()
    for segment in resp.stream(READ_BYTES, decode_content=False):
        buffer.extend(segment if isinstance(segment, bytes) else str(segment).encode())
        start = 0
        while True:
            end = buffer.find(b"\n", start)
            if end < 0:
                break
            if end - start > max_line_bytes:
                raise LineTooLong(f"a watch line of {end - start} bytes")
            yield bytes(buffer[start:end])
            start = end + 1
        del buffer[:start]
        if len(buffer) > max_line_bytes:
            raise LineTooLong(f"a watch line past {max_line_bytes} bytes, still unended")
    if buffer:
        yield bytes(buffer)


class Reflector:
    """One kind's list, then watch (the loop client-go's reflector runs), into the store a
    subclass keeps: `_list_page(token)` gives one page of the list, `_open_watch(rv)` the
    watch stream; `_problem(obj)` says whether an object reads as one of the kind;
    `_key(obj)` is its key in the store; `_replace(good)` takes a whole list, `_put(key, obj)`
    and `_drop(key)` one change each (under `self.lock`, each saying whether the store
    changed); `_malformed(key, obj)`, a changed object that turned malformed (default: out of
    the store). `changed(key)` is called after each change (key None: a full re-list)."""

    kind = "object"  # in words: "the node list", "listing or watching the nodes"
    plural = "objects"

    def __init__(self, changed: Callable[[str | None], None] | None, stop: threading.Event,
                 *, watch_timeout_s: int = 300,
                 rejected: Callable[[str, Any, str], None] | None = None,
                 max_line_bytes: int = MAX_LINE_BYTES, backoff: Backoff | None = None,
                 wait: Callable[[float], bool] | None = None,
                 max_pages: int = MAX_PAGES) -> None:
        self.changed = changed or (lambda _key: None)
        self.stop = stop
        self.watch_timeout_s = watch_timeout_s
        self.rejected = rejected
        self.max_line_bytes = max_line_bytes
        self.max_pages = max_pages
        self.backoff = backoff or Backoff()
        self.wait = wait or stop.wait  # how a backoff is waited out (tests record it)
        self.lock = threading.Lock()
        # objects kept out of the store: key -> (resourceVersion, problem)
        self.malformed: dict[str, tuple[str, str]] = {}
        self.synced = threading.Event()
        self.lists = 0  # full lists made (the first, then one per 410)
        self.resumes = 0  # watches resumed from the last version seen
        self.errors = 0  # watch or list errors (each retried with backoff)
        self.expired = 0  # watches answered 410 Expired
        self.oversized = 0  # streams dropped for a line past max_line_bytes
        self.skipped = 0  # objects skipped as malformed
        self.events = 0  # watch events read (a watch that brought none and ended at once
        # is a failure)
        self.last_error = ""  # the last failure, in words
        self.waits: list[float] = []  # the last backoff waits, newest last (at most 64)
        self.resource_version = ""
        self.last_refusal = ""  # the last list or watch the API server refused (403), if any
        # when the API last answered (a list, a watch event, a watch that ran its course) and
        # last failed to (monotonic; 0: never): /readyz is not ready while failed_at is later
        self.answered_at = 0.0
        self.failed_at = 0.0

    # -- what a subclass says ------------------------------------------------------------------
    def _list_page(self, token: str | None) -> dict[str, Any]:
        raise NotImplementedError

    def _open_watch(self, rv: str) -> Any:
        raise NotImplementedError

    def _problem(self, obj: Any) -> str:
        raise NotImplementedError

    def _key(self, obj: Any) -> str:
        return objects.name_of(obj)

    def _replace(self, good: dict[str, Any]) -> None:
        raise NotImplementedError

    def _put(self, key: str, obj: Any) -> bool:
        raise NotImplementedError

    def _drop(self, key: str) -> bool:
        raise NotImplementedError

    def _malformed(self, key: str, obj: Any) -> bool:
        return self._drop(key)

    # -- the loop ------------------------------------------------------------------------------
    def run(self) -> None:
        rv: str | None = None
        while not self.stop.is_set():
            try:
                if rv is None:
                    rv = self._list()
                started, events = time.monotonic(), self.events
                rv = self._watch(rv)
                self.resumes += 1
                if self.events > events or time.monotonic() - started >= SHORT_WATCH_S:
                    self.answered_at = time.monotonic()
                    continue  # a watch that ran its course: resume at once
                self.errors += 1  # ended at once, nothing said: a failure (client-go)
                self.last_error = "a watch that ended at once with no event"
                self.failed_at = time.monotonic()
            except Expired:
                self.expired += 1
                rv = None
            except LineTooLong as exc:
                self.oversized += 1
                self.last_error = str(exc)
                self.failed_at = time.monotonic()
                rv = None
            except Exception as exc:
                self.last_error = f"{type(exc).__name__}: {str(exc)[:300]}"
                self.failed_at = time.monotonic()
                # a dropped connection or a server error: resume from `rv`; anything else
                # (an answer that does not read): list again. Never give up: a controller
                # whose watch died would leave every new node gated, unseen.
                self.errors += 1
                self.last_refusal = refused(exc, f"listing or watching the {self.plural}") \
                    or self.last_refusal
                if not transient(exc) and not isinstance(exc, ConnectionError):
                    rv = None
            delay = self.backoff.next()  # every retry, re-list or not (client-go)
            self.waits = [*self.waits[-63:], delay]
            self.wait(delay)

    def _keep(self, obj: Any) -> str:
        """'' when `obj` reads as one of the kind; else its problem, reported (once per
        version)."""
        problem = self._problem(obj)
        if not problem:
            return ""
        self.skipped += 1
        key = self._key(obj)
        meta = obj.get("metadata") if isinstance(obj, dict) else None
        rv = str(meta.get("resourceVersion")) if isinstance(meta, dict) else ""
        with self.lock:
            seen = self.malformed.get(key) == (rv, problem)
            if key:
                self.malformed[key] = (rv, problem)
        if not seen and self.rejected is not None:
            try:
                self.rejected(key, obj, problem)
            except Exception:  # reporting never stops the view of the other objects
                pass
        return problem

    def _list(self) -> str:
        items, meta = pages(lambda token: self._list_page(token),
                            what=f"the {self.kind} list", max_pages=self.max_pages)
        rv = meta.get("resourceVersion")
        if not isinstance(rv, str) or not rv:
            raise ValueError(f"the {self.kind} list carries no resourceVersion to watch from")
        good: dict[str, Any] = {}
        bad: list[Any] = []
        for obj in items:
            if self._keep(obj):
                bad.append(obj)
            else:
                good[self._key(obj)] = obj
        with self.lock:
            self._replace(good)
            self.malformed = {k: v for k, v in self.malformed.items() if k not in good}
            for obj in bad:
                key = self._key(obj)
                if key:
                    self._malformed(key, obj)
            self.resource_version = rv
        self.lists += 1
        self.answered_at = time.monotonic()
        self.synced.set()
        self.changed(None)
        return rv

    def _watch(self, rv: str) -> str:
        resp: Any = self._open_watch(rv)
        try:
            for line in lines(resp, self.max_line_bytes):
                if self.stop.is_set():
                    break
                if not line.strip():
                    continue
                event = json.loads(line)  # not JSON: ValueError, listed again
                if not isinstance(event, dict) or not isinstance(event.get("object"), dict):
                    raise ValueError("a watch event that is no event object")
                obj, kind = event["object"], event.get("type")
                if kind == "ERROR":
                    if obj.get("code") == GONE:
                        raise Expired(obj.get("message", ""))
                    raise ConnectionError(f"watch error {obj.get('code')}: "
                                          f"{str(obj.get('message'))[:300]}")
                meta = obj.get("metadata")
                seen = meta.get("resourceVersion") if isinstance(meta, dict) else None
                if kind not in ("ADDED", "MODIFIED", "DELETED", "BOOKMARK") or \
                        not isinstance(seen, str) or not seen:
                    raise ValueError(f"a watch event of type {str(kind)[:20]!r} without a "
                                     "resourceVersion")
                rv = seen
                self.events += 1
                self.answered_at = time.monotonic()
                if kind == "BOOKMARK":
                    with self.lock:
                        self.resource_version = rv
                    continue
                key = self._key(obj)
                if kind != "DELETED" and self._keep(obj):
                    with self.lock:  # an object turned malformed (default: out of the store)
                        gone = bool(key) and self._malformed(key, obj)
                        self.resource_version = rv
                    if gone:
                        self.changed(key)
                    continue
                with self.lock:
                    if kind == "DELETED":
                        self._drop(key)
                        self.malformed.pop(key, None)
                    else:
                        self._put(key, obj)
                        self.malformed.pop(key, None)
                    self.resource_version = rv
                self.changed(key)
        finally:
            resp.close()
            resp.release_conn()
        return rv

    def wait_synced(self, timeout_s: float) -> bool:
        end = time.monotonic() + timeout_s
        while not self.synced.is_set() and not self.stop.is_set() and time.monotonic() < end:
            self.synced.wait(0.1)
        return self.synced.is_set()


class NodeWatch(Reflector):
    """A live cache of every node; `changed(name)` is called after each change (name None:
    a full re-list)."""

    kind, plural = "node", "nodes"

    def __init__(self, core: CoreV1Api, changed: Callable[[str | None], None],
                 stop: threading.Event, **kw: Any) -> None:
        super().__init__(changed, stop, **kw)
        self.core = core
        self.nodes: dict[str, dict[str, Any]] = {}

    def snapshot(self) -> dict[str, dict[str, Any]]:
        with self.lock:
            return dict(self.nodes)

    def get(self, name: str) -> dict[str, Any] | None:
        with self.lock:
            return self.nodes.get(name)

    def _list_page(self, token: str | None) -> dict[str, Any]:
        return raw(with_retries(self.core.list_node, limit=PAGE, _continue=token,
                                _preload_content=False,
                                _request_timeout=REQUEST_TIMEOUT_S))  # bounded (issue 29)

    def _open_watch(self, rv: str) -> Any:
        return self.core.list_node(watch=True, resource_version=rv, allow_watch_bookmarks=True,
                                   timeout_seconds=self.watch_timeout_s,
                                   _preload_content=False,
                                   _request_timeout=(5.0, self.watch_timeout_s + 30.0))

    def _problem(self, obj: Any) -> str:
        return objects.node_problem(obj)

    def _replace(self, good: dict[str, Any]) -> None:
        self.nodes = good

    def _put(self, key: str, obj: Any) -> bool:
        self.nodes[key] = obj
        return True

    def _drop(self, key: str) -> bool:
        return self.nodes.pop(key, None) is not None
