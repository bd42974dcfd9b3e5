"""`accelfleet smoke nccl-log`: what an NCCL log says each rank used, and whether that is the
fabric it should be. The reader is the agent's own (`smoke.probes.nccl_log`)."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from cli._errors import command
from cli._terminal import echo

if TYPE_CHECKING:
    from collections.abc import Sequence

    from smoke.probes.nccl_log import Expect, NcclLog, RankLog

MAX_BYTES = 256 * 2**20  # a log larger than this is not read whole


class FabricKind(StrEnum):
    tcpx = "tcpx"
    tcpxo = "tcpxo"
    rdma = "rdma"
    efa = "efa"
    ib = "ib"
    mnnvl = "mnnvl"
    socket = "socket"


def _read(path: Path) -> str:
    """The log's text: a regular file only (a FIFO would block, /dev/zero never ends), at most
    MAX_BYTES, checked before a byte is parsed (fleet.input_files)."""
    from fleet.input_files import read_bytes

    data = read_bytes(path, what="NCCL log", max_bytes=MAX_BYTES,
                      hint="give the file kubectl logs, mpirun or NCCL_DEBUG_FILE wrote; cut a "
                      "large one to the NCCL lines, e.g. `grep 'NCCL ' FILE`")
    return _text(data, str(path))


def _read_stdin() -> str:
    """Standard input, at most MAX_BYTES (an endless pipe is refused at the bound)."""
    import sys

    from fleet.errors import InputError

    data = sys.stdin.buffer.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise InputError(f"standard input holds over {MAX_BYTES // 2**20} MiB",
                         hint="cut the log to the NCCL lines, e.g. `grep 'NCCL ' FILE | "
                         "accelfleet smoke nccl-log -`")
    return _text(data, "standard input")


def _text(data: bytes, where: str) -> str:
    from fleet.errors import InputError

    if b"\0" in data[:65536]:
        raise InputError(f"{where} is binary, not an NCCL log",
                    hint="give the text log (kubectl logs POD > FILE)")
    return data.decode("utf-8", "replace")


def _parse(text: str, where: str) -> NcclLog:
    """The log parsed; past a bound it may hold (a line, the ranks, a number's digits), exit 2
    saying which."""
    from fleet.errors import InputError
    from smoke.probes.nccl_log import LogBoundError, parse

    try:
        return parse(text)
    except LogBoundError as exc:
        raise InputError(f"{where} is past what an NCCL log is read up to: {exc}",
                         hint="check that this is an NCCL log; cut it to the NCCL lines, "
                         "e.g. `grep 'NCCL ' FILE`") from None


@command
def nccl_log(
    file: Annotated[Path, typer.Argument(metavar="FILE", help="An NCCL log: `kubectl logs`, "
                                         "an MPI run's output (Open MPI --tag-output "
                                         "prefixes are read as ranks) or an "
                                         "NCCL_DEBUG_FILE; `-` reads stdin.",
                                         show_default=False)],
    fabric: Annotated[FabricKind | None, typer.Option(
        "--fabric", metavar="|".join(FabricKind),
        help="The fabric the ranks should have used: its transport, no Socket "
        "fallback, and (for rdma, i.e. gIB, ib and efa, unless --no-gdr) GPUDirect RDMA on "
        "every NET channel; mnnvl (GB200 NVL72): every GPU registered in one healthy "
        "multi-node NVLink domain (NVML's healthMask as NCCL logs it).",
        show_default=False)] = None,
    gdr: Annotated[bool | None, typer.Option(
        "--gdr/--no-gdr", help="Require GPUDirect RDMA (/GDRDMA) on every NET channel, or "
        "not. Default: as --fabric says (rdma, ib, efa require it). Use --no-gdr for EFA on "
        "instance types where NCCL runs without GDR (g4dn, g5, g6, g6e: aws-ofi-nccl's "
        "gdr_required is false there).", show_default=False)] = None,
    nics: Annotated[int | None, typer.Option(
        "--nics", min=1, metavar="N", help="GPU NICs each host should use (the catalog's "
        "count: 8 on a3-megagpu-8g and a3-ultragpu-8g, 32 EFA on p5.48xlarge).",
        show_default=False)] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the ranks and the verdict "
                                          "as JSON.")] = False,
) -> None:
    """Say which NCCL, net plugin and transport each rank of a log used, whether GPUDirect
    RDMA was on and how many NICs each host used, and whether that is what `--fabric` should
    give. Set NCCL_DEBUG=INFO (NCCL_DEBUG_SUBSYS=INIT,NET at least) when you make the log.

    NCCL WARN lines are problems, said first: the first is the likely cause. Console and
    CloudWatch copies (timestamps before the host) are read; a log stripped of its
    `host:pid:tid` prefixes is read as one process, and says so.

    Exit 0 the log shows the fabric (or no --fabric/--nics was asked); 1 it does not, or a
    count asked with --nics is unproven (the log names no NIC); 2 the file is unreadable or
    holds no NCCL line.
    """
    from fleet.errors import CheckFailed, InputError
    from smoke.probes.nccl_log import Expect, judge

    text = _read_stdin() if str(file) == "-" else _read(file)
    log = _parse(text, "standard input" if str(file) == "-" else str(file))
    if not log.ranks:
        raise InputError(f"{file} holds no NCCL line (`<host>:<pid>:<tid> [<dev>] NCCL INFO "
                         "...`)", hint="run with NCCL_DEBUG=INFO; NCCL writes to stdout, or "
                         "to NCCL_DEBUG_FILE when set")
    expect = Expect(kind=fabric.value if fabric else "", gdr=gdr, nics=nics)
    judged = judge(log, expect)
    asked = fabric is not None or nics is not None or gdr is not None
    if as_json:
        from cli._output import print_json

        print_json({"file": str(file), "ok": judged.ok, "problems": list(judged.problems),
                    "summary": judged.summary, **judged.details,
                    "ranks": [r.to_dict() for r in log.ranks]})
    else:
        _print(log.ranks, judged.summary)
        if not log.attributed:
            echo("note: the log has no `host:pid:tid [dev]` prefixes (stripped), so its "
                 "lines cannot be attributed to ranks or hosts: read as one process")
        if asked and judged.ok and not judged.unproven:
            echo(f"ok: the log shows {_what(expect)}")
    if asked and judged.ok and judged.unproven:
        lines = "\n  ".join(judged.unproven)
        raise CheckFailed(f"the log does not prove {_what(expect)}:\n  {lines}",
                          hint="the log names no NIC on this fabric (TCPX, TCPXO and EFA "
                          "without GDR log no `via NET/<plugin>/<n>` channel line unless "
                          "NCCL_DEBUG_SUBSYS includes INIT,NET); rerun with it, or drop --nics")
    if asked and not judged.ok:
        problems = "\n  ".join(judged.problems)
        hint = (f"NCCL said why first: {judged.hint}" if judged.hint else
                "the fabric fell back or is degraded on the ranks named; check the plugin "
                "installer, the pod's NICs and its env profile")
        raise CheckFailed(f"the log does not show {_what(expect)}:\n  {problems}", hint=hint)


def _what(expect: Expect) -> str:
    from smoke.probes.nccl_log import FABRICS

    rule = FABRICS.get(expect.kind)
    parts = [rule.what if rule else "the fabric"]
    if expect.gdr is not None or (rule is not None and rule.gdr):
        parts.append("GPUDirect RDMA on every NET channel" if expect.needs_gdr()
                     else "GPUDirect RDMA not required")
    if expect.nics:
        parts.append(f"{expect.nics} NICs per host")
    return ", ".join(parts)


TABLE_RANKS = 64  # more ranks than this: one row per distinct setting, with its ranks counted


def _row(r: RankLog) -> tuple[str, ...]:
    from smoke.probes.nccl_log import plugin_text

    gdr = {True: "on", False: "off", None: "-"}[r.gdr]
    found = f"found {r.nics_found}" if r.nics_found is not None else ""
    groups = f"{len(r.nic_groups)} NIC groups" if r.nic_groups else ""
    used = ",".join(f"{n}/{i}" for n, i in sorted(r.nics_used))
    return (r.nccl_version or "-", plugin_text(r) or "-", ", ".join(r.transports) or "-", gdr,
            "; ".join(x for x in (found, groups, used) if x) or "-")


def _print(ranks: Sequence[RankLog], summary: str) -> None:
    """One row per rank; past TABLE_RANKS ranks, one row per distinct setting with the ranks
    that share it counted (a log of 300,000 ranks prints in seconds, not minutes), at most
    TABLE_RANKS rows, the rest said in a line (`--json` lists every rank)."""
    from rich.markup import escape
    from rich.table import Table

    from cli._output import console, print_table
    from fleet.words import counted

    t = Table(title="NCCL ranks in the log")
    for col in ("rank", "NCCL", "net plugin", "transport", "GDRDMA", "NICs"):
        t.add_column(col, overflow="fold")
    rows: dict[tuple[str, ...], list[str]] = {}
    for r in ranks:
        rows.setdefault(_row(r), []).append(r.key)
    grouped = len(ranks) > TABLE_RANKS
    shown = list(rows.items()) if grouped else [(_row(r), [r.key]) for r in ranks]
    for row, keys in shown[:TABLE_RANKS]:
        label = keys[0] if not grouped else (
            f"{counted(len(keys), 'rank')} ({keys[0]}{', ...' if len(keys) > 1 else ''})")
        t.add_row(escape(label), *(escape(cell) for cell in row))
    out = console()
    print_table(out, t)
    if len(shown) > TABLE_RANKS:
        out.print(f"... and {counted(len(shown) - TABLE_RANKS, 'more setting')} (--json lists "
                  "every rank)")
    out.print(escape(summary))
