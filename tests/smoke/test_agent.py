"""The in-pod agent: its bundle runs on a bare interpreter, it reports one JSON line, and its
cross-node tier really joins two processes and proves (or disproves) the transport."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from smoke.cluster._bundle import agent_modules, configmap_data, digest
from smoke.cluster._rejudge import host_documents
from smoke.expectations import for_pool, from_catalog
from smoke.probes import verdict as V
from smoke.probes._fabric import CrossNode, env_profile, nccl_networks
from smoke.probes.backend import AllReduce
from smoke.probes.expect import Expectation
from smoke.probes.results import HostReport, Verdict

# Only the standard library and the framework may be imported by the agent in the pod.
_RUNNER = """
import importlib.abc, runpy, sys
BLOCK = {"pydantic", "ruamel", "jinja2", "typer", "rich", "pulumi", "kubernetes", "yaml"}
class Blocker(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in BLOCK:
            raise ImportError("blocked in the pod: " + name)
# The editable install's finder would serve any module the bundle lacks from the source tree:
# drop it, so a module missing from the bundle fails here as it would in the pod.
sys.meta_path[:] = [f for f in sys.meta_path
                    if not getattr(f, "__module__", "").startswith("__editable__")]
sys.meta_path.insert(0, Blocker())
sys.path.insert(0, sys.argv[1])
sys.argv = ["smoke.probes.agent", *sys.argv[2:]]
runpy.run_module("smoke.probes.agent", run_name="__main__")
"""


def _bundle(tmp_path: Path) -> Path:
    data, items = configmap_data()
    root = tmp_path / "bundle"
    for item in items:
        f = root / item["path"]
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(data[item["key"]], encoding="utf-8")
    return root


def _agent(root: Path, *args: str, env: dict[str, str] | None = None
           ) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-I", "-c", _RUNNER, str(root), *args], text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=root,
        env={**os.environ, "OMP_NUM_THREADS": "1", **(env or {})})


def test_bundle_is_the_probes_folder_and_keys_are_valid() -> None:
    """The bundle is smoke/probes as it stands (no list kept by hand), plus `smoke`'s package
    file and the two fleet modules the agent reads."""
    data, items = configmap_data()
    assert len(data) == len(items) == len(agent_modules()) + 2
    probes = Path(__file__).resolve().parents[2] / "smoke" / "probes"
    assert {k for k in data if k.startswith("smoke.probes.")} == {
        f"smoke.probes.{f.name}" for f in probes.glob("*.py")}
    assert all(set(k) <= set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._")
               for k in data)
    assert sum(len(v) for v in data.values()) < 512 * 1024  # far under a ConfigMap's 1 MiB
    assert len(digest()) == 12


def test_agent_runs_from_the_bundle_with_only_stdlib_and_torch(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    root = _bundle(tmp_path)
    exp = json.dumps(Expectation().to_dict())
    p = _agent(root, "--tier", "1", "--backend", "torch", "--expect-json", exp,
               env={"NODE_NAME": "node-a"})
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    report = HostReport.from_dict(json.loads(out.strip().splitlines()[-1]))
    assert report.host == "node-a" and report.ok and report.tier == 1
    assert "blocked" not in err


def test_agent_bad_expectation_exits_2(tmp_path: Path) -> None:
    root = _bundle(tmp_path)
    p = _agent(root, "--tier", "0", "--expect-json", "{not json")
    out, err = p.communicate(timeout=60)
    assert p.returncode == 2 and "--expect-json is not JSON" in err and out == ""


def test_cross_node_tier_joins_two_nodes_over_gloo(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    root = _bundle(tmp_path)
    env = {"ACCELFLEET_NODES": "2", "ACCELFLEET_COORDINATOR": "127.0.0.9",
           "ACCELFLEET_COORDINATOR_PORT": "29631"}
    procs = [_agent(root, "--tier", "3", "--backend", "torch", "--cross-node", "torch",
                    "--timeout-s", "60",
                    env={**env, "JOB_COMPLETION_INDEX": str(i), "NODE_NAME": f"n{i}"})
             for i in range(2)]
    reports = []
    for p in procs:
        out, err = p.communicate(timeout=180)
        assert p.returncode == 0, err
        reports.append(HostReport.from_dict(json.loads(out.strip().splitlines()[-1])))
    for r in reports:
        fab = next(x for x in r.results if x.probe == V.FABRIC)
        assert fab.verdict is Verdict.PASS, fab.reason
        assert fab.details["world"] == 2 and fab.details["transports_seen"] == ["gloo"]
        assert fab.measured is not None and fab.measured > 0


def test_expectation_round_trips_and_pool_expectations_come_from_the_catalog() -> None:
    exp = from_catalog("p5.48xlarge", "torch")
    assert Expectation.from_dict(json.loads(json.dumps(exp.to_dict()))) == exp
    assert Expectation.from_dict(Expectation().to_dict()) == Expectation()
    from fleet.inventory import InventoryPool

    tpu = InventoryPool(name="s", team="t", cloud="gcp", runtime="gke", cluster="c",
                        accelerator="tpu-v5p", kind="tpu", machine_type="ct5p-hightpu-4t",
                        nodes=16, devices_per_node=4, jax_devices_per_node=4,
                        hosts_per_slice=16, slices=1, topology="4x4x4",
                        resource="google.com/tpu")
    e = for_pool(tpu, "jax")
    assert e.devices == 4 and e.chips == 4 and e.accelerator is not None  # v5p: megacore


# -- transport proof ---------------------------------------------------------------------
EFA_LOG = """\
ip-10-0-1-5:123:123 [0] NCCL INFO NET/OFI Selected provider is efa, fabric is efa (found 32 nics)
ip-10-0-1-5:123:123 [0] NCCL INFO Using network Libfabric
ip-10-0-1-5:123:140 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/Libfabric/0/GDRDMA
"""
SOCKET_LOG = """\
ip-10-0-1-5:123:123 [0] NCCL INFO NET/Plugin: Could not find: libnccl-net.so
ip-10-0-1-5:123:123 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.1.5<0>
ip-10-0-1-5:123:123 [0] NCCL INFO Using network Socket
"""


def _cross(networks: tuple[str, ...], correct: bool = True) -> CrossNode:
    return CrossNode(2, 16, AllReduce(400.0, 215.0, 0.01, 2**28, correct), networks)


def test_nccl_log_names_the_transport() -> None:
    assert nccl_networks(EFA_LOG) == ["Libfabric"]
    assert nccl_networks(SOCKET_LOG) == ["Socket"]
    assert nccl_networks("NCCL INFO Using network AWS Libfabric\n") == ["AWS Libfabric"]


def test_fabric_pool_falling_back_to_sockets_fails_naming_the_transport() -> None:
    efa = ("Libfabric", "AWS Libfabric")
    ok = V.judge_fabric(_cross(tuple(nccl_networks(EFA_LOG))), efa)
    assert ok.verdict is Verdict.PASS and "Libfabric" in ok.reason
    bad = V.judge_fabric(_cross(tuple(nccl_networks(SOCKET_LOG))), efa)
    assert bad.verdict is Verdict.FAIL and "NCCL used Socket" in bad.reason
    unproven = V.judge_fabric(_cross(()), ("FasTrak",))
    assert unproven.verdict is Verdict.FAIL and "unproven" in unproven.reason
    wrong = V.judge_fabric(_cross(("gIB",), correct=False), ("gIB",))
    assert wrong.verdict is Verdict.FAIL and "wrong sum" in wrong.reason
    plain = V.judge_fabric(_cross(("Socket",)))  # not a fabric pool: any transport is fine
    assert plain.verdict is Verdict.PASS
    skipped = V.judge_fabric(None, skipped="a one-node pool")
    assert skipped.verdict is Verdict.SKIPPED


def test_env_profile_reads_exports_without_a_shell(tmp_path: Path) -> None:
    f = tmp_path / "nccl-env-profile.sh"
    f.write_text("#!/bin/bash\nexport NCCL_LIB_DIR=/usr/local/nvidia/lib64\n"
                 'export NCCL_TUNER_CONFIG_PATH="${NCCL_LIB_DIR}/a3plus_tuner_config.textproto"\n'
                 "if true; then echo hi; fi\nexport NCCL_FASTRAK_NUM_FLOWS=2\n")
    env = env_profile(f)
    assert env == {"NCCL_LIB_DIR": "/usr/local/nvidia/lib64",
                   "NCCL_TUNER_CONFIG_PATH":
                       "/usr/local/nvidia/lib64/a3plus_tuner_config.textproto",
                   "NCCL_FASTRAK_NUM_FLOWS": "2"}


def test_pool_outliers_fail_a_node_20_percent_below_its_peers() -> None:
    got = dict(V.judge_pool_outliers(V.MATMUL, {"a": 800.0, "b": 790.0, "c": 640.0}))
    assert set(got) == {"c"} and got["c"].verdict is Verdict.FAIL
    assert "0.81 of its peers" in got["c"].reason
    warn = dict(V.judge_pool_outliers(V.MATMUL, {"a": 800.0, "b": 720.0}))
    assert warn["b"].verdict is Verdict.WARN
    assert V.judge_pool_outliers(V.MATMUL, {"a": 800.0}) == []


def test_the_jax_init_timeout_is_well_within_the_job_deadline() -> None:
    """Issue 19 item 12: the init timeout equalled the Job deadline (900 s)."""
    from smoke.probes.agent import jax_init_timeout_s

    for deadline in (120, 900, 3600):
        assert jax_init_timeout_s(deadline) <= max(60, deadline // 2)
        assert jax_init_timeout_s(deadline) < deadline
    assert jax_init_timeout_s(900) == 225


def test_the_cross_node_stage_ends_before_the_job_deadline() -> None:
    """Issue 19 item 13: the collective waited the whole Job deadline for a stalled peer, so
    every node of the pool was killed unreported; now each reports first."""
    from smoke.probes.agent import REPORT_MARGIN_S, cross_node_budget_s

    assert cross_node_budget_s(900, 120.0) == 900 - 120 - REPORT_MARGIN_S
    assert cross_node_budget_s(900, 120.0) + 120 < 900
    assert cross_node_budget_s(60, 50.0) == 30


def test_a_failed_jax_join_is_reported_naming_the_host_and_the_cause(tmp_path: Path) -> None:
    """JAX's distributed client aborts the process (XLA LOG(FATAL): `DEADLINE_EXCEEDED`,
    RPC RegisterTask) when the coordinator never answers. Before: exit 134 (SIGABRT), no
    report. Now the host reports the cross-node probe FAILED with the coordinator and cause."""
    pytest.importorskip("jax")
    root = _bundle(tmp_path)
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    runner = _RUNNER.replace('runpy.run_module("smoke.probes.agent", run_name="__main__")',
                             "import smoke.probes.agent as a\n"
                             "a.jax_init_timeout_s = lambda timeout_s: 2\n"
                             "sys.exit(a.main(sys.argv[1:]))")
    env = {**os.environ, "OMP_NUM_THREADS": "1", "ACCELFLEET_NODES": "2",
           "ACCELFLEET_COORDINATOR": "127.0.0.1", "ACCELFLEET_COORDINATOR_PORT": str(port),
           "JOB_COMPLETION_INDEX": "1", "NODE_NAME": "tpu-host-1"}
    p = subprocess.run([sys.executable, "-I", "-c", runner, str(root), "--tier", "3",
                        "--backend", "jax", "--cross-node", "jax", "--timeout-s", "60"],
                       capture_output=True, text=True, cwd=root, env=env, timeout=120)
    assert p.returncode == 0, p.stderr[-3000:]
    report = HostReport.from_dict(json.loads(p.stdout.strip().splitlines()[-1]))
    assert report.host == "tpu-host-1" and not report.ok
    [fab] = report.results
    assert fab.probe == V.FABRIC and fab.verdict is Verdict.FAIL
    assert "JAX distributed init failed" in fab.reason
    assert f"coordinator 127.0.0.1:{port}, process 1 of 2" in fab.reason
    assert "killed by SIGABRT" in fab.reason and "DEADLINE_EXCEEDED" in fab.reason
    assert "@ " not in fab.reason  # no stack frames


def test_a_jax_join_that_succeeds_passes_the_agents_report_through(tmp_path: Path) -> None:
    """The watched child (above) changes nothing when the join works: each host's own report,
    exit 0, and no second report from the watcher."""
    pytest.importorskip("jax")
    root = _bundle(tmp_path)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {"ACCELFLEET_NODES": "2", "ACCELFLEET_COORDINATOR": "127.0.0.1",
           "ACCELFLEET_COORDINATOR_PORT": str(port)}
    procs = [_agent(root, "--tier", "0", "--backend", "jax", "--cross-node", "jax",
                    "--timeout-s", "60",
                    env={**env, "JOB_COMPLETION_INDEX": str(i), "NODE_NAME": f"h{i}"})
             for i in range(2)]
    for i, p in enumerate(procs):
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err[-3000:]
        assert "T3 joined the JAX distributed runtime" in err
        assert len(host_documents(out)) == 1
        report = HostReport.from_dict(json.loads(out.strip().splitlines()[-1]))
        assert report.host == f"h{i}" and report.ok and report.backend == "jax"
