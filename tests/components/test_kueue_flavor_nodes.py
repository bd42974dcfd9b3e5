"""Every GKE ResourceFlavor (and so every smoke pod, which selects by the same inventory
labels) matches the nodes GKE really makes for its pool: nodes built from recorded real GKE
nodes (tests/smoke/data/nodes, each with its source) plus what GKE derives from the pool.

Issue 20 item 1: with `cloud.google.com/gce-machine-type` in every flavor, which no real GKE
node carries, no admitted job and no smoke pod could ever be placed, and the autoscaler's
template node (labels from kubernetes/autoscaler@ae8db27d37cb604a6d2c707c745c142271e26b55:
cluster-autoscaler/cloudprovider/gce/templates.go BuildGenericLabels, which sets
node.kubernetes.io/instance-type) would never fit either."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fleet import load_fleet
from fleet.inventory import build_inventory
from fleet.routing import Flavor, fleet_routing
from fleet.stack.read import EXAMPLE_STACK
from tests.smoke.fakekube._api import _tolerates
from tests.smoke.nodes import pool_node
from tests.stacks import ONE_GKE_CLUSTER

QUEUED = ONE_GKE_CLUSTER + """\
    pools:
      - {name: h100-q, cluster: c1, team: research, accelerator: a3-highgpu-8g, nodes: 2,
         zone: us-central1-a, capacity: queued}
      - {name: mega, cluster: c1, team: research, accelerator: a3-megagpu-8g, nodes: 2,
         zone: us-central1-a, capacity: flex-start}
      - {name: v6e-q, cluster: c1, team: research, accelerator: v6e, topology: 2x2,
         zone: us-central1-b, capacity: queued}
"""


def unmatched(node: dict[str, Any], labels: dict[str, str],
              tolerations: list[dict[str, Any]]) -> list[str]:
    """Why a pod with this node selector and these tolerations cannot land on `node`."""
    have = node["metadata"]["labels"]
    out = [f"label {k}={v} (node: {have.get(k)!r})" for k, v in labels.items()
           if have.get(k) != v]
    out += [f"taint {t['key']}={t.get('value')}:{t['effect']}" for t in node["spec"]["taints"]
            if t["effect"] in ("NoSchedule", "NoExecute")
            and not any(_tolerates(tol, t) for tol in tolerations)]
    return out


def gke_cases(stack: Path) -> list[tuple[Flavor, Any]]:
    fleet = load_fleet(str(stack))
    pools = {p.name: p for p in fleet.pools}
    return [(f, pools[f.pool]) for r in fleet_routing(fleet) for f in r.flavors
            if pools[f.pool].cloud == "gcp"]


@pytest.fixture(scope="module")
def queued_stack(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("flavors") / "Pulumi.q.yaml"
    path.write_text(QUEUED, encoding="utf-8")
    return path


@pytest.mark.parametrize("which", ["example", "queued"])
def test_each_gke_flavor_fits_its_pools_real_nodes(which: str, queued_stack: Path) -> None:
    stack = EXAMPLE_STACK if which == "example" else queued_stack
    cases = gke_cases(stack)
    assert len(cases) >= 3
    for flavor, pool in cases:
        node = pool_node(pool, f"{pool.name}-node-0", provisioning_request="gke-req-1")
        why = unmatched(node, dict(flavor.node_labels), [dict(t) for t in flavor.tolerations])
        assert why == [], (flavor.name, why)


def test_smoke_pods_fit_the_real_nodes_and_no_other_pool(queued_stack: Path) -> None:
    for stack in (EXAMPLE_STACK, queued_stack):
        fleet = load_fleet(str(stack))
        inv = build_inventory(fleet, "s")
        nodes = {p.name: pool_node(p, f"{p.name}-0") for p in fleet.pools if p.cloud == "gcp"}
        for entry in inv.pools:
            if entry.name not in nodes:
                continue
            for name, node in nodes.items():
                why = unmatched(node, entry.node_selector, entry.tolerations)
                assert (why == []) == (name == entry.name), (entry.name, name, why)


def test_a_flavor_selecting_the_old_machine_label_fits_no_real_node() -> None:
    """The finding, kept as a check on the fixtures: the label our catalog used is on none."""
    [(flavor, pool), *_] = gke_cases(EXAMPLE_STACK)
    node = pool_node(pool, "n")
    old = {"cloud.google.com/gce-machine-type": pool.shape.machine_type}
    assert unmatched(node, old, [dict(t) for t in flavor.tolerations])
