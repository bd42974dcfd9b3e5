"""Laptop terminals (issue 21 item 6): `fleet validate` and `pool list` show one compact row
per pool at 120-200 columns (116 and 72 lines of key/value blocks before), the key/value
blocks below 120 columns; `plan` fits 80 columns; a price says where and when it was read."""

from __future__ import annotations

import json
import re
import shutil
from datetime import date, timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli._compact import zones_short
from cli._costs import price_source
from cli.main import app
from fleet.stack.read import EXAMPLE_STACK

# Commands that choose their stack by default read a project folder of the test's own, never
# the checkout's stacks/ (where a team keeps its stacks: issue 29 item 2).
pytestmark = pytest.mark.usefixtures("own_project")

runner = CliRunner()
HEADER = ("pool", "cluster", "team", "machine", "nodes x dev", "zones", "capacity",
          "$/month", "price")


def run(columns: int, *args: str) -> list[str]:
    result = runner.invoke(app, list(args), env={"COLUMNS": str(columns)})
    assert result.exit_code == 0, result.output
    return result.output.splitlines()


def _header(lines: list[str]) -> bool:
    return any(all(h in line for h in HEADER) for line in lines)


@pytest.mark.parametrize(("columns", "command"), [
    (120, ["fleet", "validate"]), (160, ["fleet", "validate"]), (200, ["fleet", "validate"]),
    (120, ["pool", "list"]), (160, ["pool", "list"])])  # pool list's full table fits 200
def test_compact_table_on_laptop_widths(columns: int, command: list[str]) -> None:
    lines = run(columns, *command, str(EXAMPLE_STACK))
    # the table and its totals; warnings after it are prose (the example has one: EKS 1.35's
    # vpc-cni pin is unverified, issue 36) and wrap as prose
    warned = [i for i, line in enumerate(lines) if line.startswith("warning:")]
    lines = lines[:warned[0]] if warned else lines
    assert _header(lines), "\n".join(lines)
    # 8 pools, a few folded cells, the totals; the EKS system pool's zones are the account's,
    # decided at deploy (issue 36), and that cell folds at 120 columns
    assert len(lines) <= 21, "\n".join(lines)
    assert all(len(line) <= columns for line in lines)
    # no key/value block: a label never starts a line of its own
    assert not any(re.match(r"\s+pool  \S", line) for line in lines)
    text = "\n".join(lines)
    assert "us-central1-a,b" in text and "us-east-1a,b" in text  # both zones, one cell
    assert "acme-v5p-" in text and "196,224" in text and "0..3,284" in text


@pytest.mark.parametrize("command", [["fleet", "validate"], ["pool", "list"]])
def test_key_value_blocks_below_120_columns(command: list[str]) -> None:
    lines = run(100, *command, str(EXAMPLE_STACK))
    assert not _header(lines)
    assert sum(1 for line in lines if re.match(r"\s+pool  \S", line)) >= 6
    assert any("us-central1-a,us-central1-b" in line for line in lines)  # nothing shortened


def test_json_keeps_every_value() -> None:
    out = runner.invoke(app, ["fleet", "validate", str(EXAMPLE_STACK), "--json"],
                        env={"COLUMNS": "120"}).output
    pools = {p["name"]: p for p in json.loads(out)["pools"]}
    assert pools["l4-spot"]["zones"] == ["us-central1-a", "us-central1-b"]
    assert pools["v5p-slice"]["capacity"] == "reservation acme-v5p-reservation"
    assert pools["p5-train"]["region"] == "us-east-1"


def test_expired_pool_is_marked(tmp_path: Path) -> None:
    stack = tmp_path / "Pulumi.example.yaml"
    shutil.copy(EXAMPLE_STACK, stack)
    past = (date.today() - timedelta(days=3)).isoformat()
    stack.write_text(stack.read_text().replace(
        "        driver: latest\n", f"        driver: latest\n        expires: {past}\n", 1))
    lines = run(140, "pool", "list", str(stack))
    row = next(line for line in lines if line.startswith(" h100-train"))
    assert row.startswith(" h100-train expired ")
    # `pool expired` names the date; at 120 columns the longer pool cell wraps between words
    # and no cell is cropped at the right edge (the price's closing parenthesis)
    text = "\n".join(run(120, "pool", "expired", str(stack)))
    assert "h100-train expired" in text and past in text, text
    assert re.search(r"list \(\d{4}-\d{2}\)", text), text
    lines = run(140, "fleet", "validate", str(stack))
    assert any(line.startswith(" h100-train ! ") for line in lines)
    assert any(line.startswith(" l4-spot  ") for line in lines)


def test_price_names_its_region_and_month() -> None:
    row = {"price": {"source": "list", "region": "us-east1", "as_of": "2026-06-02"}}
    assert price_source(row, "us-central1", provenance=True) == "list (us-east1, 2026-06)"
    assert price_source(row, "us-east1", provenance=True) == "list (2026-06)"
    assert price_source({"price": {"source": "stack rate"}}, "us-east1") == "stack rate"
    assert price_source({"price": {"source": "unpriced"}}, "us-east1") == "-"


def test_zones_short() -> None:
    assert zones_short(["us-central1-a", "us-central1-b"]) == "us-central1-a,b"
    assert zones_short(["us-east-1a", "us-east-1b"]) == "us-east-1a,b"
    assert zones_short(["us-east-1a", "us-east-1-atl-1a"]) == "us-east-1a, us-east-1-atl-1a"
    assert zones_short([]) == "(at deploy)"


def test_price_from_another_region_names_it(tmp_path: Path) -> None:
    """The catalog reads EC2 list prices in us-east-1 (fleet/catalog/data/prices.yaml): a pool
    in us-west-2 says so; a pool in the price's own region shows only its month."""
    stack = tmp_path / "Pulumi.example.yaml"
    stack.write_text(EXAMPLE_STACK.read_text().replace("us-east-1", "us-west-2"))
    lines = run(160, "fleet", "validate", str(stack))
    p5 = next(line for line in lines if line.startswith(" p5-train "))
    assert "list (us-east-1, 2026-" in p5
    h100 = next(line for line in lines if line.startswith(" h100-train "))
    assert "list (20" in h100 and "us-central1," not in h100


@pytest.mark.parametrize("command", [["fleet", "validate"], ["pool", "list"]])
def test_a_price_from_another_region_stays_on_one_line_at_120_columns(
        tmp_path: Path, command: list[str]) -> None:
    """Issue 38: at 120 columns the price column wrapped `list (us-east-1, 2026-11)` over two
    lines. A price is never wrapped nor cut: where the region does not fit, the price shows
    its month and a mark, and a note under the table names the region and the pools; zones
    and machine types stay whole (the capacity folds instead)."""
    stack = tmp_path / "Pulumi.example.yaml"
    stack.write_text(EXAMPLE_STACK.read_text().replace("us-east-1", "us-west-2"))
    for columns in (120, 130, 200):
        lines = run(columns, *command, str(stack))
        assert all(len(line.rstrip()) <= columns for line in lines), max(lines, key=len)
        if not _header(lines):  # the full table fits: every column whole
            assert columns == 200, lines
            continue
        p5 = next(line for line in lines if line.startswith(" p5-train "))
        if re.search(r"list \(us-east-1, 20\d\d-\d\d\)\s*$", p5):
            continue  # room for the region beside the month
        assert re.search(r"list \(20\d\d-\d\d\) \*\s*$", p5), (columns, p5)
        note = next(line for line in lines if line.startswith("* priced in us-east-1"))
        assert "p5-train" in note and "g6-ci" in note, note
        l4 = next(line for line in lines if line.startswith(" l4-spot "))
        assert "us-central1-a,b " in l4 and "g2-standard-24 " in l4, l4


def test_plan_fits_80_columns_and_keeps_figures_whole() -> None:
    """Before: pool and queue lines of up to 363 characters at any width."""
    lines = run(80, "plan", str(EXAMPLE_STACK))
    assert all(len(line) <= 80 for line in lines), max(lines, key=len)
    text = "\n".join(lines)
    for figure in ("~$129,195/month", "~$196,224/month", "acme-v5p-reservation",
                   "~$0..$3,284/month", "memory 3682374Mi,"):
        assert figure in text, figure


def test_plan_to_a_pipe_keeps_each_line_whole() -> None:
    out = runner.invoke(app, ["plan", str(EXAMPLE_STACK)], env={"COLUMNS": ""}).output
    assert any(len(line) > 160 and line.startswith("queue ml-gke/research")
               for line in out.splitlines())


def test_smoke_local_fits_80_columns_and_keeps_probe_names_whole() -> None:
    """Before: `inventor` / `y` and `known_an` / `swer` in a boxed table at 80 columns."""
    lines = run(80, "smoke", "local", "--backend", "torch", "--tier", "1", "--no-history")
    assert all(len(line) <= 80 for line in lines), max(lines, key=len)
    assert any(" inventory " in line for line in lines)
    assert any(" known_answer " in line for line in lines)


def test_plan_names_a_price_read_in_another_region(tmp_path: Path) -> None:
    stack = tmp_path / "Pulumi.example.yaml"
    stack.write_text(EXAMPLE_STACK.read_text().replace("us-east-1", "us-west-2"))
    out = runner.invoke(app, ["plan", str(stack)], env={"COLUMNS": ""}).output
    p5 = next(line for line in out.splitlines() if "p5-train (GpuNodeGroup" in line)
    assert "/month (list, us-east-1, 20" in p5, p5
    h100 = next(line for line in out.splitlines() if "h100-train (GpuNodePool" in line)
    assert h100.endswith("/month (list)"), h100
