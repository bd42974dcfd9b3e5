"""The verdict registry: how each probe is judged on each SKU, and where each number comes from.

A key is an accelerator key (`h100-80gb`), a machine type (`p5.48xlarge`: the in-node
all-reduce depends on the board, not only the chip), `<machine>/<fabric>` for the cross-node
fabric (`a3-megagpu-8g/tcpxo`; `socket` for a GPU pool built without one), or `*`.

Rules every entry follows:
- A floor is enforced only where a published measurement of that SKU exists at the size our
  probe runs (`size`): floor = 0.75 x the measured figure (DCGM's rule: "targets set at 0.75 of
  a measured reference", reference/health-checks.md), or a vendor's published floor at that
  size (DCGM's memory floors; Google's cluster-health-scanner for TCPXO). A measurement at a
  smaller size counts where the figure rises with size through the reference's own table
  (`smaller_size_bound`: the floor can only be looser; tpu7x). Anything else is warn-only, and
  `unenforced` says why; the result's reason carries it, so the report says so.
- The warning band is 1.05 x the floor (Azure HPC health checks), except where a second
  source sets it (TCPXO: warn below 0.75 x the measured run, fail below the vendor's floor).
- Sizes: matmul 8192^3 bf16; bandwidth 2 GiB per device (2,147,483,648 bytes), the size that
  aws-do-eks, awsome-distributed-training and the hypercomputer-internode-deepdive harness all
  report, so our busbw reads against theirs. `size` records it; a figure measured at another
  size is judged warn-only.

Every source is `repo@commit:path` or a URL; each entry's `as_of` is the day its figures were
read (docs/smoke.md's table shows it).
"""

from __future__ import annotations

from dataclasses import dataclass

from smoke.probes.names import ALLREDUCE as ALLREDUCE
from smoke.probes.names import FABRIC as FABRIC
from smoke.probes.names import MATMUL as MATMUL
from smoke.probes.names import MEMORY as MEMORY
from smoke.probes.names import P2P as P2P
from smoke.probes.names import SUSTAINED as SUSTAINED

MATMUL_N = 8192  # the GPU/TPU matmul size (smoke.probes.backend.Sizes)
BANDWIDTH_BYTES = 2 * 2**30  # per device: the all-reduce message the references use
DCGM_RULE = 0.75  # floor = 0.75 x a measured reference (NVIDIA DCGM diag targets)
AICR_RULE = 0.90  # NVIDIA AICR passes a figure at >= 0.9 x its recipe's value


@dataclass(frozen=True, slots=True)
class Threshold:
    """How one probe is judged on one key, and where the numbers come from."""

    floor_ratio: float | None = None  # of the catalog peak
    floor_abs: float | None = None  # in the probe's unit; wins over floor_ratio
    warn_band: float = 1.05  # warn below floor x warn_band
    outlier_fail: float | None = 0.85  # fail below this fraction of the host's median
    outlier_warn: float | None = 0.93
    enforced: bool = True  # False: a missed floor warns, never fails
    source: str = ""
    size: int | None = None  # matmul n / bytes per device the reference was measured at
    unenforced: str = ""  # why a missed floor only warns (shown in the result)
    as_of: str = "2026-11-24"  # the day the figures in `source` were read
    # True: `size` is SMALLER than the probe's and the figure rises with size through the
    # reference's own table, so a floor from it is looser than one at our size: enforced
    smaller_size_bound: bool = False


_AZURE_BAND = "warn band 1.05 x floor: Azure HPC health checks (ND H100 v5)"
_NO_REF = "no measured reference for this SKU yet"

# -- matmul (T2) ------------------------------------------------------------------------------
_H100_MATMUL = Threshold(
    floor_ratio=0.60, size=MATMUL_N,
    source="0.75 x 797.5 TFLOP/s, torch bf16 matmul 8192^3 on an H100 SXM (zzc0721/torch-"
    "performance-test-data#79, 2025-10-18; 764.6 at 4096: elideng-sg/hypercomputer-internode-"
    "deepdive@f2aee282:assets/lab-03/gemm.csv) = 598 = 0.60 of the 989 peak; " + _AZURE_BAND)
_MATMUL_UNMEASURED = Threshold(
    floor_ratio=0.60, enforced=False, unenforced=_NO_REF + " (the 0.60 of peak is H100's)",
    source="H100's ratio (0.60 of peak, see h100-80gb), warn-only until this SKU is measured")
# The Ironwood table (per JAX device, 2 per chip) has no row at our 8192: its throughput rises
# with the size through every row (2048: 679.3, 4096: 892.9, 16384: 950.1, 32768: 956.4), so the
# 4096 row bounds a healthy 8192 figure from below and 0.75 x it can only be looser than a floor
# measured at 8192 would be: enforced.
_TPU7X_MATMUL = Threshold(
    floor_abs=round(DCGM_RULE * 892.94, 1), size=4096, smaller_size_bound=True,
    as_of="2026-11-27",
    source="0.75 x 892.94 TFLOP/s per JAX device, bf16 GEMM 4096^3 on TPU7x, the largest "
    "measured size below our 8192^3 (950.13 at 16384, 956.38 at 32768; throughput rises with "
    "size in every row, so a healthy 8192 figure lies between 892.9 and 950.1) (AI-Hypercomputer/"
    "accelerator-microbenchmarks@ee16a1c8:Ironwood/Ironwood_Microbenchmarks_readme.md)")

# L4 and B200 at our size (8192^3 bf16), read 2026-11-28 (issue 37: their warn lines, 0.60 x
# peak x 1.05, sat above healthy figures: L4 76.2 vs 59.4 measured, B200 1,418 vs 1,420)
_L4_MATMUL = Threshold(
    floor_abs=round(DCGM_RULE * 59.40, 1), size=MATMUL_N, as_of="2026-11-28",
    source="0.75 x 59.40 TFLOP/s, torch bf16 matmul 8192^3 on an NVIDIA L4 (torch 2.9 cu128, "
    "a physical host; zzc0721/torch-performance-test-data#120, 2026-01-12, the same harness "
    "as h100-80gb's reference); " + _AZURE_BAND)
_B200_MATMUL = Threshold(
    floor_abs=round(DCGM_RULE * 1420.0), size=MATMUL_N, as_of="2026-11-28",
    source="0.75 x 1,420 TFLOP/s (1.42E+15), torch.bfloat16 matmul M=K=N=8192 on an NVIDIA "
    "B200 (pytorch/ao#2427, benchmarks/float8/bench_matmul.py, 2025-06-23); " + _AZURE_BAND)


# -- memory (T2) ------------------------------------------------------------------------------
_MEMORY_UNMEASURED = Threshold(
    floor_ratio=0.57, enforced=False, unenforced=_NO_REF + " (no DCGM floor; the 0.57 of "
    "peak is H100's)",
    source="DCGM diag H100 80GB floor 1,905,000 MB/s = 0.57 of its 3,350 GB/s peak, as a "
    "ratio, warn-only where DCGM publishes no floor; " + _AZURE_BAND)


def _dcgm(mbps: int, where: str = "reference/health-checks.md", as_of: str = "2026-11-24",
          ) -> Threshold:
    return Threshold(floor_abs=mbps / 1000, source=f"NVIDIA DCGM diag memory bandwidth floor "
                     f"{mbps:,} MB/s (read+write copy; {where}); " + _AZURE_BAND, as_of=as_of)


# NVIDIA/DCGM@72fa3feaa67d716a75323a8f47c34ff3ee73f824 (2026-07-06) nvvs/diag-skus.yaml.in
# line 3209, under `- name: NVIDIA L40S` / `id: '26b9'`: `minimum_bandwidth: 525000.00`, with
# the comment "memory bandwidth test shows ~700000. Multiply by .75 to get ~525000"
_L40S_MEMORY = _dcgm(525_000, "NVIDIA/DCGM@72fa3fea:nvvs/diag-skus.yaml.in line 3209, NVIDIA "
                     "L40S id 26b9: 0.75 x the ~700,000 MB/s its test measures", "2026-11-27")


_TPU_MEMORY = Threshold(floor_ratio=0.57, enforced=False,
                        unenforced="no public TPU floor or measurement",
                        source="the GPU ratio (0.57 of peak), warning only until measured on "
                        "a TPU")
_CPU = Threshold(floor_ratio=None, outlier_fail=None, outlier_warn=None,
                 source="a CPU has no catalog peak and its 'devices' share cores: only an "
                 "explicit --min-tflops / --min-gbps floor applies")

# -- in-node all-reduce (T3), busbw at 2 GiB per device ----------------------------------------
def _bw(floor_abs: float | None, source: str, *, size: int | None = BANDWIDTH_BYTES,
        enforced: bool = True, unenforced: str = "", as_of: str = "2026-11-24") -> Threshold:
    """A bandwidth entry: one figure per host, so no per-device outlier rule (the pool's
    nodes are compared with each other instead: verdict.POOL_OUTLIER)."""
    return Threshold(floor_abs=floor_abs, outlier_fail=None, outlier_warn=None,
                     enforced=enforced, source=source, size=size, unenforced=unenforced,
                     as_of=as_of)


_H100_NVLINK = _bw(
    round(DCGM_RULE * 468.6, 1),
    source="0.75 x 468.6 GB/s busbw, nccl-tests all_reduce_perf 2 GiB on one p5.48xlarge "
    "(aws-samples/aws-do-eks@f721602f:Container-Root/eks/deployment/nccl-test/README.md); "
    "470.0 at 2 GiB on one a3-highgpu-8g (elideng-sg/hypercomputer-internode-deepdive@"
    "d9f1e65e:assets/lab-04/all_reduce_8gpu.txt); Azure NHC floor 460 at 16 GiB; "
    + _AZURE_BAND)


def _warn_only(base: Threshold, why: str) -> Threshold:
    return _bw(base.floor_abs, base.source, size=base.size, enforced=False, unenforced=why)


def _published_floor(gbps: float, who: str, why: str) -> Threshold:
    """A published floor at another size than ours: 0.9 x it (AICR's rule), warn-only."""
    return _bw(round(AICR_RULE * gbps, 1), enforced=False, unenforced=why,
               source=f"0.9 x {who}'s published floor {gbps:g} GB/s (AICR passes at "
               ">= 0.9 x its value); reference/health-checks.md")


_ALLREDUCE_UNMEASURED = _bw(
    None, size=None, enforced=False, unenforced=_NO_REF + " at 2 GiB: the figure is reported, "
    "and judged against the pool's other nodes",
    source="no published in-node all-reduce figure for this machine")

# TPU psum (the in-host all-reduce over ICI; the slice-wide one is the fabric probe): no floor
# from a measurement at our size and slice exists, so warn-only, per generation, with the reason.
_TPU_PSUM_CHECKED = ("; the sum is checked and the figure reported (and across a pool's hosts, "
                     "judged against the other hosts)")
_TPU_NOT_FOUND = ("no published psum (all-reduce) bandwidth measurement for this TPU "
                  "generation: none in AI-Hypercomputer/accelerator-microbenchmarks@6a306a80 "
                  "or AI-Hypercomputer/tpu-recipes@c8cfe2f6")


def _tpu_psum(why: str, source: str) -> Threshold:
    return _bw(None, size=None, enforced=False, unenforced=why + _TPU_PSUM_CHECKED,
               source=source, as_of="2026-11-27")


_TPU_PSUM = {
    "tpu-v6e": _tpu_psum(
        "the one published v6e psum figure is of a 256-chip slice at 0.606 GB per device, "
        "with its own bandwidth definition (bytes / time), not of a host at 256 MiB as busbw",
        "psum_ici 235.76 GB/s, v6e-256, 17408x17408 bf16 (0.606 GB), an example log line of "
        "AI-Hypercomputer/tpu-recipes@acf1f8f5:microbenchmarks/trillium/collectives/README.md"),
    "tpu7x": _tpu_psum(
        "Ironwood's collectives benchmark (psum on 2x2x1 to 4x4x8) publishes no results",
        "AI-Hypercomputer/tpu-recipes@c8cfe2f6:microbenchmarks/ironwood/README.md: a GEMM "
        "results table only; " + _TPU_NOT_FOUND),
    **{k: _tpu_psum(_TPU_NOT_FOUND, _TPU_NOT_FOUND) for k in ("tpu-v4", "tpu-v5e", "tpu-v5p")},
}

# -- cross-node fabric (T3), busbw at 2 GiB per device, 2 nodes x 8 GPUs -------------------------
_TWO_NODES = "2 nodes x 8 GPUs; ring busbw does not fall with more nodes in theory, large " \
    "pools run somewhat lower in practice"
# TCPXO at OUR size (2 GiB per device, all-reduce busbw, 2 nodes; issues 28, 37):
# - Our one measured run, 317.84 GB/s all-reduce busbw at 2 GiB over TCPXO (torch harness,
#   2x a3-megagpu-8g): FAIL below 0.75 x it = 238.4, DCGM's rule, as every other measured
#   fabric here. A node with half its 8 NICs (~159 GB/s) fails; the old floor, Google
#   cluster-health-scanner's 150 (a3plus.yaml, image a3-megagpu-8g_4.2.0: the average of
#   all_gather_perf at 2, 4 and 8 GiB), was 0.47 of the healthy figure and only warned there.
# - WARN below 0.9 x 317.84 = 286.1: NVIDIA AICR's own pass ratio (AICR_RULE). 7 of 8 NICs
#   (~278) warns; the NIC count NCCL's log shows fails it where the log names the NICs.
# - NVIDIA AICR's GKE gate is now >= 300 GB/s (NVIDIA/aicr#1565, merged 2026-06-30, "GKE's own
#   measured all-reduce busbw on a3-megagpu-8g over GPUDirect TCPXO is ~338-340 GB/s ... 2
#   nodes / 16 GPUs", read 2026-11-28), read at its largest message (16 GiB), where busbw runs
#   above the 2 GiB figure: recorded, not applied at our size; 0.75 x 338 = 253.5 would be the
#   same rule on its figure, and our 238.4 is the looser of the two.
_TCPXO_HEALTHY = 317.84
_TCPXO_FAIL = round(DCGM_RULE * _TCPXO_HEALTHY, 1)
_TCPXO_WARN = round(AICR_RULE * _TCPXO_HEALTHY, 1)
_TCPXO = Threshold(
    floor_abs=_TCPXO_FAIL, warn_band=round(_TCPXO_WARN / _TCPXO_FAIL, 4), outlier_fail=None,
    outlier_warn=None, size=BANDWIDTH_BYTES, as_of="2026-11-28",
    source=f"at our size (2 GiB per device, 2 nodes): FAIL below {_TCPXO_FAIL} = 0.75 x "
    f"{_TCPXO_HEALTHY} GB/s (DCGM's rule), all-reduce busbw at 2 GiB over GPUDirect-TCPXO, 2x "
    "a3-megagpu-8g, one torch-harness run (hypercomputer-internode-deepdive@db026b5f:assets/"
    f"lab-22/tcpxo_allreduce_16gpu.txt, 2026-07-28); WARN below {_TCPXO_WARN} = 0.9 x it "
    "(NVIDIA AICR's pass ratio); NOT applied at our size: NVIDIA AICR's GKE gate >= 300 "
    "(NVIDIA/aicr#1565, 2026-06-30: ~338-340 GB/s measured on 2 nodes at 16 GiB) and Google "
    "cluster-health-scanner's 150 (GoogleCloudPlatform/cluster-health-scanner@edf57148:"
    "deploy/helm/health_checks/nccl_healthcheck/a3plus.yaml, the average of all_gather_perf "
    "at 2, 4 and 8 GiB: 0.47 of the healthy figure); " + _TWO_NODES)
_TCPX = _bw(
    round(DCGM_RULE * 83.27, 1),
    source="0.75 x 83.27 GB/s busbw at 2 GiB over GPUDirect-TCPX, 2x a3-highgpu-8g, torch "
    "harness, untuned (hypercomputer-internode-deepdive@6d51d0bb:assets/lab-18/after_tcpx_"
    "allreduce.txt, 2026-07-31); cluster-health-scanner a3 threshold 60; " + _TWO_NODES)
_EFA_P5 = _bw(
    round(DCGM_RULE * 437.79, 1),
    source="0.75 x 437.79 GB/s busbw, nccl-tests all_reduce_perf 2 GiB over EFA, 2x "
    "p5.48xlarge on EKS (aws-samples/awsome-distributed-training@7217859f:micro-benchmarks/"
    "nccl-tests/README.md; 443.7 on Slurm, 438.85 in aws-do-eks@f721602f); AICR recipe 300; "
    + _TWO_NODES)
_EFA_P4DE = _bw(
    round(DCGM_RULE * 78.33, 1),
    source="0.75 x 78.33 GB/s busbw, nccl-tests all_reduce_perf 2 GiB over EFA, 2x "
    "p4de.24xlarge (awsome-distributed-training@7217859f:micro-benchmarks/nccl-tests/"
    "README.md); " + _TWO_NODES)
_SOCKET_A3 = _bw(
    round(DCGM_RULE * 28.60, 1), size=2**30, enforced=False,
    unenforced="measured at 1 GiB, our probe runs 2 GiB",
    source="0.75 x 28.60 GB/s busbw at 1 GiB over NCCL sockets, 2x a3-highgpu-8g (hypercomputer"
    "-internode-deepdive@04dd94a4:assets/lab-06/allreduce_2node_rank0_full.log)")
_FABRIC_UNMEASURED = _bw(
    None, size=None, enforced=False, unenforced=_NO_REF + ": the figure is reported, its transport "
    "checked, and judged against the pool's other nodes",
    source="no published 2-node all-reduce figure for this machine and fabric")

# -- GPU pairs inside the node (T3): copy bandwidth per pair, p2pBandwidthLatencyTest's size ----
# CUDA's p2pBandwidthLatencyTest (NVIDIA/cuda-samples outputBandwidthMatrix): 10,000,000 ints,
# 5 cudaMemcpyPeerAsync per pair; the agent copies the same (smoke.probes.nvlink)
P2P_BYTES = 10_000_000 * 4
P2P_REPEATS = 5
_H100_P2P = Threshold(
    floor_abs=round(DCGM_RULE * 376.27, 1), outlier_fail=None, outlier_warn=None,
    size=P2P_BYTES, as_of="2026-11-27",
    source="0.75 x 376.27 GB/s, the median GPU-0 pair of CUDA's p2pBandwidthLatencyTest "
    "(unidirectional, P2P writes, 40 MB) on an HGX H100 SXM: 371.02-376.82 GB/s "
    "(NVIDIA/nccl#1264); each pair is also judged against the node's own pairs "
    "(smoke.probes.nvlink)")
_P2P_UNMEASURED = Threshold(
    floor_abs=None, outlier_fail=None, outlier_warn=None, enforced=False,
    unenforced=_NO_REF + ": each pair is judged against the node's own pairs", as_of="2026-11-27",
    source="no published p2pBandwidthLatencyTest matrix for this GPU read yet")

# -- sustained (T2) ---------------------------------------------------------------------------
# floor_ratio is of the SAME device's burst figure (T2 matmul), not of the catalog peak; no
# outlier rule (under one jitted JAX program every device shows the same figure). Throttle
# reasons are judged in smoke/probes/sustain.py.
_SUSTAINED = Threshold(
    floor_ratio=0.80, warn_band=1.125, outlier_fail=None, outlier_warn=None,
    source="sustained (all devices at once, 20 s) below 0.80 of the device's own burst matmul "
    "fails, below 0.90 warns. DCGM's targeted stress demands 0.95 of a target set at 0.75 of "
    "a measured reference; our reference is the device's own best short figure at boost "
    "clocks, and a GPU at its power cap (SW power cap, normal under a full GEMM) runs below "
    "its boost clock, hence the looser ratio; HW slowdown / power brake cut clocks by half or "
    "more (DCGM's throttle alert rules). Measured on one H100 80GB HBM3 (700 W cap, "
    "2026-11-27, benchmarks/gpu_host_run.sh): 0.94-1.00 of burst over 20 s (five runs, torch "
    "and JAX) and 0.98 over 60 s, SM clock median 1320-1365 of 1980 MHz at the cap, SW power "
    "cap the only reason seen")

# (key, probe) -> threshold. Bump verdict.THRESHOLDS_VERSION on any change.
REGISTRY: dict[tuple[str, str], Threshold] = {
    ("*", MATMUL): _MATMUL_UNMEASURED,
    ("*", MEMORY): _MEMORY_UNMEASURED,
    ("*", ALLREDUCE): _ALLREDUCE_UNMEASURED,
    ("*", FABRIC): _FABRIC_UNMEASURED,
    ("cpu", MATMUL): _CPU,
    ("cpu", MEMORY): _CPU,
    ("cpu", ALLREDUCE): _CPU,
    ("cpu", FABRIC): _CPU,
    ("*", SUSTAINED): _SUSTAINED,
    ("*", P2P): _P2P_UNMEASURED,
    ("cpu", P2P): _CPU,
    ("h100-80gb", P2P): _H100_P2P,
    ("cpu", SUSTAINED): _CPU,
    ("h100-80gb", MATMUL): _H100_MATMUL,
    ("tpu7x", MATMUL): _TPU7X_MATMUL,
    ("l4", MATMUL): _L4_MATMUL,
    ("b200", MATMUL): _B200_MATMUL,
    ("h100-80gb", MEMORY): _dcgm(1_905_000),
    ("h200-141gb", MEMORY): _dcgm(2_212_500),
    ("a100-80gb", MEMORY): _dcgm(1_173_000),
    ("b200", MEMORY): _dcgm(4_072_500),
    ("l4", MEMORY): _dcgm(198_500),
    ("l40s", MEMORY): _L40S_MEMORY,
    **{(k, MEMORY): _TPU_MEMORY for k in ("tpu-v4", "tpu-v5e", "tpu-v5p", "tpu-v6e", "tpu7x")},
    **{(k, ALLREDUCE): th for k, th in _TPU_PSUM.items()},
    ("a3-highgpu-8g", ALLREDUCE): _H100_NVLINK,
    ("p5.48xlarge", ALLREDUCE): _H100_NVLINK,
    ("a3-megagpu-8g", ALLREDUCE): _warn_only(
        _H100_NVLINK, "the same HGX H100 board as a3-highgpu-8g, but no in-node measurement "
        "of its own"),
    ("h200-141gb", ALLREDUCE): _published_floor(
        431, "Azure NHC (ND H200 v5, single node, 16 GiB)", "a floor at 16 GiB, no "
        "measurement at 2 GiB"),
    ("a100-80gb", ALLREDUCE): _published_floor(
        228, "Azure NHC (ND A100 v4, single node, 16 GiB)", "a floor at 16 GiB, no "
        "measurement at 2 GiB"),
    ("a3-megagpu-8g/tcpxo", FABRIC): _TCPXO,
    ("a3-highgpu-8g/tcpx", FABRIC): _TCPX,
    ("p5.48xlarge/efa", FABRIC): _EFA_P5,
    ("p4de.24xlarge/efa", FABRIC): _EFA_P4DE,
    ("p4d.24xlarge/efa", FABRIC): _warn_only(
        _EFA_P4DE, "the same 4 x 100 Gb/s EFA as p4de.24xlarge, but no measurement of its "
        "own"),
    ("a3-highgpu-8g/socket", FABRIC): _SOCKET_A3,
    ("a4-highgpu-8g/rdma", FABRIC): _published_floor(
        350, "NVIDIA AICR (B200 all-reduce)", "AICR's recipe floor, no measured 2-node "
        "all-reduce on a4-highgpu-8g"),
}


def threshold(accelerator: str | None, probe: str, machine: str | None = None) -> Threshold:
    """The most specific entry: the machine's, then the accelerator's, then `*`."""
    for key in (machine, accelerator or "cpu", "*"):
        if key is not None and (key, probe) in REGISTRY:
            return REGISTRY[(key, probe)]
    return Threshold()


def fabric_threshold(machine: str | None, fabric: str | None,
                     accelerator: str | None = None) -> Threshold:
    """The cross-node floor of a pool of `accelerator`s on `machine` over `fabric` (None: NCCL
    sockets): the machine's entry on that fabric, then the accelerator's (`<accelerator>/
    <fabric>`, then `<accelerator>`), then `*`. A GPU pool on a fabric nobody measured gets
    `*` (warn-only, with its reason), never the CPU entry (issue 28: without the accelerator,
    every unmeasured GPU fabric fell through to `cpu`, whose source speaks of CPUs)."""
    net = fabric or "socket"
    keys = [f"{machine}/{net}" if machine else None,
            f"{accelerator}/{net}" if accelerator else None, accelerator, "*"]
    for key in keys:
        if key is not None and (key, FABRIC) in REGISTRY:
            return REGISTRY[(key, FABRIC)]
    return REGISTRY[("*", FABRIC)]
