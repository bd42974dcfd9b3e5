"""Kubernetes API calls bounded in total wall time and in bytes, with retries (issue 29 item 6).

urllib3's read timeout starts again with every byte that arrives, so an API server (or a proxy
in front of one) that drips one byte a second, or never finishes a chunked answer, holds a call
for ever. Here every call has a budget: min(its cap, the time its caller has left, e.g. the
run's deadline). A watchdog thread shuts the call's socket down when the budget is spent, or
when the caller's `stop` is set (Ctrl-C, SIGTERM), whatever the server is doing, headers and
body alike; the call then raises ApiTimeout (or ApiStopped). An answer read as raw bytes
(`_preload_content=False`) is read inside the budget, at most `max_bytes` of it: a longer one
is cut there and says so (`Body.truncated`).

    body = with_retries(core.list_namespaced_pod, "ns", _preload_content=False,
                        _request_timeout=(5.0, 30.0), deadline=run_deadline, stop=stop)
    json.loads(body.data)

How the socket is found: the API client's urllib3 pools make connections of a subclass that,
on each request, tells the call running on this thread which connection carries it
(`track(client)`, done by `access.connect` and by `launch` for every client it is given, and
for any bound API method passed here).
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from fleet.errors import SetupError

if TYPE_CHECKING:
    from kubernetes.client import ApiClient

T = TypeVar("T")
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
CALL_CAP_S = 30.0  # one attempt of one call, the whole answer read
RETRIES_CAP_S = 60.0  # every attempt of one call, when the caller gives no deadline
MIN_ATTEMPT_S = 0.5  # less time left than this: no further attempt
API_PROBLEM = "api_problem"  # a check's detail: what the API server did wrong (a drip, an
# endless log), so that no node is quarantined for it
MAX_BODY_BYTES = 32 * 2**20  # a JSON answer (a page of 200 pods is ~1 MiB)
CHUNK_BYTES = 64 * 2**10
WATCH_TICK_S = 0.05  # how often the watchdog looks at the `stop` events of running calls


SLOW_HINT = ("check the API server, or a proxy in front of it, with `kubectl get --raw "
             "/version -v=6`: it answers too slowly, or without end")


class ApiTimeout(SetupError):
    """A call that did not get its whole answer within its budget (a drip, an endless answer,
    an unreachable server): retried while time is left (`transient`); where it ends a
    command, exit 2 with its hint."""

    def __init__(self, message: str, *, hint: str = SLOW_HINT) -> None:
        super().__init__(message, hint=hint)


class NoTimeLeft(ApiTimeout):
    """A call not made: its deadline had passed already."""


class ApiStopped(Exception):
    """A call cut short because its caller was stopped (Ctrl-C, SIGTERM)."""


@dataclass(frozen=True)
class Body:
    """An answer read as raw bytes: `data`, cut at the bound when `truncated`."""

    data: bytes
    truncated: bool = False
    status: int = 200

    def read(self) -> bytes:
        return self.data


@dataclass(eq=False)
class _Call:
    deadline: float
    budget_s: float
    stop: threading.Event | None
    conns: list[Any] = field(default_factory=list)
    why: str = ""  # "timeout" / "stopped" once the watchdog cut it


_lock = threading.Condition()
_active: set[_Call] = set()
_local = threading.local()
_watchdog: threading.Thread | None = None


def _shut(conn: Any) -> None:
    """End the connection's socket under whatever is reading it (a blocked recv returns)."""
    sock = getattr(conn, "sock", None)
    if sock is None:
        return
    try:  # the plain socket's shutdown, an SSL socket's too (its own would drop its state)
        socket.socket.shutdown(sock, socket.SHUT_RDWR)
    except (OSError, TypeError, ValueError):
        pass


def _watch() -> None:
    while True:
        with _lock:
            while not _active:
                _lock.wait()
            now = time.monotonic()
            cut: list[Any] = []
            for c in _active:
                if c.why:
                    continue
                if now >= c.deadline:
                    c.why = "timeout"
                elif c.stop is not None and c.stop.is_set():
                    c.why = "stopped"
                else:
                    continue
                cut += c.conns
            waits = [c.deadline - now for c in _active if not c.why]
            wait_s = min([WATCH_TICK_S, *waits]) if waits else WATCH_TICK_S
        for conn in cut:
            _shut(conn)
        with _lock:
            _lock.wait(max(0.005, wait_s))


def _start(call: _Call) -> None:
    global _watchdog
    with _lock:
        if _watchdog is None:
            _watchdog = threading.Thread(target=_watch, name="accelfleet-api-watchdog",
                                         daemon=True)
            _watchdog.start()
        _active.add(call)
        _lock.notify_all()
    _local.call = call


def _end(call: _Call) -> None:
    _local.call = None
    with _lock:
        _active.discard(call)


def _register(conn: Any) -> None:
    """A tracked connection starts a request: it carries the call running on this thread."""
    call: _Call | None = getattr(_local, "call", None)
    if call is None:
        return
    with _lock:
        call.conns.append(conn)
        cut = bool(call.why)
    if cut:
        _shut(conn)
        raise ConnectionAbortedError(f"the call was {call.why}")


class _Tracked:
    """Mixed into a urllib3 connection class: each request names its connection."""

    def request(self, *args: Any, **kwargs: Any) -> Any:
        _register(self)
        return super().request(*args, **kwargs)  # type: ignore[misc]


_classes: dict[type, type] = {}


def _tracked_pool(pool_cls: type) -> type:
    if pool_cls not in _classes:
        conn_cls = pool_cls.ConnectionCls  # type: ignore[attr-defined]
        tracked_conn = type(f"Tracked{conn_cls.__name__}", (_Tracked, conn_cls), {})
        _classes[pool_cls] = type(f"Tracked{pool_cls.__name__}", (pool_cls,),
                                  {"ConnectionCls": tracked_conn})
    return _classes[pool_cls]


def track(client: ApiClient) -> ApiClient:
    """Make `client`'s connections known to the calls that use them (idempotent)."""
    manager = getattr(getattr(client, "rest_client", None), "pool_manager", None)
    classes = getattr(manager, "pool_classes_by_scheme", None)
    if manager is None or not isinstance(classes, dict) or \
            getattr(manager, "_accelfleet_tracked", False):
        return client
    manager.pool_classes_by_scheme = {scheme: _tracked_pool(cls)
                                      for scheme, cls in classes.items()}
    manager._accelfleet_tracked = True
    manager.clear()  # pools made before (a preflight's) are made again, tracked
    return client


def _track_owner(fn: Callable[..., Any]) -> None:
    owner = getattr(fn, "__self__", None)
    client = getattr(owner, "api_client", None)
    if client is not None:
        track(client)


def _read(resp: Any, max_bytes: int) -> Body:
    """An urllib3 response's body, at most `max_bytes` of it."""
    if not hasattr(resp, "read"):
        data = getattr(resp, "data", resp)
        return Body(data if isinstance(data, bytes) else str(data or "").encode())
    parts: list[bytes] = []
    size = 0
    truncated = False
    try:
        while True:
            piece = resp.read(CHUNK_BYTES)
            if not piece:
                break
            parts.append(piece)
            size += len(piece)
            if size > max_bytes:
                truncated = True
                break
    finally:
        if truncated:
            resp.close()  # the rest is never read: the connection goes with it
        else:
            release = getattr(resp, "release_conn", None)
            if release is not None:
                release()
    data = b"".join(parts)
    return Body(data[:max_bytes], truncated, int(getattr(resp, "status", 200) or 200))


def bounded(fn: Callable[..., T], *args: Any, budget_s: float = CALL_CAP_S,
            stop: threading.Event | None = None, max_bytes: int = MAX_BODY_BYTES,
            **kwargs: Any) -> T:
    """One call of `fn`, its whole answer within `budget_s` (ApiTimeout past it; ApiStopped
    once `stop` is set). With `_preload_content=False` the answer is read here and returned as
    a Body of at most `max_bytes`."""
    if stop is not None and stop.is_set():
        raise ApiStopped("the run was stopped")
    if budget_s <= 0:
        raise NoTimeLeft("its deadline had passed: the call was not made")
    _track_owner(fn)
    timeout = kwargs.get("_request_timeout")
    if isinstance(timeout, tuple) and len(timeout) == 2:
        kwargs["_request_timeout"] = (min(float(timeout[0]), budget_s),
                                      min(float(timeout[1]), budget_s))
    call = _Call(time.monotonic() + budget_s, budget_s, stop)
    _start(call)
    try:
        resp = fn(*args, **kwargs)
        result: Any = _read(resp, max_bytes) if kwargs.get("_preload_content") is False \
            else resp
    except Exception as exc:
        if call.why:
            raise _cut(call) from None
        if _timed_out(exc) and time.monotonic() >= call.deadline - 0.01:
            raise _cut(call, "timeout") from None
        raise
    finally:
        _end(call)
    if call.why:  # cut as it finished: what it read may be partial
        raise _cut(call)
    return result  # type: ignore[no-any-return]


def _timed_out(exc: BaseException) -> bool:
    from urllib3.exceptions import MaxRetryError
    from urllib3.exceptions import TimeoutError as Urllib3Timeout

    reason = exc.reason if isinstance(exc, MaxRetryError) else exc
    return isinstance(reason, Urllib3Timeout | TimeoutError | socket.timeout)


def _cut(call: _Call, why: str = "") -> Exception:
    if (why or call.why) == "stopped":
        return ApiStopped("the run was stopped while the API server was answering")
    return ApiTimeout(f"the API server did not finish its answer within "
                      f"{call.budget_s:.1f} s")


def transient(exc: BaseException) -> bool:
    """Whether an API error is worth retrying: 429, 5xx, a dropped connection, a timeout."""
    from kubernetes.client.exceptions import ApiException
    from urllib3.exceptions import HTTPError

    if isinstance(exc, ApiException):
        return exc.status in RETRY_STATUSES
    return isinstance(exc, HTTPError | ConnectionError | TimeoutError | ApiTimeout)


def with_retries(fn: Callable[..., T], *args: Any, attempts: int = 6,
                 first_delay_s: float = 0.2, max_delay_s: float = 5.0,
                 sleep: Callable[[float], None] = time.sleep, deadline: float | None = None,
                 stop: threading.Event | None = None, cap_s: float = CALL_CAP_S,
                 max_bytes: int = MAX_BODY_BYTES, **kwargs: Any) -> T:
    """Call `fn`, retrying transient API errors with exponential backoff, `attempts` in all,
    every attempt and wait before `deadline` (monotonic; default RETRIES_CAP_S from now), each
    attempt within `cap_s` (`bounded`)."""
    end = deadline if deadline is not None else time.monotonic() + RETRIES_CAP_S
    delay = first_delay_s
    for attempt in range(1, attempts + 1):
        try:
            return bounded(fn, *args, budget_s=min(cap_s, end - time.monotonic()),
                           stop=stop, max_bytes=max_bytes, **kwargs)
        except Exception as exc:
            left = end - time.monotonic()
            if attempt == attempts or not transient(exc) or left < MIN_ATTEMPT_S + delay:
                raise
            if stop is not None:
                if stop.wait(delay):
                    raise ApiStopped("the run was stopped") from None
            else:
                sleep(delay)
            delay = min(max_delay_s, delay * 2)
    raise AssertionError("unreachable")


def words(exc: BaseException) -> str:
    """What went wrong with a call, in a few words for a report line."""
    from kubernetes.client.exceptions import ApiException

    if isinstance(exc, ApiException):
        return f"{exc.status} {exc.reason}"
    if isinstance(exc, SetupError):
        return exc.message
    if isinstance(exc, ApiStopped):
        return str(exc)
    from urllib3.exceptions import MaxRetryError

    if isinstance(exc, MaxRetryError):  # no answer at all, after urllib3's own retries
        return f"no answer from the API server ({type(exc.reason).__name__})"
    return type(exc).__name__


class TooLong(SetupError):
    """An answer past its bound: a list whose `continue` token did not end within the pages
    a list may take, a body past its bytes where the whole of it is needed (exit 2 where it
    ends a command)."""

    def __init__(self, message: str, *, hint: str = SLOW_HINT) -> None:
        super().__init__(message, hint=hint)


MAX_PAGES = 100  # pages of one list (of up to 500 items each, for the gate's node lists)


def pages(fetch: Callable[[str | None], dict[str, Any]], *, what: str,
          max_pages: int = MAX_PAGES) -> tuple[list[Any], dict[str, Any]]:
    """Every item of a paged list, `fetch(token)` giving one page, and the last page's
    metadata; TooLong past `max_pages` pages or on a `continue` token given twice (a list
    that never ends)."""
    items: list[Any] = []
    token: str | None = None
    seen: set[str] = set()
    for _ in range(max_pages):
        page = fetch(token)
        got = page.get("items") if isinstance(page, dict) else None
        items += got if isinstance(got, list) else []
        meta = page.get("metadata") if isinstance(page, dict) else None
        meta = meta if isinstance(meta, dict) else {}
        token = meta.get("continue") or None
        if not isinstance(token, str):
            return items, meta
        if token in seen:
            raise TooLong(f"{what}: the API server gave the same continue token twice (a "
                          "list that never ends)")
        seen.add(token)
    raise TooLong(f"{what} did not end within {max_pages} pages: its continue token was "
                  "followed no further")
