"""`accelfleet pool`: request, resize, remove, list and expired through the CLI; refusals exit 2
with the fix and leave the file byte-identical; --patch writes a diff that applies; --branch
makes one commit holding the stack change only, in a temporary git repository."""

from __future__ import annotations

import json
import shutil
import subprocess
from datetime import date, timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.main import app
from fleet.catalog import load_catalog
from fleet.stack.read import EXAMPLE_STACK, read_stack_file

# Commands that choose their stack by default read a project folder of the test's own, never
# the checkout's stacks/ (where a team keeps its stacks: issue 29 item 2).
pytestmark = pytest.mark.usefixtures("own_project")

runner = CliRunner()


@pytest.fixture
def stack(tmp_path: Path) -> Path:
    path = tmp_path / "Pulumi.pool.yaml"
    shutil.copy(EXAMPLE_STACK, path)
    return path


def run(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, list(args), env={"COLUMNS": "250"})
    return result.exit_code, result.output


def test_dry_run_on_the_example_shows_the_slice_its_cost_and_the_budget_left() -> None:
    before = EXAMPLE_STACK.read_bytes()
    code, out = run("pool", "request", "--team", "vision", "--accelerator", "v6e 2x4",
                    "--dry-run", "--requested-by", "ana@acme.com")
    assert code == 0, out
    assert EXAMPLE_STACK.read_bytes() == before
    cat = load_catalog()
    shape = cat.resolve("v6e 2x4")
    price = cat.price(shape)
    assert price is not None and price.on_demand_usd is not None
    monthly = price.on_demand_usd * shape.chips * 730
    assert "dry run, nothing written: new pool vision-v6e-2x4 (team vision)" in out
    assert "TPU v6e 2x4: 8 chips on 2 hosts of ct6e-standard-4t" in out
    assert "2 nodes, 8 devices" in out and "zone us-central1-b" in out
    assert f"${monthly:,.0f} a month (list price" in out
    assert "left of its $150,000 budget" in out
    assert "+      - name: vision-v6e-2x4" in out and "+        topology: 2x4" in out


def test_request_writes_and_json_tells_what_it_did(stack: Path) -> None:
    code, out = run("pool", "request", str(stack), "--team", "vision", "--accelerator",
                    "h100", "--nodes", "1", "--reason", "LLM pretraining, phase 2",
                    "--until", "2027-03-31", "--requested-by", "bo@acme.com", "--json")
    assert code == 0, out
    data = json.loads(out)
    assert data["written"] and data["pool"]["name"] == "vision-a3-highgpu-8g"
    assert data["pool"]["expires"] == "2027-03-31" and data["plan"] is None
    pool = next(p for p in read_stack_file(stack)["pools"] if p["name"] == data["pool"]["name"])
    assert pool["reason"] == "LLM pretraining, phase 2" and pool["expires"] == "2027-03-31"
    assert "        expires: '2027-03-31'\n" in stack.read_text()  # text: no reader's timestamp
    assert data["team"]["left_after_usd"] >= 0


@pytest.mark.parametrize(("args", "says"), [
    (["--accelerator", "h1000"], "did you mean 'h100'"),
    (["--accelerator", "v6e 2x4", "--zone", "us-central1-f"], "--zone us-central1-a"),
    (["--accelerator", "a3-highgpu-8g", "--nodes", "4"], "--capacity spot"),
    (["--accelerator", "v6e", "--topology", "3x3"], "--topology 2x4"),
    (["--accelerator", "v6e 2x4", "--name", "l4-spot"], "--name l4-spot-2"),
])
def test_refusals_exit_2_name_the_fix_and_leave_the_file_byte_identical(
        stack: Path, args: list[str], says: str) -> None:
    before = stack.read_bytes()
    code, out = run("pool", "request", str(stack), "--team", "vision", *args)
    assert code == 2, out
    assert "refused (the stack file is unchanged)" in out and says in out
    assert "Traceback" not in out and stack.read_bytes() == before


def test_resize_and_remove(stack: Path) -> None:
    code, out = run("pool", "resize", "h100-train", "--nodes", "1", "--stack", str(stack))
    assert code == 0 and "2 -> 1 node" in out, out
    code, out = run("pool", "resize", "v5p-slice", "--nodes", "32", "--stack", str(stack))
    assert code == 2 and "changes topology, never node count" in out and "--topology 4x4x8" \
        in out
    code, out = run("pool", "resize", "h100-train", "--nodes", "1", "--stack", str(stack))
    assert code == 0 and "nothing to change" in out
    code, out = run("pool", "remove", "g6-ci", "--stack", str(stack), "--json")
    assert code == 0 and json.loads(out)["action"] == "remove"
    assert "g6-ci" not in {p["name"] for p in read_stack_file(stack)["pools"]}


def test_patch_writes_a_diff_that_applies(tmp_path: Path, stack: Path) -> None:
    before = stack.read_bytes()
    patch = tmp_path / "out" / "pool.patch"
    code, out = run("pool", "request", str(stack), "--team", "vision", "--accelerator",
                    "v6e 2x4", "--requested-by", "ana@acme.com", "--patch", str(patch))
    assert code == 0 and "as a diff to" in out, out
    assert stack.read_bytes() == before
    subprocess.run(["git", "apply", str(patch)], cwd=tmp_path, check=True)
    assert "vision-v6e-2x4" in {p["name"] for p in read_stack_file(stack)["pools"]}
    code, out = run("pool", "request", str(stack), "--team", "vision", "--accelerator", "v6e",
                    "--dry-run", "--patch", str(patch))
    assert code == 2 and "exclude one another" in out


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True,
                          text=True).stdout.strip()


def test_branch_makes_one_commit_with_the_stack_change_only(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    for who in ("AUTHOR", "COMMITTER"):
        monkeypatch.setenv(f"GIT_{who}_NAME", "Ana")
        monkeypatch.setenv(f"GIT_{who}_EMAIL", "ana@acme.com")
    repo = tmp_path / "repo"
    (repo / "stacks").mkdir(parents=True)
    stack = repo / "stacks" / "Pulumi.prod.yaml"
    shutil.copy(EXAMPLE_STACK, stack)
    (repo / "README.md").write_text("fleet\n")
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "fleet")
    base = _git(repo, "rev-parse", "HEAD")
    code, out = run("pool", "request", str(stack), "--team", "vision", "--accelerator",
                    "v6e 2x4", "--reason", "ViT-22B eval", "--until", "2027-01-31",
                    "--requested-by", "ana@acme.com", "--branch", "pool/vision-v6e")
    assert code == 0 and "committed" in out and "on new branch pool/vision-v6e" in out, out
    assert _git(repo, "rev-parse", "--abbrev-ref", "HEAD") == "main"  # not switched
    assert _git(repo, "status", "--porcelain") == ""  # working tree and index untouched
    assert _git(repo, "rev-list", "--count", f"{base}..pool/vision-v6e") == "1"
    assert _git(repo, "diff", "--name-only", base, "pool/vision-v6e") == "stacks/Pulumi.prod.yaml"
    message = _git(repo, "log", "-1", "--format=%B", "pool/vision-v6e")
    assert message.startswith("pool: request vision-v6e-2x4 for team vision")
    assert "Reason: ViT-22B eval" in message and "until 2027-01-31" in message
    assert "TPU v6e 2x4" in message and "left of its $150,000 budget" in message
    shown = _git(repo, "show", "pool/vision-v6e:stacks/Pulumi.prod.yaml")
    assert "      - name: vision-v6e-2x4" in shown
    code, out = run("pool", "request", str(stack), "--team", "vision", "--accelerator", "v6e",
                    "--branch", "pool/vision-v6e")
    assert code == 2 and "already exists" in out


def test_list_and_expired(stack: Path) -> None:
    past = (date.today() - timedelta(days=10)).isoformat()
    text = stack.read_text().replace("        driver: latest\n", "        driver: latest\n"
                                     f"        expires: {past}\n"
                                     "        requested_by: ana@acme.com\n", 1)
    stack.write_text(text)
    code, out = run("pool", "list", str(stack), "--team", "research", "--json")
    assert code == 0, out
    rows = {r["name"]: r for r in json.loads(out)["pools"]}
    assert set(rows) == {"h100-train", "v5p-slice", "p5-train"}
    assert rows["h100-train"]["expired"] and rows["h100-train"]["requested_by"] == "ana@acme.com"
    code, out = run("pool", "list", str(stack), "--team", "reserch")
    assert code == 2 and "did you mean 'research'" in out
    code, out = run("pool", "expired", str(stack), "--json")
    data = json.loads(out)
    assert code == 0 and [p["name"] for p in data["pools"]] == ["h100-train"]
    assert data["pools"][0]["days_expired"] == 10 and data["monthly_usd"] > 100_000
    code, out = run("pool", "expired", str(stack))
    assert "1 expired pool" in out and "accelfleet pool remove NAME" in out
    code, out = run("pool", "expired", str(stack), "--as-of", past)
    assert code == 0 and "no pool has expired" in out
    code, out = run("fleet", "validate", str(stack))
    assert code == 0 and "warning: pools 'h100-train'.expires: expired on" in out


def test_a_resize_that_raises_the_cost_needs_a_reason_kept_in_the_stack(tmp_path: Path) -> None:
    """Issue 38: `pool resize` could double a pool's cost with no reason recorded."""
    stack = tmp_path / "Pulumi.prod.yaml"
    shutil.copy(EXAMPLE_STACK, stack)
    before = stack.read_bytes()
    result = runner.invoke(app, ["pool", "resize", "g6-ci", "--nodes", "2", "--stack",
                                 str(stack)])
    assert result.exit_code == 2, result.output
    assert "raises g6-ci's cost from about $3,359 to about $6,718 a month" in result.output
    assert "--reason" in result.output and stack.read_bytes() == before
    result = runner.invoke(app, ["pool", "resize", "g6-ci", "--nodes", "2", "--stack",
                                 str(stack), "--reason", "INC-7: the eval backlog"])
    assert result.exit_code == 0, result.output
    pool = next(p for p in read_stack_file(stack)["pools"] if p["name"] == "g6-ci")
    assert pool["nodes"] == 2 and pool["reason"] == "INC-7: the eval backlog"
    # a resize that lowers the cost needs none
    result = runner.invoke(app, ["pool", "resize", "g6-ci", "--nodes", "1", "--stack",
                                 str(stack)])
    assert result.exit_code == 0, result.output
