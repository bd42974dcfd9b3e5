"""The NCCL reader, round 3 (issue 37): NCCL 2.30.7's WARN lines with the function named,
HPC-X's "NCCL RDMA Plugin vN" read as the InfiniBand it picked, NIC counts only where the log
shows them, a wrong NCCL_SOCKET_IFNAME named from NCCL's INFO lines, `#` lines ignored, one line
per problem. Each on a real log (tests/smoke/data/nccl, every file with its source)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from smoke.probes.nccl_log import Expect, judge, parse

DATA = Path(__file__).parent / "data" / "nccl"


def _log(name: str) -> str:
    return (DATA / name).read_text(encoding="utf-8")


def _cli(*argv: str) -> tuple[int, str]:
    from cli.main import app

    out = CliRunner().invoke(app, ["smoke", "nccl-log", *argv], env={"COLUMNS": "250"})
    return out.exit_code, out.output


# -- NCCL 2.30.7: `file:line (function) NCCL WARN` ------------------------------------------------
def test_a_2_30_7_warn_line_with_its_function_is_read() -> None:
    # NVIDIA/nccl#2332 (NCCL 2.30.7-1): before, neither line matched a prefix, and the log was
    # "holds no NCCL line" (exit 2)
    log = parse(_log("nccl-warn-func-2.30.7-2332.log"))
    (rank,) = log.ranks
    assert rank.device == 1
    assert rank.warnings == ["Cuda failure 500 'named symbol not found'"]
    got = judge(log, Expect(kind="ib"))
    assert not got.ok
    assert got.hint == "device 1: NCCL WARN Cuda failure 500 'named symbol not found'"
    code, out = _cli(str(DATA / "nccl-warn-func-2.30.7-2332.log"), "--fabric", "ib")
    assert code == 1 and "Cuda failure 500" in out


# the line as v2.30.7-1 src/debug.cc ncclDebugLogV prints it with its host prefix:
# "%s:%d:%d " then "[%d] %s:%d (%s) NCCL WARN %s"; a lambda's __func__ is "operator()"
_PREFIXED_2_30_7 = ("lccn09:2520136:2520234 [0] transport/nvls.cc:254 ({func}) NCCL WARN Cuda "
                    "failure 401 'the operation cannot be performed in the present state'\n")


@pytest.mark.parametrize("func", ["ncclNvlsBufferSetup", "operator()"])
def test_an_infiniband_log_holding_a_2_30_7_warn_fails_on_it(func: str) -> None:
    healthy = _log("nccl-ib-hpcx-v8-using-network-2.26.log")
    assert judge(parse(healthy), Expect(kind="ib", gdr=False, nics=8)).ok
    got = judge(parse(healthy + _PREFIXED_2_30_7.format(func=func)),
                Expect(kind="ib", gdr=False, nics=8))
    assert not got.ok
    assert got.problems[0].startswith("lccn09:2520136: NCCL WARN Cuda failure 401")
    assert got.hint == got.problems[0]


# -- HPC-X: "NCCL RDMA Plugin v8" -----------------------------------------------------------------
def test_hpcx_named_by_its_load_time_name_is_the_infiniband_it_picked() -> None:
    # NCCL 2.26 + HPC-X: "Using network NCCL RDMA Plugin v8" on every rank; before, the name was
    # cut at its first word and judged "used NCCL, not IB or IBext"
    log = parse(_log("nccl-ib-hpcx-v8-using-network-2.26.log"))
    assert len(log.ranks) == 8
    assert {t for r in log.ranks for t in r.transports} == {"IBext_v8"}
    got = judge(log, Expect(kind="ib", gdr=False, nics=8))
    assert got.ok, got.problems
    assert got.details["nics_by_host"] == {"lccn09": 8}  # the HCAs NET/IB listed
    # GPUDirect RDMA is still unproven where required: the run printed no channel line
    strict = judge(log, Expect(kind="ib", nics=8))
    assert strict.problems == ("no 'via NET/<plugin>/<n>/GDRDMA' channel line: GPUDirect RDMA "
                               "is unproven",)
    # a fabric that is not InfiniBand still fails on it
    assert "used IBext_v8, not Libfabric" in " ".join(judge(log, Expect(kind="efa")).problems)


def test_hpcx_with_no_p2p_line_is_still_ibext() -> None:
    text = "h:1:2 [0] NCCL INFO Using network NCCL RDMA Plugin v10\n"
    assert parse(text).ranks[0].transports == ["IBext"]
    # an ordinary net keeps its whole name, spaces and all
    assert parse("h:1:2 [0] NCCL INFO Using network AWS Libfabric\n").ranks[0].transports == [
        "AWS Libfabric"]


# -- NIC counts only where the log shows them -----------------------------------------------------
def test_a_nic_count_the_log_does_not_show_is_unproven_not_ok() -> None:
    # the real TCPXO log (2 x a3-megagpu-8g) names no NIC: before, `--nics 8` printed "ok ... 8
    # NICs per host"
    log = parse(_log("nccl-tcpxo-info.log"))
    got = judge(log, Expect(kind="tcpxo", nics=8))
    assert got.ok and got.unproven == (
        "2 hosts (tcpxo-wb-0, tcpxo-wb-1): NIC count unproven (no NIC line), expected 8",)
    code, out = _cli(str(DATA / "nccl-tcpxo-info.log"), "--fabric", "tcpxo", "--nics", "8")
    assert code == 1 and "does not prove" in out and "ok:" not in out
    code, out = _cli(str(DATA / "nccl-tcpxo-info.log"), "--fabric", "tcpxo")
    assert code == 0 and "ok: the log shows" in out
    # EFA without GDR: the same
    nogdr = judge(parse(_log("nccl-efa-ofi-eks-g6e-nogdr-info.log")),
                  Expect(kind="efa", gdr=False, nics=4))
    assert nogdr.ok and not nogdr.unproven  # this one shows `found 4 nics`


def test_the_agent_warns_on_an_unproven_nic_count() -> None:
    from smoke.probes import verdict as V
    from smoke.probes._fabric import CrossNode
    from smoke.probes.backend import AllReduce
    from smoke.probes.results import Verdict

    result = AllReduce(busbw_gbps=100.0, algbw_gbps=50.0, seconds=1.0, bytes_per_device=2**20,
                       correct=True)
    cross = CrossNode(nodes=2, world=16, result=result, networks=("FasTrak",),
                      nccl_logs=(_log("nccl-tcpxo-info.log"),))
    got = V.judge_fabric(cross, ("FasTrak",), expect=Expect(kind="tcpxo", nics=8))
    assert got.verdict is Verdict.WARN and "unproven" in got.reason


# -- a wrong NCCL_SOCKET_IFNAME -------------------------------------------------------------------
def test_a_socket_ifname_that_matches_no_interface_is_named() -> None:
    # NVIDIA/nccl#1837: NCCL_SOCKET_IFNAME=eth2 on a host without it
    got = judge(parse(_log("nccl-socket-ifname-missing-1837.log")), Expect())
    assert not got.ok
    assert got.problems[0].startswith("twshared1016:1958: NCCL_SOCKET_IFNAME=eth2 matched no "
                                      "usable interface (NCCL: is neither AF_INET(2)")
    # NCCL 2.28+'s own WARN names it too, on the rank that set it
    text = ("n:7:7 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to =enp90s0np0\n"
            "n:7:7 [0] bootstrap.cc:96 NCCL WARN Bootstrap : no socket interface found\n")
    got = judge(parse(text), Expect())
    assert "NCCL_SOCKET_IFNAME==enp90s0np0 matched no usable interface (NCCL: Bootstrap : no "\
           "socket interface found)" in " ".join(got.problems)
    # a rank that found its interface is not blamed: the healthy HPC-X log sets bond0
    assert judge(parse(_log("nccl-ib-hpcx-v8-using-network-2.26.log")), Expect()).ok


# -- comments -------------------------------------------------------------------------------------
def test_comment_lines_are_not_log_lines() -> None:
    text = ("# copied from h:1:2 [0] NCCL WARN NET/IB : Got completion with error 12\n"
            "[1,0]<stdout>:#  h:1:2 [0] NCCL INFO Using network Socket\n"
            "h:1:2 [0] NCCL INFO Using network IB\n")
    (rank,) = parse(text).ranks
    assert rank.warnings == [] and rank.transports == ["IB"]
    # every recorded log's `#` header names NCCL lines; none is read
    for path in DATA.glob("*.log"):
        for r in parse(path.read_text(encoding="utf-8")).ranks:
            assert not any(w.startswith(("source:", "what:")) for w in r.warnings), path.name


# -- one line per problem -------------------------------------------------------------------------
def test_one_line_per_problem_however_many_ranks_or_ports() -> None:
    # nccl-tests#185: one rank's two WARNs differ only in the peer's port
    got = judge(parse(_log("nccl-ib-warn-nccl-tests-185.log")), Expect(kind="ib", gdr=False,
                                                                       nics=8))
    warns = [p for p in got.problems if "NCCL WARN" in p]
    assert warns == ["dgxh100-4:460770: NCCL WARN socketProgressOpt: Call to recv from "
                     "11.1.128.128<52035> failed : Connection reset by peer (and 1 more like it)"]
    # both hosts listed 2 HCAs: one line naming both
    assert ("2 hosts (dgxh100-4, dgxh100-3): NCCL used 2 of 8 NICs (HCAs NCCL's IB transport "
            "listed (`NET/IB : Using [0]...`); no channel line shows which it used)"
            ) in got.problems
