"""`accelfleet advise`: exit codes (0 ranked, 2 with a fix for bad input), the table and the
JSON, a stack's pools or the whole catalog, and measured figures read from a real smoke history
file (SQLite, written the way `smoke local` and `smoke run` write it)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from cli.main import app
from fleet.words import duration

# Commands that choose their stack by default read a project folder of the test's own, never
# the checkout's stacks/ (where a team keeps its stacks: issue 29 item 2).
pytestmark = pytest.mark.usefixtures("own_project")

runner = CliRunner()


def _json(*args: str) -> dict[str, Any]:
    result = runner.invoke(app, ["advise", *args, "--json", "--no-history"])
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = json.loads(result.output)
    return data


def test_the_8b_pretrain_preset_ranks_gpu_and_tpu_shapes_of_the_catalog() -> None:
    result = runner.invoke(app, ["advise", "--workload", "llama3-8b-pretrain", "--catalog",
                                 "--no-history"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    out = result.output
    assert "cheapest first" in out and "TPU v6e 16x16" in out and "p5.48xlarge" in out
    assert "compute" in out and "datasheet" in out and "unpriced" in out
    assert "excluded: g5.xlarge" in out and "fix:" in out
    data = _json("--workload", "llama3-8b-pretrain", "--catalog")
    rows = data["candidates"]
    assert [r["rank"] for r in rows] == list(range(1, len(rows) + 1))
    assert {r["kind"] for r in rows} == {"gpu", "tpu"}
    assert all(r["bound"] in ("compute", "memory", "network") for r in rows)
    priced = [r["usd_per_run"] for r in rows if r["usd_per_run"] is not None]
    assert priced == sorted(priced) and min(priced) > 0
    assert rows[-1]["usd_per_run"] is None  # unpriced last, never $0
    first = rows[0]
    assert first["figures"]["origin"] == "datasheet" and first["figures"]["sources"]
    assert first["step"]["step_s"] > 0 and first["run_hours"] > 0 and first["chips"] == 256
    assert data["workload"]["parameters"] == 8_030_261_248 and data["assumptions"]
    assert data["history"]["path"] is None


def test_top_keeps_the_cheapest() -> None:
    data = _json("--workload", "pretrain-8b", "--catalog", "--top", "3")
    assert len(data["candidates"]) == 3


def test_the_example_stacks_pools_are_the_default_candidates() -> None:
    data = _json("--workload", "llama3-8b-finetune")
    pools = {r["pool"] for r in data["candidates"]}
    assert {"h100-train", "v5p-slice"} <= pools and None not in pools
    only = _json("--workload", "llama3-8b-finetune", "--pools", "h100-train,v5p-slice")
    assert {r["pool"] for r in only["candidates"]} == {"h100-train", "v5p-slice"}
    v5p = next(r for r in only["candidates"] if r["pool"] == "v5p-slice")
    assert v5p["chips"] == 64 and any("taken whole" in n for n in v5p["notes"])
    excluded = {x["candidate"]: x for x in data["excluded"]}
    assert "of activations and gathered layers" in excluded["l4-spot"]["reason"]
    assert "activation_checkpointing: full" in excluded["l4-spot"]["fix"]


def test_a_pool_the_model_does_not_fit_is_excluded_with_the_reason() -> None:
    data = _json("--workload", "llama3-70b-pretrain", "--pools", "v6e-serve,v5p-slice")
    excluded = {x["candidate"]: x for x in data["excluded"]}
    assert "v6e-serve" in excluded and "needs at least" in excluded["v6e-serve"]["reason"]
    assert excluded["v6e-serve"]["fix"]


def test_nothing_fits_exits_1_with_each_reason() -> None:
    result = runner.invoke(app, ["advise", "--workload", "llama3-70b-pretrain", "--pools",
                                 "v6e-serve", "--no-history"])
    assert result.exit_code == 1, result.output
    assert "excluded: v6e-serve" in result.output and "no candidate can run" in result.output


@pytest.mark.parametrize(("args", "words"), [
    (["--workload", "llama3-8b-pretrian", "--catalog"], "did you mean 'llama3-8b-pretrain'"),
    (["--catalog"], "--workload is required"),
    (["--workload", "pretrain-8b", "--catalog", "--pools", "x"], "--catalog takes no"),
    (["--workload", "pretrain-8b", "--pools", "h100-trian"], "did you mean 'h100-train'"),
    (["--workload", "jobs/missing.yaml", "--catalog"], "does not exist"),
    (["nope/Pulumi.x.yaml", "--workload", "pretrain-8b"], "does not exist"),
])
def test_bad_input_exits_2_with_a_hint(args: list[str], words: str) -> None:
    result = runner.invoke(app, ["advise", *args, "--no-history"])
    assert result.exit_code == 2, result.output
    assert words in result.output and "hint:" in result.output


def test_a_bad_profile_exits_2_naming_each_field_and_fix(tmp_path: Path) -> None:
    profile = tmp_path / "job.yaml"
    profile.write_text("kind: training\nmodel: {layers: 32, hidden_sise: 4096}\n"
                       "sequence_length: 8192\nglobal_batch_sequences: 64\nsteps: 10\n",
                       encoding="utf-8")
    result = runner.invoke(app, ["advise", "--workload", str(profile), "--catalog"])
    assert result.exit_code == 2, result.output
    assert "model.hidden_sise: unknown field; did you mean 'hidden_size'" in result.output
    assert "fix: rename it to 'hidden_size'" in result.output and "hint:" in result.output


def test_a_good_profile_file(tmp_path: Path) -> None:
    profile = tmp_path / "job.yaml"
    profile.write_text("kind: training\nname: tiny\nmodel: {parameters: 1.0e9}\n"
                       "sequence_length: 2048\nglobal_batch_sequences: 64\nsteps: 100\n"
                       "devices: 8\n", encoding="utf-8")
    data = _json("--workload", str(profile), "--catalog", "--top", "5")
    assert data["workload"]["name"] == "tiny" and "6 N" in data["workload"]["notes"][0]


def _history(path: Path, runs: int, backend: str = "torch", scale: float = 1.0,
             first: int = 0) -> None:
    from smoke.cluster.run import RunReport
    from smoke.history import History
    from smoke.probes.results import HostReport, ProbeResult, Verdict

    with History.open(path) as h:
        for i in range(first, first + runs):
            results = tuple(
                ProbeResult(f"cuda{d}", probe, 2, Verdict.PASS, "ok",
                            scale * (value + d + i), None, unit)
                for d in range(2) for probe, value, unit in (
                    ("matmul_tflops", 700.0, "TFLOP/s"), ("memory_gbps", 2900.0, "GB/s")))
            report = HostReport(host=f"node-{i % 2}", backend=backend, platform="cuda",
                                versions={}, tier=2, results=results, accelerator="h100-80gb",
                                started_at=f"2026-11-2{i}T00:00:00+00:00")
            h.append(RunReport.of_host(report, f"run-{i}"), kind="local")


def test_measured_figures_come_from_the_smoke_history(tmp_path: Path) -> None:
    path = tmp_path / "history.sqlite"
    _history(path, 3)
    result = runner.invoke(app, ["advise", "--workload", "llama3-8b-finetune", "--pools",
                                 "h100-train,v5p-slice", "--history", str(path), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    rows = {r["pool"]: r for r in data["candidates"]}
    h100 = rows["h100-train"]["figures"]
    assert h100["origin"] == "measured" and h100["runs"] == 3
    assert h100["tflops_origin"] == "measured" and h100["gbps"] == pytest.approx(2901.5)
    assert rows["v5p-slice"]["figures"]["origin"] == "datasheet"
    assert data["history"]["path"] == str(path)
    assert data["history"]["accelerators"]["h100-80gb"]["runs"] == 3
    table = runner.invoke(app, ["advise", "--workload", "llama3-8b-finetune", "--pools",
                                "h100-train", "--history", str(path)], env={"COLUMNS": "200"})
    assert "measured (3 runs)" in table.output
    off = runner.invoke(app, ["advise", "--workload", "llama3-8b-finetune", "--pools",
                              "h100-train", "--history", str(path), "--no-history", "--json"])
    assert json.loads(off.output)["candidates"][0]["figures"]["origin"] == "datasheet"


def test_measured_figures_are_one_backends_series(tmp_path: Path) -> None:
    """Issue 21 item 7: a JAX run on the H100 (a tenth of torch's figures) is not mixed into
    torch's medians: the backend with the most runs gives the figures."""
    path = tmp_path / "history.sqlite"
    _history(path, 3)
    _history(path, 2, backend="jax", scale=0.1, first=3)
    result = runner.invoke(app, ["advise", "--workload", "llama3-8b-finetune", "--pools",
                                 "h100-train", "--history", str(path), "--json"])
    assert result.exit_code == 0, result.output
    h100 = json.loads(result.output)["history"]["accelerators"]["h100-80gb"]
    assert h100["runs"] == 3 and h100["gbps"] == pytest.approx(2901.5)


def test_a_missing_history_named_explicitly_is_bad_input(tmp_path: Path) -> None:
    result = runner.invoke(app, ["advise", "--workload", "pretrain-8b", "--catalog",
                                 "--history", str(tmp_path / "none.sqlite")])
    assert result.exit_code == 2 and "no smoke history" in result.output


def test_the_default_history_is_read_when_it_exists(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACCELFLEET_HISTORY", str(tmp_path / "absent.sqlite"))
    data = json.loads(runner.invoke(app, ["advise", "-w", "finetune-8b", "--pools",
                                          "h100-train", "--json"]).output)
    assert data["candidates"][0]["figures"]["origin"] == "datasheet"  # none yet: datasheet
    path = tmp_path / "h.sqlite"
    _history(path, 1)
    monkeypatch.setenv("ACCELFLEET_HISTORY", str(path))
    data = json.loads(runner.invoke(app, ["advise", "-w", "finetune-8b", "--pools",
                                          "h100-train", "--json"]).output)
    assert data["candidates"][0]["figures"]["origin"] == "measured"


def test_inference_table_says_decode() -> None:
    result = runner.invoke(app, ["advise", "-w", "llama3-70b-batch-inference", "--catalog",
                                 "--no-history", "--top", "5"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "decode" in result.output and "requests" in result.output


def test_durations_read_as_people_read_them() -> None:
    assert duration(0.014) == "14 ms"
    assert duration(1.7226) == "1.72 s"
    assert duration(35 * 60) == "35 min"
    assert duration(18.3 * 3600) == "18.3 h"
    assert duration(30 * 86400) == "30.0 d"


def test_the_medians_are_a_library_call(tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 22: advise's measured figures come from the smoke library, no CLI needed."""
    from smoke.measured import read_measured

    monkeypatch.setenv("ACCELFLEET_HISTORY", str(tmp_path / "absent.sqlite"))
    assert read_measured(None) == (None, None)  # no default history yet: datasheet figures
    path = tmp_path / "history.sqlite"
    _history(path, 3)
    _history(path, 2, backend="jax", scale=0.1, first=3)
    figures, where = read_measured(path)
    assert where == str(path) and figures is not None
    h100 = figures["h100-80gb"]
    assert h100.runs == 3 and h100.gbps == pytest.approx(2901.5)  # torch's series alone
    assert h100.tflops == pytest.approx(701.5)


def test_the_decode_step_shows_its_own_bound_and_the_runs_when_prefill_bounds_it() -> None:
    """Issue 38: the table showed the whole run's bound (compute: the long prefill) beside the
    decode step, which is memory-bound; each is now named for what it bounds."""
    data = _json("--workload", "llama3-70b-batch-inference")
    rows = {r["candidate"]: r for r in data["candidates"]}
    split = [r for r in rows.values() if r["bound"] != r["step"]["bound"]]
    assert split, "the preset has a candidate whose prefill bounds the run"
    result = runner.invoke(app, ["advise", "--workload", "llama3-70b-batch-inference",
                                 "--no-history"], env={"COLUMNS": "250"})
    assert result.exit_code == 0, result.output
    for r in rows.values():
        line = next(ln for ln in result.output.splitlines() if f" {r['candidate']} " in ln)
        assert f"{r['step']['bound']} (decode)" in line, line
        if r["bound"] != r["step"]["bound"]:
            assert f"the run: {r['bound']} (prefill)" in line, line
        else:
            assert "the run:" not in line, line


def test_the_efficiencies_and_assumptions_show_outside_json() -> None:
    """Issue 38: the figures' efficiencies and the model's assumptions were in --json only."""
    data = _json("--workload", "llama3-8b-pretrain")
    result = runner.invoke(app, ["advise", "--workload", "llama3-8b-pretrain",
                                 "--no-history"], env={"COLUMNS": "250"})
    assert result.exit_code == 0, result.output
    out = " ".join(result.output.split())
    for line in data["assumptions"]:
        assert f"assumes: {' '.join(line.split())}" in out, line
    for r in data["candidates"]:
        assert f"efficiency: {r['accelerator']}: compute: peak" in out, r["accelerator"]
        assert "x mfu" in out
