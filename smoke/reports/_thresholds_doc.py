"""The thresholds table of docs/smoke.md, generated from the registry so it cannot drift.

    python -m smoke.reports._thresholds_doc docs/smoke.md   # rewrite the table in place

A test compares the table in docs/smoke.md with `table()`.
"""

from __future__ import annotations

import sys
from pathlib import Path

from fleet.words import precise
from smoke.probes import thresholds as T

BEGIN, END = "<!-- thresholds:begin (generated: python -m smoke.reports._thresholds_doc) -->", \
    "<!-- thresholds:end -->"
UNITS = {T.MATMUL: "TFLOP/s", T.MEMORY: "GB/s", T.ALLREDUCE: "GB/s", T.FABRIC: "GB/s",
         T.P2P: "GB/s"}


def _floor(th: T.Threshold, peak: float | None, unit: str) -> tuple[str, str]:
    if th.floor_abs is not None:
        floor = th.floor_abs
    elif th.floor_ratio is not None and peak:
        floor = th.floor_ratio * peak
    else:
        return "none", "-"
    ratio = f" ({th.floor_ratio:g} x peak)" if th.floor_abs is None and th.floor_ratio else ""
    return f"{precise(floor)} {unit}{ratio}", f"< {precise(floor * th.warn_band)}"


def _row(key: str, probe: str, th: T.Threshold, peak: float | None = None, *,
         verified: bool = True) -> str:
    floor, warn = _floor(th, peak, UNITS[probe])
    enforced = "enforced" if th.enforced and floor != "none" else (
        f"warn-only: {th.unenforced}" if th.unenforced else "no floor")
    if enforced == "enforced" and not verified:
        enforced = "warn-only: the catalog's figures for this SKU are unverified"
    return f"| {probe} | {key} | {floor} | {warn} | {enforced} | {th.source} | {th.as_of} |"


def table() -> str:
    """Every probe x SKU: T2 per catalog accelerator (the floor at its peak), the in-node
    all-reduce per machine type, the fabric per machine and fabric; then the defaults."""
    from fleet.catalog import load_catalog

    cat = load_catalog()
    rows = ["| probe | SKU | floor | warn | enforced | source | read |",
            "|---|---|---|---|---|---|---|"]
    for probe in (T.MATMUL, T.MEMORY):
        for acc in cat.accelerators.values():
            if acc.key == "cpu":
                continue
            peak = acc.bf16_tflops if probe == T.MATMUL else acc.memory_gbps
            th = T.threshold(acc.key, probe)
            rows.append(_row(acc.key, probe, th, peak, verified=acc.verified))
    for probe in (T.ALLREDUCE, T.FABRIC, T.P2P):
        for (key, p), th in T.REGISTRY.items():
            if p == probe and key not in ("*", "cpu"):
                rows.append(_row(key, probe, th))
        rows.append(_row("any other", probe, T.REGISTRY[("*", probe)]))
    rows.append(_row("cpu", T.MATMUL, T.REGISTRY[("cpu", T.MATMUL)]))
    return "\n".join(rows)


HEALTH_BEGIN = "<!-- gpu-health:begin (generated: python -m smoke.reports._thresholds_doc) -->"
HEALTH_END = "<!-- gpu-health:end -->"


def health_table() -> str:
    """T0's passive GPU health rules (smoke.probes.gpu_health.RULES), one row each."""
    from smoke.probes.gpu_health import RULES

    rows = ["| signal | what | verdict | from | source | read |", "|---|---|---|---|---|---|"]
    for r in RULES:
        start = "recorded only" if r.at_least == 0 else (
            "yes" if r.at_least == 1 and r.signal.endswith(("pending", "failure")) else
            f">= {r.at_least:,}")
        rows.append(f"| {r.signal} | {r.what} | {r.verdict.value} | {start} | {r.source} | "
                    f"{r.as_of} |")
    return "\n".join(rows)


PARTS_BEGIN = ("<!-- gpu-health-parts:begin (generated: python -m "
               "smoke.reports._thresholds_doc) -->")
PARTS_END = "<!-- gpu-health-parts:end -->"


def parts_table() -> str:
    """Which signal families each GPU part keeps (fleet/catalog/data/gpu_health.yaml, NVLink
    from accelerators.yaml): what T0 and the gate read on it, the rest skipped."""
    from fleet.catalog import load_catalog
    from fleet.catalog.health import FAMILIES, signals_of

    rows = ["| part | " + " | ".join(f.replace("_", " ") for f in FAMILIES) + " |",
            "|---|" + "---|" * len(FAMILIES)]
    for a in sorted(load_catalog().accelerators.values(), key=lambda a: a.key):
        have = signals_of(a.key) if a.kind == "gpu" else None
        if have is None:
            continue
        rows.append(f"| {a.key} | " + " | ".join("yes" if f in have else "-"
                                                 for f in FAMILIES) + " |")
    return "\n".join(rows)


def render(doc: str) -> str:
    """`doc` with the text between the markers replaced by the current tables."""
    from fleet.output_files import between_markers

    doc = between_markers(doc, BEGIN, END, table())
    if HEALTH_BEGIN in doc:
        doc = between_markers(doc, HEALTH_BEGIN, HEALTH_END, health_table())
    if PARTS_BEGIN in doc:
        doc = between_markers(doc, PARTS_BEGIN, PARTS_END, parts_table())
    return doc


if __name__ == "__main__":
    path = Path(sys.argv[1] if len(sys.argv) > 1 else "docs/smoke.md")
    path.write_text(render(path.read_text(encoding="utf-8")), encoding="utf-8")
