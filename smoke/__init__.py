"""Smoke probes that run on the accelerators: T0 inventory, T1 known answer, T2 performance,
T3 in-node all-reduce, each judged pass / warn / fail / skipped against the catalog.

    >>> from smoke import run_local
    >>> report = run_local(backend="torch", tier=2)      # doctest: +SKIP
    >>> report.ok, report.to_json()                       # doctest: +SKIP

Importing `smoke` imports neither pulumi nor torch nor jax: a backend's package is imported
only when its probes run.
"""

from smoke._results import SCHEMA_VERSION, HostReport, ProbeResult, Verdict
from smoke._runner import Progress, run_local

__all__ = ["SCHEMA_VERSION", "HostReport", "ProbeResult", "Progress", "Verdict", "run_local"]
