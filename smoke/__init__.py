"""Smoke probes that run on the accelerators: T0 inventory, T1 known answer, T2 performance,
T3 in-node all-reduce, each judged pass / warn / fail / skipped against the catalog.

    >>> from smoke import run_local
    >>> report = run_local(backend="torch", tier=2)      # doctest: +SKIP
    >>> report.ok, report.to_json()                       # doctest: +SKIP

The package, by where its code runs:
- `smoke.probes`: on a node (the agent, probes, verdicts, results; shipped whole to the pod);
- `smoke.cluster`: beside a cluster (sources, access, workloads, launcher, quarantine);
- `smoke.reports`: what a run becomes (text, JUnit, HTML, OpenMetrics);
- `smoke.history`: every run recorded, trends and drift.

Importing `smoke` imports neither pulumi nor torch nor jax: a backend's package is imported
only when its probes run.
"""

from typing import Any

from smoke.probes.results import SCHEMA_VERSION, HostReport, ProbeResult, Verdict
from smoke.probes.runner import Progress


def run_local(**options: Any) -> HostReport:
    """`smoke.probes.runner.run_local` with names resolved through the catalog (`--expect`
    words, device names): what `accelfleet smoke local` runs. Takes the same options."""
    from smoke.expectations import CATALOG
    from smoke.probes.runner import run_local as run

    return run(resolver=CATALOG, **options)


__all__ = ["SCHEMA_VERSION", "HostReport", "ProbeResult", "Progress", "Verdict", "run_local"]
