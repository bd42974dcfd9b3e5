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
    (EFA_ISSUES, "efa", [], 1, "rank [1,7]: no GPUDirect RDMA"),
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
    (None, "cannot read"),
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
