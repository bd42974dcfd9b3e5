"""Probe names: the one registry of what a result's `probe` field may say.

    from smoke.probes.names import MATMUL, pool_probe
    pool_probe(MATMUL)  # 'matmul_tflops_vs_pool'

Every module that writes or reads a probe name (the agent, the runner, the verdicts, the
launcher, re-judging, the reports, history) takes it from here; tests/test_one_home.py fails
on a second spelling. Stdlib only: it ships in the pod's bundle with the rest of smoke/probes.
The names are what run documents, JUnit files and history databases already hold: renaming one
orphans every stored figure under the old name.
"""

from __future__ import annotations

# the agent's probes, by tier
INVENTORY = "inventory"  # T0
NVLINK = "nvlink_links"  # T0: every NVLink of every GPU up (NVML)
GPU_HEALTH = "gpu_health"  # T0: ECC, remapped rows, retired pages, Xid, clock events (NVML)
KNOWN_ANSWER, PSUM = "known_answer", "psum"  # T1
MATMUL, MEMORY = "matmul_tflops", "memory_gbps"  # T2
SUSTAINED = "sustained_tflops"  # T2: the matmul on every device at once, for a window
ALLREDUCE = "allreduce_busbw"  # T3 inside the node
FABRIC = "fabric_busbw"  # T3 across the nodes of a pool
P2P = "p2p_gbps"  # T3 inside the node: every GPU pair's copy bandwidth
AGENT_PROBES = (INVENTORY, KNOWN_ANSWER, PSUM, MATMUL, MEMORY, SUSTAINED, ALLREDUCE, FABRIC,
                NVLINK, P2P, GPU_HEALTH)
# what the figures' trends and charts follow
FIGURES = (MATMUL, MEMORY, ALLREDUCE, FABRIC)

# the launcher's own checks (a pod that crashed, a workload refused, a report unreadable)
POD, WORKLOAD, REPORT = "pod", "workload", "report"
# a fabric pool's pair rounds (smoke.cluster._pairs): each pair's 2-node collective, and the
# node the slow pairs name
FABRIC_PAIR = "fabric_pair_busbw"
# a multi-host TPU slice: when its last host started, and each host's image pull and start
SLICE_START = "slice_start"

# a node's figure against its pool's other nodes: `<probe>_vs_pool`
POOL_SUFFIX = "_vs_pool"


def pool_probe(probe: str) -> str:
    """The name of `probe`'s node-against-peers verdict."""
    return probe + POOL_SUFFIX


def is_pool_probe(name: str) -> bool:
    return name.endswith(POOL_SUFFIX)


def base_probe(name: str) -> str:
    """`matmul_tflops_vs_pool` -> `matmul_tflops`; any other name unchanged."""
    return name.removesuffix(POOL_SUFFIX)
