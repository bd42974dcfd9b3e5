"""`accelfleet plan --diff / --base-ref / --format / --policies` through Typer's CliRunner:
the example stack against a version with one pool added, one resized and one TPU topology
changed; a git base ref; policy violations; exit codes."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.main import app
from fleet.stack.read import EXAMPLE_STACK
from tests.components.test_diff import example_v2, write_v2

runner = CliRunner()
EKS_CIDRS = "        authorized_cidrs: [203.0.113.0/24]   # the public endpoint answers only"


@pytest.fixture(scope="module")
def base_plan(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("base") / "plan.json"
    result = runner.invoke(app, ["plan", str(EXAMPLE_STACK), "--json", "--out", str(target)])
    assert result.exit_code == 0, result.output
    return target


def test_markdown_diff_of_the_example_v2(base_plan: Path, tmp_path: Path) -> None:
    v2 = write_v2(tmp_path)
    result = runner.invoke(app, ["plan", str(v2), "--diff", str(base_plan),
                                 "--format", "markdown"])
    assert result.exit_code == 0, result.output
    md = result.output
    lines = md.splitlines()
    assert lines[0] == "<!-- accelfleet-plan -->"  # the sticky comment's marker
    summary = next(ln for ln in lines if ln.startswith("**"))
    assert "to add" in summary and "monthly cost **+$" in summary
    assert "1 replacement destroys nodes" in summary
    assert md.index(summary) < md.index("<details>")  # summary first, details folded
    # the nodes counted and the gate named (issue 36, class 4)
    assert "REPLACES TPU slice v5p-slice (its 16 nodes are destroyed, 32 created; the gate " \
           "proves each new node again before it takes work): " \
           "placementPolicy.tpuTopology 4x4x4 → 4x4x8" in md
    base = {p["name"]: p for p in json.loads(base_plan.read_text())["pools"]}
    h100 = base["h100-train"]["monthly_usd"]
    row = next(ln for ln in lines if ln.startswith("| `h100-train`"))
    assert "| resized | 2 → 3 |" in row and f"+${h100 / 2:,.0f} |" in row
    assert next(ln for ln in lines if ln.startswith("| `l4-eval`")).count("added") == 1
    assert "| **replaced** | 16 → 32 |" in next(
        ln for ln in lines if ln.startswith("| `v5p-slice`"))
    assert "| team | before | after | delta | budget |" in md
    assert "placementPolicy.tpuTopology: 4x4x4 -> 4x4x8  [forces replacement]" in md


def test_json_and_text_diff(base_plan: Path, tmp_path: Path) -> None:
    v2 = write_v2(tmp_path)
    result = runner.invoke(app, ["plan", str(v2), "--diff", str(base_plan), "--format", "json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert doc["summary"]["destroying_nodes"] == [
        "gcp:container/nodePool:NodePool::v5p-slice-pool"]
    # the gate's inventory ConfigMap lists the pools: updated in place (the clusters' provider
    # sets enableConfigMapMutable), never replaced
    assert doc["summary"]["replaced"] == ["gcp:container/nodePool:NodePool::v5p-slice-pool"]
    pools = {p["name"]: p for p in doc["pools"]}
    assert pools["l4-eval"]["status"] == "added" and pools["v5p-slice"]["new_nodes"] == 32
    text = runner.invoke(app, ["plan", str(v2), "--diff", str(base_plan)])
    assert text.exit_code == 0
    assert text.output.startswith("plan diff of stack example against ")
    assert "1 replacement destroying nodes" in text.output.splitlines()[0]
    assert "other replacement" not in text.output.splitlines()[0]
    assert "REPLACES ConfigMap" not in text.output
    assert "kubernetes:core/v1:ConfigMap::ml-gke-gate-configmap" in text.output
    assert "  h100-train (research): resized, nodes 2 -> 3" in text.output


def _git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
                   cwd=cwd, check=True, capture_output=True)


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_base_ref_plans_the_stack_file_at_the_ref(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "stacks").mkdir(parents=True)
    stack = repo / "stacks" / "Pulumi.example.yaml"
    stack.write_text(EXAMPLE_STACK.read_text())
    _git("init", "-q", "-b", "main", cwd=repo)
    _git("add", "stacks/Pulumi.example.yaml", cwd=repo)
    _git("commit", "-q", "-m", "base", cwd=repo)
    stack.write_text(example_v2(EXAMPLE_STACK.read_text()))
    result = runner.invoke(app, ["plan", str(stack), "--base-ref", "main", "--format", "json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert doc["base"] == "main"
    assert doc["summary"]["destroying_nodes"] == [
        "gcp:container/nodePool:NodePool::v5p-slice-pool"]
    # a ref git does not know, and a ref that looks like an option: bad input
    for ref, words in (("nope", "unknown git ref"), ("--output=/tmp/x", "not a git ref")):
        bad = runner.invoke(app, ["plan", str(stack), "--base-ref", ref])
        assert bad.exit_code == 2 and words in bad.output, bad.output
    # a stack that is new in this change: everything is added
    other = repo / "stacks" / "Pulumi.other.yaml"
    # in another project and account: the example's names beside it would collide (issue 36)
    other.write_text(EXAMPLE_STACK.read_text().replace("acme-ml-prod", "acme-ml-dev")
                     .replace("123456789012", "210987654321"))
    new = runner.invoke(app, ["plan", str(other), "--base-ref", "main", "--format", "json"])
    assert new.exit_code == 0, new.output
    assert json.loads(new.output)["summary"]["removed"] == 0
    assert json.loads(new.output)["summary"]["added"] > 50


def test_bad_base_and_options_exit_2(tmp_path: Path) -> None:
    junk = tmp_path / "junk.json"
    junk.write_text("{not json")
    cases = [
        (["--diff", str(junk)], "is not JSON"),
        (["--diff", str(tmp_path / "missing.json")], "does not exist"),
        (["--format", "yaml"], "unknown --format"),
        (["--json", "--format", "markdown"], "disagree"),
        (["--diff", str(junk), "--base-ref", "main"], "both name a base"),
    ]
    for args, words in cases:
        result = runner.invoke(app, ["plan", str(EXAMPLE_STACK), *args])
        assert result.exit_code == 2, (args, result.output)
        assert words in result.output and "Traceback" not in result.output


def test_policies_pass_on_the_example_and_name_the_resource_when_broken(
        tmp_path: Path) -> None:
    ok = runner.invoke(app, ["plan", str(EXAMPLE_STACK), "--policies"])
    assert ok.exit_code == 0, ok.output
    assert "passes all" in ok.output
    text = EXAMPLE_STACK.read_text()
    assert EKS_CIDRS in text
    bad = tmp_path / "Pulumi.open.yaml"
    bad.write_text(text.replace(EKS_CIDRS, "        # (no authorized networks)"))
    result = runner.invoke(app, ["plan", str(bad), "--policies"])
    assert result.exit_code == 1, result.output
    line = next(ln for ln in result.output.splitlines() if ln.startswith("policy violation"))
    assert "aws:eks/cluster:Cluster::ml-eks-eks" in line
    assert "[public-endpoint-authorized-cidrs]" in line
    assert "1 policy violation(s) in stack open" in result.output
    as_json = runner.invoke(app, ["plan", str(bad), "--policies", "--format", "json"])
    assert as_json.exit_code == 1
    doc = json.loads(as_json.output[:as_json.output.rindex("}") + 1])
    assert [v["resource"] for v in doc["violations"]] == ["aws:eks/cluster:Cluster::ml-eks-eks"]


def test_plan_help_names_the_new_options() -> None:
    result = runner.invoke(app, ["plan", "--help"])
    assert result.exit_code == 0
    for option in ("--diff", "--base-ref", "--format", "--policies"):
        assert option in result.output


def test_an_ignored_change_says_so_and_forces_nothing() -> None:
    """Issue 27 item 3: a change at a path the component sets in ignore_changes (the EKS
    bootstrap flag) is shown as ignored, not as a replacement."""
    from cli.plan_diff import render_text
    from components.engine.diff import diff_plans

    def plan(flag: bool) -> dict[str, object]:
        return {"stack": "s", "resource_options": True, "pools": [], "teams": [],
                "resources": [{
                    "type": "aws:eks/cluster:Cluster", "name": "ml-eks", "custom": True,
                    "parent": None, "provider": None,
                    "ignore_changes": ["accessConfig.bootstrapClusterCreatorAdminPermissions"],
                    "inputs": {"accessConfig": {
                        "bootstrapClusterCreatorAdminPermissions": flag}}}]}

    text = render_text(diff_plans(plan(True), plan(False), base="b"))
    assert "replacement" not in text.splitlines()[0] and "REPLACES" not in text
    assert "accessConfig.bootstrapClusterCreatorAdminPermissions: true -> false  [ignored: " \
           "ignore_changes accessConfig.bootstrapClusterCreatorAdminPermissions, set by the " \
           "component; pulumi up keeps the deployed value]" in text


def test_the_gate_configmap_diff_names_the_keys_that_changed(base_plan: Path,
                                                             tmp_path: Path) -> None:
    """Issue 38: the gate's ConfigMap (`data.inventory.json`, a JSON text) showed as one cut-off
    JSON string on each side; now as the keys inside it that changed."""
    stack = tmp_path / "Pulumi.example.yaml"
    marker = "      - name: h100-train\n"
    text = EXAMPLE_STACK.read_text(encoding="utf-8")
    assert marker in text
    stack.write_text(text.replace(marker, marker + "        gate: {max_tier: 1}\n", 1),
                     encoding="utf-8")
    import re

    for fmt in ("text", "markdown"):
        result = runner.invoke(app, ["plan", str(stack), "--diff", str(base_plan),
                                     "--format", fmt], env={"COLUMNS": "200"})
        assert result.exit_code == 0, result.output
        out = result.output
        assert "ml-gke-gate-configmap" in out, out
        line = next(ln for ln in out.splitlines() if "data.inventory.json" in ln)
        assert re.search(r"`?data\.inventory\.json\{pools\[0\]\.gate\.max_tier\}`?: `?2`? -> "
                         r"`?1`?", line), line
        assert '\\"pools\\"' not in out and '"{\\n' not in out, line


def test_a_text_field_that_is_no_json_shows_as_it_is() -> None:
    from cli.plan_diff import _elements

    assert _elements("data.x", "{not json", "{not json either") == [
        ("data.x", "{not json", "{not json either")]
    assert _elements("data.x", '["a"]', '["a", "b"]') == [("data.x{[1]}", None, "b")]
    assert _elements("data.x", '{"a": {"b": 1}}', '{"a": {"b": 2}, "c": 3}') == [
        ("data.x{a.b}", 1, 2), ("data.x{c}", None, 3)]
