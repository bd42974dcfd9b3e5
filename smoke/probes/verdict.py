"""Verdicts: turn measurements into pass / warn / fail / skipped, by a versioned registry.

Every threshold carries its provenance; the registry (per SKU, machine and fabric) lives in
`smoke.probes.thresholds`, with the rule that a floor is enforced only where a published measurement
of that SKU exists at our probe's size (else warn-only, the result saying why). The rules:
- T2 floor: a ratio of the catalog peak (or a published absolute floor); within the warning
  band above it, warn; below it, fail. One retry happens before a fail (the runner's job).
- T3 bandwidth floor (in-node all-reduce by machine type, fabric by machine and fabric): an
  absolute busbw at 2 GiB per device; a figure at another size is judged warn-only.
- A figure that is not a finite number fails.
- Outliers: a device below `outlier_fail` of the median of its host's devices fails; below
  `outlier_warn`, warns (needs three or more devices; never on a CPU, whose 'devices' share
  cores).
- An accelerator whose catalog figures are unverified is never failed on them (warn at most).
- An explicit floor the user gives (`--min-tflops`, `--min-gbps`) always applies.
- Skipped never counts as pass or fail.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence

from fleet.words import counted, precise
from smoke.probes import thresholds as _th
from smoke.probes._fabric import CrossNode
from smoke.probes.backend import AllReduce, Device, KnownAnswer
from smoke.probes.expect import Expectation, matches

# the probe names' home is smoke.probes.names; re-exported here, where they are judged
from smoke.probes.names import ALLREDUCE as ALLREDUCE
from smoke.probes.names import FABRIC as FABRIC
from smoke.probes.names import GPU_HEALTH as GPU_HEALTH
from smoke.probes.names import INVENTORY as INVENTORY
from smoke.probes.names import KNOWN_ANSWER as KNOWN_ANSWER
from smoke.probes.names import MATMUL as MATMUL
from smoke.probes.names import MEMORY as MEMORY
from smoke.probes.names import NVLINK as NVLINK
from smoke.probes.names import P2P as P2P
from smoke.probes.names import PSUM as PSUM
from smoke.probes.names import SUSTAINED as SUSTAINED
from smoke.probes.names import pool_probe
from smoke.probes.nccl_log import Expect as FabricExpect
from smoke.probes.nccl_log import base_name as base_network
from smoke.probes.nccl_log import judge_ranks as judge_nccl_ranks
from smoke.probes.results import ProbeResult, Verdict, worst
from smoke.probes.thresholds import REGISTRY as REGISTRY  # re-exported: the registry's home
from smoke.probes.thresholds import Threshold as Threshold

THRESHOLDS_VERSION = "2026-11-28.2"

T0, T1, T2, T3 = 0, 1, 2, 3
UNITS = {INVENTORY: "GiB", KNOWN_ANSWER: "rel err", PSUM: "sum", MATMUL: "TFLOP/s",
         MEMORY: "GB/s", ALLREDUCE: "GB/s", FABRIC: "GB/s", SUSTAINED: "TFLOP/s",
         NVLINK: "links", P2P: "GB/s", GPU_HEALTH: ""}
TIERS = {INVENTORY: T0, KNOWN_ANSWER: T1, PSUM: T1, MATMUL: T2, MEMORY: T2, ALLREDUCE: T3,
         FABRIC: T3, SUSTAINED: T2, NVLINK: T0, P2P: T3, GPU_HEALTH: T0}
HOST = "host"  # the device name of host-wide probes
FABRIC_DEVICE = "fabric"  # the device name of the cross-node probe

# T0/T1 tolerances, with their reasons.
MEMORY_TOLERANCE = 0.85  # drivers and runtimes reserve some memory: an H100 80GB shows 79.2 GiB
KNOWN_ANSWER_TOLERANCE = 5e-3  # fp32 gives ~1e-6; TF32 (NGC containers' default) ~1e-3
CHECKSUM_TOLERANCE = 1e-6  # identical devices running the same program agree far closer


def threshold(accelerator: str | None, probe: str, machine: str | None = None) -> Threshold:
    return _th.threshold(accelerator, probe, machine)


def worst_check(checks: Sequence[tuple[Verdict, str]]) -> tuple[Verdict, str]:
    """The worst check's verdict and the reasons of every check that has it."""
    verdict = worst((v for v, _ in checks), default=Verdict.PASS)
    reasons = [r for v, r in checks if v is verdict] or [r for _, r in checks]
    return verdict, "; ".join(reasons)


# -- T0 ---------------------------------------------------------------------------------------
def judge_inventory(devices: Sequence[Device], exp: Expectation) -> list[ProbeResult]:
    """Device count, kind and memory against the expectation; every missing device named."""
    def result(dev: str, verdict: Verdict, reason: str, measured: float | None = None,
               **details: object) -> ProbeResult:
        return ProbeResult(dev, INVENTORY, T0, verdict, reason, measured, exp.memory_gib,
                           UNITS[INVENTORY], details=dict(details))

    acc = exp.accelerator
    if acc is None:
        return [result(d.id, Verdict.PASS, f"{d.kind} visible (nothing expected)",
                       d.memory_gib, kind=d.kind) for d in devices]
    ours = [d for d in devices if d.platform == acc.kind]
    others = [d for d in devices if d.platform != acc.kind]
    out: list[ProbeResult] = []
    for d in ours:
        checks: list[tuple[Verdict, str]] = [(Verdict.PASS, f"{d.kind} present")]
        if not matches(acc.key, d.kind):
            checks.append((Verdict.WARN, f"device kind {d.kind!r} does not look like {acc.name}"))
        if d.memory_gib is not None and exp.memory_gib:
            if d.memory_gib < MEMORY_TOLERANCE * exp.memory_gib:
                v = Verdict.FAIL if exp.verified else Verdict.WARN
                checks.append((v, f"{d.memory_gib:.1f} GiB < {MEMORY_TOLERANCE:.2f} x "
                               f"{exp.memory_gib:g} GiB expected"))
        verdict, reason = worst_check(checks)
        out.append(result(d.id, verdict, reason, d.memory_gib, kind=d.kind))
    want = exp.devices
    if want is not None:
        prefix = "cuda" if acc.kind == "gpu" else acc.kind
        found = f"found {len(ours)} {acc.kind.upper()} device{'s' if len(ours) != 1 else ''}"
        what = f"{want} x {acc.name}"
        if exp.chips and exp.chips != want:
            what = f"{want} devices ({exp.chips} x {acc.name}, {want // exp.chips} per chip)"
        for i in range(len(ours), want):
            out.append(result(f"{prefix}{i}", Verdict.FAIL,
                              f"missing: expected {what} on {exp.machine}, {found}"))
        if len(ours) > want:
            out = [r.with_verdict(Verdict.WARN, f"{r.reason}; {found}, expected {want}")
                   if r.verdict is Verdict.PASS else r for r in out]
    for d in others:
        out.append(result(d.id, Verdict.SKIPPED, f"{d.kind}: not a {acc.kind.upper()}, not "
                          "counted", d.memory_gib, kind=d.kind))
    return out


# -- T1 ---------------------------------------------------------------------------------------
def judge_known_answer(answers: Mapping[str, KnownAnswer]) -> list[ProbeResult]:
    """Each device within tolerance of float64; every device's checksum equal to the median."""
    if not answers:
        return []
    ref = statistics.median(a.checksum for a in answers.values())
    out = []
    for dev, a in answers.items():
        checks: list[tuple[Verdict, str]] = [
            (Verdict.PASS, f"max rel error {a.max_rel_error:.1e} vs float64")]
        if a.max_rel_error > KNOWN_ANSWER_TOLERANCE:
            checks.append((Verdict.FAIL, f"wrong answer: max rel error {a.max_rel_error:.1e} > "
                           f"{KNOWN_ANSWER_TOLERANCE:.0e} vs float64"))
        if abs(a.checksum - ref) > CHECKSUM_TOLERANCE * max(abs(ref), 1.0):
            checks.append((Verdict.FAIL, f"checksum {a.checksum:.9g} differs from the other "
                           f"devices' {ref:.9g}"))
        verdict, reason = worst_check(checks)
        out.append(ProbeResult(dev, KNOWN_ANSWER, T1, verdict, reason, a.max_rel_error,
                               KNOWN_ANSWER_TOLERANCE, UNITS[KNOWN_ANSWER],
                               details={"checksum": a.checksum}))
    return out


def judge_psum(value: float, devices: int) -> ProbeResult:
    ok = value == float(devices)
    return ProbeResult(HOST, PSUM, T1, Verdict.PASS if ok else Verdict.FAIL,
                       f"psum of ones over {counted(devices, 'device')} = {value:g}"
                       + ("" if ok else f", expected {devices}"), value, float(devices),
                       UNITS[PSUM])


# -- T2 ---------------------------------------------------------------------------------------
def judge_perf(probe: str, values: Mapping[str, float], exp: Expectation,
               min_value: float | None = None, *, platforms: Mapping[str, str] | None = None,
               attempts: Mapping[str, int] | None = None) -> list[ProbeResult]:
    """Per-device T2 figures against the catalog peak, the host median and `min_value`."""
    acc = exp.accelerator
    chip_peak = None if acc is None else (acc.bf16_tflops if probe == MATMUL
                                          else acc.memory_gbps)
    # The catalog's peaks are per chip; a device is the chip's share (JAX: half a TPU7x chip).
    peak = None if chip_peak is None else chip_peak / exp.devices_per_chip
    th = threshold(acc.key if acc else None, probe)
    finite = [v for v in values.values() if math.isfinite(v)]
    median = statistics.median(finite) if finite else 0.0
    unit = UNITS[probe]
    out = []
    for dev, v in values.items():
        # a device of another platform than expected (a CPU beside GPUs) has no catalog peak
        ours = acc is not None and (platforms is None or platforms.get(dev) == acc.kind)
        checks: list[tuple[Verdict, str]] = [(Verdict.PASS, f"{v:,.3g} {unit}")]
        floor = th.floor_abs if th.floor_abs is not None else (
            th.floor_ratio * peak if th.floor_ratio is not None and peak else None)
        if ours and peak:
            checks[0] = (Verdict.PASS, f"{v:,.3g} {unit} = {v / peak:.2f} of peak {peak:,g}")
        if ours and floor is not None:
            enforce = th.enforced and exp.verified
            note = "" if enforce else (" (not enforced: catalog figures unverified)"
                                       if not exp.verified else f" (warn-only: {th.unenforced})")
            if v < floor:
                checks.append((Verdict.FAIL if enforce else Verdict.WARN,
                               f"{v:,.3g} {unit} below floor {precise(floor)}{note}"))
            elif v < floor * th.warn_band:
                checks.append((Verdict.WARN, f"{v:,.3g} {unit} within {th.warn_band:g} x floor "
                               f"{precise(floor)}"))
        if min_value is not None and v < min_value:
            checks.append((Verdict.FAIL, f"{v:,.3g} {unit} below the --min floor "
                           f"{min_value:,g}"))
        if ours and len(values) >= 3 and th.outlier_fail is not None and median > 0:
            ratio = v / median
            if ratio < th.outlier_fail:
                checks.append((Verdict.FAIL, f"outlier: {ratio:.2f} of the host median "
                               f"{precise(median)} (< {th.outlier_fail:g})"))
            elif th.outlier_warn is not None and ratio < th.outlier_warn:
                checks.append((Verdict.WARN, f"outlier: {ratio:.2f} of the host median "
                               f"{precise(median)} (< {th.outlier_warn:g})"))
        if ours and floor is not None and not (th.enforced and exp.verified) and v >= floor:
            checks[0] = (checks[0][0], f"{checks[0][1]}; floor {precise(floor)} warn-only: "
                         f"{th.unenforced or 'catalog figures unverified'}")
        if not math.isfinite(v):
            checks.append((Verdict.FAIL, f"the figure is not a number ({v})"))
        verdict, reason = worst_check(checks)
        out.append(ProbeResult(dev, probe, T2, verdict, reason, v, peak if ours else None, unit,
                               attempts=(attempts or {}).get(dev, 1),
                               details={"floor": floor if ours else None,
                                        "enforced": bool(ours and th.enforced and exp.verified),
                                        "min": min_value, "host_median": median,
                                        "threshold_source": th.source}))
    return out


# -- T3 ---------------------------------------------------------------------------------------
def bandwidth_checks(busbw: float, bytes_per_device: int | None,
                     th: Threshold) -> tuple[list[tuple[Verdict, str]], dict[str, object]]:
    """A busbw figure against its floor: below it fails (warns where the floor is warn-only or
    the figure was measured at another message size than the floor's reference), within the
    warning band warns; a figure that is not a number fails. Returns the checks and details."""
    details: dict[str, object] = {"floor": th.floor_abs, "threshold_source": th.source,
                                  "reference_bytes": th.size}
    if not math.isfinite(busbw):
        details["enforced"] = True
        return [(Verdict.FAIL, f"busbw is not a number ({busbw})")], details
    floor = th.floor_abs
    if floor is None:
        details["enforced"] = False
        note = f"no floor: {th.unenforced}" if th.unenforced else "no floor"
        return [(Verdict.PASS, note)], details
    same_size = th.size is None or bytes_per_device == th.size
    enforce = th.enforced and same_size
    details["enforced"] = enforce
    why = th.unenforced if not th.enforced else (
        f"measured at {(bytes_per_device or 0) / 2**20:g} MiB per device, the floor's "
        f"reference at {(th.size or 0) / 2**20:g} MiB")
    note = "" if enforce else f" (warn-only: {why})"
    if busbw < floor:
        return [(Verdict.FAIL if enforce else Verdict.WARN,
                 f"busbw {precise(busbw)} GB/s below floor {precise(floor)}{note}")], details
    if busbw < floor * th.warn_band:
        return [(Verdict.WARN, f"busbw {precise(busbw)} GB/s within {th.warn_band:g} x floor "
                 f"{precise(floor)}{note}")], details
    return [(Verdict.PASS, f"floor {precise(floor)}{note}")], details


def judge_allreduce(result: AllReduce | None, devices: int, exp: Expectation) -> ProbeResult:
    unit = UNITS[ALLREDUCE]
    if result is None or devices < 2:
        return ProbeResult(HOST, ALLREDUCE, T3, Verdict.SKIPPED,
                           f"{devices} device{'s' if devices != 1 else ''} on this host: "
                           "nothing to all-reduce across", unit=unit)
    th = threshold(exp.accelerator.key if exp.accelerator else None, ALLREDUCE, exp.machine)
    floor_checks, floor_details = bandwidth_checks(result.busbw_gbps, result.bytes_per_device,
                                                   th)
    details = {"algbw_gbps": result.algbw_gbps, "bytes_per_device": result.bytes_per_device,
               "seconds": result.seconds, **floor_details, **result.details}
    text = (f"busbw {result.busbw_gbps:,.3g} GB/s (algbw {result.algbw_gbps:,.3g}) over "
            f"{counted(devices, 'device')}, {result.bytes_per_device / 2**20:g} MiB each")
    checks: list[tuple[Verdict, str]] = [(Verdict.PASS, text)]
    if not result.correct:
        checks.append((Verdict.FAIL, f"wrong sum; {text}"))
    verdict, reason = worst_check([*checks, *floor_checks])
    if verdict is Verdict.PASS:
        reason = "; ".join([text, *(r for _, r in floor_checks)])
    return ProbeResult(HOST, ALLREDUCE, T3, verdict, reason, result.busbw_gbps,
                       th.floor_abs, unit, details=details)


def judge_fabric(cross: CrossNode | None, expected_networks: Sequence[str] = (), *,
                 skipped: str = "", expect: FabricExpect | None = None,
                 floor: Threshold | None = None) -> ProbeResult:
    """The pool-wide collective seen from one node: the sum must be right and, on a fabric
    pool (`expect`, or `expected_networks` non-empty), every rank's NCCL log must show the
    fabric (`smoke.probes.nccl_log.judge`: its transport, no `Socket` fallback, GPUDirect RDMA on
    RDMA fabrics, the NIC count); what NCCL each rank ran is recorded either way."""
    unit = UNITS[FABRIC]
    if cross is None:
        return ProbeResult(FABRIC_DEVICE, FABRIC, T3, Verdict.SKIPPED, skipped, unit=unit)
    seen = sorted(set(cross.networks))
    details: dict[str, object] = {"nodes": cross.nodes, "world": cross.world,
                                  "transports_seen": seen,
                                  "transports_expected": list(
                                      expected_networks or (expect.names() if expect else ())),
                                  **cross.details}
    if cross.error is not None or cross.result is None:
        return ProbeResult(FABRIC_DEVICE, FABRIC, T3, Verdict.FAIL,
                           f"collective across {cross.nodes} nodes failed: {cross.error}",
                           unit=unit, details=details)
    r = cross.result
    details |= {"algbw_gbps": r.algbw_gbps, "bytes_per_device": r.bytes_per_device,
                "seconds": r.seconds, **r.details}
    text = (f"busbw {r.busbw_gbps:,.3g} GB/s over {cross.world} ranks on {cross.nodes} nodes "
            f"via {', '.join(seen) or 'an unnamed transport'}")
    checks: list[tuple[Verdict, str]] = [(Verdict.PASS, text)]
    if not r.correct:
        checks.append((Verdict.FAIL, f"wrong sum across nodes; {text}"))
    if expect is None and expected_networks:
        expect = FabricExpect(networks=tuple(expected_networks))
    if cross.nccl_logs:
        judged = judge_nccl_ranks(cross.nccl_logs, expect or FabricExpect())
        details["nccl"] = judged.details
        checks += [(Verdict.FAIL, p) for p in judged.problems]
        # asked but not in the log (a NIC count on TCPX/TCPXO, whose logs name no NIC): not
        # a pass, not a failure
        checks += [(Verdict.WARN, f"unproven: {u}") for u in judged.unproven]
    elif expect is not None and expect.names():
        names = expect.names()
        wrong = [n for n in seen if base_network(n).lower() not in {w.lower() for w in names}]
        if not seen:
            checks.append((Verdict.FAIL, "NCCL logged no 'Using network' line, so the fabric "
                           f"transport ({' or '.join(names)}) is unproven"))
        elif wrong:
            checks.append((Verdict.FAIL, f"NCCL used {', '.join(wrong)}, not the fabric "
                           f"({' or '.join(names)}): the fast network is not in use"))
    if floor is not None:  # the launcher's: it knows the pool's machine and fabric
        floor_checks, floor_details = bandwidth_checks(r.busbw_gbps, r.bytes_per_device, floor)
        checks += [c for c in floor_checks if c[0] is not Verdict.PASS]
        details |= floor_details
    verdict, reason = worst_check(checks)
    return ProbeResult(FABRIC_DEVICE, FABRIC, T3, verdict, reason, r.busbw_gbps,
                       None if floor is None else floor.floor_abs, unit, details=details)


# -- across the nodes of a pool ------------------------------------------------------------
POOL_OUTLIER_FAIL = 0.85  # the one home of the pool-outlier limits: messages format these
POOL_OUTLIER_WARN = 0.93
POOL_OUTLIER = Threshold(
    outlier_fail=POOL_OUTLIER_FAIL, outlier_warn=POOL_OUTLIER_WARN,
    source=f"a node below {POOL_OUTLIER_FAIL:g} of the median of its pool's other nodes fails (a "
    "node 20% slower than its peers is the one bad node AWS's and Google's health checks hunt "
    f"for), below {POOL_OUTLIER_WARN:g} warns; the same ratios as the host outlier rule")


def judge_pool_outliers(probe: str, by_node: Mapping[str, float]) -> list[tuple[str, ProbeResult]]:
    """Each node's median figure for `probe` against the median of the pool's OTHER nodes.
    Needs two or more nodes; only failing or warning nodes are returned."""
    th = POOL_OUTLIER
    out: list[tuple[str, ProbeResult]] = []
    if len(by_node) < 2 or th.outlier_fail is None or th.outlier_warn is None:
        return out
    by_node = {n: v for n, v in by_node.items() if math.isfinite(v)}  # NaN is failed apart
    if len(by_node) < 2:
        return out
    for node, value in by_node.items():
        peers = statistics.median(v for n, v in by_node.items() if n != node)
        if peers <= 0:
            continue
        ratio = value / peers
        if ratio >= th.outlier_warn:
            continue
        verdict = Verdict.FAIL if ratio < th.outlier_fail else Verdict.WARN
        limit = th.outlier_fail if verdict is Verdict.FAIL else th.outlier_warn
        out.append((node, ProbeResult(
            HOST, pool_probe(probe), TIERS[probe], verdict,
            f"node outlier: {precise(value)} {UNITS[probe]} is {ratio:.2f} of its peers' median "
            f"{precise(peers)} (< {limit:g})", value, peers, UNITS[probe],
            details={"ratio": ratio, "threshold_source": th.source})))
    return out
