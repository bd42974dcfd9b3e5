"""Reports for people: a host's results (Rich table, JUnit XML: one test case per device and
probe), and a cluster run's (one row per node).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from fleet.words import counted, figure
from smoke.cluster.run import Failure, RunReport
from smoke.probes import names as P
from smoke.probes.results import HostReport, ProbeResult, Verdict, node_median, worst

if TYPE_CHECKING:
    from rich.table import Table

STYLE = {Verdict.PASS: "green", Verdict.WARN: "yellow", Verdict.FAIL: "bold red",
         Verdict.SKIPPED: "dim"}


number = figure  # a figure as people read it: fleet.words.figure, re-exported


def _texts(value: object) -> list[str]:
    items = value if isinstance(value, list) else [value]
    return [str(v) for v in items
            if isinstance(v, str | int | float) and not isinstance(v, bool) and str(v)]


def nccl_used(results: Iterable[ProbeResult]) -> str:
    """What NCCL a node ran, as its results' `details.nccl` record it (the agent reads it
    from each rank's NCCL log: smoke.probes.nccl_log): `NCCL 2.27.3+cuda12.9; plugin Libfabric
    (v10), aws-ofi-nccl 1.16.2; via Libfabric; GDRDMA on`. Empty when nothing was recorded.
    Pod output is untrusted: only strings and numbers are shown."""
    found: dict[str, dict[str, None]] = {"nccl_versions": {}, "net_plugins": {},
                                         "transports": {}, "gdrdma": {}}
    for r in results:
        nccl = r.details.get("nccl")
        if not isinstance(nccl, dict):
            continue
        for key, seen in found.items():
            seen.update(dict.fromkeys(_texts(nccl.get(key))))
    gdr = [g for g in found["gdrdma"] if g != "unknown"]
    parts = [f"NCCL {', '.join(found['nccl_versions'])}" if found["nccl_versions"] else "",
             f"plugin {'; '.join(found['net_plugins'])}" if found["net_plugins"] else "",
             f"via {', '.join(found['transports'])}" if found["transports"] else "",
             f"GDRDMA {', '.join(gdr)}" if gdr else ""]
    return "; ".join(p for p in parts if p)


def _text(value: object) -> str:
    """What a host reported, as a table cell shows it: Rich markup in it (`[/bold]` in a
    device name or a reason) is shown as typed, never read as markup."""
    from rich.markup import escape

    return escape(str(value))


NARROW_COLUMNS = 100  # below this, `table` drops its frame so the reason keeps some room
_WHOLE = ("probe", "tier", "measured", "expected", "verdict")  # never broken mid-word


def table(report: HostReport, width: int | None = None) -> Table:
    """The report's results, one row per device and probe. On a terminal narrower than
    `NARROW_COLUMNS` (`width`), the frame is dropped and the probe names and figures are kept
    whole; the reason wraps between words. What the report says (host, reasons) is text,
    never markup."""
    from rich import box
    from rich.table import Table

    acc = report.accelerator or "no catalog expectation"
    title = _text(f"accelfleet smoke: {report.host} ({report.backend} on {report.platform}; "
                  f"{acc}; tiers 0-{report.tier})")
    narrow = width is not None and width < NARROW_COLUMNS
    t = (Table(title=title, box=box.SIMPLE_HEAD, show_edge=False, collapse_padding=True)
         if narrow else Table(title=title))
    for col, just in (("device", "left"), ("probe", "left"), ("tier", "right"),
                      ("measured", "right"), ("expected", "right"), ("unit", "left"),
                      ("verdict", "left"), ("reason", "left")):
        t.add_column(col, justify=just, overflow="fold",  # type: ignore[arg-type]
                     no_wrap=narrow and col in _WHOLE)
    for r in report.results:
        style = STYLE[r.verdict]
        verdict = r.verdict.value + (" (retried)" if r.attempts > 1 else "")
        t.add_row(_text(r.device), _text(r.probe), f"T{r.tier}", number(r.measured),
                  number(r.expected), _text(r.unit), f"[{style}]{verdict}[/{style}]",
                  _text(r.reason))
    return t


def summary(report: HostReport) -> str:
    c = report.counts()
    line = (f"{c['pass']} pass, {c['warn']} warn, {c['fail']} fail, {c['skipped']} skipped "
            f"in {report.duration_s:.1f} s")
    if nccl := nccl_used(report.results):
        line += f"\n{nccl}"
    fails = [Failure("", None, r.device, r.probe, r.reason) for r in report.failures]
    for text in failure_lines(fails):
        line += "\n" + text.replace("FAIL  ", "FAIL ")
    return line


def failure_lines(failures: list[Failure]) -> list[str]:
    """One line per failure, except that the devices a node is missing (N identical
    "missing: ..." verdicts) collapse into one line with the likely cause."""
    out: list[str] = []
    missing: dict[tuple[str, str | None, str, str], list[str]] = {}
    for f in failures:
        if f.reason.startswith("missing:"):
            missing.setdefault((f.pool, f.node, f.probe, f.reason), []).append(f.device)
        else:
            out.append(f.line())
    for (pool, node, probe, reason), devices in missing.items():
        where = " ".join(x for x in (pool, node or "") if x)
        many = len(devices) > 1
        shown = f"{devices[0]}..{devices[-1]}" if many else devices[0]
        out.append(f"FAIL {where} {shown} {probe}: {len(devices)} device"
                   f"{'s' if many else ''} {reason}; likely cause: {missing_cause(reason)}")
    return out


def missing_cause(reason: str) -> str:
    """What usually hides accelerators from a node (the reason says what was found)."""
    none = "found 0 " in reason
    if "GPU" in reason:
        return ("the NVIDIA driver or the device plugin is not running (no nvidia.com/gpu "
                "on the node): run `nvidia-smi` on it and check the device plugin's pods"
                if none else "some GPUs dropped off the bus or are disabled: `nvidia-smi` "
                "and the kernel log (Xid errors) on the node say which")
    return ("the accelerator runtime or its device plugin is not running on the node"
            if none else "some devices are not visible to the runtime: check the node's "
            "device plugin and the runtime's logs")


def run_table(run: RunReport) -> Table:
    """One row per node (and per pool-wide check): worst verdict, key figures, the NCCL it
    ran, failures. Pod output and cluster names are untrusted text: escaped, never markup."""
    from rich.table import Table

    t = Table(title=_text(f"accelfleet smoke run {run.run_id} (stack {run.stack}, thresholds "
                          f"{run.thresholds_version})"))
    for col, just in (("pool", "left"), ("node", "left"), ("status", "left"),
                      ("TFLOP/s", "right"), ("GB/s", "right"), ("fabric GB/s", "right"),
                      ("NCCL", "left"), ("verdict", "left"), ("why", "left")):
        t.add_column(col, justify=just, overflow="fold")  # type: ignore[arg-type]
    for pool in run.pools:
        if not pool.nodes and not pool.checks:
            t.add_row(_text(pool.name), "-", pool.status.value, "-", "-", "-", "-",
                      f"[{STYLE[Verdict.SKIPPED]}]skipped[/]", _text(pool.reason))
        for n in pool.nodes:
            rows = list(n.report.results) if n.report else []
            rows += [c.result for c in pool.checks if c.node == (n.node or n.pod)]
            node_worst = worst((r.verdict for r in rows), default=Verdict.FAIL)

            def fig(probe: str, rows: list[ProbeResult] = rows) -> str:
                value = node_median(rows, probe)
                return "-" if value is None else number(value)

            why = "; ".join(f"{r.device} {r.probe}: {r.reason}" for r in rows
                            if r.verdict is Verdict.FAIL) or ("no report" if not rows else "")
            t.add_row(_text(pool.name), _text(n.node or n.pod), pool.status.value,
                      fig(P.MATMUL), fig(P.MEMORY), fig(P.FABRIC),
                      _text(nccl_used(rows) or "-"), f"[{STYLE[node_worst]}]{node_worst.value}[/]",
                      _text(why))
        for c in pool.checks:
            if c.node is None:
                v = c.result.verdict
                t.add_row(_text(pool.name), "(pool)", pool.status.value, "-", "-", "-", "-",
                          f"[{STYLE[v]}]{v.value}[/]", _text(c.result.reason))
    return t


def run_summary(run: RunReport) -> str:
    counts = {v.value: 0 for v in Verdict}
    for p in run.pools:
        for k, v in p.counts().items():
            counts[k] += v
    nodes = sum(len(p.nodes) for p in run.pools)
    line = (f"run {run.run_id}: {counted(len(run.pools), 'pool')}, "
            f"{counted(nodes, 'node report')}; "
            f"{counts['pass']} pass, {counts['warn']} warn, {counts['fail']} fail, "
            f"{counts['skipped']} skipped in {run.duration_s:.1f} s")
    starts = [((n.timing or {}).get("startup_s"), p.name, n.node or n.pod)
              for p in run.pools for n in p.nodes]
    slowest = max(((s, pool, node) for s, pool, node in starts if s is not None), default=None)
    if slowest is not None:
        runs = [r for p in run.pools for n in p.nodes
                if (r := (n.timing or {}).get("run_s")) is not None]
        line += (f"\npods started within {slowest[0]:.0f} s of placement (image pulls, "
                 f"sidecars; slowest {slowest[1]}/{slowest[2]})"
                 + (f", then ran up to {max(runs):.0f} s" if runs else ""))
    for text in failure_lines(run.failures):
        line += "\n" + text
    return line
