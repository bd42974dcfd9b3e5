"""The result records: one JSON document per host, with a result per device and probe.

    {"schema_version": 1, "host": "...", "backend": "torch", "versions": {...},
     "results": [{"device": "cuda0", "probe": "matmul_tflops", "tier": 2, "measured": 801.2,
                  "expected": 989.0, "unit": "TFLOP/s", "verdict": "pass", "reason": "..."}]}

`HostReport.from_dict(report.to_dict()) == report`, and likewise through JSON.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

SCHEMA_VERSION = 1
DOCUMENT_KIND = "accelfleet.smoke/host"


class Verdict(StrEnum):
    """pass / warn / fail / skipped. Skipped never counts as pass or as fail."""

    PASS = "pass"
    WARN = "warn"
    FAIL = "fail"
    SKIPPED = "skipped"

    @property
    def rank(self) -> int:
        return {"skipped": 0, "pass": 1, "warn": 2, "fail": 3}[self.value]


def worst(verdicts: Iterable[Verdict], *, default: Verdict) -> Verdict:
    """The worst of `verdicts` (fail > warn > pass > skipped); `default` when there is none
    (each caller says what nothing means: no checks pass, no report fails)."""
    return max(verdicts, key=lambda v: v.rank, default=default)


def median_figure(values: Iterable[float | None]) -> float | None:
    """The median of the finite figures (a missing or NaN figure is failed apart, never a
    peer); None when there is none."""
    finite = [v for v in values if v is not None and math.isfinite(v)]
    return statistics.median(finite) if finite else None


def node_median(results: Iterable[ProbeResult], probe: str) -> float | None:
    """A node's figure for `probe`: the median over its devices' results. The one
    definition the text table, the HTML report and the pool-outlier check share."""
    return median_figure(r.measured for r in results if r.probe == probe)


@dataclass(frozen=True, slots=True)
class ProbeResult:
    """One probe on one device (or on the whole host, device "host"), judged."""

    device: str
    probe: str
    tier: int
    verdict: Verdict
    reason: str
    measured: float | None = None
    expected: float | None = None
    unit: str = ""
    attempts: int = 1
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "device": self.device,
            "probe": self.probe,
            "tier": self.tier,
            "measured": self.measured,
            "expected": self.expected,
            "unit": self.unit,
            "verdict": self.verdict.value,
            "reason": self.reason,
            "attempts": self.attempts,
            "details": dict(self.details),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ProbeResult:
        return cls(
            device=str(data["device"]),
            probe=str(data["probe"]),
            tier=_bounded(data["tier"], "tier", 0, MAX_TIER),
            verdict=Verdict(data["verdict"]),
            reason=str(data["reason"]),
            measured=None if data.get("measured") is None else float(data["measured"]),
            expected=None if data.get("expected") is None else float(data["expected"]),
            unit=str(data.get("unit", "")),
            attempts=_bounded(data.get("attempts", 1), "attempts", 0, MAX_ATTEMPTS),
            details=_details(data.get("details") or {}),
        )

    def with_verdict(self, verdict: Verdict, reason: str) -> ProbeResult:
        return replace(self, verdict=verdict, reason=reason)


MAX_TIER = 9  # tiers are 0..4; a host report is input: a tier of 2**63 is not one
MAX_ATTEMPTS = 1_000


def _bounded(value: Any, name: str, low: int, high: int) -> int:
    """A whole number from a host report within [low, high]; ValueError otherwise (the
    launcher then reads the node as giving no report)."""
    number = int(value)
    if not low <= number <= high:
        raise ValueError(f"{name} {number} is outside {low}..{high}")
    return number


def _text_or_none(value: Any, name: str) -> str | None:
    """A host report's optional name (`expect`, `accelerator`): text or absent; ValueError
    otherwise (a list there once crashed the report writers)."""
    if value is None or isinstance(value, str):
        return value
    raise ValueError(f"{name} must be text, not {type(value).__name__}")


_FIGURES = ("floor", "ratio")  # details the reports compute with
_LISTS = ("transports_seen", "transports_expected")


def _details(raw: dict[str, Any]) -> dict[str, Any]:
    """A host's `details`, as the report writers read them: a figure they compute with is a
    finite number (else kept as text under `<name>_reported`, never lost), a list is a list."""
    out = {str(k): v for k, v in dict(raw).items()}
    for key in _FIGURES:
        value = out.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)
                                  or not math.isfinite(value)):
            out[f"{key}_reported"] = str(out.pop(key))[:200]
    for key in _LISTS:
        value = out.get(key)
        if value is not None and not isinstance(value, list):
            out[key] = [str(value)[:200]]
    return out


@dataclass(frozen=True, slots=True)
class HostReport:
    """Everything one host's smoke run found."""

    host: str
    backend: str
    platform: str
    versions: dict[str, str]
    tier: int
    results: tuple[ProbeResult, ...]
    expect: str | None = None
    accelerator: str | None = None
    thresholds_version: str = ""
    started_at: str = ""
    duration_s: float = 0.0
    schema_version: int = SCHEMA_VERSION

    @property
    def failures(self) -> tuple[ProbeResult, ...]:
        return tuple(r for r in self.results if r.verdict is Verdict.FAIL)

    @property
    def ok(self) -> bool:
        """True when nothing failed (warnings and skips are fine)."""
        return not self.failures

    def counts(self) -> dict[str, int]:
        out = {v.value: 0 for v in Verdict}
        for r in self.results:
            out[r.verdict.value] += 1
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": self.schema_version,
            "kind": DOCUMENT_KIND,
            "host": self.host,
            "backend": self.backend,
            "platform": self.platform,
            "versions": dict(self.versions),
            "tier": self.tier,
            "expect": self.expect,
            "accelerator": self.accelerator,
            "thresholds_version": self.thresholds_version,
            "started_at": self.started_at,
            "duration_s": self.duration_s,
            "summary": self.counts(),
            "results": [r.to_dict() for r in self.results],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> HostReport:
        version = data.get("schema_version")
        if version != SCHEMA_VERSION or data.get("kind", DOCUMENT_KIND) != DOCUMENT_KIND:
            from fleet.errors import InputError

            raise InputError(
                f"not an accelfleet smoke host document of schema {SCHEMA_VERSION} "
                f"(kind {data.get('kind')!r}, schema_version {version!r})",
                hint="produce it with `accelfleet smoke local --json` of this version",
            )
        return cls(
            host=str(data["host"]),
            backend=str(data["backend"]),
            platform=str(data["platform"]),
            versions={str(k): str(v) for k, v in (data.get("versions") or {}).items()},
            tier=_bounded(data["tier"], "tier", 0, MAX_TIER),
            results=tuple(ProbeResult.from_dict(r) for r in data.get("results") or []),
            expect=_text_or_none(data.get("expect"), "expect"),
            accelerator=_text_or_none(data.get("accelerator"), "accelerator"),
            thresholds_version=str(data.get("thresholds_version", "")),
            started_at=str(data.get("started_at", "")),
            duration_s=float(data.get("duration_s", 0.0)),
            schema_version=int(version),
        )

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> HostReport:
        return cls.from_dict(json.loads(text))
