"""Issue 29 item 4's minors: a closed pipe ends a command quietly; counts read as people say
them ("1 pool", "the one device"); `pool resize STACK NAME` says how to write it; the README
says how long `make test` takes and what to run while editing."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from fleet.catalog import load_catalog
from fleet.words import all_of, counted
from smoke.probes.verdict import judge_psum
from tests.hostile.conftest import BASE_STACK, invoke

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.usefixtures("own_project")


@pytest.mark.parametrize("args", [
    ("smoke", "render", "stacks/Pulumi.example.yaml"),
    ("catalog", "list"),
])
def test_a_reader_that_stops_early_ends_the_command_quietly(args: tuple[str, ...]) -> None:
    """`accelfleet smoke render | head -1`: the reader takes one line and closes the pipe."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"}
    proc = subprocess.Popen([sys.executable, "-m", "cli", *args], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()
    proc.stdout.close()  # as `head -1` does
    err = proc.stderr.read().decode("utf-8", "replace")
    code = proc.wait(timeout=120)
    assert first, err
    assert code == 0, err
    assert "internal error" not in err and "Traceback" not in err and "Broken" not in err, err


def test_one_pool_and_one_system_pool_are_singular(tmp_path: Path) -> None:
    stack = tmp_path / "Pulumi.one.yaml"
    stack.write_text(BASE_STACK, encoding="utf-8")
    code, out = invoke("fleet", "validate", str(stack))
    assert code == 0, out
    assert ": 1 pool and 1 system pool, valid" in out, out


def test_counts_of_one_read_as_people_say_them() -> None:
    assert counted(1, "chip") == "1 chip" and counted(4, "chip") == "4 chips"
    assert all_of(1, "device") == "the one device" and all_of(8, "device") == "all 8 devices"
    assert "over 1 device = 1" in judge_psum(1.0, 1).reason
    assert "over 4 devices = 4" in judge_psum(4.0, 4).reason
    one = next(s for s in load_catalog().shapes(kind="tpu") if s.chips == 1)
    assert ": 1 chip on 1 host of " in one.describe(), one.describe()


@pytest.mark.parametrize("verb", ["resize", "remove"])
def test_a_stack_given_before_the_pool_name_says_how_to_write_it(verb: str) -> None:
    example = "stacks/Pulumi.example.yaml"
    before = Path(example).read_bytes()
    code, out = invoke("pool", verb, example, "l4-spot")
    assert code == 2, out
    assert f"`pool {verb}` takes one argument, the pool's NAME" in out, out
    assert f"--stack {example}" in out and "accelfleet pool " + verb + " l4-spot" in out, out
    assert "Got unexpected extra argument" not in out and "Usage:" not in out, out
    assert Path(example).read_bytes() == before


def test_the_readme_says_how_long_make_test_takes_and_what_to_run_while_editing() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "`make test` takes 5-7 minutes" in readme
    assert "while editing, run the tests of what you change" in readme
    assert "pytest -q tests/" in readme


def test_nodes_x_dev_multiplies_to_the_pools_devices() -> None:
    """Before: `2 x 16` for 2 nodes of 8 GPUs (the pool's total after the x)."""
    from cli._compact import nodes_by_devices

    code, out = invoke("fleet", "validate", "stacks/Pulumi.example.yaml")
    assert code == 0, out
    rows = {line.split()[0]: line for line in out.splitlines() if line.startswith(" ")}
    assert " 2 x 8 " in rows["h100-train"], rows["h100-train"]  # a3-highgpu-8g: 8 H100 each
    assert " 16 x 4 " in rows["v5p-slice"], rows["v5p-slice"]  # 4x4x4: 64 chips, 16 hosts
    assert nodes_by_devices({"nodes": 0, "devices": 0}) == "0"


def test_the_resize_of_a_tpu_slice_says_the_slice_is_recreated() -> None:
    code, out = invoke("pool", "resize", "v6e-serve", "--topology", "2x4", "--stack",
                       "stacks/Pulumi.example.yaml", "--dry-run", "--reason", "serving load")
    assert code == 0, out
    assert ("note: the slice is recreated, not resized in place: `pulumi up` deletes "
            "v6e-serve (2x2: 1 host and the work on it)") in out, out
    code, out = invoke("pool", "resize", "h100-train", "--nodes", "1", "--stack",
                       "stacks/Pulumi.example.yaml", "--dry-run")
    assert code == 0 and "recreated" not in out, out  # a GPU pool resizes in place


def test_smoke_local_says_which_files_it_wrote(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    html, junit = tmp_path / "report.html", tmp_path / "junit.xml"
    code, out = invoke("smoke", "local", "--tier", "0", "--no-history", "--html", str(html),
                       "--junit", str(junit))
    assert code == 0, out
    assert f"wrote {junit}\n" in out and f"wrote {html}\n" in out, out
    assert html.is_file() and junit.is_file()


def test_plan_policies_prints_the_plan_then_the_policies() -> None:
    """Before: `plan --policies` printed the policies' line alone, without the plan."""
    code, out = invoke("plan", "stacks/Pulumi.example.yaml", "--policies")
    assert code == 0, out
    assert out.startswith("stack example (stacks/Pulumi.example.yaml): "), out[:300]
    assert "└── fleet (Fleet, " in out and "h100-train" in out
    assert out.index("└── fleet") < out.index("policies: stack example passes all")


def _complete(words: str) -> list[str]:
    """What bash gets for the last word of `words` (Click's completion protocol, in-process)."""
    from typer._completion_classes import completion_init
    from typer.testing import CliRunner

    from cli.main import app

    completion_init()
    cword = len(words.split()) - (0 if words.endswith(" ") else 1)
    result = CliRunner().invoke(app, [], prog_name="accelfleet", env={
        "_ACCELFLEET_COMPLETE": "complete_bash", "COMP_WORDS": words,
        "COMP_CWORD": str(cword)})
    assert result.exit_code == 0, result.output
    return result.output.split()


def test_completion_offers_the_values_an_option_takes_not_file_names() -> None:
    """Before: nothing, so bash fell back to file names (`complete -o default`)."""
    assert _complete("accelfleet plan --format ") == ["text", "json", "markdown"]
    assert _complete("accelfleet completion z") == ["zsh"]
    assert _complete("accelfleet pool request --capacity ") == [
        "on-demand", "spot", "flex-start", "queued"]
    assert _complete("accelfleet pool request --team ") == ["research", "vision"]
    assert _complete("accelfleet queue show --team v") == ["vision"]
    assert _complete("accelfleet pool resize h1") == ["h100-train"]
    assert _complete("accelfleet pool remove --stack stacks/Pulumi.example.yaml v") == [
        "v5p-slice", "v6e-serve"]
    assert _complete("accelfleet smoke run --pools g6-ci,p") == ["g6-ci,p5-train"]
    assert _complete("accelfleet pool resize --stack nowhere.yaml ") == []  # never an error


def test_a_slice_named_for_its_topology_says_so_when_resized(tmp_path: Path) -> None:
    """A slice `pool request` named vision-v6e-2x2, resized to 2x4: the name is kept (routing
    refers to it), and a note says it still says 2x2 and how to rename it."""
    stack = tmp_path / "Pulumi.prod.yaml"
    text = Path("stacks/Pulumi.example.yaml").read_text(encoding="utf-8")
    stack.write_text(text.replace("v6e-serve", "vision-v6e-2x2"), encoding="utf-8")
    code, out = invoke("pool", "resize", "vision-v6e-2x2", "--topology", "2x4", "--stack",
                       str(stack), "--dry-run", "--reason", "serving load")
    assert code == 0, out
    assert "note: its name vision-v6e-2x2 still says 2x2" in out, out
    assert "to rename it vision-v6e-2x4" in out, out
    code, out = invoke("pool", "resize", "v6e-serve", "--topology", "2x4", "--stack",
                       "stacks/Pulumi.example.yaml", "--dry-run", "--reason", "serving load")
    assert code == 0 and "still says" not in out, out


def test_two_unusable_clusters_each_get_their_own_fix_line(tmp_path: Path) -> None:
    """Before: one `hint:` of about 400 characters joining both clusters' fixes."""
    from fleet.errors import SetupError
    from smoke.cluster.access import ClusterRef, connect

    refs = [ClusterRef("ml-gke", "gcp", "us-central1", "acme"),
            ClusterRef("ml-eks", "aws", "us-east-1")]
    with pytest.raises(SetupError) as err:
        connect(refs, kubeconfig=tmp_path / "missing", check=False)
    lines = err.value.message.splitlines()
    assert lines[0] == "2 of 2 clusters cannot be used:"
    for name in ("ml-gke", "ml-eks"):
        at = next(i for i, line in enumerate(lines) if line.startswith(f"  - cluster {name}:"))
        assert lines[at + 1].startswith("    fix: "), lines
    assert len(err.value.hint) < 100, err.value.hint
