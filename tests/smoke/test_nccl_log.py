"""Tier 3 reads NCCL where NCCL writes (issue 19): every recorded real NCCL log
(tests/smoke/data/nccl, each with its source header) is replayed by rank processes that write
it the way NCCL does (through the C library, to NCCL_DEBUG_FILE or to stdout, after the rank's
result), collected by the real `launch_ranks`, and judged by the real `judge_fabric`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import smoke.probes._torch_dist as dist
from smoke.probes import verdict as V
from smoke.probes._fabric import CrossNode, Rendezvous, nccl_environment, torch_across_nodes
from smoke.probes.nccl_log import Expect, judge, parse
from smoke.probes.results import Verdict

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(__file__).parent / "data" / "nccl"
LOGS = {
    "socket": DATA / "nccl-socket-gke-a3-info.log",  # NCCL 2.22.3, Using network Socket
    # NCCL 2.28.9 on the lent H100 VM (no RDMA device, no net plugin): Using network Socket
    "socket-vm": DATA / "nccl-socket-h100-vm-2.28.9-info.log",
    "tcpx": DATA / "nccl-tcpx-info.log",  # Using network GPUDirectTCPX_v7
    "tcpxo": DATA / "nccl-tcpxo-info.log",  # Using network FasTrak, FasTrak 1.0.17
    "rdma": DATA / "nccl-gib-rdma-info.log",  # gIB v1.0.6, via NET/gIB/2/GDRDMA, no Using
    "efa": DATA / "nccl-efa-ofi-eks-p4d-gdrdma-info.log",  # via NET/Libfabric/0/GDRDMA
    "efa-nogdr": DATA / "nccl-efa-ofi-eks-g6e-nogdr-info.log",  # via NET/Libfabric/0
    "efa-issues": DATA / "nccl-efa-ofi-issue-excerpts.log",  # MPI [1,N]<stdout>: tags
}


@pytest.fixture
def fake_ranks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dist, "RANK_MODULE", "tests.smoke.fake_nccl_rank")


def _replay(log: Path, tmp_path: Path, *, local: int = 2, **env: str) -> CrossNode:
    barrier = tmp_path / "barrier"
    barrier.mkdir(exist_ok=True)
    rdv = Rendezvous(node_rank=0, nodes=2, coordinator="127.0.0.1", port=1)
    base = {"PYTHONPATH": str(ROOT), "FAKE_NCCL_LOG": str(log), "FAKE_BARRIER": str(barrier),
            **env}
    # world = 2 nodes x local; the fake's barrier counts this node's ranks only
    return torch_across_nodes(rdv, local, gpu=True, mib=1, timeout_s=60,
                              env={**base, "FAKE_WORLD_HERE": str(local)})


# (log, fabric, NICs the catalog would expect or None, verdict, words in the reason)
CASES = [
    ("socket", "socket", None, Verdict.PASS, "via Socket"),
    ("tcpx", "tcpx", None, Verdict.PASS, "GPUDirectTCPX_v7"),
    ("tcpxo", "tcpxo", None, Verdict.PASS, "FasTrak"),
    ("rdma", "rdma", None, Verdict.PASS, "via gIB"),
    ("efa", "efa", 1, Verdict.PASS, "via Libfabric"),  # the author gave each pod 1 EFA
    # a socket fallback on every fabric pool fails, naming it
    ("socket", "tcpx", 4, Verdict.FAIL, "used Socket, not GPUDirectTCPX"),
    ("socket", "tcpxo", 8, Verdict.FAIL, "used Socket, not FasTrak"),
    ("socket", "rdma", 8, Verdict.FAIL, "used Socket, not gIB"),
    ("socket", "efa", 32, Verdict.FAIL, "used Socket, not Libfabric"),
    # NCCL's INFO lines say why: no plugin to load, no RDMA device
    ("socket-vm", "socket", None, Verdict.PASS, "via Socket"),
    ("socket-vm", "efa", 32, Verdict.FAIL, "used Socket, not Libfabric or AWS Libfabric (NCCL: "
     "NET/Plugin: Could not find: libnccl-net.so; NET/IB : No device found; Failed to "
     "initialize NET plugin IB)"),
    # an RDMA fabric without GPUDirect RDMA fails
    ("efa-nogdr", "efa", 4, Verdict.FAIL, "no GPUDirect RDMA (8 channel(s) via "
     "NET/Libfabric/0 without /GDRDMA)"),  # 4 per rank, both local ranks replay the log
    # too few NICs: p4d.24xlarge has 4 EFA (catalog), the pod of this log used 1;
    # a4-highgpu-8g has 8 RDMA NICs, this rank's channels used NET/gIB/2 only
    ("efa", "efa", 4, Verdict.FAIL, "NCCL used 1 of 4 NICs (found N nics"),
    ("rdma", "rdma", 8, Verdict.FAIL, "NCCL used 1 of 8 NICs (distinct NET/"),
    # the 2019 aws-ofi-nccl#24 ranks in the excerpts ran EFA without GDR: said once for both;
    # rank [1,23]'s NCCL WARN comes first, the first cause
    ("efa-issues", "efa", None, Verdict.FAIL, "rank [1,23]: NCCL WARN NET/OFI Couldn't open AV. "
     "RC: -22, ERROR: Invalid argument; 2 ranks (rank [1,7], rank [1,15]): no GPUDirect RDMA"),
]


@pytest.mark.parametrize(("log", "fabric", "nics", "verdict", "words"), CASES)
@pytest.mark.parametrize("where", ["debug-file", "stdout"])
def test_replayed_real_logs_are_judged_where_nccl_writes_them(
        fake_ranks: None, tmp_path: Path, log: str, fabric: str, nics: int | None,
        verdict: Verdict, words: str, where: str) -> None:
    env = {"FAKE_NCCL_FILE_FAILS": "1"} if where == "stdout" else {}
    cross = _replay(LOGS[log], tmp_path, **env)
    assert cross.error is None, cross.error
    got = V.judge_fabric(cross, (), expect=Expect(kind=fabric, nics=nics))
    assert got.verdict is verdict, got.reason
    assert words in got.reason


def test_the_run_document_records_the_nccl_each_node_used(fake_ranks: None,
                                                          tmp_path: Path) -> None:
    got = V.judge_fabric(_replay(LOGS["efa"], tmp_path), (), expect=Expect(kind="efa"))
    nccl = got.details["nccl"]
    assert isinstance(nccl, dict)
    assert nccl["nccl_versions"] == ["2.27.3+cuda12.9"]
    assert nccl["net_plugins"] == ["Libfabric (v10), aws-ofi-nccl 1.16.2"]
    assert nccl["transports"] == ["Libfabric"] and nccl["gdrdma"] == "on"
    tcpxo = V.judge_fabric(_replay(LOGS["tcpxo"], tmp_path), ("FasTrak",))
    assert "FasTrak 1.0.17" in tcpxo.details["nccl"]["net_plugins"]  # type: ignore[index]
    gib = V.judge_fabric(_replay(LOGS["rdma"], tmp_path), ("gIB",))
    assert gib.details["nccl"]["net_plugins"] == ["gIB 1.0.6"]  # type: ignore[index]


def test_a_profile_setting_nccl_debug_warn_does_not_silence_the_log(
        fake_ranks: None, tmp_path: Path) -> None:
    # container-engine-accelerators' TCPXO nccl-env-profile.sh exports NCCL_DEBUG=WARN
    cross = _replay(LOGS["tcpxo"], tmp_path, NCCL_DEBUG="WARN",
                    NCCL_DEBUG_FILE="/nonexistent/elsewhere.log")
    got = V.judge_fabric(cross, ("FasTrak",), expect=Expect(kind="tcpxo"))
    assert got.verdict is Verdict.PASS, got.reason
    env, notes = nccl_environment({"NCCL_DEBUG": "WARN", "NCCL_FASTRAK_NUM_FLOWS": "2"})
    assert env["NCCL_DEBUG"] == "INFO" and env["NCCL_FASTRAK_NUM_FLOWS"] == "2"
    assert notes["nccl_profile_overridden"] == {"NCCL_DEBUG": "WARN"}


def test_a_rank_that_wrote_no_nccl_line_fails_a_fabric_pool(fake_ranks: None,
                                                           tmp_path: Path) -> None:
    silent = tmp_path / "silent.log"
    silent.write_text("# nothing NCCL said\n")
    got = V.judge_fabric(_replay(silent, tmp_path), ("FasTrak",), expect=Expect(kind="tcpxo"))
    assert got.verdict is Verdict.FAIL
    assert "local rank(s) 0, 1 wrote no NCCL line" in got.reason


def test_a_rank_writing_240_kb_does_not_stall_the_collective(fake_ranks: None,
                                                             tmp_path: Path) -> None:
    # Before: ranks' pipes were drained one at a time; rank 1 blocked on a full pipe while
    # rank 0 waited for it in the collective, until the timeout ("hardware hang").
    cross = _replay(LOGS["socket"], tmp_path, FAKE_STDOUT_BYTES=str(240_000),
                    FAKE_NOISY_RANK="1")
    assert cross.error is None and cross.result is not None
    assert cross.networks and set(cross.networks) == {"Socket"}


def test_a_buffered_log_after_the_result_line_does_not_break_local_runs(
        fake_ranks: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # `smoke local` with NCCL_DEBUG=INFO in the user's shell: the log lands on stdout, after
    # the result, from the C library's buffer (NCCL_DEBUG_FILE unusable here on purpose).
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    monkeypatch.setenv("NCCL_DEBUG", "INFO")
    monkeypatch.setenv("FAKE_NCCL_LOG", str(LOGS["tcpxo"]))
    monkeypatch.setenv("FAKE_NCCL_FILE_FAILS", "1")
    result = dist.launch(2, backend="gloo", mib=1, timeout_s=60)
    assert result.correct and result.bytes_per_device == 2**20
    # and the in-node all-reduce records the NCCL its ranks ran (a one-node pool has no
    # cross-node tier to say it)
    assert result.details["nccl"]["net_plugins"] == ["FasTrak 1.0.17"]
    assert result.details["nccl"]["transports"] == ["FasTrak"]


def test_the_in_node_all_reduce_runs_with_the_nodes_nccl_environment(
        fake_ranks: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from smoke.probes import agent

    profile = tmp_path / "nccl-env-profile.sh"
    profile.write_text("export NCCL_DEBUG=WARN\nexport NCCL_FASTRAK_NUM_FLOWS=2\n")
    import _ctypes

    lib = Path(_ctypes.__file__)  # any real shared object stands in for the installer's NCCL
    dump = tmp_path / "env"
    dump.mkdir()
    # prepare_nccl sets the agent's own environment: give it a copy to change
    monkeypatch.setattr(os, "environ", {k: v for k, v in os.environ.items() if k not in (
        "LD_PRELOAD", "NCCL_DEBUG", "NCCL_FASTRAK_NUM_FLOWS", "NCCL_DEBUG_SUBSYS")})
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    monkeypatch.setenv("FAKE_ENV_DIR", str(dump))
    args = agent.parse_args(["--tier", "3", "--nccl-env-file", str(profile),
                             "--nccl-lib", str(lib)])
    notes = agent.prepare_nccl(args)
    assert notes["nccl_preload"] == str(lib)
    assert os.environ["NCCL_DEBUG_FILE"].endswith("accelfleet-agent-nccl.%p.log")
    dist.launch(2, backend="gloo", mib=1, timeout_s=60)  # what smoke.probes._torch runs in-node
    for rank in (0, 1):
        seen = json.loads((dump / f"rank{rank}.json").read_text())
        assert seen["NCCL_FASTRAK_NUM_FLOWS"] == "2" and seen["NCCL_DEBUG"] == "INFO"
        assert seen["LD_PRELOAD"] == str(lib)
        assert seen["NCCL_DEBUG_FILE"].endswith(f"nccl-rank{rank}.%p.log")


def test_missing_installer_nccl_is_recorded_not_preloaded(tmp_path: Path) -> None:
    env, notes = nccl_environment({}, nccl_lib=str(tmp_path / "libnccl.so.2"))
    assert "LD_PRELOAD" not in env and "not found" in notes["nccl_preload_missing"]
    env, _ = nccl_environment({}, nccl_lib=str(Path(sys.executable)),
                              base={"LD_PRELOAD": "/x.so"})
    assert env["LD_PRELOAD"] == f"{sys.executable}:/x.so"


_LIB = 'const char *which(void) { return "%s"; }\n'
_USER = 'extern const char *which(void);\nconst char *user(void) { return which(); }\n'


@pytest.mark.skipif(sys.platform != "linux", reason="glibc's loader")
def test_preload_wins_over_dt_rpath_where_ld_library_path_does_not(tmp_path: Path) -> None:
    """Why the agent preloads the installer's NCCL: a library bound through DT_RPATH (as torch
    wheels bind their bundled libnccl.so.2) ignores LD_LIBRARY_PATH, but an LD_PRELOADed
    object with the same soname satisfies the dependency first (glibc ld.so)."""
    cc = next((c for c in ("cc", "gcc") if _which(c)), None)
    if cc is None:
        pytest.skip("no C compiler")
    for name in ("bundled", "installer"):
        d = tmp_path / name
        d.mkdir()
        (d / "nccl.c").write_text(_LIB % name)
        subprocess.run([cc, "-shared", "-fPIC", "-Wl,-soname,libnccl.so.2", "-o",
                        str(d / "libnccl.so.2"), str(d / "nccl.c")], check=True)
    (tmp_path / "user.c").write_text(_USER)
    subprocess.run([cc, "-shared", "-fPIC", "-o", str(tmp_path / "libuser.so"),
                    str(tmp_path / "user.c"), str(tmp_path / "bundled" / "libnccl.so.2"),
                    "-Wl,--disable-new-dtags", f"-Wl,-rpath,{tmp_path / 'bundled'}"],
                   check=True)
    probe = ("import ctypes,sys; u=ctypes.CDLL(sys.argv[1]); u.user.restype=ctypes.c_char_p; "
             "print(u.user().decode())")

    def which(**env: str) -> str:
        out = subprocess.run([sys.executable, "-c", probe, str(tmp_path / "libuser.so")],
                             env={**os.environ, **env}, capture_output=True, text=True,
                             check=True)
        return out.stdout.strip()

    installer = tmp_path / "installer"
    assert which() == "bundled"
    assert which(LD_LIBRARY_PATH=str(installer)) == "bundled"  # DT_RPATH wins
    env, _ = nccl_environment({}, nccl_lib=str(installer / "libnccl.so.2"), base={})
    assert which(LD_PRELOAD=env["LD_PRELOAD"]) == "installer"


def _which(name: str) -> bool:
    import shutil

    return shutil.which(name) is not None


def test_reader_reads_every_reality_log() -> None:
    for path in LOGS.values():
        log = parse(path.read_text(encoding="utf-8"))
        assert log.ranks, path.name
    mpi = parse(LOGS["efa-issues"].read_text(encoding="utf-8"))
    assert {"[1,7]", "[1,26]", "8h200-3:6310"} <= {r.key for r in mpi.ranks}
    assert max(r.nics_found or 0 for r in mpi.ranks) == 16  # p5en: found 16 nics
    socket = parse(LOGS["socket"].read_text(encoding="utf-8")).ranks[0]
    assert socket.nccl_version == "2.22.3+cuda12.6" and socket.plugin == "IBext_v8"
    assert judge(parse(""), Expect(kind="tcpx")).problems  # nothing logged: unproven


@pytest.mark.parametrize(("log", "argv", "verdict", "words"), [
    ("rdma", ["--expect-fabric", "rdma", "--expect-transport", "gIB"], Verdict.PASS, "gIB"),
    ("rdma", ["--expect-fabric", "rdma", "--expect-nics", "8"], Verdict.FAIL, "1 of 8 NICs"),
    ("efa-nogdr", ["--expect-fabric", "efa"], Verdict.FAIL, "no GPUDirect RDMA"),
    # GDR per instance type (catalog efa_gdr): the g6e log is healthy where it is not required
    ("efa-nogdr", ["--expect-fabric", "efa", "--expect-gdr", "no", "--expect-nics", "4"],
     Verdict.PASS, "via Libfabric"),
    ("efa-nogdr", ["--expect-fabric", "efa", "--expect-gdr", "yes"], Verdict.FAIL,
     "no GPUDirect RDMA"),
    ("socket", ["--expect-transport", "FasTrak", "--expect-fabric", "tcpxo"], Verdict.FAIL,
     "used Socket, not FasTrak"),
])
def test_the_agents_own_arguments_reach_the_judgment(
        fake_ranks: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, log: str,
        argv: list[str], verdict: Verdict, words: str) -> None:
    from types import SimpleNamespace

    from smoke.probes import agent

    barrier = tmp_path / "barrier"
    barrier.mkdir()
    monkeypatch.setattr(os, "environ", {
        **os.environ, "PYTHONPATH": str(ROOT), "FAKE_NCCL_LOG": str(LOGS[log]),
        "FAKE_BARRIER": str(barrier), "FAKE_WORLD_HERE": "2", "ACCELFLEET_NODES": "2",
        "ACCELFLEET_COORDINATOR": "127.0.0.1", "JOB_COMPLETION_INDEX": "0"})
    monkeypatch.setattr(agent, "_local_gpus", lambda: 2)
    args = agent.parse_args(["--tier", "3", "--cross-node", "torch", "--timeout-s", "60",
                             *argv])
    notes = agent.prepare_nccl(args)
    report = SimpleNamespace(platform="gpu", duration_s=1.0)
    got = agent._cross_node(args, report, notes)  # type: ignore[arg-type]
    assert got.verdict is verdict, got.reason
    assert words in got.reason


def test_channel_lines_through_a_pxn_proxy_or_with_pci_gdr_still_count_as_gdrdma() -> None:
    # NVIDIA/nccl src/transport/net.cc (v2.31.2-1 sendSetup): "via NET/%s/%d%s%s%s" (netDev,
    # "/GDRDMA", "(PCI)", "/Shared") and, through a PXN proxy rank, "via NET/%s/%d(%d)%s%s"
    text = (
        "h:1:2 [0] NCCL INFO Using network IB\n"
        "h:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/IB/0/GDRDMA(PCI)\n"
        "h:1:2 [0] NCCL INFO Channel 01/0 : 0[0] -> 8[0] [send] via NET/IB/3(5)/GDRDMA\n"
        "h:1:2 [0] NCCL INFO Channel 02/0 : 8[0] -> 0[0] [receive] via NET/IB/1/GDRDMA/Shared\n"
        "h:1:2 [0] NCCL INFO Channel 03/0 : 0[0] -> 8[0] [send] via NET/IBext_v8/2(4)\n")
    r = parse(text).ranks[0]
    assert r.gdr_channels == 3 and r.plain_channels == 1
    assert r.nics_used == {("IB", 0), ("IB", 3), ("IB", 1), ("IBext_v8", 2)}
    got = judge(parse(text), Expect(kind="ib", nics=4))
    assert not got.ok and got.problems == (
        "h:1: no GPUDirect RDMA (1 channel(s) via NET/IBext_v8/2 without /GDRDMA)",)
    assert judge(parse(text.replace("NET/IBext_v8/2(4)", "NET/IB/2(4)/GDRDMA")),
                 Expect(kind="ib", nics=4)).ok


# -- EFA NIC groups (issue 19 item 6 on p5/p5en) ---------------------------------------------
# aws/aws-ofi-nccl@2daf7d303aa139a03140aa530957d10521e4478d: `found %d nics` counts every EFA
# device libfabric lists (src/nccl_ofi_net.cpp nccl_net_ofi_query_provider_capabilities);
# src/nccl_ofi_topo.cpp then groups them, min(GPUs, NICs) groups per PCIe switch, each group one
# NCCL NET device (`NIC group %i device #%i <pci>`). NVIDIA/nccl#1597 (p5en.48xlarge, the
# excerpt): "found 16 nics", groups 0..7 of 2 devices, so NCCL's channels name NET/Libfabric/0..7.
def _p5en_host(*, found: int | None = None, groups: bool = True,
               devices: tuple[int, ...] = tuple(range(8))) -> str:
    """One p5en host's 8 ranks in the excerpt's line format: the real host name and PCI
    addresses of groups 0-3 (8h200-3 in the excerpt), groups 4-7 numbered on."""
    real = [line.split("INFO ", 1)[1] for line in LOGS["efa-issues"].read_text().splitlines()
            if line.startswith("8h200-3:") and "NIC group" in line]
    pcis = [line.rsplit(" ", 1)[1] for line in real]
    pcis += [f"0000:{0x90 + i:02x}:00.0" for i in range(16 - len(pcis))]
    lines = []
    for dev in range(8):
        pre = f"8h200-3:{6310 + dev}:{6318 + dev} [{dev}] NCCL INFO "
        if found is not None:
            lines.append(pre + f"NET/OFI Selected Provider is efa (found {found} nics)")
        if groups:
            lines += [pre + f"NET/OFI NIC group {i // 2} device #{i % 2} {pci}"
                      for i, pci in enumerate(pcis)]
        lines.append(pre + "Using network Libfabric")
        nic = devices[dev]
        lines.append(pre + f"Channel 00/0 : {dev}[{dev}] -> {8 + dev}[{dev}] [send] via "
                     f"NET/Libfabric/{nic}/GDRDMA")
    return "\n".join(lines) + "\n"


def test_the_p5en_excerpt_counts_sixteen_efa_devices_in_eight_groups() -> None:
    text = "".join(line + "\n" for line in LOGS["efa-issues"].read_text().splitlines()
                   if line.startswith("8h200-3:"))
    (rank,) = parse(text).ranks
    assert rank.nics_found == 16 and len(rank.nic_groups) == 4  # the excerpt stops at group 3
    got = judge(parse(text), Expect(kind="efa", nics=16))
    assert not [p for p in got.problems if "NIC" in p], got.problems


@pytest.mark.parametrize(("log", "ok", "words"), [
    (_p5en_host(found=16), True, ""),
    # without the `found` line: the 8 groups' 16 EFA devices, not the 8 NCCL devices
    (_p5en_host(), True, ""),
    # without either: 8 NCCL devices for 8 GPUs is every group
    (_p5en_host(groups=False), True, ""),
    # degraded: an EFA device missing, or half the groups unused
    (_p5en_host(found=15), False, "NCCL used 15 of 16 NICs (found N nics"),
    (_p5en_host(groups=False, devices=(0, 1, 2, 3, 0, 1, 2, 3)), False,
     "NCCL used 4 of 8 NCCL NET devices (distinct NET/Libfabric/<n>"),
])
def test_a_healthy_p5en_passes_its_sixteen_efa_nics_and_a_degraded_one_fails(
        log: str, ok: bool, words: str) -> None:
    got = judge(parse(log), Expect(kind="efa", nics=16))
    assert got.ok is ok, got.problems
    assert words in " ".join(got.problems)


# -- WARN lines, teardown, unattributed logs (issue 28 item 6) --------------------------------
def test_proxy_thread_warnings_after_the_transport_are_teardown_not_problems() -> None:
    # the socket log's three WARNs come from NCCL's proxy service thread as peers close, after
    # "Using network Socket" (NVIDIA/nccl src/proxy.cc): recorded, not a failure
    log = parse(LOGS["socket"].read_text(encoding="utf-8"))
    (rank,) = log.ranks
    assert rank.warnings == [] and len(rank.teardown_warnings) == 3
    got = judge(log, Expect(kind="socket"))
    assert got.ok and got.hint == ""
    assert got.details["teardown_warnings"][0].startswith("[Proxy Service 0] Failed")
    # the same line before any transport line is a problem, and the hint
    early = "\n".join(line for line in LOGS["socket"].read_text().splitlines()
                      if "Using network" not in line and "via NET/" not in line)
    got = judge(parse(early), Expect(kind="socket"))
    assert not got.ok and got.hint.endswith("[Service thread] Accept failed Resource "
                                            "temporarily unavailable")
    assert got.problems[0] == got.hint


def test_a_stripped_log_is_one_unattributed_process() -> None:
    text = (DATA / "nccl-ib-stripped-hpcx-1584.log").read_text(encoding="utf-8")
    log = parse(text)
    assert not log.attributed
    (rank,) = log.ranks
    assert rank.nccl_version == "2.24.3+cuda12.2" and rank.plugin == "NCCL RDMA Plugin v8"
    assert rank.transports == ["IBext_v8"] and rank.nvls
    assert rank.mnnvl is not None and not rank.mnnvl.present  # UUID 0.0: no MNNVL fabric
    got = judge(log, Expect(kind="ib", gdr=False))
    assert got.ok and "unattributed" in got.summary
    # a prefixed log is never read this way, however many bare lines it also has
    assert parse(LOGS["socket"].read_text(encoding="utf-8")).attributed
