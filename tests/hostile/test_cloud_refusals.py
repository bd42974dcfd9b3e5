"""Item 12: values the cloud refuses at deploy time are refused by `fleet validate` (exit 2,
the field, the fix). Each case validated before (issue 21's list)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from fleet import validate_fleet
from fleet.errors import SpecError
from fleet.rules.cloud_values import GKE_CONTROL_PLANE_CIDR
from tests.fleet.test_hostile_corpus import BASE

Mutate = Callable[[dict[str, Any]], None]


def pool(**fields: Any) -> Mutate:
    return lambda f: f["pools"][0].update(fields)


def gke(**fields: Any) -> Mutate:
    return lambda f: f["clusters"][0].update(fields)


CASES: dict[str, tuple[Mutate, str, str]] = {
    # name: (change, where, what the message says)
    "duplicate-taint": (pool(taints=[{"key": "a", "value": "1"}, {"key": "a", "value": "2"}]),
                        "pools 'h100'.taints[1]", "repeats taints[0]"),
    "the-gpu-taint": (pool(taints=[{"key": "nvidia.com/gpu", "value": "present"}]),
                      "pools 'h100'.taints[0]", "the accelerator taint accelfleet adds"),
    "node-role-label": (pool(labels={"node-role.kubernetes.io/worker": "x"}),
                        "pools 'h100'.labels", "may not label itself"),
    "k8s-io-label": (pool(labels={"foo.k8s.io/x": "y"}), "pools 'h100'.labels",
                     "may not label itself"),
    "range-0/8": (gke(network={"cidr": "0.0.0.0/16"}), "network.cidr", "prohibits"),
    "range-127/8": (gke(network={"pods_cidr": "127.0.0.0/14"}), "network.pods_cidr",
                    "prohibits"),
    "range-169.254/16": (gke(network={"services_cidr": "169.254.0.0/20"}),
                         "network.services_cidr", "prohibits"),
    "range-224/4": (gke(network={"cidr": "224.0.0.0/16"}), "network.cidr", "prohibits"),
    "control-plane-overlap": (gke(network={"cidr": "172.16.0.0/16"}), "network.cidr",
                              "the GKE control plane"),
    "101-authorized-networks": (gke(authorized_cidrs=[f"203.0.{i // 200}.{i % 200}/32"
                                                      for i in range(101)]),
                                "authorized_cidrs", "at most 100"),
    "free-text-version": (gke(kubernetes_version="newest please"), "kubernetes_version",
                          "is not a GKE version"),
    "timeout-beyond-int64": (lambda f: f.update(smoke={"timeout_s": 2**63}), "smoke.timeout_s",
                             "at most 604800"),
    "image-trailing-space": (lambda f: f.update(smoke={"torch_image": "pytorch/pytorch:2.5 "}),
                             "smoke.torch_image", "not a container image reference"),
    "project-with-google": (lambda f: f["clouds"]["gcp"].update(project="my-google-ml"),
                            "clouds.gcp.project", "contains 'google'"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_value_the_cloud_refuses_is_refused(case: str) -> None:
    change, where, says = CASES[case]
    fleet = copy.deepcopy(BASE)
    change(fleet)
    with pytest.raises(SpecError) as err:
        validate_fleet(fleet)
    hit = [p for p in err.value.problems if where in p.where and says in p.message]
    assert hit, [p.render() for p in err.value.problems]
    assert all(p.hint for p in hit)


@pytest.mark.parametrize("change", [
    pool(labels={"node.kubernetes.io/pool-kind": "gpu", "example.com/role": "train"}),
    pool(taints=[{"key": "nvidia.com/gpu", "value": "present", "effect": "NoExecute"}]),
    gke(kubernetes_version="1.33"), gke(kubernetes_version="1.33.5-gke.1162000"),
    gke(kubernetes_version="latest"),
    lambda f: f.update(smoke={"torch_image": "us-docker.pkg.dev/acme/smoke/torch:2.5@sha256:"
                              + "a" * 64, "timeout_s": 604800}),
])
def test_what_the_cloud_takes_still_validates(change: Mutate) -> None:
    fleet = copy.deepcopy(BASE)
    change(fleet)
    validate_fleet(fleet)


def test_the_control_plane_range_is_the_one_components_give_gke() -> None:
    from components.gcp._cluster import MASTER_CIDR

    assert GKE_CONTROL_PLANE_CIDR == MASTER_CIDR
