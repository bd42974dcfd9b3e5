"""The smoke history: append and query, one run never twice, schema versions, concurrent
writers (10 processes, no row lost), drift on a recorded series, and `smoke local` recorded."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.main import app
from fleet.errors import InputError
from smoke.cluster.run import NodeOutcome, PoolReport, PoolStatus, RunReport
from smoke.history import SCHEMA_VERSION, History, record
from smoke.probes.results import HostReport, ProbeResult, Verdict
from tests.smoke.recorded import BAD_NODE, DATA, H100_NODES

REPO = Path(__file__).resolve().parents[2]


def recorded() -> RunReport:
    return RunReport.from_dict(json.loads(DATA.read_text(encoding="utf-8")))


def test_append_and_query_per_node_and_filters(tmp_path: Path) -> None:
    run = recorded()
    with History.open(tmp_path / "h.sqlite") as h:
        assert h.append(run, kind="cluster") is True
        assert h.append(run, kind="cluster") is False  # one run is recorded once
        runs, rows = h.count()
        assert runs == 1
        assert rows == sum(len(n.report.results) for p in run.pools for n in p.nodes
                           if n.report) + sum(1 for p in run.pools for c in p.checks if c.node)
        trends = h.trends()
        assert {(t.pool, t.node) for t in trends} >= {("h100-train", n) for n in H100_NODES}
        bad = {t.probe: t for t in trends if t.node == BAD_NODE}
        assert set(bad) == {"matmul_tflops", "memory_gbps", "allreduce_busbw", "fabric_busbw"}
        # the node's matmul verdict includes its pool-outlier verdict
        assert bad["matmul_tflops"].last.verdict == "fail"
        assert bad["matmul_tflops"].last.value == pytest.approx(632.4, abs=0.1)
        assert bad["memory_gbps"].last.verdict == "pass"
        assert {t.node for t in h.trends(node=BAD_NODE)} == {BAD_NODE}
        assert {t.pool for t in h.trends(pool="v5p-ms")} == {"v5p-ms"}
        assert {t.pool for t in h.trends(accelerator=["h100-80gb"])} == {"h100-train"}
        assert h.trends(pool="nope") == []
    with sqlite3.connect(tmp_path / "h.sqlite") as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_history_cli_filters_by_catalog_words(tmp_path: Path) -> None:
    with History.open(tmp_path / "h.sqlite") as h:
        h.append(recorded(), kind="cluster")
    result = CliRunner().invoke(app, ["smoke", "history", "--history", str(tmp_path /
                                      "h.sqlite"), "--accelerator", "h100", "--json"])
    assert result.exit_code == 0, result.output
    assert {t["pool"] for t in json.loads(result.stdout)} == {"h100-train"}
    result = CliRunner().invoke(app, ["smoke", "history", "--history", str(tmp_path /
                                      "h.sqlite"), "--accelerator", "v5p"],
                                env={"COLUMNS": "220"})
    assert result.exit_code == 0 and "v5p-ms" in result.output
    assert "h100-train" not in result.output


def test_a_missing_a_newer_or_a_foreign_file_is_bad_input(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["smoke", "history", "--history",
                                      str(tmp_path / "none.sqlite")])
    assert result.exit_code == 2 and "no smoke history at" in result.output
    newer = tmp_path / "newer.sqlite"
    with sqlite3.connect(newer) as db:
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    with pytest.raises(InputError, match=f"has schema {SCHEMA_VERSION + 1}; this "
                       f"accelfleet knows schema {SCHEMA_VERSION}"):
        History.open(newer)
    foreign = tmp_path / "notes.sqlite"
    foreign.write_text("not a database, only words " * 100, encoding="utf-8")
    with pytest.raises(InputError, match="is not a usable smoke history"):
        History.open(foreign)


WRITER = """
import sys, time
from dataclasses import replace
from pathlib import Path
from smoke.history import History
from tests.smoke.test_history import recorded
path, me, runs, start = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
base = recorded()
time.sleep(max(0.0, start - time.time()))  # every writer starts at once
for i in range(runs):
    with History.open(path) as h:
        assert h.append(replace(base, run_id=f"w{me}-{i}"), kind="cluster")
"""


def test_ten_concurrent_writers_lose_no_row(tmp_path: Path) -> None:
    path, runs = tmp_path / "h.sqlite", 4
    start = time.time() + 2.0
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(path), str(i), str(runs),
                               str(start)], cwd=REPO, stderr=subprocess.PIPE, text=True)
             for i in range(10)]
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    with History.open(path) as h:
        total_runs, rows = h.count()
    with History.open(tmp_path / "one.sqlite") as one:
        one.append(recorded(), kind="cluster")
        rows_per_run = one.count()[1]
    assert total_runs == 10 * runs
    assert rows == 10 * runs * rows_per_run


def _node_run(i: int, tflops: list[float], verdict: Verdict = Verdict.PASS,
              backend: str = "torch") -> RunReport:
    results = tuple(ProbeResult(f"cuda{d}", "matmul_tflops", 2, verdict, "recorded", v, 989.0,
                                "TFLOP/s", details={"floor": 593.4})
                    for d, v in enumerate(tflops))
    report = HostReport(host="n1", backend=backend, platform="gpu", versions={}, tier=2,
                        results=results, accelerator="h100-80gb")
    return RunReport(run_id=f"r{i:02d}", stack="prod", started_at=f"2026-11-{i + 1:02d}T00:00"
                     ":00+00:00", duration_s=1.0, thresholds_version="t", agent_digest="",
                     pools=(PoolReport("h100", "c1", "a3-highgpu-8g", "w", 1, PoolStatus.DONE,
                                       (NodeOutcome(0, "p", "n1", report),)),))


def test_drift_warns_on_a_recorded_series_still_above_the_floor(tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite"
    series = [810.0, 805.0, 812.0, 808.0, 806.0]
    for i, v in enumerate(series):
        assert record(_node_run(i, [v] * 4), path, kind="cluster") == []
    # the last run: 720 TFLOP/s, 0.89 of the node's recent median and far above the floor
    drifted = record(_node_run(5, [720.0] * 4), path, kind="cluster")
    assert [(t.node, t.probe) for t in drifted] == [("n1", "matmul_tflops")]
    (t,) = drifted
    assert t.last.verdict == "pass" and t.verdict == "warn"
    assert t.recent_median == pytest.approx(808.0)
    assert t.change == pytest.approx(720 / 808)
    assert t.drift[0].startswith("the node's median fell to 0.89 of its recent median 808")
    result = CliRunner().invoke(app, ["smoke", "history", "--history", str(path)],
                                env={"COLUMNS": "250"})
    assert result.exit_code == 0, result.output
    assert "drift: the node's median fell to 0.89" in result.output
    assert "warn (was pass)" in result.output and "-11%" in result.output


def test_one_device_drifting_is_named_though_the_node_median_holds(tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite"
    for i in range(4):
        record(_node_run(i, [810.0] * 4), path, kind="cluster")
    (t,) = record(_node_run(4, [810.0, 810.0, 700.0, 810.0]), path, kind="cluster")
    assert t.drift == ("cuda2 fell to 0.86 of its recent median 810 TFLOP/s",)


def test_no_drift_within_ten_percent_nor_without_enough_runs(tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite"
    record(_node_run(0, [810.0] * 4), path, kind="cluster")
    record(_node_run(1, [810.0] * 4), path, kind="cluster")
    assert record(_node_run(2, [600.0] * 4), path, kind="cluster") == []  # 2 runs before
    path = tmp_path / "h2.sqlite"
    for i, v in enumerate([810.0, 800.0, 805.0, 812.0, 760.0]):  # 0.94 of the median
        assert record(_node_run(i, [v] * 4), path, kind="cluster") == []


def test_the_window_keeps_each_nodes_last_runs(tmp_path: Path) -> None:
    with History.open(tmp_path / "h.sqlite") as h:
        for i in range(15):
            h.append(_node_run(i, [800.0 + i] * 2), kind="cluster")
        (t,) = h.trends(window=10)
        assert [p.run_id for p in t.points] == [f"r{i:02d}" for i in range(5, 15)]
        assert h.trends(window=3)[0].last.value == 814.0


def test_smoke_local_is_recorded_with_its_html_and_metrics(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    pytest.importorskip("torch")
    from smoke.probes.backend import Sizes

    tiny = Sizes(matmul_n=64, known_n=32, copy_mib=2, allreduce_mib=1, repeats=3,
                 target_repeat_s=0.002)
    monkeypatch.setattr(Sizes, "for_platform", classmethod(lambda cls, platform: tiny))
    path, html, prom = tmp_path / "h.sqlite", tmp_path / "local.html", tmp_path / "m.prom"
    for _ in range(2):
        result = CliRunner().invoke(app, ["smoke", "local", "--backend", "torch", "--tier", "2",
                                          "--history", str(path), "--html", str(html),
                                          "--metrics", str(prom)])
        assert result.exit_code == 0, result.output
    with History.open(path) as h:
        (t,) = [t for t in h.trends(pool="local") if t.probe == "matmul_tflops"]
    assert len(t.points) == 2 and all(p.run_id.startswith("l") for p in t.points)
    assert "matmul" in html.read_text(encoding="utf-8")
    assert "accelfleet_smoke_matmul_tflops{" in prom.read_text(encoding="utf-8")
    result = CliRunner().invoke(app, ["smoke", "local", "--tier", "0", "--no-history",
                                      "--history", str(path)])
    assert result.exit_code == 2 and "contradict" in result.output



def test_torch_and_jax_figures_are_separate_series_and_never_drift_against_each_other(
        tmp_path: Path) -> None:
    """Issue 21 item 7: the same node measured by torch (810 TFLOP/s) and by JAX (700): JAX's
    run is its own series, not a 0.86 drift of torch's."""
    path = tmp_path / "h.sqlite"
    for i in range(4):
        assert record(_node_run(i, [810.0] * 4), path, kind="cluster") == []
    assert record(_node_run(4, [700.0] * 4, backend="jax"), path, kind="local") == []
    with History.open(path, create=False) as h:
        trends = h.trends()
    assert sorted((t.backend, len(t.points)) for t in trends) == [("jax", 1), ("torch", 4)]
    assert all(not t.drift for t in trends)
    result = CliRunner().invoke(app, ["smoke", "history", "--history", str(path), "--json"])
    assert result.exit_code == 0, result.output
    assert sorted(t["backend"] for t in json.loads(result.stdout)) == ["jax", "torch"]


def _schema_1(path: Path) -> None:
    """A history as accelfleet schema 1 wrote it (no backend column)."""
    conn = sqlite3.connect(path)
    conn.executescript("""
        CREATE TABLE runs (seq INTEGER PRIMARY KEY AUTOINCREMENT, run_id TEXT NOT NULL UNIQUE,
            kind TEXT NOT NULL, stack TEXT NOT NULL, started_at TEXT NOT NULL,
            duration_s REAL NOT NULL, thresholds_version TEXT NOT NULL, ok INTEGER NOT NULL,
            recorded_at TEXT NOT NULL);
        CREATE TABLE results (run_seq INTEGER NOT NULL REFERENCES runs(seq),
            cluster TEXT NOT NULL, pool TEXT NOT NULL, node TEXT NOT NULL,
            accelerator TEXT NOT NULL, device TEXT NOT NULL, probe TEXT NOT NULL,
            tier INTEGER NOT NULL, unit TEXT NOT NULL, measured REAL, expected REAL,
            floor REAL, verdict TEXT NOT NULL);
        PRAGMA user_version = 1;""")
    for i, (kind, acc) in enumerate([("cluster", "h100-80gb"), ("cluster", "tpu-v5p"),
                                     ("local", "cpu")]):
        conn.execute("INSERT INTO runs VALUES (?, ?, ?, 's', 't', 1.0, 'v', 1, 't')",
                     (i + 1, f"r{i}", kind))
        conn.execute("INSERT INTO results VALUES (?, '', 'p', 'n', ?, 'd0', 'matmul_tflops', "
                     "2, 'TFLOP/s', 800.0, NULL, NULL, 'pass')", (i + 1, acc))
    conn.commit()
    conn.close()


def test_a_schema_1_history_is_read_without_writing_and_migrated_by_a_writer(
        tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite"
    _schema_1(path)
    before = path.read_bytes()
    with History.open(path, create=False) as h:
        read = {(t.accelerator, t.backend) for t in h.trends()}
    assert path.read_bytes() == before  # reading never writes, never migrates
    assert read == {("h100-80gb", "torch"), ("tpu-v5p", "jax"), ("cpu", "")}
    with History.open(path) as h:
        assert {(t.accelerator, t.backend) for t in h.trends()} == read
        h.append(_node_run(9, [810.0]), kind="cluster")
        assert h.count() == (4, 4)
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 2
        assert db.execute("SELECT backend FROM results ORDER BY run_seq").fetchall() == [
            ("torch",), ("jax",), ("",), ("torch",)]
