"""The inventory carries what smoke needs (issue 22): where each pool lives (region, GCP
project), what a node holds (vCPUs, memory) and its fabric's figures (NICs, EFA interfaces,
GPUDirect RDMA), and the shape's counts smoke builds each node's expectation from. Smoke reads
them from the inventory, never resolving the shape from the catalog again; an inventory saved
before these fields still reads, with the catalog as its fallback, and renders the same."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from fleet.catalog import Catalog
from fleet.errors import InputError
from fleet.inventory import Inventory, InventoryHost
from smoke.cluster.sources import load_source
from smoke.cluster.workload import RenderedRun, RenderOptions, render_run
from tests.smoke.workload_stack import agent_of, arg_of, inventory, pod_of, run

__all__ = ["inventory", "run"]  # fixtures

NEW_FIELDS = ("region", "project", "host", "network")
OPTIONS = RenderOptions(run_id="r20261122-1a2b3c", tier=3)


def _old(inventory: Inventory) -> dict[str, Any]:
    """The inventory as saved before it carried the new fields."""
    data = json.loads(json.dumps(inventory.to_dict()))
    for p in data["pools"]:
        for key in NEW_FIELDS:
            del p[key]
    return data


def _manifests(run: RenderedRun) -> str:
    return json.dumps([(w.pool.name, w.objects) for w in run.pools], sort_keys=True)


def test_the_inventory_carries_where_a_pool_lives_its_nodes_and_fabric(
        inventory: Inventory) -> None:
    pools = {p.name: p for p in inventory.pools}
    tcpx, p5, v5p, g6 = pools["tcpx"], pools["p5"], pools["v5p"], pools["g6"]
    assert (tcpx.region, tcpx.project) == ("us-central1", "acme-ml-test")
    assert (p5.region, p5.project) == ("us-east-1", None)
    assert tcpx.host is not None and tcpx.host.vcpus == 208  # a3-highgpu-8g (hosts.yaml)
    assert tcpx.network is not None and tcpx.network.gpu_nics == 4  # four GPUDirect-TCPX NICs
    assert p5.network is not None and (p5.network.efa_interfaces, p5.network.efa_gdr) == (32, True)
    assert g6.network is None and pools["tcpx-off"].network is None  # fabric: off
    assert v5p.network is None and v5p.host is not None
    assert Inventory.from_dict(json.loads(json.dumps(inventory.to_dict()))) == inventory


def test_smoke_renders_without_resolving_the_shape_again(
        inventory: Inventory, run: RenderedRun, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the shape was resolved from the catalog again")

    monkeypatch.setattr(Catalog, "resolve", refuse)
    assert _manifests(render_run(inventory, OPTIONS)) == _manifests(run)


def test_smoke_reads_the_figures_from_the_inventory(inventory: Inventory) -> None:
    pools = []
    for p in inventory.pools:
        if p.name == "tcpx":
            assert p.network is not None
            p = replace(p, network=replace(p.network, gpu_nics=3),
                        host=InventoryHost(vcpus=8, memory_mib=4096))
        elif p.name == "p5":
            assert p.network is not None
            p = replace(p, network=replace(p.network, efa_interfaces=16, efa_gdr=False))
        pools.append(p)
    run = render_run(replace(inventory, pools=tuple(pools)), OPTIONS)
    tcpx = agent_of(pod_of(run, "tcpx"))
    assert arg_of(tcpx, "--expect-nics") == "3"
    assert tcpx["resources"]["requests"]["cpu"] == "4"  # half the node's 8 vCPUs
    assert tcpx["resources"]["requests"]["memory"] == "2048Mi"
    p5 = agent_of(pod_of(run, "p5"))
    assert p5["resources"]["limits"]["vpc.amazonaws.com/efa"] == "16"
    assert arg_of(p5, "--expect-gdr") == "no"


def test_an_inventory_saved_before_the_fields_reads_and_renders_the_same(
        inventory: Inventory, run: RenderedRun) -> None:
    old = Inventory.from_dict(_old(inventory))
    assert all(getattr(p, key) is None for p in old.pools for key in NEW_FIELDS)
    assert _manifests(render_run(old, OPTIONS)) == _manifests(run)  # the catalog's figures


def _outputs(tmp_path: Path, inventory: dict[str, Any]) -> Path:
    path = tmp_path / "outputs.json"
    path.write_text(json.dumps({"inventory": inventory, "kubeconfigs": {}}), encoding="utf-8")
    return path


def test_outputs_alone_name_each_clusters_region_and_project(
        inventory: Inventory, tmp_path: Path) -> None:
    source = load_source(None, _outputs(tmp_path, inventory.to_dict()))
    gke, eks = source.clusters["gke"], source.clusters["eks"]
    assert (gke.region, gke.project) == ("us-central1", "acme-ml-test")
    assert "--region us-central1 --project acme-ml-test" in gke.fix()
    assert eks.region == "us-east-1" and "--region us-east-1" in eks.fix()
    old = load_source(None, _outputs(tmp_path, _old(inventory)))
    assert old.clusters["gke"].region == "REGION"  # an older inventory: a placeholder


@pytest.mark.parametrize(("field", "value", "words"), [
    ("host", {"vcpus": 0, "memory_mib": 1024}, "host.vcpus 0"),
    ("host", {"vcpus": 8, "memory_mib": -1}, "host.memory_mib -1"),
    ("network", {"gpu_nics": 10**7}, "network.gpu_nics 10000000"),
    ("host", {"vcpus": "many", "memory_mib": 1}, "vcpus"),
    ("region", 7, "region"),
])
def test_bad_figures_are_input_errors(inventory: Inventory, field: str, value: Any,
                                      words: str) -> None:
    data = inventory.to_dict()
    data["pools"][0][field] = value
    with pytest.raises(InputError, match="malformed inventory") as err:
        Inventory.from_dict(data)
    assert words in err.value.message


def test_smoke_render_refuses_bad_figures_in_outputs_with_exit_2(
        inventory: Inventory, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from cli.main import app

    data = inventory.to_dict()
    data["pools"][0]["host"] = {"vcpus": -4, "memory_mib": 1024}
    result = CliRunner().invoke(app, ["smoke", "render", "--outputs",
                                      str(_outputs(tmp_path, data))])
    assert result.exit_code == 2, result.output
    assert "host.vcpus -4" in result.output and "Traceback" not in result.output
    good = CliRunner().invoke(app, ["smoke", "render", "--outputs",
                                    str(_outputs(tmp_path, _old(inventory)))])
    assert good.exit_code == 0, good.output  # an older inventory renders
