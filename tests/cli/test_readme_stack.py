""""Valid" means CI passes (issue 21, item 1): the stacks the docs show a newcomer (the README
and docs/stack.md, where the README's stack section moved in issue 22) pass `accelfleet plan
--policies` offline, as CI runs it, and `fleet validate` warns about nothing the policy pack
would refuse."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FENCE = re.compile(r"```yaml\n(.*?)```", re.DOTALL)
SHOWN_IN = (ROOT / "README.md", ROOT / "docs" / "stack.md")


def stacks_in(path: Path) -> list[str]:
    """Every YAML block of a page that is a whole stack file (it has `accelfleet:fleet`)."""
    text = path.read_text(encoding="utf-8")
    return [b for b in FENCE.findall(text) if "accelfleet:fleet:" in b and "config:" in b]


def readme_stacks() -> list[str]:
    """Every whole stack the README and docs/stack.md show."""
    return [block for path in SHOWN_IN for block in stacks_in(path)]


def stack_files(tmp_path: Path) -> list[Path]:
    files = []
    for i, block in enumerate(readme_stacks()):
        path = tmp_path / f"Pulumi.readme{i}.yaml"
        path.write_text(block, encoding="utf-8")
        files.append(path)
    return [*files, ROOT / "stacks" / "Pulumi.example.yaml"]


def test_the_stack_reference_shows_a_stack() -> None:
    assert stacks_in(ROOT / "docs" / "stack.md")


@pytest.mark.slow
def test_readme_stacks_pass_the_policy_pack_offline(tmp_path: Path) -> None:
    from components.engine.plan import run_plan
    from policies.rules import check_plan

    for path in stack_files(tmp_path):
        plan = run_plan(path)
        violations = check_plan(plan.to_dict())
        assert not violations, f"{path.name}: " + "; ".join(v.render() for v in violations)
        # what the pack refuses, validate warns about first; these stacks draw no such warning
        policy_words = [w for w in plan.fleet.warnings if "--policies" in w.message]
        assert not policy_words, policy_words


OPEN_STACK = """config:
  accelfleet:fleet:
    clouds:
      gcp: {project: acme-ml-prod, region: us-central1}
      aws: {account: "123456789012", region: us-east-1}
    clusters:
      - {name: gke, cloud: gcp}
      - {name: eks, cloud: aws, authorized_cidrs: [0.0.0.0/0]}
    teams:
      - {name: ml}
    pools:
      - {name: l4, cluster: gke, team: ml, accelerator: g2-standard-12, nodes: 1,
         zone: us-central1-a}
      - {name: g6, cluster: eks, team: ml, accelerator: g6.xlarge, nodes: 1, zone: us-east-1a}
"""


@pytest.mark.slow
def test_what_the_policy_pack_refuses_validate_warns_about(tmp_path: Path) -> None:
    """Issue 21 item 1 / issue 20 item 14: every cluster `plan --policies` refuses draws a
    `fleet validate` warning naming the same policy and the fix."""
    from components.engine.plan import run_plan
    from policies.rules import check_plan

    path = tmp_path / "Pulumi.open.yaml"
    path.write_text(OPEN_STACK, encoding="utf-8")
    plan = run_plan(path)
    refused = {v.resource.split("::")[1].rsplit("-", 1)[0]: v.policy
               for v in check_plan(plan.to_dict())}
    assert refused == {"gke": "public-endpoint-authorized-cidrs",
                       "eks": "public-endpoint-authorized-cidrs"}
    for cluster, policy in refused.items():
        warned = [w for w in plan.fleet.warnings
                  if w.where == f"clusters {cluster!r}.authorized_cidrs"]
        assert warned and policy in warned[0].message, (cluster, plan.fleet.warnings)
        assert "authorized_cidrs" in warned[0].hint
