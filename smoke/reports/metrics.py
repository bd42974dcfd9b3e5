"""A run as OpenMetrics text, for node-exporter's textfile collector or a Pushgateway.

    write_metrics(run, Path("/var/lib/node_exporter/textfile/accelfleet_smoke.prom"))

Gauges only, no sample timestamps and a closing `# EOF`: valid OpenMetrics that the
Prometheus text parser (the textfile collector's, the Pushgateway's) reads as well. The file
is written to a temporary name and renamed, so a collector never reads half of it.

    accelfleet_smoke_run_info{run_id, stack, thresholds_version} 1
    accelfleet_smoke_run_timestamp_seconds, accelfleet_smoke_run_ok
    accelfleet_smoke_<figure>{cluster, pool, node, device, accelerator}   per device
    accelfleet_smoke_floor{..., probe}, accelfleet_smoke_peak{..., probe}
    accelfleet_smoke_result{..., probe, verdict} 1                        every verdict
    accelfleet_smoke_node_failed{cluster, pool, node}                     0 or 1
"""

from __future__ import annotations

import math
import os
from datetime import datetime
from pathlib import Path

from smoke.cluster.run import RunReport
from smoke.probes import names as P
from smoke.probes.results import Verdict

PREFIX = "accelfleet_smoke_"
FIGURES = {  # probe -> (metric name, help)
    P.MATMUL: (P.MATMUL, "bf16 matmul throughput per device, TFLOP/s"),
    P.MEMORY: (P.MEMORY, "device memory bandwidth (read + write copy), GB/s"),
    P.SUSTAINED: (P.SUSTAINED, "bf16 matmul throughput per device with every device of the "
                  "host loaded at once, TFLOP/s"),
    P.ALLREDUCE: (f"{P.ALLREDUCE}_gbps", "all-reduce bus bandwidth inside the node, GB/s"),
    P.FABRIC: (f"{P.FABRIC}_gbps", "all-reduce bus bandwidth across the pool's nodes, GB/s"),
}


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def labels(**labels: str) -> str:
    return "{" + ",".join(f'{k}="{_escape(v)}"' for k, v in labels.items()) + "}"


def _value(v: float) -> str:
    """A sample value as OpenMetrics writes it: `+Inf`, `-Inf` and `NaN` by those names."""
    f = float(v)
    if math.isnan(f):
        return "NaN"
    if math.isinf(f):
        return "+Inf" if f > 0 else "-Inf"
    return repr(f)


def openmetrics(run: RunReport) -> str:
    """The run's figures, thresholds and verdicts as OpenMetrics text."""
    families: dict[str, tuple[str, list[str]]] = {}
    seen: dict[tuple[str, str], int] = {}

    def sample(name: str, help_: str, labels: str, value: float) -> None:
        # A host that reports the same (device, probe) twice gives two samples with one
        # label set, which OpenMetrics forbids: the repeats keep their figures, told apart
        # by a `repeat` label (2, 3, ...).
        times = seen[name, labels] = seen.get((name, labels), 0) + 1
        if times > 1:
            labels = labels[:-1] + f',repeat="{times}"}}' if labels else f'{{repeat="{times}"}}'
        families.setdefault(PREFIX + name, (help_, []))[1].append(
            f"{PREFIX}{name}{labels} {_value(value)}")

    sample("run_info", "the last smoke run", labels(
        run_id=run.run_id, stack=run.stack, thresholds_version=run.thresholds_version), 1)
    try:
        when = datetime.fromisoformat(run.started_at).timestamp()
        sample("run_timestamp_seconds", "when the last smoke run started", "", when)
    except ValueError:
        pass
    sample("run_ok", "1 when nothing failed in the last smoke run", "", float(run.ok))
    for pool in run.pools:
        cluster = pool.cluster or ""
        failed: dict[str, bool] = {}
        for o in pool.nodes:
            node = o.node or (o.report.host if o.report else o.pod)
            failed.setdefault(node, False)
            acc = (o.report.accelerator if o.report else None) or pool.accelerator
            for r in o.report.results if o.report else ():
                base = dict(cluster=cluster, pool=pool.name, node=node, device=r.device,
                            accelerator=acc)
                if r.probe in FIGURES and r.measured is not None:
                    name, help_ = FIGURES[r.probe]
                    sample(name, help_, labels(**base), r.measured)
                    floor = r.details.get("floor")
                    if isinstance(floor, int | float) and not isinstance(floor, bool):
                        sample("floor", "the floor the figure is judged against",
                               labels(**base, probe=r.probe), floor)
                    if r.expected is not None:
                        sample("peak", "the catalog peak of the figure",
                               labels(**base, probe=r.probe), r.expected)
                sample("result", "1 for each device and probe, labelled with its verdict",
                       labels(**base, probe=r.probe, verdict=r.verdict.value), 1)
                failed[node] |= r.verdict is Verdict.FAIL
        for c in pool.checks:
            node = c.node or ""
            sample("result", "1 for each device and probe, labelled with its verdict",
                   labels(cluster=cluster, pool=pool.name, node=node, device=c.result.device,
                           accelerator=pool.accelerator, probe=c.result.probe,
                           verdict=c.result.verdict.value), 1)
            if c.node is not None:
                failed[node] = failed.get(node, False) or c.result.verdict is Verdict.FAIL
        for node, bad in sorted(failed.items()):
            sample("node_failed", "1 when a node failed the last smoke run",
                   labels(cluster=cluster, pool=pool.name, node=node), float(bad))
    lines = []
    for name, (help_, samples) in families.items():
        lines += [f"# HELP {name} {help_}", f"# TYPE {name} gauge", *samples]
    return "\n".join([*lines, "# EOF"]) + "\n"


def write_metrics(run: RunReport, path: Path) -> str | None:
    """Write atomically (temporary file, fsync, rename; a new file readable by the
    collector, which runs as another user), or through a device or FIFO the path names
    (never renamed over); the problem in words, or None."""
    from fleet.output_files import write_atomic

    try:
        target = Path(os.path.realpath(path))  # through a symlink, never over it
        target.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(target, openmetrics(run))
    except OSError as exc:
        return f"cannot write {path}: {exc.strerror or exc}"
    return None
