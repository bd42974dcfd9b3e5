"""Issue 30: `smoke nccl-log` on a log of very many ranks prints a bounded table: past 64 ranks
one row per distinct setting with its ranks counted (a 300,000-rank log took over 60 s to
print row by row). The ranks are the recorded socket log's own lines, each rank's prefix
renumbered as NCCL writes it (`host:pid:tid [dev]`): 2,000 ranks on 250 hosts of 8."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from cli.main import app

RECORDED = Path(__file__).resolve().parents[1] / "smoke" / "data" / "nccl" / \
    "nccl-socket-gke-a3-info.log"


def _many_ranks(ranks: int) -> str:
    lines = [line for line in RECORDED.read_text(encoding="utf-8").splitlines()
             if " NCCL INFO " in line and not line.startswith("#")][:4]
    bodies = [line.split(" NCCL INFO ", 1)[1] for line in lines]
    return "".join(f"gke-node-{rank // 8}:{1000 + rank % 8}:{1000 + rank % 8} [{rank % 8}] "
                   f"NCCL INFO {body}\n" for rank in range(ranks) for body in bodies)


def test_a_log_of_many_ranks_prints_one_row_per_setting(tmp_path: Path) -> None:
    log = tmp_path / "ranks.log"
    log.write_text(_many_ranks(2000), encoding="utf-8")
    result = CliRunner().invoke(app, ["smoke", "nccl-log", str(log)], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "2,000 ranks (gke-node-0:1000, ...)" in result.output
    assert "gke-node-1:1007" not in result.output  # no row per rank
    assert len(result.output.splitlines()) < 20


def test_a_few_ranks_keep_their_own_rows(tmp_path: Path) -> None:
    log = tmp_path / "ranks.log"
    log.write_text(_many_ranks(16), encoding="utf-8")
    result = CliRunner().invoke(app, ["smoke", "nccl-log", str(log)], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "gke-node-1:1007" in result.output and "ranks (" not in result.output
