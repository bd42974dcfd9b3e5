"""docs/smoke.md's thresholds table is the registry's (issue 19: it cannot drift)."""

from __future__ import annotations

from pathlib import Path

from smoke.probes import thresholds as T
from smoke.reports._thresholds_doc import BEGIN, END, render, table

DOC = Path(__file__).resolve().parents[2] / "docs" / "smoke.md"


def test_the_docs_table_is_the_registry() -> None:
    text = DOC.read_text(encoding="utf-8")
    assert BEGIN in text and END in text
    assert render(text) == text, "regenerate: python -m smoke.reports._thresholds_doc docs/smoke.md"


def test_every_registry_entry_and_catalog_sku_has_a_row() -> None:
    from fleet.catalog import load_catalog

    rows = table().splitlines()
    for key, probe in T.REGISTRY:
        if key not in ("*", "cpu"):
            assert any(f"| {probe} | {key} |" in r for r in rows), (key, probe)
    for acc in load_catalog().accelerators:
        if acc != "cpu":
            for probe in (T.MATMUL, T.MEMORY):
                assert any(f"| {probe} | {acc} |" in r for r in rows), (acc, probe)


def test_the_docs_gpu_health_table_is_the_rules() -> None:
    from smoke.probes.gpu_health import RULES
    from smoke.reports._thresholds_doc import HEALTH_BEGIN, health_table

    text = DOC.read_text(encoding="utf-8")
    assert HEALTH_BEGIN in text and health_table() in text
    assert len(health_table().splitlines()) == len(RULES) + 2
