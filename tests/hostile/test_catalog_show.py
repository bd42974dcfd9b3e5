"""Item 8 (part): `catalog show` prints formatted fields (no Python dict or True/False) and the
zones that offer the shape."""

from __future__ import annotations

import json

from tests.hostile.conftest import invoke


def test_catalog_show_reads_as_fields_with_the_zones() -> None:
    code, out = invoke("catalog", "show", "p5.48xlarge")
    assert code == 0, out
    assert "{'" not in out and "True" not in out and "False" not in out
    zones = out[out.index("\n  zones "):]
    assert "us-east-2a" in zones
    code, out = invoke("catalog", "show", "p5.48xlarge", "--json")
    assert code == 0 and "us-east-2a" in json.loads(out)["zones"]
