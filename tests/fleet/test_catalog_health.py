"""The catalog says per GPU part which passive health signals it keeps (issue 37,
fleet/catalog/data/gpu_health.yaml): T0 and the gate skip what a part lacks, never read it as
healthy."""

from __future__ import annotations

from fleet.catalog import load_catalog
from fleet.catalog.health import (
    ECC,
    NVLINK,
    RETIRED_PAGES,
    ROW_REMAP,
    XID,
    lacks,
    metric_signal,
    signals_of,
)


def test_every_gpu_of_the_catalog_says_which_signals_it_keeps() -> None:
    gpus = [a for a in load_catalog().accelerators.values() if a.kind == "gpu"]
    assert gpus
    for a in gpus:
        have = signals_of(a.key)
        assert have is not None, f"{a.key}: not in gpu_health.yaml"
        assert XID in have and ECC in have
        assert (NVLINK in have) == (a.nvlinks > 0), a.key  # only parts with NVLink
        assert (ROW_REMAP in have) != (RETIRED_PAGES in have), a.key  # one or the other


def test_row_remapping_from_ampere_retired_pages_before() -> None:
    assert ROW_REMAP in (signals_of("a100-80gb") or set())
    assert ROW_REMAP in (signals_of("l4") or set())
    assert RETIRED_PAGES in (signals_of("t4") or set())
    assert NVLINK not in (signals_of("l40s") or set())
    assert "row_remap" in lacks("t4") and lacks("nope") == {} and signals_of(None) is None


def test_exporter_metrics_map_to_their_family() -> None:
    assert metric_signal("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL") == ECC
    assert metric_signal("DCGM_FI_DEV_RETIRED_PENDING") == RETIRED_PAGES
    assert metric_signal("DCGM_FI_DEV_ROW_REMAP_FAILURE") == ROW_REMAP
    assert metric_signal("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS") == ROW_REMAP
    assert metric_signal("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL") == NVLINK
    assert metric_signal("DCGM_FI_DEV_XID_ERRORS") == XID
    assert metric_signal("DCGM_FI_DEV_GPU_TEMP") is None


def test_the_pod_gets_the_same_word_from_the_record_it_is_handed() -> None:
    """The agent in the pod has no catalog (import-linter): the Expectation carries the
    record's `health_signals`, and the pod's words are the catalog's."""
    from smoke.probes.expect import Expectation
    from smoke.probes.gpu_health import lacks_of

    for a in load_catalog().accelerators.values():
        if a.kind != "gpu":
            continue
        back = Expectation.from_dict(Expectation(accelerator=a).to_dict())
        assert back.accelerator is not None
        assert lacks_of(a.key, back.accelerator.health_signals) == lacks(a.key), a.key
