from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.main import app

# Commands that choose their stack by default read a project folder of the test's own, never
# the checkout's stacks/ (where a team keeps its stacks: issue 29 item 2).
pytestmark = pytest.mark.usefixtures("own_project")

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[2]


def invoke(*args: str):
    return runner.invoke(app, list(args))


def test_version():
    result = invoke("--version")
    assert result.exit_code == 0
    assert result.output.startswith("accelfleet ")


@pytest.mark.parametrize(
    "args",
    [[], ["catalog"], ["catalog", "list"], ["catalog", "show"], ["fleet"], ["fleet", "validate"]],
)
def test_every_help(args):
    result = invoke(*args, "--help")
    assert result.exit_code == 0, result.output
    assert "Usage" in result.output


def test_catalog_list_json_filters():
    result = invoke("catalog", "list", "--cloud", "aws", "--json")
    assert result.exit_code == 0
    rows = json.loads(result.output)
    assert rows and {r["cloud"] for r in rows} == {"aws"}
    p5 = next(r for r in rows if r["machine_type"] == "p5.48xlarge")
    assert p5["gpu_networking"]["efa_interfaces"] == 32


def test_catalog_list_table():
    result = invoke("catalog", "list", "--kind", "tpu")
    assert result.exit_code == 0
    assert "ct5p-hightpu-4t" in result.output and "p5.48xlarge" not in result.output


def test_catalog_show_slice():
    result = invoke("catalog", "show", "v5p-128", "--json")
    assert result.exit_code == 0
    data = json.loads(result.output)
    assert (data["chips"], data["hosts"], data["topology"]) == (64, 16, "4x4x4")
    assert "4x4x4" in data["valid_topologies"]


def test_catalog_show_unknown_exits_2_with_suggestion():
    result = invoke("catalog", "show", "h1000")
    assert result.exit_code == 2
    assert "did you mean" in result.output and "h100" in result.output
    assert "Traceback" not in result.output


def test_fleet_validate_example():
    result = invoke("fleet", "validate")
    assert result.exit_code == 0, result.output
    for name in ("h100-train", "v5p-slice", "p5-train"):
        assert name in result.output
    data = json.loads(invoke("fleet", "validate", "--json").output)
    assert data["valid"] and len(data["pools"]) == 6


def test_fleet_validate_broken_stack_exits_2(tmp_path: Path):
    text = (ROOT / "stacks" / "Pulumi.example.yaml").read_text()
    broken = tmp_path / "Pulumi.broken.yaml"
    broken.write_text(text.replace("topology: 4x4x4", "topology: 4x4x5"))
    result = invoke("fleet", "validate", str(broken))
    assert result.exit_code == 2
    assert "pools 'v5p-slice'.topology" in result.output
    assert "fix:" in result.output
    assert "Traceback" not in result.output


def test_help_imports_no_heavy_modules():
    code = (
        "import sys\n"
        "from typer.testing import CliRunner\n"
        "from cli.main import app\n"
        "r = CliRunner().invoke(app, ['--help'])\n"
        "assert r.exit_code == 0\n"
        "heavy = [m for m in ('pulumi', 'torch', 'jax', 'pulumi_gcp', 'pulumi_aws') "
        "if m in sys.modules]\n"
        "print(','.join(heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, check=True)
    assert out.stdout.strip() == ""


def test_console_script_exit_code_and_no_traceback(tmp_path: Path):
    broken = tmp_path / "Pulumi.x.yaml"
    broken.write_text("config: [")
    out = subprocess.run([sys.executable, "-m", "cli", "fleet", "validate", str(broken)],
                         cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 2
    assert "not valid YAML" in out.stderr and "Traceback" not in out.stderr
