"""NVLink health inside one GPU node: every link of every GPU up, its error counters, and the
peer-to-peer copy bandwidth of every GPU pair.

Why: on an HGX H100 each GPU reaches the NVSwitches over 18 links, so one link down takes 1/18
(0.056) of that GPU's NVLink bandwidth. The in-node all-reduce then runs at about 17/18 of a
healthy node, above its floor and within the pool-outlier ratio: the figure cannot see it. The
link state can, and names the link.

- Links (T0): NVML per GPU and link (`nvmlDeviceGetNvLinkState`, and where NVML has them the
  data-link error counters `nvmlDeviceGetNvLinkErrorCounter`: replay, recovery, CRC), through
  `pynvml` (nvidia-ml-py) when the image has it, else `nvidia-smi nvlink -s` (the same NVML
  state: `Link N: <GB/s>` or `Link N: <inactive>`), else skipped ("no NVML"). Every GPU must
  show the catalog's link count (`nvlinks`) active, all at the same speed; without a catalog
  count, as many as its best peer on the node. Error counters only warn: they count since the
  driver loaded, so a number says "look", not "broken now".
- Pairs (T3): a copy from every GPU to every other (the torch backend's `pair_copy_gbps`),
  judged against the SKU's floor and against the node's own pairs: a pair far below the others
  fails, naming it; a GPU all of whose pairs run below the others is named as the likely owner
  of a missing link (its pairs run at 17/18 with one of 18 down).
Standard library only: it runs in the pod.
"""

from __future__ import annotations

import re
import shutil
import statistics
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from smoke.probes.names import NVLINK, P2P
from smoke.probes.results import ProbeResult, Verdict
from smoke.probes.thresholds import P2P_BYTES as P2P_BYTES
from smoke.probes.thresholds import P2P_REPEATS as P2P_REPEATS
from smoke.probes.thresholds import Threshold
from smoke.probes.verdict import HOST, POOL_OUTLIER_FAIL, TIERS, UNITS

UNIT_LINKS, UNIT_P2P = UNITS[NVLINK], UNITS[P2P]
# The pair copy is p2pBandwidthLatencyTest's (thresholds.P2P_BYTES, P2P_REPEATS), so our
# figures read against its published matrices
# nvidia-smi where the clouds put it: the NVIDIA container toolkit (EKS) in /usr/bin, GKE's
# driver installer in /usr/local/nvidia/bin (mounted into GPU pods)
NVIDIA_SMI = ("nvidia-smi", "/usr/local/nvidia/bin/nvidia-smi", "/usr/bin/nvidia-smi")
SMI_TIMEOUT_S = 30
# NVML's data-link error counters (nvml.h nvmlNvLinkErrorCounter_t)
ERROR_COUNTERS = {0: "replay", 1: "recovery", 2: "crc_flit", 3: "crc_data"}
# Pairs: a pair below PAIR_FAIL of the node's median pair fails (the pool-outlier ratio). A GPU
# whose own pairs' median is below GPU_WARN of the other pairs' median is named: healthy H100
# pairs spread 1.6% in the recorded p2pBandwidthLatencyTest row (371.02-376.82 GB/s,
# NVIDIA/nccl#1264), one of 18 links down removes 5.6%.
PAIR_FAIL = POOL_OUTLIER_FAIL
GPU_WARN = 0.97
# A host that sees one GPU (a3-highgpu-1g, a VM given one GPU of an HGX board) has no peer for
# NVLink to reach, and NVML says so: on one H100 80GB HBM3 passed through to a VM (driver
# 580.159.04) every link answered NVML_ERROR_NOT_SUPPORTED and `nvidia-smi nvlink -s` printed
# nothing (recorded 2026-11-27, tests/smoke/data/nvlink/h100-one-gpu-vm.txt). The catalog's 18
# links are the HGX board's, so the count is not judged there.
ONE_GPU = "one GPU on this host: no NVLink peer to reach (NVML reports its links not supported)"


@dataclass(frozen=True, slots=True)
class Link:
    index: int
    active: bool
    gbps: float | None = None  # the link's speed where the source says it
    errors: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class GpuLinks:
    device: str  # cuda<i>: NVML's and nvidia-smi's index, CUDA's on a node of one GPU kind
    name: str
    links: tuple[Link, ...]

    @property
    def active(self) -> list[Link]:
        return [ln for ln in self.links if ln.active]


_SMI_GPU = re.compile(r"^GPU (?P<i>\d+): (?P<name>.+?)(?: \(UUID: [^)]*\))?\s*$")
_SMI_LINK = re.compile(r"^\s+Link (?P<n>\d+): (?:(?P<gbps>[\d.]+) GB/s|<inactive>)\s*$")


def parse_status(text: str) -> list[GpuLinks]:
    """`nvidia-smi nvlink -s` (`--status`): `GPU i: <name> (UUID: ...)`, then per link
    `Link n: <GB/s> GB/s` or `Link n: <inactive>`."""
    gpus: list[tuple[int, str, list[Link]]] = []
    for line in text.splitlines():
        if (g := _SMI_GPU.match(line)) is not None:
            gpus.append((int(g.group("i")), g.group("name"), []))
        elif (m := _SMI_LINK.match(line)) is not None and gpus:
            gbps = m.group("gbps")
            gpus[-1][2].append(Link(int(m.group("n")), gbps is not None,
                                    float(gbps) if gbps else None))
    return [GpuLinks(f"cuda{i}", name, tuple(links)) for i, name, links in gpus]


def read_links() -> tuple[list[GpuLinks], str]:
    """This node's links: NVML through pynvml, else `nvidia-smi nvlink -s`; `""` or why none
    could be read."""
    gpus, why = _read_pynvml()
    if gpus is not None:
        return gpus, ""
    smi = shutil.which(NVIDIA_SMI[0]) or next((p for p in NVIDIA_SMI[1:] if _is_exe(p)), None)
    if smi is None:
        return [], f"no NVML: {why}; nvidia-smi not found"
    try:
        out = subprocess.run([smi, "nvlink", "-s"], capture_output=True, text=True,
                             timeout=SMI_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return [], f"no NVML: {why}; {smi} nvlink -s failed: {exc}"
    if out.returncode != 0:
        last = (out.stderr.strip() or out.stdout.strip() or "no output").splitlines()[-1]
        return [], f"no NVML: {why}; {smi} nvlink -s exited {out.returncode}: {last}"
    return parse_status(out.stdout), ""


def _is_exe(path: str) -> bool:
    import os

    return os.path.isfile(path) and os.access(path, os.X_OK)


def _read_pynvml() -> tuple[list[GpuLinks] | None, str]:
    try:
        import pynvml  # type: ignore[import-not-found]  # nvidia-ml-py, where the image has it
    except ImportError:
        return None, "pynvml (nvidia-ml-py) not installed"
    try:
        pynvml.nvmlInit()
    except Exception as exc:  # NVMLError: no driver (a CPU node)
        return None, f"NVML did not initialise: {exc}"
    try:
        out = []
        for i in range(pynvml.nvmlDeviceGetCount()):
            handle = pynvml.nvmlDeviceGetHandleByIndex(i)
            name = pynvml.nvmlDeviceGetName(handle)
            links = []
            for n in range(getattr(pynvml, "NVML_NVLINK_MAX_LINKS", 18)):
                try:
                    active = pynvml.nvmlDeviceGetNvLinkState(handle, n) == 1
                except Exception:  # NOT_SUPPORTED / INVALID_ARGUMENT: no such link
                    continue
                errors = {}
                for code, what in ERROR_COUNTERS.items():
                    try:
                        errors[what] = int(pynvml.nvmlDeviceGetNvLinkErrorCounter(handle, n,
                                                                                  code))
                    except Exception:  # a counter this GPU does not keep
                        continue
                links.append(Link(n, active, None, errors))
            out.append(GpuLinks(f"cuda{i}", name if isinstance(name, str) else name.decode(),
                                tuple(links)))
        return out, ""
    finally:
        pynvml.nvmlShutdown()


def judge_links(gpus: Sequence[GpuLinks], expected: int | None, *,
                skipped: str = "") -> list[ProbeResult]:
    """One result per GPU: every expected link active at one speed (fail, naming the links),
    error counters (warn). `expected`: the catalog's links per GPU (0: a PCIe GPU, nothing to
    check), None: as many as the best GPU of the node."""
    if skipped:
        return [ProbeResult(HOST, NVLINK, TIERS[NVLINK], Verdict.SKIPPED, skipped, unit=UNIT_LINKS)]
    if expected == 0:
        return [ProbeResult(HOST, NVLINK, TIERS[NVLINK], Verdict.SKIPPED,
                            "no NVLink on this GPU (PCIe only, catalog nvlinks 0)",
                            unit=UNIT_LINKS)]
    if not gpus:
        verdict = Verdict.FAIL if expected else Verdict.SKIPPED
        return [ProbeResult(HOST, NVLINK, TIERS[NVLINK], verdict,
                            "NVML listed no GPU" if expected else "no GPU with NVLink",
                            unit=UNIT_LINKS)]
    want = expected if expected is not None else max(len(g.links) for g in gpus)
    how = "catalog" if expected is not None else "the most any GPU of the node lists"
    return [_judge_gpu(g, want, how) for g in gpus]


def _judge_gpu(g: GpuLinks, want: int, how: str) -> ProbeResult:
    active = g.active
    inactive = [ln.index for ln in g.links if not ln.active]
    speeds = [ln.gbps for ln in active if ln.gbps is not None]
    top = max(speeds, default=None)
    slow = [ln for ln in active if ln.gbps is not None and top is not None and ln.gbps < top]
    counted = {f"link {ln.index}": {k: v for k, v in ln.errors.items() if v}
               for ln in g.links if any(ln.errors.values())}
    details: dict[str, Any] = {"gpu": g.name, "expected_links": want, "expected_from": how,
                               "inactive_links": inactive,
                               "link_gbps": {str(ln.index): ln.gbps for ln in g.links},
                               "errors": counted}
    problems = []
    if inactive:
        total = max(want, len(g.links))
        problems.append(f"NVLink {', '.join(map(str, inactive))} inactive (each carried 1/"
                        f"{total} of the GPU's NVLink bandwidth)")
    if len(active) < want and not (inactive and len(g.links) >= want):
        problems.append(f"{len(active)} of {want} NVLinks active ({how})")
    if slow:
        problems.append("NVLink " + ", ".join(f"{ln.index} at {ln.gbps:g} GB/s" for ln in slow)
                        + f", the others at {top:g}")
    text = f"{len(active)} of {want} NVLinks active"
    if top is not None and not slow:
        text += f" at {top:g} GB/s"
    if problems:
        return ProbeResult(g.device, NVLINK, TIERS[NVLINK], Verdict.FAIL,
                           f"{'; '.join(problems)}: {text}", float(len(active)), float(want),
                           UNIT_LINKS, details=details)
    if counted:
        errs = "; ".join(f"{k}: " + ", ".join(f"{n} {c}" for n, c in v.items())
                         for k, v in counted.items())
        return ProbeResult(g.device, NVLINK, TIERS[NVLINK], Verdict.WARN,
                           f"{text}; NVLink errors counted since the driver loaded ({errs}): "
                           "a count that rises between runs is a failing link",
                           float(len(active)), float(want), UNIT_LINKS, details=details)
    return ProbeResult(g.device, NVLINK, TIERS[NVLINK], Verdict.PASS, text, float(len(active)),
                       float(want), UNIT_LINKS, details=details)


def judge_p2p(gbps: Mapping[tuple[int, int], float], th: Threshold | None,
              *, nbytes: int | None = None) -> list[ProbeResult]:
    """Every GPU pair's copy bandwidth (`(src, dst)` -> GB/s): below the SKU's floor, or below
    PAIR_FAIL of the node's median pair, fails naming the pair; a GPU all of whose pairs sit
    below GPU_WARN of the other pairs is named (warn), the likely owner of a missing link."""
    if len(gbps) < 1:
        return [ProbeResult(HOST, P2P, TIERS[P2P], Verdict.SKIPPED, "fewer than 2 GPUs: no pair",
                            unit=UNIT_P2P)]
    median = statistics.median(gbps.values())
    floor = th.floor_abs if th is not None else None
    enforced = th is not None and th.enforced and (th.size is None or nbytes == th.size)
    details: dict[str, Any] = {"pairs_gbps": {f"cuda{s}->cuda{d}": round(v, 2)
                                              for (s, d), v in sorted(gbps.items())},
                               "median_gbps": round(median, 2), "floor": floor,
                               "threshold_source": th.source if th is not None else "",
                               "bytes": nbytes}
    fails: list[str] = []
    for (s, d), v in sorted(gbps.items()):
        if floor is not None and v < floor and enforced:
            fails.append(f"cuda{s}->cuda{d} {v:,.1f} GB/s below the floor {floor:g}")
        elif v < PAIR_FAIL * median:
            fails.append(f"cuda{s}->cuda{d} {v:,.1f} GB/s is {v / median:.2f} of the node's "
                         f"median pair {median:,.1f}")
    gpus = sorted({i for pair in gbps for i in pair})
    named = []
    for g in gpus:
        own = [v for pair, v in gbps.items() if g in pair]
        rest = [v for pair, v in gbps.items() if g not in pair]
        if own and rest and statistics.median(own) < GPU_WARN * statistics.median(rest):
            ratio = statistics.median(own) / statistics.median(rest)
            named.append(f"cuda{g}: its pairs run at {ratio:.3f} of the other pairs (one of "
                         "18 NVLinks down leaves 17/18 = 0.944): check its links")
    low = min(gbps.values())
    text = f"{len(gbps)} GPU pairs, median {median:,.1f} GB/s, lowest {low:,.1f}"
    if floor is not None:
        text += f"; floor {floor:g}" + ("" if enforced else " (warn-only)")
    verdict = Verdict.FAIL if fails else Verdict.WARN if named else Verdict.PASS
    if floor is not None and not enforced and low < floor and verdict is Verdict.PASS:
        verdict = Verdict.WARN
    reason = "; ".join([*fails, *named, text])
    return [ProbeResult(HOST, P2P, TIERS[P2P], verdict, reason, low, floor, UNIT_P2P,
                        details=details)]
