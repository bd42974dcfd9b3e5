"""Issue 22: a cluster smoke run is a library call. `run_smoke` on the fake API server (the
real Kubernetes client over HTTP; nodes built from recorded real GKE nodes): a library caller
smokes a stack and quarantines what failed with no CLI code, gets a typed result, and nothing
is printed."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from smoke.cluster.quarantine import Cap
from smoke.session import SmokeRequest, SmokeResult, run_smoke
from tests.smoke.test_cluster_run import _recorded, add_pool_nodes, assert_nothing_left
from tests.smoke.test_quarantine import stack  # noqa: F401  (the fixture: gpu-a of 3 nodes)

pytest.importorskip("torch")


class Recorder:
    """A caller's progress display: what it was told, and when it was live."""

    def __init__(self) -> None:
        self.updates: list[tuple[str, str]] = []
        self.entered = self.left = 0

    def __enter__(self) -> Recorder:
        self.entered += 1
        return self

    def __exit__(self, *exc: object) -> None:
        self.left += 1

    def update(self, pool: str, state: str, done: int, total: int, detail: str) -> None:
        self.updates.append((pool, state))


def test_smoke_this_stack_and_quarantine_as_a_library_call(
        cluster: Any, stack: Path, tmp_path: Path,  # noqa: F811
        capsys: pytest.CaptureFixture[str]) -> None:
    nodes = add_pool_nodes(cluster, "gpu-a", 3)
    for node, tflops in zip(nodes, (800.0, 790.0, 640.0), strict=True):
        cluster.set_node_output(node, _recorded(node, tflops))
    bad = nodes[2]
    kc = cluster.kubeconfig(tmp_path / "kubeconfig", context="fake")
    out, history = tmp_path / "kept", tmp_path / "history.sqlite"
    progress = Recorder()
    result = run_smoke(SmokeRequest(
        stack_file=stack, kubeconfig=kc, contexts={"c1": "fake"}, pools=["gpu-a"],
        quarantine=Cap.parse("10%"), junit=tmp_path / "smoke.xml", out=out,
        html=tmp_path / "report.html", history=history), progress=progress)
    assert isinstance(result, SmokeResult) and not result.ok
    assert {f.node for f in result.report.failures} == {bad}
    assert result.quarantine is not None
    assert [(a.node, a.state) for a in result.quarantine.actions] == [(bad, "quarantined")]
    assert cluster.get("nodes", "", bad)["spec"]["unschedulable"] is True
    assert any(bad in line for line in result.problems())
    written = set(result.written)
    assert {tmp_path / "smoke.xml", out / "run.json", out / "junit.xml",
            tmp_path / "report.html", history} <= written
    assert any(p.parent == out / "manifests" for p in written)
    assert all(p.exists() for p in written) and result.unsaved == ()
    assert '"quarantine"' in (out / "run.json").read_text(encoding="utf-8")
    assert (progress.entered, progress.left) == (1, 1)
    assert progress.updates[-1] == ("gpu-a", "failed")  # told as the pool went
    assert capsys.readouterr() == ("", "")  # the library never prints
    assert_nothing_left(cluster, result.report.run_id)


def test_a_stopped_run_is_cancelled_cleaned_up_and_keeps_no_history(
        cluster: Any, stack: Path, tmp_path: Path) -> None:  # noqa: F811
    """Off the main thread (no signal handler can be set there) the caller's `stop` ends
    the run; nothing is quarantined and the history is not written."""
    add_pool_nodes(cluster, "gpu-a", 3)
    kc = cluster.kubeconfig(tmp_path / "kubeconfig", context="fake")
    stop = threading.Event()
    stop.set()
    got: list[SmokeResult] = []
    request = SmokeRequest(stack_file=stack, kubeconfig=kc, contexts={"c1": "fake"},
                           pools=["gpu-a"], quarantine=Cap.parse("1"),
                           junit=tmp_path / "smoke.xml", history=tmp_path / "h.sqlite")
    worker = threading.Thread(target=lambda: got.append(run_smoke(request, stop=stop)))
    worker.start()
    worker.join(120)
    [result] = got
    assert result.report.cancelled and not result.ok
    assert result.quarantine is None
    assert (tmp_path / "smoke.xml").exists() and not (tmp_path / "h.sqlite").exists()
    assert_nothing_left(cluster, result.report.run_id)


def test_outputs_in_memory_reach_the_cluster_and_are_checked(
        cluster: Any, stack: Path, tmp_path: Path) -> None:  # noqa: F811
    """What `accelfleet up` hands over: the stack's outputs as a mapping, no file holding the
    kubeconfigs; outputs that are not an accelfleet stack's, or hide a kubeconfig, are
    refused with what to do."""
    from fleet import load_fleet
    from fleet.errors import InputError
    from fleet.inventory import build_inventory
    from smoke.cluster.sources import load_source

    nodes = add_pool_nodes(cluster, "gpu-a", 3)
    for node in nodes:
        cluster.set_node_output(node, _recorded(node, 800.0))
    inventory = build_inventory(load_fleet(str(stack)), "fake").to_dict()
    kc = cluster.kubeconfig(tmp_path / "kc", context="c1").read_text(encoding="utf-8")
    result = run_smoke(SmokeRequest(
        outputs={"inventory": inventory, "kubeconfigs": {"c1": kc}}, pools=["gpu-a"],
        kubeconfig=tmp_path / "missing", timeout_s=60, record_history=False))
    assert result.ok, result.problems()
    assert result.report.tested == 3 and result.written == ()
    with pytest.raises(InputError, match="the stack's outputs have no `inventory` output"):
        load_source(None, {"kubeconfigs": {"c1": kc}})
    with pytest.raises(InputError, match="the stack's outputs: the kubeconfig of c1 is hidden"):
        load_source(None, {"inventory": inventory, "kubeconfigs": {"c1": "[secret]"}})
