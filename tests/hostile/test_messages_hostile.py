"""Item 17: messages. The fix never repeats the bad text as if it were right ("write it
without quotes, e.g. nodes: 1:30"), a list in a text field is not told to quote a Python
list, a 1 MB value is never echoed whole, and `--json` prints strict JSON (never `Infinity`)
and prints it even when the stack file cannot be read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.hostile.conftest import BASE_STACK, invoke, refused


def _validate(tmp_path: Path, text: str, *extra: str) -> tuple[int, str]:
    path = tmp_path / "Pulumi.msg.yaml"
    path.write_text(text, encoding="utf-8")
    return invoke("fleet", "validate", str(path), *extra)


def test_a_fix_never_repeats_text_that_would_be_refused_again(tmp_path: Path) -> None:
    code, out = _validate(tmp_path, BASE_STACK.replace("nodes: 2", "nodes: 1:30"))
    refused(code, out, "must be a whole number, not the text '1:30'")
    assert "without quotes" not in out and "write a whole number for `nodes`" in out


def test_a_quoted_number_is_still_told_to_drop_its_quotes(tmp_path: Path) -> None:
    code, out = _validate(tmp_path, BASE_STACK.replace("nodes: 2", 'nodes: "3"'))
    refused(code, out, "write it without quotes, e.g. nodes: 3")


def test_a_list_in_a_text_field_is_not_told_to_quote_a_python_list(tmp_path: Path) -> None:
    code, out = _validate(tmp_path, BASE_STACK.replace("team: research", "team: [a, b]"))
    refused(code, out, "not a list")
    assert "\"['a', 'b']\"" not in out


@pytest.mark.parametrize("value", ["x" * 1_000_000, "9" * 4_000])
def test_a_huge_value_is_never_echoed_whole(value: str, tmp_path: Path) -> None:
    code, out = _validate(tmp_path, BASE_STACK.replace(
        "zone: us-central1-a", f'zone: us-central1-a, labels: {{"a": "{value}"}}, '
                               f'accelerator_count: "{value}"'))
    assert code == 2, out[-2000:]
    assert max(len(line) for line in out.splitlines()) < 2_000
    code, out = _validate(tmp_path, BASE_STACK.replace("team: research", f"team: {value}"),
                          "--json")
    assert code == 2
    assert len(out) < 20_000


def test_json_is_strict_and_printed_for_an_unreadable_stack(tmp_path: Path) -> None:
    from cli._output import json_safe

    assert json.loads(json.dumps(json_safe({"a": [float("inf"), float("nan"), 1.5]}),
                                 allow_nan=False)) == {"a": ["inf", "nan", 1.5]}
    code, out = _validate(tmp_path, BASE_STACK.replace("nodes: 2", 'nodes: !!int "x"'),
                          "--json")
    assert code == 2
    doc = json.loads(out[:out.rindex("}") + 1])
    assert doc["valid"] is False and "does not convert" in doc["problems"][0]["message"]
