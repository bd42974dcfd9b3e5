"""Issue 27 item 11: `accelfleet plan` closes the event loop it runs the program on. Left open,
the interpreter collects it at exit, sometimes after its self-pipe is closed: "Exception ignored
in: BaseEventLoop.__del__ ... Invalid file descriptor: -1" on stderr. Python's development mode
(-X dev) reports every loop collected unclosed ("unclosed event loop", a ResourceWarning), so
the run below fails whenever a loop is left open, not only when the exit order shows it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.stacks import ONE_GKE_CLUSTER

ROOT = Path(__file__).resolve().parents[2]
# one pool on each cloud: the EKS cluster asks the (mock) provider for the account's zones
STACK = ONE_GKE_CLUSTER.replace("    clusters:\n", """\
      aws: {account: "123456789012", region: us-east-1}
    clusters:
      - {name: e1, cloud: aws, network: {cidr: 10.20.0.0/16}}
""") + """\
    pools:
      - {name: l4, cluster: c1, team: research, accelerator: g2-standard-24, nodes: 1,
         zone: us-central1-a}
      - {name: g6, cluster: e1, team: research, accelerator: g6.xlarge, nodes: 1,
         zone: us-east-1a}
"""
SCRIPT = "import sys\nfrom components.engine.plan import run_plan\nrun_plan(sys.argv[1])\n"


def test_plan_leaves_no_event_loop_open(tmp_path: Path) -> None:
    stack = tmp_path / "Pulumi.loop.yaml"
    stack.write_text(STACK, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-X", "dev", "-c", SCRIPT, str(stack)], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "unclosed event loop" not in done.stderr
    assert "Exception ignored" not in done.stderr
