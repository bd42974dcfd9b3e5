"""Things written once (issue 22): each test fails when a second copy comes back."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _function_imports(path: Path) -> list[str]:
    """The modules `path` imports inside a function (a lazy import)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = []
    for fn in ast.walk(tree):
        if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            out += [node.module or "" for node in ast.walk(fn)
                    if isinstance(node, ast.ImportFrom)]
    return out


def test_requests_modules_import_each_other_at_the_top_only() -> None:
    """options and request both edit the fleet mapping through fleet.requests.edits: no lazy
    import of one from the other (the cycle it hid)."""
    for path in sorted((ROOT / "fleet" / "requests").glob("*.py")):
        lazy = [m for m in _function_imports(path) if m.startswith("fleet.requests")]
        assert lazy == [], f"{path.name} imports {lazy} inside a function"
