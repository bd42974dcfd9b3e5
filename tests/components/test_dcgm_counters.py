"""Our DCGM exporter counters (issue 37): the chart's default list leaves the ECC, retired-page
and NVLink error families commented out (NVIDIA/dcgm-exporter tag 4.5.3-4.8.2, commit 691c9276,
etc/default-counters.csv; a real 4.8.2 exporter's metric names, dcgm-exporter#646, show none
of them), so the gate's counters would never reach it; the project ships its own list through
the chart's `customMetrics`, and the gate's Role to read it."""

from __future__ import annotations

from pathlib import Path

from components.k8s._gate import EXPORTER_NAMESPACE_RULES, GateControllerArgs, gate_objects
from components.k8s._values import dcgm_counters
from fleet.gate import DCGM_EXPORTER_NAMESPACE

RECORDED = (Path(__file__).parents[1] / "smoke" / "data" / "dcgm_exporter"
            / "dcgm-exporter-646-4.8.2-metric-names.txt")
# every metric smoke.gate.signals.judge_exporter reads
JUDGED = ("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "DCGM_FI_DEV_ROW_REMAP_FAILURE",
          "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "DCGM_FI_DEV_RETIRED_PENDING",
          "DCGM_FI_DEV_RETIRED_SBE", "DCGM_FI_DEV_RETIRED_DBE", "DCGM_FI_DEV_XID_ERRORS",
          "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL",
          "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL",
          "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL",
          "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL")


def _fields(text: str) -> list[str]:
    return [line.split(",")[0].strip() for line in text.splitlines()
            if line.strip() and not line.lstrip().startswith("#")]


def test_the_judged_counters_are_on_in_our_list_and_off_in_the_recorded_default() -> None:
    ours = _fields(dcgm_counters())
    assert set(JUDGED) <= set(ours), sorted(set(JUDGED) - set(ours))
    recorded = {line.strip() for line in RECORDED.read_text().splitlines()
                if line.strip() and not line.startswith("#")}
    missing_there = {m for m in JUDGED if m not in recorded}
    assert {"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "DCGM_FI_DEV_RETIRED_DBE",
            "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL"} <= missing_there
    # and what the default did carry, ours keeps (the list replaces it whole)
    assert recorded <= set(ours), sorted(recorded - set(ours))
    assert len(ours) == len(set(ours))


def test_the_chart_gets_our_list_as_its_custom_metrics() -> None:
    from components.k8s._values import GpuScheduling, dcgm_exporter_values
    from fleet.catalog import load_catalog
    from fleet.model import ACCELERATOR_LABEL

    catalog = load_catalog()
    taint = catalog.kube(catalog.resolve("p5.48xlarge", cloud="aws")).taint
    values = dcgm_exporter_values(GpuScheduling(
        gpu_taint=taint, gpu_node_label=ACCELERATOR_LABEL,
        efa_label=catalog.kube_section("aws", "efa")["label"]))
    assert values["customMetrics"] == dcgm_counters()
    for line in values["customMetrics"].splitlines():  # each field line: FIELD, type, help
        if line.strip() and not line.startswith("#"):
            field, kind, _help = (p.strip() for p in line.split(",", 2))
            assert field.startswith("DCGM_") and kind in ("gauge", "counter", "label"), line


def test_the_gate_may_read_the_exporter_pods_in_their_namespace_only() -> None:
    def roles(ns: str | None) -> list[dict[str, object]]:
        objs = gate_objects(GateControllerArgs(cluster="c", namespace="smoke", inventory={},
                                               exporter_namespace=ns))
        return [o for o in objs if o["kind"] in ("Role", "RoleBinding")
                and o["metadata"]["namespace"] == DCGM_EXPORTER_NAMESPACE]  # type: ignore[index]

    assert roles(None) == []
    role, binding = roles(DCGM_EXPORTER_NAMESPACE)
    assert role["rules"] == [{"apiGroups": [""], "resources": ["pods/proxy"], "verbs": ["get"]}]
    assert EXPORTER_NAMESPACE_RULES == (("", "pods/proxy", ("get",)),)
    assert binding["roleRef"]["name"] == role["metadata"]["name"]  # type: ignore[index]
