"""Issue 22: the layering is import-linter contracts (pyproject.toml `[tool.importlinter]`),
run by `make lint` and here; they replace the per-case "this module imports no pulumi" tests.
The contracts see every import statement, a function's lazy import included: a probe that
imported kubernetes inside a function would break the pod's bundle as surely as a top-level
one, and is caught the same way."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


def _contracts() -> list[dict[str, object]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return list(config["tool"]["importlinter"]["contracts"])


def test_the_layering_contracts_hold() -> None:
    out = subprocess.run([str(LINT_IMPORTS), "--no-cache"], cwd=ROOT, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    assert f"Contracts: {len(_contracts())} kept, 0 broken." in out.stdout


def test_the_contracts_say_what_the_design_says() -> None:
    by_source = {tuple(c.get("source_modules", ())): c for c in _contracts()
                 if c["type"] == "forbidden"}
    assert "pulumi" in by_source[("smoke",)]["forbidden_modules"]  # type: ignore[operator]
    probes = by_source[("smoke.probes",)]["forbidden_modules"]
    assert {"kubernetes", "pydantic", "ruamel"} <= set(probes)  # type: ignore[arg-type]
    layers = [c["layers"] for c in _contracts() if c["type"] == "layers"
              and "containers" not in c]
    assert layers == [["cli", "policies", "components | smoke", "fleet"]]


def test_a_lazy_import_in_a_probe_breaks_its_contract(tmp_path: Path) -> None:
    """The same contract on a small tree: a probe importing kubernetes inside a function."""
    probes = tmp_path / "smoke" / "probes"
    probes.mkdir(parents=True)
    (tmp_path / "smoke" / "__init__.py").write_text("")
    (probes / "__init__.py").write_text("")
    (probes / "agent.py").write_text("def main() -> None:\n    import kubernetes\n")
    (tmp_path / ".importlinter").write_text(
        "[importlinter]\nroot_package = smoke\ninclude_external_packages = True\n\n"
        "[importlinter:contract:probes]\nname = probes\ntype = forbidden\n"
        "source_modules = smoke.probes\nforbidden_modules = kubernetes\n")
    out = subprocess.run([str(LINT_IMPORTS), "--no-cache"], cwd=tmp_path, capture_output=True,
                         text=True, timeout=120, env={"PYTHONPATH": str(tmp_path),
                                                      "PATH": "/usr/bin:/bin"})
    assert out.returncode == 1, out.stdout + out.stderr
    assert "smoke.probes.agent -> kubernetes" in out.stdout
