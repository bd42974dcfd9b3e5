"""`accelfleet smoke local`: exit codes and output through CliRunner."""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.main import app

runner = CliRunner()
FAST = ["--tier", "2"]


@pytest.fixture(autouse=True)
def tiny_sizes(monkeypatch: pytest.MonkeyPatch) -> None:
    """CPU sizes small enough for a unit test (the real command uses Sizes.for_platform)."""
    from smoke.probes.backend import Sizes

    tiny = Sizes(matmul_n=128, known_n=64, copy_mib=4, allreduce_mib=1, repeats=3,
                 target_repeat_s=0.005)
    monkeypatch.setattr(Sizes, "for_platform", classmethod(lambda cls, platform: tiny))


def test_help_lists_every_option() -> None:
    result = runner.invoke(app, ["smoke", "local", "--help"])
    assert result.exit_code == 0
    for opt in ("--backend", "--tier", "--expect", "--json", "--junit", "--min-tflops",
                "--min-gbps"):
        assert opt in result.output
    assert runner.invoke(app, ["smoke", "--help"]).exit_code == 0


def test_smoke_help_imports_no_backend() -> None:
    code = ("import sys\nfrom typer.testing import CliRunner\nfrom cli.main import app\n"
            "r = CliRunner().invoke(app, ['smoke', 'local', '--help'])\n"
            "print(r.exit_code, sorted(m for m in ('torch', 'jax', 'pulumi') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=60)
    assert out.stdout.strip() == "0 []"


def test_local_prints_a_table_and_exits_0() -> None:
    result = runner.invoke(app, ["smoke", "local", "--backend", "torch"])
    assert result.exit_code == 0, result.output
    assert "matmul_tflops" in result.output and "cpu0" in result.output
    assert "0 fail" in result.output


def test_min_tflops_fails_naming_device_and_probe() -> None:
    result = runner.invoke(app, ["smoke", "local", "--backend", "torch", *FAST,
                                 "--min-tflops", "1000000"])
    assert result.exit_code == 1
    assert "cpu0 matmul_tflops" in result.output


def test_json_and_junit(tmp_path: Path) -> None:
    path = tmp_path / "smoke.xml"
    result = runner.invoke(app, ["smoke", "local", "--backend", "jax", *FAST, "--json",
                                 "--junit", str(path), "--min-gbps", "1000000"])
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    assert doc["backend"] == "jax" and doc["summary"]["fail"] == 1
    suite = ET.parse(path).getroot().find("testsuite")
    assert suite is not None and suite.get("failures") == "1"


def test_missing_expected_device_exits_1() -> None:
    result = runner.invoke(app, ["smoke", "local", "--backend", "torch", "--tier", "0",
                                 "--expect", "a3-highgpu-8g"])
    assert result.exit_code == 1
    assert "cuda7 inventory" in result.output


def test_unknown_expect_is_bad_input_with_suggestions() -> None:
    result = runner.invoke(app, ["smoke", "local", "--expect", "a3-highgpu-9g"])
    assert result.exit_code == 2
    assert "did you mean" in result.output and "a3-highgpu-8g" in result.output
    assert "Traceback" not in result.output


def test_bad_tier_is_bad_input() -> None:
    assert runner.invoke(app, ["smoke", "local", "--tier", "7"]).exit_code == 2


def test_missing_backend_package_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    for mod in [m for m in sys.modules
                if m == "jax" or m.startswith(("jax.", "smoke.probes._jax"))]:
        monkeypatch.delitem(sys.modules, mod)
    monkeypatch.setitem(sys.modules, "jax", None)
    result = runner.invoke(app, ["smoke", "local", "--backend", "jax"])
    assert result.exit_code == 2
    assert "pip install 'accelfleet[jax]'" in result.output
