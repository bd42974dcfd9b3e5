"""Issue 22: an underscore means private. A module named `_x` (or a name `_y` in a module) is
used only inside the folder (package) that holds it; what other packages use has a public
name. Other libraries' private modules are theirs to answer for and are listed here."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("fleet", "components", "smoke", "cli", "policies")
# Private names of other projects we rely on, each with why.
THEIRS = {
    "typer._completion_classes",  # Typer's own shell-completion classes (`accelfleet completion`)
    "typer._completion_shared",   # the script Typer writes for each shell
    "pulumi.runtime.sync_await",  # how the offline plan waits on Pulumi's event loop
}


def _module(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _private_uses() -> list[str]:
    found = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            here = _module(path)
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                    names = [f"{node.module}.{a.name}" for a in node.names]
                elif isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                else:
                    continue
                for name in names:
                    parts = name.split(".")
                    at = next((i for i, p in enumerate(parts)
                               if p.startswith("_") and not p.startswith("__")), None)
                    if at is None or not at:
                        continue
                    owner = ".".join(parts[:at])  # the package or module the name is private to
                    if ".".join(parts[:at + 1]) in THEIRS or owner in THEIRS:
                        continue
                    folder = owner if (ROOT / owner.replace(".", "/")).is_dir() \
                        else owner.rpartition(".")[0]
                    if not (here == folder or here.startswith(f"{folder}.")):
                        found.append(f"{here} uses {'.'.join(parts[:at + 1])}")
    return sorted(set(found))


def test_no_package_uses_another_folders_private_names() -> None:
    assert _private_uses() == []
