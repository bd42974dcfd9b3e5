"""The `accelfleet.io/*` vocabulary: every label, tag, taint and annotation key accelfleet
writes on nodes, Kubernetes objects and cloud resources, spelled once.

    from fleet.labels import POOL_LABEL
    node_selector = {POOL_LABEL: pool.name}

Stdlib only and importing nothing of accelfleet but `fleet.taints` (stdlib only too), so
every layer may use it. The keys are
part of what clusters already carry (selectors, quarantine records, cost-allocation tags):
changing a spelling here strands every node labelled with the old one.
"""

from __future__ import annotations

from fleet.taints import NO_SCHEDULE

PREFIX = "accelfleet.io/"  # reserved: a pool's own labels may not use it

# node labels (Kubernetes) and tags (AWS)
POOL_LABEL = PREFIX + "pool"
TEAM_LABEL = PREFIX + "team"
ACCELERATOR_LABEL = PREFIX + "accelerator"
AMI_LABEL = PREFIX + "ami"  # EKS nodes: which AMI family (the device plugin is built in on some)
CLUSTER_TAG = PREFIX + "cluster"  # AWS resources of one cluster
ZONE_TAG = PREFIX + "zone"  # AWS subnets of one zone
# smoke runs
RUN_LABEL = PREFIX + "run"  # every object one smoke run creates
# a multi-host TPU slice's pods: when the last host's agent started (the launcher writes it,
# the agents read it through a downward API volume and only then join the slice)
SLICE_STARTED_ANNOTATION = PREFIX + "slice-started"
PAIR_LABEL = PREFIX + "pair"  # a fabric pool's pair-round Job and its pods: the pair's Job name
SMOKE_KEY = PREFIX + "smoke"  # the quarantine's taint key and label key
SMOKE_FAILED = "failed"  # ... and their value
SMOKE_ANNOTATION_PREFIX = SMOKE_KEY + "-"  # accelfleet.io/smoke-{run,pool,...,undo}

# GCP resource labels allow no '.' or '/': GKE node pools and TPU VMs carry these instead
POOL_RESOURCE_LABEL = "accelfleet-pool"
TEAM_RESOURCE_LABEL = "accelfleet-team"

# the gate (docs/gate.md): a gated pool's nodes are created with GATE_TAINT (key=value:effect)
# and only proof pods tolerate it; the controller lifts it when the node's proof passes.
# The key carries cluster-autoscaler's startup-taint prefix, which the autoscaler ignores when
# it builds a node template from a live node (so scale-up from zero still happens); which
# autoscaler honours what is cited in docs/gate.md and components where the taint is set.
STARTUP_TAINT_PREFIX = "startup-taint.cluster-autoscaler.kubernetes.io/"
GATE_TAINT_KEY = STARTUP_TAINT_PREFIX + "accelfleet-gate"
GATE_TAINT_VALUE = "unproven"
GATE_TAINT_EFFECT = NO_SCHEDULE  # fleet.taints spells the effect (and each API's form)
GATE_LABEL = PREFIX + "gate"  # a node's gate state: unproven, proving, proven, failed, open
# ... and the key of the gate's own taint on a failed node (`accelfleet.io/gate=failed`,
# NoSchedule): outside the autoscaler's startup-taint prefix (smoke/gate/lifecycle.py)
GATE_MODE_LABEL = PREFIX + "gate-mode"  # `shadow` on a node a shadow gate proves, never holds
# JSON: what the gate's failure did to a node (its cordon, the keep annotations it added), so a
# fresh proof undoes exactly that
GATE_UNDO_ANNOTATION = PREFIX + "gate-undo"
GATE_PROOF_ANNOTATION = PREFIX + "gate-proof"  # JSON: at, tiers, version, run, verdict
GATE_OPEN_ANNOTATION = PREFIX + "gate-open"  # JSON: who opened the pool's gate, when, why
GATE_CONDITION = "AccelfleetProof"  # the node condition a failed (or passed) proof sets
GATE_RUN_ANNOTATION = PREFIX + "gate-run"  # the run id of the proof that claimed the node
# on the controller's Lease: the running node-hours totals (JSON list of pool, team, kind,
# hours), so a restarted or newly elected controller continues them (smoke/gate/_metrics.py)
GATE_NODE_HOURS_ANNOTATION = PREFIX + "gate-node-hours"
# beside it: the time (RFC 3339, UTC) those totals are counted through, so the next leader
# counts the time no controller ran from the nodes' own timestamps (smoke/gate/_hours.py)
GATE_NODE_HOURS_AT_ANNOTATION = PREFIX + "gate-node-hours-at"
# On the gate controller's pod template: the SHA-256 of the inventory it mounts, so a pool
# added, removed or resized rolls the Deployment (the ConfigMap is updated in place) and the
# controller reads the new inventory
GATE_INVENTORY_DIGEST_ANNOTATION = PREFIX + "gate-inventory-sha256"
