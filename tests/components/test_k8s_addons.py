"""GPU add-ons: Helm values scheduled on the right nodes, checked against the PodSpec schema."""

from __future__ import annotations

import re
from typing import Any

import kubernetes_validate
import pulumi
import pytest

from components.k8s import (
    DCGM_EXPORTER,
    EFA_DEVICE_PLUGIN,
    NVIDIA_DEVICE_PLUGIN,
    GpuAddons,
    GpuAddonsArgs,
    GpuScheduling,
    dcgm_exporter_values,
    efa_device_plugin_values,
    nvidia_device_plugin_values,
    scheduling_pod,
)
from fleet.catalog import load_catalog
from fleet.model import ACCELERATOR_LABEL

K8S_VERSION = "1.33"


@pytest.fixture(scope="module")
def scheduling() -> GpuScheduling:
    catalog = load_catalog()
    taint = catalog.kube(catalog.resolve("p5.48xlarge", cloud="aws")).taint
    return GpuScheduling(gpu_taint=taint, gpu_node_label=ACCELERATOR_LABEL,
                         efa_label=catalog.kube_section("aws", "efa")["label"],
                         plugin_excluded={"accelfleet.io/ami": ["bottlerocket"]})


def _validate(values: dict[str, Any]) -> None:
    kubernetes_validate.validate(scheduling_pod(values), K8S_VERSION, strict=True)


def test_efa_plugin_runs_only_on_efa_nodes_and_tolerates_the_gpu_taint(
        scheduling: GpuScheduling) -> None:
    values = efa_device_plugin_values(scheduling)
    assert values["nodeSelector"] == {"vpc.amazonaws.com/efa.present": "true"}
    assert values["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Equal",
                                      "value": "present", "effect": "NoSchedule"}]
    _validate(values)


def test_nvidia_plugin_on_gpu_nodes_except_bottlerocket(scheduling: GpuScheduling) -> None:
    values = nvidia_device_plugin_values(scheduling)
    assert values["gfd"] == {"enabled": True}
    terms = values["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert terms == [{"matchExpressions": [
        {"key": ACCELERATOR_LABEL, "operator": "Exists"},
        {"key": "accelfleet.io/ami", "operator": "NotIn", "values": ["bottlerocket"]}]}]
    assert values["tolerations"][0]["key"] == "nvidia.com/gpu"
    assert values["nfd"]["worker"]["tolerations"] == values["tolerations"]
    _validate(values)


def test_dcgm_exporter_on_every_gpu_node(scheduling: GpuScheduling) -> None:
    values = dcgm_exporter_values(scheduling)
    exprs = values["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"][0]["matchExpressions"]
    assert exprs == [{"key": ACCELERATOR_LABEL, "operator": "Exists"}]
    _validate(values)


def test_schema_check_catches_a_bad_fragment() -> None:
    bad = {"tolerations": [{"key": "nvidia.com/gpu", "operatr": "Exists"}]}
    with pytest.raises(kubernetes_validate.ValidationError):
        _validate(bad)


def test_charts_are_pinned() -> None:
    for chart in (NVIDIA_DEVICE_PLUGIN, EFA_DEVICE_PLUGIN, DCGM_EXPORTER):
        assert chart.repo.startswith("https://")
        assert re.fullmatch(r"v?\d+\.\d+\.\d+", chart.version), chart


class _Mocks(pulumi.runtime.Mocks):
    def __init__(self) -> None:
        self.resources: list[Any] = []

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        self.resources.append(args)
        return f"{args.name}-id", dict(args.inputs)

    def call(self, args: pulumi.runtime.MockCallArgs) -> tuple[dict[str, Any], None]:
        return {}, None


@pytest.mark.parametrize(("efa", "dcgm", "charts"), [
    (True, False, {"nvidia-device-plugin", "aws-efa-k8s-device-plugin"}),
    (False, True, {"nvidia-device-plugin", "dcgm-exporter"}),
])
def test_addons_component_releases(scheduling: GpuScheduling, efa: bool, dcgm: bool,
                                   charts: set[str]) -> None:
    mocks = _Mocks()
    pulumi.runtime.set_mocks(mocks, preview=False)

    @pulumi.runtime.test  # type: ignore[untyped-decorator]
    def run() -> Any:
        addons = GpuAddons("c", GpuAddonsArgs(scheduling=scheduling, efa=efa,
                                              dcgm_exporter=dcgm))
        return pulumi.Output.all(*[r.urn for r in addons.releases.values()])

    run()
    releases = {r.inputs["chart"]: r.inputs for r in mocks.resources
                if r.typ == "kubernetes:helm.sh/v3:Release"}
    assert set(releases) == charts
    for name, inputs in releases.items():
        pinned = next(c for c in (NVIDIA_DEVICE_PLUGIN, EFA_DEVICE_PLUGIN, DCGM_EXPORTER)
                      if c.chart == name)
        assert inputs["version"] == pinned.version
        assert inputs["repositoryOpts"] == {"repo": pinned.repo}
        assert inputs["namespace"] == pinned.namespace
        _validate(inputs["values"])
