"""TPU join (issue 28 item 8): the hosts of a multi-host slice join once the launcher, which
sees every pod's timestamps, says the last host started; so the join budget follows the
slowest host's image pull and start (bounded by half the Job's deadline), not a fixed share.

Pod statuses are the real one of tests/smoke/test_workload_pods.py (kite-org/kite#136) with
other times; the fake cluster's kubelet holds a pod in ContainerCreating while its node pulls
the image (set_node_pull_s) and refreshes downward API files from the pod's annotations, as the
real kubelet does."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from smoke.cluster._podtime import pod_timing, slice_start
from smoke.cluster.workload import SLICE_MOUNT
from smoke.probes.agent import slice_wait_s, wait_for_slice
from tests.smoke.test_cluster_run import TPU_STACK, assert_nothing_left, reports, smoke_run
from tests.smoke.test_workload_pods import _with_times

SLICE_KEY = "accelfleet.io/slice-started"


def test_the_last_host_start_and_each_hosts_startup_come_from_the_pod_timestamps() -> None:
    placed = "2026-11-27T10:00:00Z"
    started = {"h0": "2026-11-27T10:00:40Z", "h1": "2026-11-27T10:01:05Z",
               "h2": "2026-11-27T10:04:30Z", "h3": "2026-11-27T10:00:55Z"}
    timings = {h: pod_timing(_with_times(placed, t, None)).to_dict() for h, t in
               started.items()}
    said = slice_start(timings, 4)
    assert said is not None and said.started_at == "2026-11-27T10:04:30Z"
    assert said.slowest == "h2" and said.spread_s == 230.0
    assert said.startup_s == {"h0": 40.0, "h1": 65.0, "h2": 270.0, "h3": 55.0}
    pulling = dict(timings)
    pulling["h2"] = pod_timing({"phase": "Pending", "conditions": [
        {"type": "PodScheduled", "status": "True", "lastTransitionTime": placed}],
        "containerStatuses": [{"name": "agent", "state": {"waiting": {
            "reason": "ContainerCreating"}}}]}).to_dict()
    assert slice_start(pulling, 4) is None  # a host still pulling: no word yet


def test_a_host_waits_for_the_word_and_says_when_it_never_came(tmp_path: Path) -> None:
    word = tmp_path / "started"
    word.write_text("", encoding="utf-8")
    timer = threading.Timer(0.3, word.write_text, ("2026-11-27T10:04:30Z",),
                            {"encoding": "utf-8"})
    timer.start()
    got = wait_for_slice(str(word), 30, poll_s=0.05)
    timer.join()
    assert got["slice_started_at"] == "2026-11-27T10:04:30Z"
    never = wait_for_slice(str(tmp_path / "missing"), 0.2, poll_s=0.05)
    assert "never said" in never["slice_not_started"]
    assert slice_wait_s(900) == 450 and slice_wait_s(60) == 60  # bounded by the deadline


def test_multi_host_pods_read_the_word_through_a_downward_api_file() -> None:
    import tempfile

    from fleet import load_fleet
    from fleet.inventory import build_inventory
    from smoke.cluster.workload import RenderOptions, render_run

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "Pulumi.tpu.yaml"
        path.write_text(TPU_STACK, encoding="utf-8")
        inv = build_inventory(load_fleet(str(path)), "tpu")
    [w] = render_run(inv, RenderOptions(run_id="t1")).pools
    [jobset] = [o for o in w.objects if o["kind"] == "JobSet"]
    spec = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    [vol] = [v for v in spec["volumes"] if v["name"] == "slice"]
    assert vol["downwardAPI"]["items"] == [{"path": "started", "fieldRef": {
        "fieldPath": f"metadata.annotations['{SLICE_KEY}']"}}]
    agent = spec["containers"][0]
    assert {"name": "slice", "mountPath": SLICE_MOUNT, "readOnly": True} in \
        agent["volumeMounts"]
    args = agent["args"]
    assert args[args.index("--slice-started-file") + 1] == f"{SLICE_MOUNT}/started"


_HOST = """\
import json, sys
from smoke.probes.agent import wait_for_slice
said = wait_for_slice(sys.argv[1], 30, poll_s=0.1)
report = json.loads(open(sys.argv[2]).read())
report["results"][0]["details"] = said
print(json.dumps(report))
"""


def test_a_slice_whose_host_pulls_late_joins_after_it_and_says_each_hosts_start(
        fake_cluster: Any, tmp_path: Path, cpu_nodes: None) -> None:
    from tests.smoke.test_cluster_run import add_tpu_hosts

    stack, hosts = add_tpu_hosts(fake_cluster, tmp_path, nodepool_labels=True)
    late = hosts[3]
    fake_cluster.set_node_pull_s(late, 3.0)
    for host in hosts:  # each host: its recorded report, once the launcher's word came
        canned = tmp_path / f"{host}.json"
        from tests.smoke.test_cluster_run import _tpu_report

        canned.write_text(_tpu_report(host), encoding="utf-8")
        fake_cluster.set_node_command(host, ["python", "-c", _HOST,
                                             f"{SLICE_MOUNT}/started", str(canned)])
    code, output, doc = smoke_run(fake_cluster, stack, tmp_path, "--tier", "2")
    assert code == 0, output
    [pool] = doc["pools"]
    [check] = [c["result"] for c in pool["checks"] if c["result"]["probe"] == "slice_start"]
    assert check["details"]["slowest"] == late and check["details"]["not_told"] == []
    startup = check["details"]["startup_s"]
    assert set(startup) == set(hosts) and startup[late] >= 3.0
    assert all(startup[h] < startup[late] for h in hosts if h != late)
    for rep in reports(doc, "v5p-ms"):  # every host joined on the launcher's word
        assert rep.results[0].details == {"slice_started_at": check["details"]["started_at"],
                                          "slice_wait_s": rep.results[0].details[
                                              "slice_wait_s"]}
    assert json.dumps(doc)  # the run document carries it
    assert_nothing_left(fake_cluster, doc["run_id"])
