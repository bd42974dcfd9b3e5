"""The fake API server's HTTP side: routes the real client's requests to the cluster."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, unquote, urlsplit

from tests.smoke.fakekube._api import (
    GROUPS,
    RESOURCES,
    ApiError,
    _field_matches,
    _now,
    expired_status,
    selector_matches,
)

if TYPE_CHECKING:
    from tests.smoke.fakekube._cluster import FakeCluster


class _Handler(BaseHTTPRequestHandler):
    cluster: FakeCluster
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # else each keep-alive answer waits ~40 ms for a delayed ACK

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")

    def do_DELETE(self) -> None:
        self._handle("DELETE")

    def do_PATCH(self) -> None:
        self._handle("PATCH")

    def do_PUT(self) -> None:
        self._handle("PUT")

    def _body(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        return json.loads(raw) if raw.strip() else None

    def _send(self, code: int, payload: Any, content_type: str = "application/json") -> None:
        data = payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _handle(self, method: str) -> None:
        c = self.cluster
        url = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        body = self._body()
        with c.lock:
            c.requests.append((method, url.path))
        try:
            denied = c.denied(method, url.path, query)
            if denied:
                raise ApiError(403, "Forbidden", denied)
            code = c.take_failure(url.path)
            if code == 0:  # a dropped connection: no answer at all
                self.close_connection = True
                return
            if code is not None:
                raise ApiError(code, "InternalError" if code >= 500 else "TooManyRequests",
                               "injected failure")
            result = self._route(method, url.path.rstrip("/").split("/")[1:], query, body)
            if isinstance(result, _Watch):
                how = c.take_hostile_watch(result.plural)
                if how is not None:
                    self._hostile_watch(how)
                    return
                self._stream(result)
                return
            result = c.rewritten(method, url.path, result)
        except ApiError as exc:
            self._send(exc.code, exc.status())
            return
        hostile = c.take_hostile(method, url.path)
        if hostile is not None:
            self._hostile(hostile, 201 if method == "POST" else 200, result)
            return
        if isinstance(result, str):
            self._send(200, result, "text/plain")
        else:
            self._send(201 if method == "POST" else 200, result)

    def _route(self, method: str, parts: list[str], q: dict[str, str], body: Any) -> Any:
        c = self.cluster
        if parts == ["version"]:
            return {"major": "1", "minor": "33", "gitVersion": "v1.33.0-fake",
                    "gitCommit": "fake", "gitTreeState": "clean", "buildDate": _now(),
                    "goVersion": "go1.24", "compiler": "gc", "platform": "linux/amd64"}
        if parts[:2] == ["api", "v1"]:
            rest = parts[2:]
        elif len(parts) >= 3 and parts[0] == "apis" and f"{parts[1]}/{parts[2]}" in GROUPS:
            rest = parts[3:]
            allowed = GROUPS[f"{parts[1]}/{parts[2]}"]
            plural = rest[2] if len(rest) > 2 and rest[0] == "namespaces" else rest[0]
            if plural not in allowed:
                raise ApiError(404, "NotFound", "the server could not find the resource")
        else:
            raise ApiError(404, "NotFound", f"no route for /{'/'.join(parts)}")
        namespace = ""
        if rest and rest[0] == "namespaces" and len(rest) >= 3:
            namespace, rest = rest[1], rest[2:]
        if not rest or rest[0] not in RESOURCES:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        plural, name, sub = rest[0], rest[1] if len(rest) > 1 else "", rest[2:]
        namespaced = RESOURCES[plural][2]
        ns = namespace if namespaced else ""
        propagation = q.get("propagationPolicy") or (
            body.get("propagationPolicy") if isinstance(body, dict) else None)
        if sub == ["log"] and plural == "pods" and method == "GET":
            tail, limit = q.get("tailLines"), q.get("limitBytes")
            return c.pod_log(ns, name, int(tail) if tail is not None else None,
                             int(limit) if limit is not None else None)
        if sub == ["status"] and plural in ("nodes", "pods") and name:
            if method == "GET":
                return c.read(plural, ns, name)
            if method == "PUT":
                return c.replace(plural, ns, name, body or {}, subresource="status")
            if method == "PATCH":
                return c.patch(plural, ns, name, body, kind=self._patch_kind(),
                               subresource="status")
        if sub[:1] == ["proxy"] and plural == "pods" and method == "GET":
            return c.pod_proxy(ns, unquote(name))
        if sub:
            raise ApiError(404, "NotFound", f"no subresource {'/'.join(sub)}")
        if method == "GET" and name:
            return c.read(plural, ns, name)
        if method == "GET" and q.get("watch") in ("true", "1", "True"):
            return _Watch(plural, ns if namespace or not namespaced else None, q)
        if method == "GET":
            return c.list(plural, ns if namespace or not namespaced else None,
                          q.get("labelSelector", ""), q.get("fieldSelector", ""),
                          int(q.get("limit") or 0), q.get("continue", ""))
        if method == "POST" and not name:
            return c.create(plural, ns, body or {})
        if method == "DELETE" and name:
            obj = c.read(plural, ns, name)
            c.delete(plural, ns, name, propagation)
            return obj
        if method == "DELETE":
            c.delete_collection(plural, ns, q.get("labelSelector", ""), propagation)
            return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"}
        if method == "PATCH" and name:
            return c.patch(plural, ns, name, body, kind=self._patch_kind(), subresource="")
        if method == "PUT" and name:
            return c.replace(plural, ns, name, body or {})
        raise ApiError(405, "MethodNotAllowed", f"{method} not supported here")

    def _patch_kind(self) -> str:
        kind = (self.headers.get("Content-Type") or "").split(";")[0].strip()
        if kind not in ("application/merge-patch+json", "application/strategic-merge-patch+json",
                        "application/json-patch+json"):
            raise ApiError(415, "UnsupportedMediaType", f"the fake server takes JSON, merge and "
                           f"strategic merge patches, not {kind or 'no content type'}")
        return kind

    # -- hostile answers (FakeCluster.hostile) ------------------------------------------------
    def _hostile(self, how: Hostile, code: int, result: Any) -> None:
        """The answer as a hostile or broken server (or a proxy) sends it, over real HTTP/1.1
        with chunked transfer encoding: "drip", every byte of it (status line and headers
        too) on its own after `delay_s`; "endless", a body that never ends (a list's items
        over and over, a log's lines over and over, else JSON whitespace)."""
        text = isinstance(result, str)
        data = result.encode() if text else json.dumps(result).encode()
        head = (f"HTTP/1.1 {code} {self.responses.get(code, ('OK',))[0]}\r\n"
                f"Content-Type: {'text/plain' if text else 'application/json'}\r\n"
                f"Date: {self.date_time_string()}\r\nTransfer-Encoding: chunked\r\n"
                "\r\n").encode()
        self.close_connection = True
        c = self.cluster
        try:
            if how.how == "drip":
                wire = head + f"{len(data):x}\r\n".encode() + data + b"\r\n0\r\n\r\n"
                for i in range(len(wire)):
                    if c._stop.wait(how.delay_s):
                        return
                    self.wfile.write(wire[i:i + 1])
                    self.wfile.flush()
                return
            self.wfile.write(head)
            prefix, again = _endless_parts(result)
            if prefix:  # (a chunk of no bytes would end the body)
                self.wfile.write(f"{len(prefix):x}\r\n".encode() + prefix + b"\r\n")
            block = again * max(1, 65536 // max(1, len(again)))
            framed = f"{len(block):x}\r\n".encode() + block + b"\r\n"
            while not c._stop.is_set():
                self.wfile.write(framed)
                self.wfile.flush()
                if how.delay_s:
                    time.sleep(how.delay_s)
        except (BrokenPipeError, ConnectionResetError, OSError):
            return

    def _hostile_watch(self, how: str) -> None:
        """A watch answered as FakeCluster.hostile_watch says: the 410 ERROR event at once, or
        one line that never ends."""
        c = self.cluster
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.close_connection = True
        try:
            if how == "expired":
                self._chunk({"type": "ERROR", "object": expired_status(0, c._compacted)})
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()
                return
            head = b'{"type": "MODIFIED", "object": {"metadata": {"name": "n", ' \
                b'"annotations": {"a": "'
            self.wfile.write(f"{len(head):x}\r\n".encode() + head + b"\r\n")
            block = b"x" * 65536
            framed = f"{len(block):x}\r\n".encode() + block + b"\r\n"
            while not c._stop.is_set():
                self.wfile.write(framed)
                self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, OSError):
            return

    # -- watch -------------------------------------------------------------------------------
    def _chunk(self, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode() + b"\n"
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _stream(self, w: _Watch) -> None:
        """A watch as the API server serves it: HTTP 200, one JSON event per line (ADDED,
        MODIFIED, DELETED; BOOKMARK every `bookmark_s` when allowed), until `timeoutSeconds`.
        No resourceVersion (or "0"): the current objects as ADDED first. A resourceVersion
        older than the kept changes: one ERROR event with the 410 Expired Status, then the
        end (`_api.expired_status`)."""
        c = self.cluster
        kind, api_version, _ = RESOURCES[w.plural]
        label, fields = w.query.get("labelSelector", ""), w.query.get("fieldSelector", "")
        bookmarks = w.query.get("allowWatchBookmarks") in ("true", "1", "True")
        end = time.monotonic() + float(w.query.get("timeoutSeconds") or 1800)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            asked = w.query.get("resourceVersion", "")
            if asked in ("", "0"):
                listed = c.list(w.plural, w.namespace, label, fields)
                for item in listed["items"]:
                    self._chunk({"type": "ADDED", "object": item})
                since = int(listed["metadata"]["resourceVersion"])
            else:
                try:
                    since = c.watch_from(int(asked))
                except ApiError:
                    self._chunk({"type": "ERROR",
                                 "object": expired_status(int(asked), c._compacted)})
                    since = -1
            last_bookmark = time.monotonic()
            while since >= 0 and not c._stop.is_set() and time.monotonic() < end:
                changes, horizon, expired = c.changes_after(
                    since, min(0.2, max(0.0, end - time.monotonic())))
                if expired:
                    self._chunk({"type": "ERROR", "object": expired_status(since,
                                                                           c._compacted)})
                    break
                for rv, type_, (plural, ns, _), obj in changes:
                    since = max(since, rv)
                    if plural != w.plural or (w.namespace is not None and ns != w.namespace):
                        continue
                    if selector_matches(label, obj["metadata"].get("labels") or {}) and \
                            _field_matches(fields, obj):
                        self._chunk({"type": type_, "object": obj})
                since = max(since, horizon)
                if bookmarks and time.monotonic() - last_bookmark >= c.bookmark_s:
                    self._chunk({"type": "BOOKMARK", "object": {
                        "kind": kind, "apiVersion": api_version,
                        "metadata": {"resourceVersion": str(since)}}})
                    last_bookmark = time.monotonic()
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, OSError):
            self.close_connection = True


def _endless_parts(result: Any) -> tuple[bytes, bytes]:
    """(what is sent first, what is sent again and again) for an answer that never ends."""
    if isinstance(result, str):
        lines = result or "still running\n"
        return b"", (lines if lines.endswith("\n") else lines + "\n").encode()
    items = result.get("items") if isinstance(result, dict) else None
    if isinstance(items, list) and items:
        head = {k: v for k, v in result.items() if k != "items"}
        prefix = json.dumps(head).encode()[:-1] + b', "items": ['
        return prefix, b"".join(json.dumps(item).encode() + b", " for item in items)
    return json.dumps(result).encode()[:-1], b" " * 1024


@dataclass
class Hostile:
    """How one answer is sent wrong (FakeCluster.hostile)."""

    how: str  # "drip" | "endless"
    delay_s: float = 0.0


class _Watch:
    """A watch request routed: what to stream."""

    def __init__(self, plural: str, namespace: str | None, query: dict[str, str]) -> None:
        self.plural, self.namespace, self.query = plural, namespace, query
