"""Issue 29 item 5: a pod's log is text from a cluster: `smoke run` shows what a failed pod
printed (its last lines) with every terminal control escaped, on the table and the summary,
never raw (OSC 52 would write the reader's clipboard, OSC 0 the window title)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from cli.main import app
from tests.hostile.test_terminal_escapes import PAYLOAD, assert_safe
from tests.smoke.test_cluster_run import RUN_LABEL, add_pool_nodes


def test_a_pod_log_line_is_shown_escaped(cluster: Any, stack: Path,
                                         tmp_path: Path) -> None:
    nodes = add_pool_nodes(cluster, "gpu-a", 2)
    for node in nodes:  # the pod prints the payload and fails before any result
        cluster.set_node_output(node, f"loading the driver{PAYLOAD}\nfailed{PAYLOAD}\n",
                                     exit_code=1)
    kc = cluster.kubeconfig(tmp_path / "kubeconfig", context="fake")
    result = CliRunner().invoke(app, ["smoke", "run", str(stack), "--kubeconfig", str(kc),
                                      "--context", "c1=fake", "--pools", "gpu-a",
                                      "--tier", "0"], env={"COLUMNS": "250"})
    assert result.exit_code == 1, result.output
    assert_safe(result.stdout, result.stderr)
    assert "failed\\x1b]52;c;ZWNobyBwd25lZA==" in result.stdout + result.stderr, result.output
    assert cluster.objects(RUN_LABEL) == []  # the run cleaned up after itself
