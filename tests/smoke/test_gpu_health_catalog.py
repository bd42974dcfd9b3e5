"""T0's passive health signals judged only where the GPU part keeps them (issue 37, the
catalog's fleet/catalog/data/gpu_health.yaml): on real `nvidia-smi -q` recordings, a signal the
part does not keep is skipped with the catalog named, never judged and never called healthy."""

from __future__ import annotations

from pathlib import Path

from fleet.catalog.health import lacks
from smoke.probes import gpu_health as H
from smoke.probes.expect import Expectation
from smoke.probes.results import ProbeResult, Verdict
from smoke.probes.runner import _lacks
from tests.smoke.fake_nvml import FakeNvml, gpu_from_smi_q

DATA = Path(__file__).parent / "data"
H100 = (DATA / "nvidia-smi-q-h100.txt").read_text(encoding="utf-8")
REMAP_PENDING = (DATA / "gpu_health" / "nvidia-smi-q-remap-pending-gpud-80.txt").read_text(
    encoding="utf-8")


def _judge(text: str, part: str | None) -> ProbeResult:
    read, why = H.read_all(FakeNvml([gpu_from_smi_q(text)]))
    (r,) = H.judge(read, why, lacks=lacks(part))
    return r


def test_a_pending_remap_warns_on_a_part_that_remaps_rows() -> None:
    # leptonai/gpud#80 (recorded): 4 rows remapped, pending a reset
    r = _judge(REMAP_PENDING, "a100-80gb")
    assert r.verdict is Verdict.WARN and r.details["rules"] == ["row_remap_pending"]


def test_a_part_without_row_remapping_skips_it_with_the_catalog_named() -> None:
    # the same answer on a T4 (page retirement, no row remapping): not judged, not healthy
    r = _judge(REMAP_PENDING, "t4")
    assert r.verdict is Verdict.PASS and r.details["rules"] == []
    assert "row_remap" in r.details["signals"]["skipped"]
    assert "gpu_health.yaml" in r.details["signals"]["skipped"]["row_remap"]
    assert r.details["signals"]["row_remap_pending"] is None
    assert "not on this GPU" in r.reason and "row_remap" in r.reason


def test_the_recorded_h100_skips_page_retirement_by_the_catalogs_word() -> None:
    r = _judge(H100, "h100-80gb")
    assert r.verdict is Verdict.PASS
    assert "gpu_health.yaml" in r.details["signals"]["skipped"]["retired_pages"]


def test_an_unknown_part_is_judged_whole() -> None:
    assert _lacks(Expectation()) == {} and _lacks(None) == {}
    r = _judge(REMAP_PENDING, None)
    assert r.verdict is Verdict.WARN
