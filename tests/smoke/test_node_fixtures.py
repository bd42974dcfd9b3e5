"""Fakes that know every machine (issue 27): every catalog machine type has a node fixture
(recorded where a recording exists, else derived from the nearest recorded node of its cloud and
kind: tests/smoke/derive_nodes.py), and on every such pool of both clouds the Kueue flavor
selects and tolerates the node, and the smoke pod (fleet/pods.py, as fleet/rules/fit.py places
it) fits the node's allocatable less its DaemonSet neighbours."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fleet import load_fleet
from fleet.catalog import load_catalog
from fleet.model import ResolvedPool
from fleet.pods import pod_requests
from fleet.routing import fleet_routing
from fleet.rules import fit
from tests.components.test_kueue_flavor_nodes import unmatched
from tests.smoke import derive_nodes
from tests.smoke.nodes import pool_node, recorded

REGIONS = {"gcp": "us-central1", "aws": "us-east-1"}


def quantity(text: str) -> int:
    """A node's allocatable quantity in the fit check's units: cpu millicores, sizes MiB."""
    text = str(text)
    for suffix, div in (("Ki", 1024), ("Mi", 1), ("Gi", 1 / 1024), ("m", 1)):
        if text.endswith(suffix):
            return int(int(text[: -len(suffix)]) / div)
    return int(text)


def test_every_catalog_machine_type_has_a_node_fixture() -> None:
    catalog = load_catalog()
    missing, wrong = [], []
    for cloud, machine, kind in derive_nodes.machines(catalog):
        name = f"{'gke' if cloud == 'gcp' else 'eks'}-{machine}"
        try:
            node = recorded(name)
        except LookupError:
            missing.append(name)
            continue
        if (node["machine_type"], node["kind"]) != (machine, kind) or node["labels"][
                "node.kubernetes.io/instance-type"] != derive_nodes.cloud_name(
                    catalog, cloud, machine, kind):
            wrong.append(name)
    assert missing == [] and wrong == [], (missing, wrong)


def test_the_derived_fixtures_are_what_the_generator_writes() -> None:
    """A catalog change regenerates them (`python -m tests.smoke.derive_nodes`)."""
    derived = derive_nodes.derive(load_catalog())
    for prefix, nodes in derived.items():
        for machine, node in nodes.items():
            assert recorded(f"{prefix}-{machine}") == node, machine


def _stack(cloud: str, tmp: Path) -> Path:
    catalog = load_catalog()
    region = REGIONS[cloud]
    lines = []
    for c, machine, kind in derive_nodes.machines(catalog):
        if c != cloud or kind != "gpu":
            continue
        shape = catalog.resolve(machine, cloud=cloud)
        answer = catalog.zones_offering(shape, region)
        if answer.known and not answer.offered:
            continue
        zone = answer.offered[0] if answer.offered else f"{region}{'-' if cloud == 'gcp' else ''}a"
        name = machine.replace(".", "-")
        lines.append(f"      - {{name: {name}, cluster: c1, team: research, accelerator: "
                     f"{machine}, nodes: 1, zone: {zone}, placement: none}}")
    if cloud == "gcp":
        lines += ["      - {name: v6e-1, cluster: c1, team: research, accelerator: v6e, "
                  "topology: 1x1, zone: us-central1-b}",
                  "      - {name: v6e-4, cluster: c1, team: research, accelerator: v6e, "
                  "topology: 2x2, zone: us-central1-b}"]
    cloud_line = ("gcp: {project: acme-ml-test, region: us-central1}" if cloud == "gcp" else
                  'aws: {account: "123456789012", region: us-east-1}')
    text = f"""config:
  accelfleet:fleet:
    clouds:
      {cloud_line}
    clusters:
      - {{name: c1, cloud: {cloud}, authorized_cidrs: [198.51.100.0/24],
         system_pool: {{machine_type: {'e2-standard-8' if cloud == 'gcp' else 'm6i.2xlarge'}}},
         network: {{cidr: {'10.0.0.0/12' if cloud == 'gcp' else '10.0.0.0/16'}}}}}
    teams:
      - {{name: research}}
    pools:
""" + "\n".join(lines) + "\n"
    path = tmp / f"Pulumi.every-{cloud}.yaml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("cloud", ["gcp", "aws"])
def test_every_pool_fits_its_fixture_node(cloud: str, tmp_path: Path) -> None:
    catalog = load_catalog()
    fleet = load_fleet(str(_stack(cloud, tmp_path)))
    pools: dict[str, ResolvedPool] = {p.name: p for p in fleet.pools}
    [routing] = fleet_routing(fleet)
    nodes = sum(f.nodes for f in routing.flavors)
    cluster = fleet.spec.clusters[0]
    pods = fit.cluster_pods(cluster, list(pools.values()), catalog)
    checked = 0
    for flavor in routing.flavors:
        pool = pools[flavor.pool]
        node: dict[str, Any] = pool_node(pool, f"{pool.name}-0", provisioning_request="r")
        why = unmatched(node, dict(flavor.node_labels), [dict(t) for t in flavor.tolerations])
        assert why == [], (pool.name, why)
        alloc = {k: quantity(v) for k, v in node["status"]["allocatable"].items()}
        taken = [pod_requests(d, nodes) for d in fit.neighbours(pool, pods, catalog)]
        need = fit.smoke_need(pool, catalog)
        assert need.cpu + sum(c for c, _ in taken) <= alloc["cpu"], pool.name
        assert need.memory + sum(m for _, m in taken) <= alloc["memory"], pool.name
        assert need.hugepages <= alloc.get("hugepages-2Mi", 0), pool.name
        for resource, count in need.devices:
            assert count <= alloc.get(resource, 0), (pool.name, resource)
        checked += 1
    assert checked >= (30 if cloud == "gcp" else 25)
