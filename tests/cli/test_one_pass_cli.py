"""Issue 21 item 5 (part): "as many problems as possible in one pass (a stack took 4
rounds)". A stack with four independent mistakes of different layers (a field of the wrong
type in one pool, an unknown accelerator in another, a zone the region lacks in a third, a
team over its budget) gets all four named by one `fleet validate`, exit 2; a rule problem
whose cause is the type error (an entry set aside) is not reported beside it."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.main import app
from fleet.errors import SpecError
from fleet.rules.validate import validate_fleet

runner = CliRunner()

STACK = """config:
  accelfleet:fleet:
    clouds:
      gcp: {project: acme-ml-prod, region: us-central1}
    clusters:
      - {name: gke, cloud: gcp, authorized_cidrs: [198.51.100.0/24]}
    teams:
      - {name: research, monthly_budget_usd: 1000}
      - {name: vision}
    pools:
      - {name: h100, cluster: gke, team: research, accelerator: a3-highgpu-8g, nodes: 2,
         zone: us-central1-a}
      - {name: typo, cluster: gke, team: vision, accelerator: a3-highgpu-8g, nodes: lots,
         zone: us-central1-a}
      - {name: mystery, cluster: gke, team: vision, accelerator: h900, nodes: 1,
         zone: us-central1-a}
      - {name: zoned, cluster: gke, team: vision, accelerator: a3-highgpu-8g, nodes: 1,
         zone: us-central1-z}
"""


def test_four_independent_mistakes_are_named_in_one_run(tmp_path: Path) -> None:
    path = tmp_path / "Pulumi.four.yaml"
    path.write_text(STACK, encoding="utf-8")
    result = runner.invoke(app, ["fleet", "validate", str(path)], env={"COLUMNS": "200"})
    assert result.exit_code == 2, result.output
    out = " ".join(result.output.split())
    assert "'typo'.nodes" in out and "'lots'" in out
    assert "'mystery'.accelerator" in out and "h900" in out
    assert "'zoned'.zone" in out and "us-central1-z" in out
    assert "'research'.monthly_budget_usd" in out and "over its budget" in out
    assert "Traceback" not in result.output


def _base() -> dict[str, object]:
    return {"clouds": {"gcp": {"project": "acme-ml-prod", "region": "us-central1"}},
            "clusters": [{"name": "gke", "cloud": "gcp"}],
            "teams": [{"name": "research"}],
            "pools": [{"name": "p", "cluster": "gke", "team": "research",
                       "accelerator": "a3-highgpu-8g", "nodes": 1, "zone": "us-central1-a"}]}


def test_a_problem_caused_by_an_entry_set_aside_is_not_reported() -> None:
    """A cluster with a bad field is set aside: its pools' "unknown cluster" would only echo
    the type error, and is left out."""
    spec = _base()
    spec["clusters"] = [{"name": "gke", "cloud": "gcp", "authorized_cidrs": "everything"}]
    with pytest.raises(SpecError) as err:
        validate_fleet(spec)
    wheres = [p.where for p in err.value.problems]
    assert len(wheres) == 1 and wheres[0].endswith(".authorized_cidrs"), wheres


def test_an_error_outside_a_list_entry_reports_the_type_errors_only() -> None:
    spec = _base()
    spec["clouds"] = {"gcp": {"project": "acme-ml-prod", "region": 5}}
    spec["pools"][0]["accelerator"] = "h900"  # type: ignore[index]
    with pytest.raises(SpecError) as err:
        validate_fleet(spec)
    assert [p.where for p in err.value.problems] == ["clouds.gcp.region"]


def test_a_pool_with_an_unknown_accelerator_still_has_its_zone_checked() -> None:
    spec = _base()
    spec["pools"][0].update(accelerator="h900", zone="us-central1-z")  # type: ignore[index]
    with pytest.raises(SpecError) as err:
        validate_fleet(spec)
    assert sorted(p.where for p in err.value.problems) == ["pools 'p'.accelerator",
                                                          "pools 'p'.zone"]


def test_a_broken_optional_section_hides_no_rule_problem() -> None:
    """Issue 21 item 5: a type error in `smoke` or `routing` (outside a list entry) still lets
    the rules name the rest (here a zone the region lacks); a rule problem about the broken
    section itself is left out."""
    for section, value in (("smoke", {"timeout_s": "soon"}),
                           ("routing", {"teams": [{"team": "research", "prefer": 5}]}),
                           ("routing", "everything")):
        spec = _base()
        spec[section] = value
        spec["pools"][0]["zone"] = "us-central1-z"  # type: ignore[index]
        with pytest.raises(SpecError) as err:
            validate_fleet(spec)
        wheres = [p.where for p in err.value.problems]
        assert wheres[0].startswith(section) and "pools 'p'.zone" in wheres, (section, wheres)
        assert len(wheres) == 2, wheres


def test_a_bad_project_id_still_lets_the_rules_run() -> None:
    spec = _base()
    spec["clouds"] = {"gcp": {"project": "my-google-project", "region": "us-central1"}}
    spec["pools"][0]["accelerator"] = "h900"  # type: ignore[index]
    with pytest.raises(SpecError) as err:
        validate_fleet(spec)
    assert [p.where for p in err.value.problems] == ["clouds.gcp.project",
                                                     "pools 'p'.accelerator"]


def _budgeted(monthly_budget_usd: float) -> dict[str, object]:
    spec = _base()
    spec["teams"] = [{"name": "research", "monthly_budget_usd": monthly_budget_usd}]
    spec["pools"] = [{"name": "p", "cluster": "gke", "team": "research",
                      "accelerator": "a3-highgpu-8g", "nodes": 1, "zone": "us-central1-a",
                      "labels": {"tier": ["gold"]}},
                     {"name": "q", "cluster": "gke", "team": "research",
                      "accelerator": "a3-highgpu-8g", "nodes": 1, "zone": "us-central1-a"}]
    return spec


def test_a_pool_with_a_cost_neutral_type_error_still_counts_in_its_budget() -> None:
    """Pool p's labels are of the wrong type: p stays in every other check, so the team's
    two pools together are over a budget that one alone fits."""
    one_pool = validate_fleet({**_base(), "teams": [{"name": "research"}]}).pools[0]
    assert one_pool.cost is not None and one_pool.cost.max_monthly_usd is not None
    spec = _budgeted(one_pool.cost.max_monthly_usd * 1.5)
    with pytest.raises(SpecError) as err:
        validate_fleet(spec)
    wheres = [p.where for p in err.value.problems]
    assert wheres[0].startswith("pools[0] 'p'.labels"), wheres
    assert "teams 'research'.monthly_budget_usd" in wheres, wheres
    budget = next(p for p in err.value.problems if p.where.startswith("teams"))
    assert "over its budget" in budget.message and "p $" in budget.message, budget.message


def test_a_pool_set_aside_whole_says_its_budget_was_checked_without_it() -> None:
    spec = _budgeted(1_000_000)
    spec["pools"][0].pop("labels")  # type: ignore[index]
    spec["pools"][0]["nodes"] = "lots"  # type: ignore[index]
    with pytest.raises(SpecError) as err:
        validate_fleet(spec)
    notes = [p for p in err.value.problems if p.where == "teams 'research'.monthly_budget_usd"]
    assert len(notes) == 1, [p.where for p in err.value.problems]
    assert "checked without pool 'p'" in notes[0].message and "of its $1,000,000" in \
        notes[0].message


def test_a_team_over_budget_without_the_pool_set_aside_says_so_in_one_line() -> None:
    spec = _budgeted(1)
    spec["pools"][0].pop("labels")  # type: ignore[index]
    spec["pools"][0]["nodes"] = "lots"  # type: ignore[index]
    with pytest.raises(SpecError) as err:
        validate_fleet(spec)
    budget = [p for p in err.value.problems if p.where.startswith("teams")]
    assert len(budget) == 1 and "over its budget" in budget[0].message
    assert budget[0].message.endswith("checked without pool 'p' (set aside for its type "
                                      "error, so its cost is unknown)")
