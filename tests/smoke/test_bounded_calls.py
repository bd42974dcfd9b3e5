"""Issue 29 item 6: every Kubernetes API call is bounded in total wall time and in bytes, with
the real client against the fake API server on loopback sending its answers as a hostile or
broken server would (`FakeCluster.hostile`): a drip (one byte at a time, status line and
headers included: urllib3's read timeout restarts with each byte and never fires) and an
answer that never ends. Each call runs in a thread whose join is only a hang guard: a call
still running after HANG_S is the bug this guards against (before smoke.cluster._api, a drip
held the call for as long as the server went on)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from smoke.cluster._api import ApiStopped, ApiTimeout, Body, with_retries
from tests.smoke.fakekube import FakeCluster

HANG_S = 60.0  # generous: a call bounded at 1 s that is still running after this hangs
DRIP_S = 0.05


def _client(cluster: FakeCluster, tmp_path: Path) -> Any:
    from kubernetes import client as k
    from kubernetes import config

    kc = cluster.kubeconfig(tmp_path / "kubeconfig", context="fake")
    return k.CoreV1Api(config.new_client_from_config(config_file=str(kc), context="fake"))


def _outcome(fn: Callable[[], Any]) -> Any:
    """What `fn` returned or raised; a failed test when it is still running after HANG_S."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # the outcome under test
            box["value"] = exc

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(HANG_S)
    if t.is_alive():
        pytest.fail(f"the call still runs after {HANG_S} s: it hangs")
    return box["value"]


def test_a_dripped_answer_ends_at_the_calls_budget(fake_cluster: FakeCluster,
                                                   tmp_path: Path) -> None:
    core = _client(fake_cluster, tmp_path)
    fake_cluster.hostile("GET", "/api/v1/nodes", "drip", delay_s=DRIP_S)
    got = _outcome(lambda: with_retries(core.list_node, _preload_content=False,
                                        _request_timeout=(5.0, 30.0), cap_s=1.0,
                                        deadline=time.monotonic() + 3.0))
    assert isinstance(got, ApiTimeout), got
    assert "did not finish its answer within" in str(got)
    assert "kubectl get --raw /version" in got.hint and got.exit_code == 2


def test_a_dripped_answer_read_as_a_model_ends_too(fake_cluster: FakeCluster,
                                                   tmp_path: Path) -> None:
    """The client's own read of the body (`_preload_content` left True) is inside the bound."""
    core = _client(fake_cluster, tmp_path)
    fake_cluster.hostile("GET", "/api/v1/namespaces/default", "drip", delay_s=DRIP_S)
    got = _outcome(lambda: with_retries(core.read_namespace, "default", attempts=1,
                                        cap_s=1.0, _request_timeout=(5.0, 30.0)))
    assert isinstance(got, ApiTimeout), got


def test_an_endless_answer_is_cut_at_its_bytes_and_says_so(fake_cluster: FakeCluster,
                                                           tmp_path: Path) -> None:
    core = _client(fake_cluster, tmp_path)
    fake_cluster.hostile("GET", "/api/v1/nodes", "endless", times=1)
    got = _outcome(lambda: with_retries(core.list_node, _preload_content=False,
                                        max_bytes=2**20, _request_timeout=(5.0, 30.0)))
    assert isinstance(got, Body), got
    assert got.truncated and len(got.data) == 2**20
    assert got.data.startswith(b'{"kind": "NodeList"')
    after = with_retries(core.list_node, _preload_content=False,  # the client still works
                         _request_timeout=(5.0, 30.0))
    assert isinstance(after, Body) and not after.truncated


def test_a_stop_cuts_a_drip_at_once(fake_cluster: FakeCluster, tmp_path: Path) -> None:
    core = _client(fake_cluster, tmp_path)
    fake_cluster.hostile("GET", "/api/v1/nodes", "drip", delay_s=DRIP_S)
    stop = threading.Event()
    timer = threading.Timer(0.3, stop.set)
    timer.start()
    got = _outcome(lambda: with_retries(core.list_node, _preload_content=False, stop=stop,
                                        _request_timeout=(5.0, 30.0)))
    timer.cancel()
    assert isinstance(got, ApiStopped), got


def test_retries_end_by_the_callers_deadline(fake_cluster: FakeCluster,
                                             tmp_path: Path) -> None:
    """A server that drips every answer: each attempt is cut, and no attempt starts past the
    deadline (six attempts of the 1 s bound would take 6 s)."""
    core = _client(fake_cluster, tmp_path)
    fake_cluster.hostile("GET", "/api/v1/nodes", "drip", delay_s=DRIP_S)
    deadline = time.monotonic() + 2.5
    got = _outcome(lambda: with_retries(core.list_node, _preload_content=False, cap_s=1.0,
                                        deadline=deadline, _request_timeout=(5.0, 30.0)))
    assert isinstance(got, ApiTimeout), got
    gets = [p for m, p in fake_cluster.requests if m == "GET" and p == "/api/v1/nodes"]
    assert 1 <= len(gets) <= 3, gets


def _raw_get(cluster: FakeCluster, path: str, size: int) -> bytes:
    host, port = cluster.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=30) as s:
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
        data = b""
        while len(data) < size:
            piece = s.recv(size - len(data))
            if not piece:
                break
            data += piece
        return data


def test_the_fakes_hostile_answers_are_real_http(fake_cluster: FakeCluster) -> None:
    """A real status line and chunked transfer encoding, as a real server's answer."""
    fake_cluster.hostile("GET", "/api/v1/nodes", "drip", delay_s=0.001, times=1)
    dripped = _raw_get(fake_cluster, "/api/v1/nodes", 200)
    assert dripped.startswith(b"HTTP/1.1 200 OK\r\n"), dripped
    assert b"Transfer-Encoding: chunked\r\n" in dripped
    fake_cluster.hostile("GET", "/api/v1/nodes", "endless", times=1)
    endless = _raw_get(fake_cluster, "/api/v1/nodes", 300_000)
    head, _, body = endless.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 OK") and b"Transfer-Encoding: chunked" in head
    size, _, rest = body.partition(b"\r\n")
    assert rest[:int(size, 16)].startswith(b'{"kind": "NodeList"')
    assert len(endless) == 300_000  # and more to come


def test_the_fake_pages_for_ever_when_told(fake_cluster: FakeCluster, tmp_path: Path) -> None:
    core = _client(fake_cluster, tmp_path)
    fake_cluster.endless_pages("/api/v1/nodes")
    tokens = []
    token = None
    for _ in range(3):
        page = core.list_node(limit=10, _continue=token)
        token = page.metadata._continue
        tokens.append(token)
    assert all(tokens) and len(set(tokens)) == 3


def test_the_fake_honours_limit_bytes(fake_cluster: FakeCluster, tmp_path: Path) -> None:
    """The API server's limitBytes on a pod log (the launcher asks for it)."""
    import sys

    core = _client(fake_cluster, tmp_path)
    fake_cluster.add_node("n1", labels={"kubernetes.io/hostname": "n1"})
    fake_cluster.set_node_command("n1", [sys.executable, "-c", "print('x' * 5000)"])
    fake_cluster.create("pods", "default", {
        "metadata": {"name": "p"}, "spec": {"nodeName": "n1", "restartPolicy": "Never",
                                            "containers": [{"name": "c", "image": "i",
                                                            "command": ["true"]}]}})
    end = time.monotonic() + HANG_S
    while len(core.read_namespaced_pod_log("p", "default")) < 5000:
        assert time.monotonic() < end, "the pod never printed"
        time.sleep(0.05)
    assert core.read_namespaced_pod_log("p", "default", limit_bytes=100) == "x" * 100


def test_a_list_that_pages_for_ever_stops_at_its_bound(fake_cluster: FakeCluster,
                                                       tmp_path: Path) -> None:
    """The gate's node lists (smoke.cluster.access.pages): the fake's `continue` token never
    runs out; the list stops at its pages and says so, an exit 2 where it ends a command."""
    import json

    from smoke.cluster.access import TooLong, pages

    core = _client(fake_cluster, tmp_path)
    fake_cluster.endless_pages("/api/v1/nodes")

    def fetch(token: str | None) -> dict[str, Any]:
        body = with_retries(core.list_node, limit=5, _continue=token, _preload_content=False,
                            _request_timeout=(5.0, 30.0))
        return json.loads(body.data)  # type: ignore[no-any-return]

    got = _outcome(lambda: pages(fetch, what="the node list", max_pages=7))
    assert isinstance(got, TooLong), got
    assert "the node list did not end within 7 pages" in str(got) and got.exit_code == 2
    gets = [p for m, p in fake_cluster.requests if m == "GET" and p == "/api/v1/nodes"]
    assert len(gets) == 7


@pytest.mark.parametrize("command", ["status", "release"])
def test_status_and_release_against_a_drip_exit_2_naming_it(
        command: str, fake_cluster: FakeCluster, stack: Path, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """`smoke status` and `smoke release` read the quarantined nodes with a bounded call: a
    drip is exit 2 with its words and hint, never a hang or an internal error. (Every call
    without a deadline of its own has RETRIES_CAP_S in all; 2 s here, so that the test is
    quick.)"""
    from typer.testing import CliRunner

    import smoke.cluster._api as api
    from cli.main import app

    monkeypatch.setattr(api, "RETRIES_CAP_S", 2.0)
    fake_cluster.hostile("GET", "/api/v1/nodes", "drip", delay_s=DRIP_S)
    kc = fake_cluster.kubeconfig(tmp_path / "kubeconfig", context="fake")
    args = ["smoke", command, *(["gpu-a-node-0", "--stack"] if command == "release" else []),
            str(stack), "--kubeconfig", str(kc), "--context", "c1=fake"]
    result = _outcome(lambda: CliRunner().invoke(app, args))
    assert result.exit_code == 2, result.output
    assert "did not finish its answer within" in result.output
    assert "internal error" not in result.output
