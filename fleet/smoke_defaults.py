"""Smoke defaults: the one home of what a smoke run does when nobody says otherwise.

The stack's `smoke:` section (fleet.spec.fields.Smoke), a run with no stack file
(smoke.cluster.sources), the rendered workloads (smoke.cluster.workload), the CLI's options and
the in-pod agent all read these. Stdlib only and importing nothing of accelfleet: it ships in
the pod's bundle (smoke.cluster._bundle.FLEET_MODULES).
"""

from __future__ import annotations

# tiers: 0 inventory, 1 known answer, 2 performance, 3 all-reduce (cross-node on a cluster)
TOP_TIER = 3
MAX_TIER = 2  # a stack's smoke.max_tier, and the agent's --tier, when none is given
LOCAL_TIER = TOP_TIER  # `smoke local`: everything one host can run
NAMESPACE = "accelfleet-smoke"  # a stack's smoke.namespace
TIMEOUT_S = 900  # a stack's smoke.timeout_s: per pool, scheduling and running
TTL_S = 3600  # a finished smoke Job's ttlSecondsAfterFinished
# A Job's activeDeadlineSeconds is an int64 (k8s.io/api batch/v1); a smoke run is bounded far
# below it: a week.
MAX_TIMEOUT_S = 7 * 24 * 3600
# The sustained all-device window: long enough on an accelerator for clocks to settle at the
# power cap and a power or cooling fault to show, short for a smoke run (a minutes-long soak is
# T4 burn-in); on a CPU (no throttle telemetry, 'devices' share cores) it only shows the phase
# runs and keeps `smoke local` on a laptop quick.
SUSTAIN_S = 20.0
SUSTAIN_S_CPU = 0.5
MAX_SUSTAIN_S = 3600  # a longer soak is a burn-in (T4), not a smoke test
