"""Shared helpers: run a command in-process and check the refusal's shape."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

ROOT = Path(__file__).resolve().parents[2]
BASE_STACK = """config:
  accelfleet:fleet:
    clouds:
      gcp: {project: acme-ml-prod, region: us-central1}
    clusters:
      - {name: gke, cloud: gcp}
    teams:
      - {name: research}
    pools:
      - {name: h100, cluster: gke, team: research, accelerator: a3-highgpu-8g, nodes: 2,
         zone: us-central1-a}
"""


def invoke(*args: str) -> tuple[int, str]:
    """Exit code and everything printed (stdout and stderr) of `accelfleet ARGS`."""
    from cli.main import app

    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.output + (result.stderr if result.stderr_bytes else "")


def refused(code: int, output: str, *says: str) -> None:
    """Exit 2, a hint, no traceback, no internal error, and each of `says` in the output."""
    assert code == 2, output[-3000:]
    assert "Traceback" not in output and "internal error" not in output, output[-3000:]
    assert "hint:" in output, output[-3000:]
    for words in says:
        assert words in output, (words, output[-3000:])
