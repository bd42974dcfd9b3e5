"""CI's install (`make ci-install`: no torch, no jax) runs what CI runs (issue 38): the
commands of the workflows, with torch, jax and numpy made unimportable in a fresh Python,
exit as they do with them, and none of them imports either. pyproject's own dependencies
bring neither."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

from tests.smoke.recorded import DATA

ROOT = Path(__file__).resolve().parents[2]
BLOCKED = ("torch", "jax", "jaxlib", "numpy")

# A fresh interpreter where importing torch, jax or numpy fails (as on a machine without
# them), runs each command through the CLI and says what it exited and what it imported.
SCRIPT = f"""
import importlib.abc, json, sys

class NoML(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in {BLOCKED!r}:
            raise ImportError(f"{{name}} is not installed (CI's install)")
        return None

sys.meta_path.insert(0, NoML())
from typer.testing import CliRunner
from cli.main import app

out = {{}}
for args in json.loads(sys.argv[1]):
    r = CliRunner().invoke(app, args)
    out[" ".join(args)] = [r.exit_code, (r.output + (r.stderr if r.stderr_bytes else ""))[-2000:]]
import smoke.session, smoke.cluster.launcher, smoke.cluster.access, smoke.gate.session  # noqa
out["modules"] = sorted(m for m in sys.modules if m.split(".")[0] in {BLOCKED!r})
print(json.dumps(out))
"""


def test_what_ci_runs_needs_no_torch_or_jax(tmp_path: Path) -> None:
    stack = "stacks/Pulumi.example.yaml"
    commands = [
        ["--help"],
        ["fleet", "validate", stack],
        ["plan", stack, "--policies"],
        ["plan", stack, "--format", "json", "--out", str(tmp_path / "plan.json")],
        ["smoke", "render", stack, "--out", str(tmp_path / "manifests")],
        ["smoke", "report", str(DATA), "--html", str(tmp_path / "r.html"), "--junit",
         str(tmp_path / "j.xml")],
    ]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "160",
           "ACCELFLEET_HISTORY": str(tmp_path / "h.sqlite")}
    done = subprocess.run([sys.executable, "-c", SCRIPT, json.dumps(commands)], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out.pop("modules") == []
    expected = {"smoke report": 1}  # the recorded run has a failing node: exit 1, as saved
    for words, (code, text) in out.items():
        want = next((c for k, c in expected.items() if words.startswith(k)), 0)
        assert code == want, (words, text)
        assert "not installed" not in text and "Traceback" not in text, (words, text)
    assert (tmp_path / "r.html").is_file() and (tmp_path / "plan.json").is_file()


def test_the_base_install_brings_no_torch_or_jax() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    names = [d.split(">")[0].split("=")[0].split("<")[0].split("[")[0].strip().lower()
             for d in project["dependencies"] + project["optional-dependencies"]["policy"]]
    assert not set(names) & {"torch", "jax", "jaxlib", "numpy"}, names
