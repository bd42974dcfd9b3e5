"""The HTML report: one self-contained file a person opens and forwards.

    html = render_html(run, quarantine=report)      # a RunReport (RunReport.of_host for local)

Rendered with jinja2 (`smoke/reports/templates/report.html.j2`, autoescape on); inline CSS and
inline SVG, no script, no font, no image from anywhere: a Content-Security-Policy of `default-src
'none'` keeps the viewing browser off the network. Per pool, a chart per T2 figure of every
device against its catalog peak, floor and warning band, failing nodes first; the cross-node
bus bandwidth and the transport seen; a row per node; and at the top the verdict, the run's
stack, versions and threshold registry version, and every failure with its reason.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from smoke.cluster.quarantine import figure, threshold_of
from smoke.cluster.run import PoolReport, RunReport
from smoke.probes import names as P
from smoke.probes.results import ProbeResult, Verdict, node_median, worst
from smoke.reports.text import missing_cause, nccl_used, number

if TYPE_CHECKING:
    from smoke.cluster.quarantine import ActionReport

CHART_PROBES = ((P.MATMUL, "bf16 matmul", "TFLOP/s"),
                (P.MEMORY, "memory bandwidth", "GB/s"))
WIDTH, LEFT, RIGHT, TOP, ROW, GAP = 960, 250, 120, 34, 17, 8  # chart geometry, px
COLOURS = {"pass": "#2e7d32", "warn": "#e0a000", "fail": "#c62828", "skipped": "#9e9e9e"}


def _worst(verdicts: Iterable[Verdict]) -> Verdict:
    return worst(verdicts, default=Verdict.SKIPPED)


@dataclass
class Row:
    node: str
    device: str
    verdict: str
    value: float
    y: float
    width: float
    text: str
    first: bool  # the node's first row: its name is drawn here
    node_verdict: str


@dataclass
class Line:
    x: float
    label: str
    kind: str  # peak, floor, band


@dataclass
class Group:
    """One node's rows in a chart; `note` and `limit` mark it an outlier among its peers."""

    y: float
    height: float
    verdict: str
    note: str = ""
    limit: float | None = None  # x of POOL_OUTLIER_FAIL x the peers' median
    limit_label: str = ""


@dataclass
class Chart:
    title: str
    unit: str
    height: float
    rows: list[Row]
    lines: list[Line]
    zones: list[tuple[float, float, str]]  # (x, width, kind)
    groups: list[Group]
    ticks: list[tuple[float, str]]
    note: str = ""
    left: int = LEFT
    plot: int = WIDTH - LEFT - RIGHT
    width: int = WIDTH


@dataclass
class NodeView:
    name: str
    verdict: str
    tflops: str
    gbps: str
    allreduce: str
    fabric: str
    why: str
    slice: str = ""
    nccl: str = ""  # NCCL version, net plugin and version, transport (details.nccl)


@dataclass
class PoolView:
    name: str
    cluster: str
    accelerator: str
    status: str
    verdict: str
    reason: str
    duration: str
    counts: dict[str, int]
    nodes: list[NodeView]
    charts: list[Chart]
    fabric: str = ""
    fabric_verdict: str = ""
    checks: list[tuple[str, str, str]] = field(default_factory=list)  # pool-wide


def _node_rows(pool: PoolReport) -> dict[str, list[ProbeResult]]:
    """Each node's results and the launcher's checks about it."""
    out: dict[str, list[ProbeResult]] = {}
    for o in pool.nodes:
        name = o.node or o.pod
        out.setdefault(name, [])
        if o.report is not None:
            out[name] += list(o.report.results)
    for c in pool.checks:
        if c.node is not None:
            out.setdefault(c.node, []).append(c.result)
    return out


def _node_order(rows: dict[str, list[ProbeResult]]) -> list[str]:
    """Failing nodes first, then warning, then the rest; by name within each."""
    return sorted(rows, key=lambda n: (-_worst(r.verdict for r in rows[n]).rank
                                       if rows[n] else -Verdict.FAIL.rank, n))


def _chart(pool: PoolReport, rows: dict[str, list[ProbeResult]], probe: str, title: str,
           unit: str) -> Chart | None:
    from smoke.probes import verdict as V

    order = _node_order(rows)
    # A chart scales to its largest figure: an infinite or NaN one (a host's report is input)
    # is left out of the chart, and shown as reported in the node's table.
    data = [(n, r) for n in order for r in rows[n] if r.probe == probe and _finite(r.measured)]
    if not data:
        return None
    peaks = [r.expected for _, r in data if r.expected and _finite(r.expected)]
    floors = [f for _, r in data if (f := _number(r.details.get("floor"))) is not None]
    peak = max(peaks) if peaks else None
    floor = min(floors) if floors else None
    acc = next((o.report.accelerator for o in pool.nodes if o.report is not None), None)
    band = floor * V.threshold(acc, probe).warn_band if floor is not None else None
    top = max([r.measured or 0.0 for _, r in data] + [peak or 0.0, band or 0.0]) * 1.06 or 1.0
    plot = WIDTH - LEFT - RIGHT

    def x(v: float) -> float:
        return round(plot * v / top, 1)

    verdicts = {n: _worst(r.verdict for r in rows[n]).value for n in order}
    outliers = {n: r for n in order for r in rows[n] if r.probe == P.pool_probe(probe)
                and r.verdict in (Verdict.FAIL, Verdict.WARN)}
    out_rows: list[Row] = []
    groups: list[Group] = []
    y = float(TOP)
    current = None
    for node, r in data:
        if node != current:
            if current is not None:
                y += GAP
            group = Group(y - 3, 0.0, verdicts[node])
            o = outliers.get(node)
            if o is not None and o.expected:
                limit = (V.POOL_OUTLIER.outlier_fail if o.verdict is Verdict.FAIL else
                         V.POOL_OUTLIER.outlier_warn) or 0.0
                group.note = f"node outlier: {o.details.get('ratio', 0):.2f} of peers"
                group.limit = x(limit * o.expected)
                group.limit_label = f"{limit:g} × peers' {number(o.expected)}"
            groups.append(group)
            current = node
        text = number(r.measured) + (f"  ({r.measured / r.expected:.2f})" if r.expected and
                                   r.measured else "")
        out_rows.append(Row(node, r.device, r.verdict.value, r.measured or 0.0, y,
                            max(1.0, x(r.measured or 0.0)), text,
                            not out_rows or out_rows[-1].node != node, verdicts[node]))
        groups[-1].height = y + ROW - groups[-1].y + 1
        y += ROW
    lines, zones = [], []
    if floor is not None:
        zones.append((0.0, x(floor), "fail"))
        lines.append(Line(x(floor), f"floor {number(floor)}", "floor"))
        if band is not None and band > floor:
            zones.append((x(floor), x(band) - x(floor), "warn"))
            lines.append(Line(x(band), f"warn {number(band)}", "band"))
    if peak is not None:
        lines.append(Line(x(peak), f"peak {number(peak)}", "peak"))
    step = _nice_step(top)
    ticks = [(x(t * step), number(t * step)) for t in range(int(top / step) + 1)]
    note = "" if peak is not None else "no catalog peak for this device: figures only"
    return Chart(f"{title} ({unit})", unit, y + 26, out_rows, lines, zones, groups, ticks, note)


def _finite(value: float | None) -> bool:
    return value is not None and math.isfinite(value)


def _number(value: object) -> float | None:
    """A figure from a report's details: a finite number, or None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def _nice_step(top: float) -> float:
    raw = top / 6
    mag = 10 ** int(f"{raw:e}".split("e")[1])
    return float(next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw))


def _median(rs: list[ProbeResult], probe: str) -> str:
    value = node_median(rs, probe)
    return "-" if value is None else number(value)


def _pool_view(pool: PoolReport) -> PoolView:
    rows = _node_rows(pool)
    slices = {o.node or o.pod: o.slice for o in pool.nodes}
    nodes = []
    for n in _node_order(rows):
        rs = rows[n]
        worst = _worst(r.verdict for r in rs) if rs else Verdict.FAIL
        why = "; ".join(f"{r.device} {r.probe}: {r.reason}" for r in rs
                        if r.verdict is Verdict.FAIL) or ("no report" if not rs else "")
        if not why and worst is Verdict.WARN:
            why = "; ".join(f"{r.device} {r.probe}: {r.reason}" for r in rs
                            if r.verdict is Verdict.WARN)
        s = slices.get(n)
        nodes.append(NodeView(n, worst.value, _median(rs, P.MATMUL),
                              _median(rs, P.MEMORY), _median(rs, P.ALLREDUCE),
                              _median(rs, P.FABRIC), why,
                              "" if s is None else str(s), nccl_used(rs)))
    charts = [c for probe, title, unit in CHART_PROBES
              if (c := _chart(pool, rows, probe, title, unit)) is not None]
    fabric, fabric_verdict = _fabric(rows)
    verdicts = [r.verdict for _, r in pool.verdicts()]
    worst = _worst(verdicts) if verdicts else Verdict.SKIPPED
    return PoolView(pool.name, pool.cluster or "-", pool.accelerator, pool.status.value,
                    worst.value, pool.reason, f"{pool.duration_s:.1f} s", pool.counts(), nodes,
                    charts, fabric, fabric_verdict,
                    [(c.result.probe, c.result.verdict.value, c.result.reason)
                     for c in pool.checks if c.node is None])


def _fabric(rows: dict[str, list[ProbeResult]]) -> tuple[str, str]:
    """The pool-wide collective, as every node saw it: bus bandwidth and transports."""
    seen = [r for rs in rows.values() for r in rs if r.probe == P.FABRIC]
    if not seen:
        return "", ""
    worst = _worst(r.verdict for r in seen)
    if worst is Verdict.SKIPPED:
        return f"skipped: {seen[0].reason}", worst.value
    values = [r.measured for r in seen if r.measured is not None]
    transports = sorted({str(t) for r in seen for t in r.details.get("transports_seen") or []})
    expected = sorted({str(t) for r in seen
                       for t in r.details.get("transports_expected") or []})
    text = (f"{number(statistics.median(values)) if values else '-'} GB/s bus bandwidth across "
            f"{seen[0].details.get('nodes', len(seen))} nodes "
            f"({seen[0].details.get('world', '?')} ranks); transport seen: "
            f"{', '.join(transports) or 'none named'}")
    if expected:
        text += f"; expected: {' or '.join(expected)}"
    bad = next((r for r in seen if r.verdict is Verdict.FAIL), None)
    if bad is not None:
        text += f". {bad.reason}"
    return text, worst.value


def _versions(run: RunReport) -> list[tuple[str, str]]:
    found: dict[str, set[str]] = {}
    for h in run.host_reports():
        for k, v in h.versions.items():
            found.setdefault(k, set()).add(v)
    return [(k, ", ".join(sorted(v))) for k, v in sorted(found.items())]


def _collapsed(failures: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The failure rows, except that the devices a node is missing (N identical "missing: ..."
    verdicts) collapse into one row with the likely cause, as the text report does."""
    out: list[dict[str, Any]] = []
    missing: dict[tuple[str, str, str, str], list[dict[str, Any]]] = {}
    for f in failures:
        reason = str(f["reason"])
        if reason.startswith("missing:"):
            key = (str(f["pool"]), str(f["node"]), str(f["probe"]), reason)
            if key not in missing:
                out.append(f)  # its place in the table; replaced below
            missing.setdefault(key, []).append(f)
        else:
            out.append(f)
    for (_, _, _, reason), rows in missing.items():
        first, many = rows[0], len(rows) > 1
        devices = f"{first['device']}..{rows[-1]['device']}" if many else first["device"]
        merged = {**first, "device": devices,
                  "reason": f"{len(rows)} device{'s' if many else ''} {reason}; likely cause: "
                            f"{missing_cause(reason)}",
                  "retried": any(r["retried"] for r in rows)}
        out[out.index(first)] = merged
    return out


def context(run: RunReport, quarantine: ActionReport | None = None) -> dict[str, Any]:
    """Everything the template shows, computed (the template only lays it out)."""
    failures: list[dict[str, Any]] = []
    for pool in run.pools:
        for node, r in pool.verdicts():
            if r.verdict is Verdict.FAIL:
                failures.append({"pool": pool.name, "node": node or "(pool)",
                                 "device": r.device, "probe": r.probe, "figure": figure(r),
                                 "threshold": threshold_of(r), "reason": r.reason,
                                 "retried": r.attempts > 1})
    headline_count = len(failures)
    failures = _collapsed(failures)
    counts = {v.value: 0 for v in Verdict}
    for p in run.pools:
        for k, v in p.counts().items():
            counts[k] += v
    failed_nodes = sorted({str(f["node"]) for f in failures if f["node"] != "(pool)"})
    if run.cancelled:
        verdict, headline = "fail", "INTERRUPTED"
    elif run.nothing_tested and not failures:
        verdict, headline = "fail", "FAILED: nothing was tested"
    elif failures or run.cleanup_errors or not run.ok:
        verdict = "fail"
        headline = f"FAILED: {headline_count} failure{'s' if headline_count != 1 else ''}"
    elif counts["warn"]:
        verdict, headline = "warn", f"PASSED with {counts['warn']} warning(s)"
    else:
        verdict, headline = "pass", "PASSED"
    return {
        "run": run, "verdict": verdict, "headline": headline, "failed_nodes": failed_nodes,
        "counts": counts, "failures": failures, "pools": [_pool_view(p) for p in run.pools],
        "versions": _versions(run), "colours": COLOURS,
        "nodes": sum(len(p.nodes) for p in run.pools),
        "digest": run.agent_digest[:19] if run.agent_digest else "",
        "quarantine": quarantine,
        "generated": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
    }


def render_html(run: RunReport, *, quarantine: ActionReport | None = None) -> str:
    import jinja2

    env = jinja2.Environment(loader=jinja2.PackageLoader("smoke.reports", "templates"),
                             autoescape=True, undefined=jinja2.StrictUndefined,
                             trim_blocks=True, lstrip_blocks=True)
    return env.get_template("report.html.j2").render(**context(run, quarantine))
