"""`accelfleet smoke nccl-log` judges every recorded real NCCL log (tests/smoke/data/nccl,
copied with their source headers from the reality folder): exit 0 on the fabric the log shows,
1 on another or a degraded one, 2 on input that is no NCCL log."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.main import app

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "smoke" / "data" / "nccl"
SOCKET = DATA / "nccl-socket-gke-a3-info.log"
TCPX = DATA / "nccl-tcpx-info.log"
TCPXO = DATA / "nccl-tcpxo-info.log"
GIB = DATA / "nccl-gib-rdma-info.log"
EFA = DATA / "nccl-efa-ofi-eks-p4d-gdrdma-info.log"
EFA_NOGDR = DATA / "nccl-efa-ofi-eks-g6e-nogdr-info.log"
EFA_ISSUES = DATA / "nccl-efa-ofi-issue-excerpts.log"
HPCX = DATA / "nccl-ib-hpcx-1357.log"  # HPC-X "NCCL RDMA Plugin v6", Using network IBext
HPCX_CHANNELS = DATA / "nccl-ib-hpcx-1814-channels.log"  # via NET/IBext_v8/<n>, no /GDRDMA
STRIPPED = DATA / "nccl-ib-stripped-hpcx-1584.log"  # no prefixes; HPC-X v8; not MNNVL
IB_WARN = DATA / "nccl-ib-warn-nccl-tests-185.log"  # NCCL 2.19.3 bare version; WARN lines
CLOUDWATCH = DATA / "nccl-efa-cloudwatch-889.log"  # timestamps glued to the host
MNNVL = DATA / "nccl-mnnvl-gb200-1769.log"  # GB200, healthMask 0xaa on all 4 GPUs

# (log, --fabric, extra args, exit code, words in the output)
CASES = [
    (SOCKET, "socket", [], 0, "ok: the log shows NCCL's TCP sockets"),
    (TCPX, "tcpx", [], 0, "ok: the log shows GPUDirect-TCPX"),
    (TCPXO, "tcpxo", [], 0, "ok: the log shows GPUDirect-TCPXO"),
    (GIB, "rdma", [], 0, "ok: the log shows GPUDirect RDMA with gIB"),
    (EFA, "efa", [], 0, "ok: the log shows AWS EFA"),
    (EFA, "efa", ["--nics", "1"], 0, "1 NICs per host"),
    (SOCKET, "tcpx", [], 1, "used Socket, not GPUDirectTCPX"),
    (SOCKET, "tcpxo", [], 1, "used Socket, not FasTrak"),
    (SOCKET, "rdma", [], 1, "used Socket, not gIB"),
    (SOCKET, "efa", [], 1, "used Socket, not Libfabric"),
    (SOCKET, "ib", [], 1, "used Socket, not IB"),
    (EFA_NOGDR, "efa", [], 1, "no GPUDirect RDMA"),
    # g6e.48xlarge: aws-ofi-nccl does not require GDR there; the recorded log ran without it
    (EFA_NOGDR, "efa", ["--no-gdr", "--nics", "4"], 0, "GPUDirect RDMA not required"),
    (EFA_NOGDR, "efa", ["--gdr"], 1, "no GPUDirect RDMA"),
    (EFA, "efa", ["--no-gdr"], 0, "ok: the log shows AWS EFA"),  # GDR allowed, not required
    (EFA, "efa", ["--nics", "4"], 1, "NCCL used 1 of 4 NICs"),
    (GIB, "rdma", ["--nics", "8"], 1, "NCCL used 1 of 8 NICs"),
    (TCPXO, "tcpx", [], 1, "used FasTrak, not GPUDirectTCPX"),
    (EFA_ISSUES, "efa", [], 1, "2 ranks (rank [1,7], rank [1,15]): no GPUDirect RDMA"),
    # NVIDIA's HPC-X plugin ("NCCL RDMA Plugin v6", net "IBext") is InfiniBand; the excerpt has
    # no channel line, so GPUDirect RDMA is unproven unless not asked for
    (HPCX, "ib", ["--no-gdr"], 0, "ok: the log shows InfiniBand"),
    (HPCX, "ib", [], 1, "GPUDirect RDMA is unproven"),
    (HPCX, "efa", [], 1, "4 ranks (qh100-gpu19:49355, qh100-gpu19:49357, qh100-gpu19:49360, "
     "...): used IBext, not Libfabric or AWS Libfabric"),
    # its channels (NET/IBext_v8/<n>) are IB; without /GDRDMA, said once for the 7 ranks
    (HPCX_CHANNELS, "ib", ["--no-gdr"], 0, "ok: the log shows InfiniBand"),
    (HPCX_CHANNELS, "ib", [], 1, "7 ranks (hostname-test:987, hostname-test:986, "
     "hostname-test:984, ...): no GPUDirect RDMA (11 channel(s) via NET/IBext_v8/1, "
     "NET/IBext_v8/2, NET/IBext_v8/3, NET/IBext_v8/4, NET/IBext_v8/5, NET/IBext_v8/6, "
     "NET/IBext_v8/7 without /GDRDMA)"),
    # a stripped log is read, as one process, and says so
    (STRIPPED, "ib", ["--no-gdr"], 0, "cannot be attributed to ranks or hosts"),
    (STRIPPED, "ib", ["--no-gdr", "--nics", "8"], 1, "per-host and per-GPU checks are unproven"),
    (STRIPPED, "mnnvl", [], 1, "the GPU is in no multi-node NVLink fabric (fabric UUID 0.0"),
    # NCCL's WARN is the first problem and the hint, not "set NCCL_DEBUG=INFO"
    (IB_WARN, "ib", ["--no-gdr"], 1, "hint: NCCL said why first: dgxh100-4:460770: NCCL WARN "
     "socketProgressOpt: Call to recv from 11.1.128.128<52035> failed : Connection reset by "
     "peer"),
    (MNNVL, "mnnvl", [], 0, "ok: the log shows multi-node NVLink (MNNVL)"),
    (MNNVL, "ib", [], 1, "no rank logged a transport"),
]


@pytest.mark.parametrize(("log", "fabric", "extra", "code", "words"), CASES,
                         ids=[f"{c[0].stem}-{c[1]}-{c[3]}" for c in CASES])
def test_every_reality_log_is_judged(log: Path, fabric: str, extra: list[str], code: int,
                                     words: str) -> None:
    result = runner.invoke(app, ["smoke", "nccl-log", str(log), "--fabric", fabric, *extra],
                           env={"COLUMNS": "200"})
    assert result.exit_code == code, result.output
    assert words in result.output


def test_table_names_nccl_plugin_transport_gdr_and_nics_per_rank() -> None:
    result = runner.invoke(app, ["smoke", "nccl-log", str(EFA)], env={"COLUMNS": "250"})
    assert result.exit_code == 0, result.output  # no --fabric: a report, no verdict
    for words in ("2.27.3+cuda12.9", "Libfabric (v10), aws-ofi-nccl 1.16.2", "Libfabric",
                  "on", "found 1; Libfabric/0"):
        assert words in result.output
    assert "ok:" not in result.output
    # p5en (NVIDIA/nccl#1597 excerpt): aws-ofi-nccl's 16 EFA devices, grouped (the excerpt
    # shows groups 0-3 of that host)
    p5en = runner.invoke(app, ["smoke", "nccl-log", str(EFA_ISSUES)], env={"COLUMNS": "250"})
    assert "found 16; 4 NIC groups" in p5en.output


def test_json_has_every_rank_and_the_verdict() -> None:
    result = runner.invoke(app, ["smoke", "nccl-log", str(TCPXO), "--fabric", "tcpxo",
                                 "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert doc["ok"] is True and doc["problems"] == [] and len(doc["ranks"]) == 16
    assert doc["transports"] == ["FasTrak"] and doc["expected"]["fabric"] == "tcpxo"
    assert "FasTrak 1.0.17" in doc["net_plugins"]
    bad = runner.invoke(app, ["smoke", "nccl-log", str(EFA_NOGDR), "--fabric", "efa",
                              "--json"])
    assert bad.exit_code == 1
    doc = json.loads(bad.output.split("\nerror:")[0])
    assert doc["ok"] is False and doc["gdrdma"] == "off"


def test_mpi_tagged_lines_are_ranks() -> None:
    result = runner.invoke(app, ["smoke", "nccl-log", str(EFA_ISSUES), "--json"])
    assert result.exit_code == 0, result.output
    keys = {r["rank"] for r in json.loads(result.output)["ranks"]}
    assert {"[1,7]", "[1,15]", "[1,26]"} <= keys


def test_stdin_is_read_with_a_dash() -> None:
    result = runner.invoke(app, ["smoke", "nccl-log", "-", "--fabric", "rdma"],
                           input=GIB.read_text(encoding="utf-8"))
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize(("content", "words"), [
    (None, "does not exist"),  # the shared reader (fleet.input_files) says which
    ("dir", "is a directory"),
    (b"\x7fELF\x00\x00binary", "is binary"),
    ("just some python output\nTraceback...\n", "holds no NCCL line"),
    ("", "holds no NCCL line"),
])
def test_bad_input_exits_2(tmp_path: Path, content: str | bytes | None, words: str) -> None:
    path = tmp_path / "log.txt"
    if content == "dir":
        path.mkdir()
    elif isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        path.write_text(content)
    result = runner.invoke(app, ["smoke", "nccl-log", str(path), "--fabric", "tcpx"])
    assert result.exit_code == 2, result.output
    assert words in result.output and "hint:" in result.output


def test_unknown_fabric_is_bad_input() -> None:
    result = runner.invoke(app, ["smoke", "nccl-log", str(SOCKET), "--fabric", "nvlink"])
    assert result.exit_code == 2


def test_help_imports_no_backend() -> None:
    code = ("import sys\nfrom typer.testing import CliRunner\nfrom cli.main import app\n"
            "r = CliRunner().invoke(app, ['smoke', 'nccl-log', '--help'])\n"
            "print(r.exit_code, sorted(m for m in ('torch', 'jax', 'pulumi') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, check=True)
    assert out.stdout.strip() == "0 []"


def test_console_prefixes_invent_no_host_and_bare_versions_are_read() -> None:
    result = runner.invoke(app, ["smoke", "nccl-log", str(CLOUDWATCH), "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert [r["host"] for r in doc["ranks"]] == ["ip-10-36-29-253"]  # not "00ip-10-36-29-253"
    assert doc["nccl_versions"] == ["2.21.5+cuda12.8"]  # NCCL <= 2.21's bare line
    ib = json.loads(runner.invoke(app, ["smoke", "nccl-log", str(IB_WARN), "--json"]).output)
    assert ib["nccl_versions"] == ["2.19.3+cuda12.3"]
    assert sorted(r["host"] for r in ib["ranks"]) == ["dgxh100-3", "dgxh100-4"]


def test_the_warn_is_the_cause_where_nothing_else_is_logged(tmp_path: Path) -> None:
    """A log whose run died at its first NCCL WARN before any transport line: the problem is
    the WARN, and "unproven" points at it rather than at NCCL_DEBUG (made from the real
    nccl-tests#185 log by keeping its init up to the first WARN and dropping the `Using network`
    lines a dead init would not reach)."""
    lines = [line for line in IB_WARN.read_text().splitlines()
             if "Using network" not in line and not line.startswith("#")]
    log = tmp_path / "died.log"
    log.write_text("\n".join(lines) + "\n")
    result = runner.invoke(app, ["smoke", "nccl-log", str(log), "--fabric", "ib"],
                           env={"COLUMNS": "250"})
    assert result.exit_code == 1, result.output
    text = " ".join(result.output.split())
    assert "IB or IBext is unproven (see the NCCL WARN above)" in text
    assert "NCCL_DEBUG=INFO, NCCL_DEBUG_SUBSYS" not in text
    assert text.index("NCCL WARN socketProgressOpt") < text.index("is unproven")


@pytest.mark.parametrize(("mask", "fault"), [
    # one field of NVML's healthMask set TRUE (1) in place of FALSE (2) on one GPU
    ("0xa9", "degraded bandwidth"), ("0x9a", "route unhealthy"),
    ("0xa6", "route recovery in progress"), ("0x6a", "access timeout recovery in progress"),
])
def test_a_degraded_mnnvl_fabric_fails_naming_the_gpu_and_the_fault(
        tmp_path: Path, mask: str, fault: str) -> None:
    """Made from the real healthy GB200 log (NVIDIA/nccl#1769) by what the fault does to what
    NVML reports: the one GPU's field turns TRUE, every other field and GPU stay as recorded."""
    text = MNNVL.read_text().replace("busId 0x1801000 fabric UUID 3143b15bc2cd192b."
                                     "28cc9b5473fb5b93 cliqueId 0x7ffe state 3 healthMask 0xaa",
                                     "busId 0x1801000 fabric UUID 3143b15bc2cd192b."
                                     f"28cc9b5473fb5b93 cliqueId 0x7ffe state 3 healthMask {mask}")
    log = tmp_path / "degraded.log"
    log.write_text(text)
    result = runner.invoke(app, ["smoke", "nccl-log", str(log), "--fabric", "mnnvl"],
                           env={"COLUMNS": "250"})
    assert result.exit_code == 1, result.output
    assert f"gb200a-04:2101744: MNNVL fabric: {fault} (healthMask {mask})" in \
        " ".join(result.output.split())
    # a fault shows whatever fabric was asked: here the run was judged as a socket one
    other = runner.invoke(app, ["smoke", "nccl-log", str(log), "--fabric", "socket"])
    assert other.exit_code == 1 and fault in other.output


def test_mnnvl_registration_unfinished_or_split_domains_fail(tmp_path: Path) -> None:
    real = MNNVL.read_text()
    unfinished = real.replace("cliqueId 0x7ffe state 3 healthMask 0xaa\ngb200a-04:2101745",
                              "cliqueId 0x7ffe state 2 healthMask 0xaa\ngb200a-04:2101745")
    split = real.replace("fabric UUID 3143b15bc2cd192b.28cc9b5473fb5b93 cliqueId 0x7ffe state 3 "
                         "healthMask 0xaa\ngb200a-04:2101742",
                         "fabric UUID 3143b15bc2cd192b.28cc9b5473fb5b93 cliqueId 0x7ffd state 3 "
                         "healthMask 0xaa\ngb200a-04:2101742")
    for text, words in ((unfinished, "fabric registration state 2, not 3 (completed)"),
                        (split, "the GPUs are in 2 NVLink domains")):
        assert text != real
        log = tmp_path / "m.log"
        log.write_text(text)
        result = runner.invoke(app, ["smoke", "nccl-log", str(log), "--fabric", "mnnvl"],
                               env={"COLUMNS": "250"})
        assert result.exit_code == 1, result.output
        assert words in " ".join(result.output.split())
