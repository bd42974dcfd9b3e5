"""Messages a person can act on: every problem says what the field accepts, in words, and the
fix; never a regex, pydantic's "Value error," prefix or "correct the value"."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from cli.main import app
from fleet.errors import SpecError, StackFileError
from fleet.stack.read import read_stack_file
from tests.fleet.conftest import pool
from tests.fleet.test_rules import only, problems

NOT_MESSAGES = ("Value error", "String should match pattern", "^[", "correct the value",
                "Input should be")


def clean(spec: dict[str, Any]) -> None:
    """Every problem of `spec` has a fix and none of the phrases that are not messages."""
    for p in problems(spec):
        assert p.hint, p
        for phrase in NOT_MESSAGES:
            assert phrase not in p.message + p.hint, p


@pytest.mark.parametrize(("where", "value"), [
    (("clouds", "gcp", "project"), "Acme"), (("clouds", "gcp", "region"), "us-central1-a"),
    (("clouds", "aws", "region"), "US-EAST-1"), (("clouds", "aws", "account"), "1234")])
def test_patterns_are_said_in_words(spec: dict[str, Any], where: tuple[str, ...],
                                    value: str) -> None:
    spec[where[0]][where[1]][where[2]] = value
    p = only(spec, ".".join(where))
    assert "^" not in p.message and "e.g." in p.hint
    clean(spec)


@pytest.mark.parametrize(("account", "quoted"), [(12345678901, '"012345678901"'),
                                                 (123456789012, '"123456789012"')])
def test_an_unquoted_account_id_says_to_quote_it(spec: dict[str, Any], account: int,
                                                 quoted: str) -> None:
    spec["clouds"]["aws"]["account"] = account
    p = only(spec, "clouds.aws.account")
    assert quoted in p.hint and "quote" in p.hint
    assert ("leading zeros" in p.message) == (account < 10**11)


def test_field_errors_in_words(spec: dict[str, Any]) -> None:
    spec["pools"][0].update(nodes="2", driver="newest", capacity="spotty", nodez=3)
    found = {p.where.split(".")[-1]: p for p in problems(spec)}
    assert "without quotes, e.g. nodes: 2" in found["nodes"].hint
    assert "not one of default, latest, disabled" in found["driver"].message
    assert found["capacity"].message == "'spotty' is not a capacity"
    assert "on-demand, spot, flex-start, queued" in found["capacity"].hint
    assert "did you mean 'nodes'" in found["nodez"].message
    clean(spec)


def test_types_in_words(spec: dict[str, Any]) -> None:
    spec["clusters"][0]["private_endpoint"] = "yes"
    spec["teams"][0]["monthly_budget_usd"] = "lots"
    spec["pools"][0]["zones"] = ["us-central1-a"]  # and `zone`
    found = {p.where: p for p in problems(spec)}
    assert "must be true or false" in found["clusters[0] 'gke'.private_endpoint"].message
    assert "must be a number" in found["teams[0] 'research'.monthly_budget_usd"].message
    assert "keep one" in found["pools[0] 'h100'"].hint
    clean(spec)


@pytest.mark.parametrize(("name", "near"), [("v5q", "v5p"), ("v6", "v6e"), ("V5P ", "v5p")])
def test_a_mistyped_tpu_with_a_topology_suggests_the_tpu(spec: dict[str, Any], name: str,
                                                          near: str) -> None:
    spec["pools"] = [pool(name="tpu", accelerator=name, topology="2x2x1", nodes=None)]
    if name.strip().lower() == near:
        return  # the real name, spelt loosely, resolves
    p = only(spec, "pools 'tpu'.accelerator")
    assert f"did you mean '{near}'" in p.message and f"accelerator: {near}" in p.hint
    assert "remove `topology`" not in p.message


def test_a_gpu_with_a_topology_is_told_to_drop_it(spec: dict[str, Any]) -> None:
    spec["pools"][0]["topology"] = "2x2"
    p = only(spec, "pools 'h100'.topology")
    assert "not a TPU" in p.message and "remove `topology`" in p.hint


def test_read_errors_get_hints_that_fit(tmp_path: Path) -> None:
    bad = tmp_path / "Pulumi.latin1.yaml"
    bad.write_bytes("config:\n  accelfleet:fleet: {teams: [{name: équipe}]}\n".encode("latin-1"))
    with pytest.raises(StackFileError) as err:
        read_stack_file(bad)
    assert "not UTF-8" in err.value.message and "UTF-8" in err.value.hint
    assert "permission" not in err.value.hint
    with pytest.raises(StackFileError) as err:
        read_stack_file(tmp_path)
    assert "is a directory" in err.value.message


def test_validate_json_reports_an_invalid_stack(tmp_path: Path) -> None:
    stack = tmp_path / "Pulumi.bad.yaml"
    stack.write_text("""config:
  accelfleet:fleet:
    clouds: {gcp: {project: acme-ml-prod, region: us-central1}}
    clusters: [{name: gke, cloud: gcp}]
    teams: [{name: research, monthly_budget_usd: 1000000}]
    pools:
      - {name: h100, cluster: gke, team: research, accelerator: a3-highgpu-8g, nodes: 2,
         zone: us-central1-z}
""", encoding="utf-8")
    result = CliRunner().invoke(app, ["fleet", "validate", "--json", str(stack)])
    assert result.exit_code == 2
    data = json.loads(result.stdout)
    assert data["valid"] is False
    (p,) = data["problems"]
    assert p["pool"] == "h100" and p["field"] == "zone" and p["value"] == "us-central1-z"
    assert "us-central1-a" in p["accepted"] and p["fix"] and p["message"]
    teams = {t["name"]: t for t in data["teams"]}
    assert teams["research"]["monthly_usd"] > 0 and "platform" in teams


def test_validate_json_when_the_spec_does_not_parse(tmp_path: Path) -> None:
    stack = tmp_path / "Pulumi.bad.yaml"
    stack.write_text("config:\n  accelfleet:fleet:\n    smoke: {max_tier: 4}\n",
                     encoding="utf-8")
    result = CliRunner().invoke(app, ["fleet", "validate", "--json", str(stack)])
    assert result.exit_code == 2
    data = json.loads(result.stdout)
    assert data["valid"] is False and data["teams"] is None and data["teams_note"]
    assert data["problems"][0]["field"] == "smoke.max_tier"
    assert data["problems"][0]["value"] == 4


def test_records_ride_on_the_spec_error(spec: dict[str, Any]) -> None:
    spec["pools"][0]["nodes"] = -1
    from fleet import validate_fleet

    with pytest.raises(SpecError) as err:
        validate_fleet(spec)
    (rec,) = err.value.records
    assert rec["pool"] == "h100" and rec["value"] == -1 and rec["fix"] == "use a value at least 0"
