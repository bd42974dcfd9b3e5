"""Issue 36 "Also": the fit check counts what a GKE Dataplane V2 node runs: anetd, netd and
pdcsi-node (their CPU requests as a Dataplane V2 cluster's DaemonSet listing gives them,
catalog system_pods.yaml; memory NOT READ, 0), and no kube-proxy, which Dataplane V2 does
without; every accelfleet GKE cluster sets ADVANCED_DATAPATH."""

from __future__ import annotations

import copy

from fleet.catalog import load_catalog
from fleet.pods import daemonset_requests, pool_daemonsets, system_pod, system_pods
from fleet.rules.validate import validate_fleet
from tests.fleet.conftest import BASE


def _gke_pool_daemonsets() -> list[str]:
    (pool,) = validate_fleet(copy.deepcopy(BASE)).pools  # h100 on GKE
    return [d.name for d in pool_daemonsets(pool, load_catalog())]


def test_a_gke_node_counts_anetd_netd_and_pdcsi_and_no_kube_proxy() -> None:
    names = _gke_pool_daemonsets()
    assert {"anetd", "netd", "pdcsi-node"} <= set(names)
    assert "kube-proxy" not in names


def test_the_figures_carry_their_source() -> None:
    for name, cpu in (("anetd", 205), ("netd", 8), ("pdcsi-node", 10)):
        pod = system_pod(name)
        assert (pod.cpu_millicores, pod.memory_mib) == (cpu, 0)
        assert "mubarak4you/my-app@6c96adf" in pod.source, name


def test_own_eks_keeps_its_kube_proxy_and_gets_no_anetd() -> None:
    gke_only = {p.name for p in system_pods() if p.clouds == ("gcp",)}
    assert "anetd" in gke_only
    assert "anetd" not in {p.name for p in system_pods() if "aws" in p.clouds}


def test_own_the_gke_overhead_grew_by_what_dataplane_v2_runs() -> None:
    """Before: kube-proxy's 100m; now anetd + netd + pdcsi-node, 223m."""
    (pool,) = validate_fleet(copy.deepcopy(BASE)).pools
    every = [d for d in pool_daemonsets(pool, load_catalog())
             if d.name in ("anetd", "netd", "pdcsi-node", "kube-proxy")]
    assert daemonset_requests(every)[0] == 223
