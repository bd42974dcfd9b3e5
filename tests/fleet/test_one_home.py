"""Things written once (issue 22): each test fails when a second copy comes back."""

from __future__ import annotations

import ast
import re
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


def _sources(*folders: str) -> list[Path]:
    return [p for folder in folders for p in sorted((ROOT / folder).rglob("*.py"))]


def test_one_place_turns_an_error_into_an_exit_code() -> None:
    """cli._errors.report maps an error to the exit code (the AccelfleetError's own, 130 for
    Ctrl-C, 3 for a bug); cli.main.run once did it a second time."""
    spelled = []
    for path in _sources("cli", "stacks"):
        text = path.read_text(encoding="utf-8")
        if path.name != "_errors.py" and ("exc.exit_code" in text or "EXIT_INTERNAL" in text
                                          or "EXIT_BAD_INPUT" in text
                                          or re.search(r"Exit\(\d+\)", text)):
            spelled.append(str(path.relative_to(ROOT)))
    assert spelled == []


PACKAGES = ("fleet", "components", "cli", "policies", "stacks", "smoke")


def test_the_plan_placeholders_are_spelled_once() -> None:
    """`<computed>` and `<secret>` are fleet.placeholders' constants, imported (plan, diff and
    the policy rules each once spelled them)."""
    home = ROOT / "fleet" / "placeholders.py"
    spelled = []
    for path in _sources(*PACKAGES):
        if path == home:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and node.value in ("<computed>", "<secret>"):
                spelled.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert spelled == []


def test_taint_effects_are_translated_in_one_table() -> None:
    """fleet.taints maps the stack's effect to the GKE and EKS API spellings (the GKE node
    pools and the EKS node groups each once kept a copy)."""
    api_forms = ("NO_SCHEDULE", "PREFER_NO_SCHEDULE", "NO_EXECUTE")
    home = ROOT / "fleet" / "taints.py"
    spelled = []
    for path in _sources(*PACKAGES):
        if path == home:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and node.value in (*api_forms, "NoSchedule",
                                                                 "PreferNoSchedule", "NoExecute"):
                spelled.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert spelled == []


def test_every_effect_has_each_apis_spelling() -> None:
    from typing import get_args

    from fleet.taints import EFFECTS, Effect, api_effect

    assert set(EFFECTS) == set(get_args(Effect))
    assert [api_effect(e, "gke") for e in get_args(Effect)] == [
        "NO_SCHEDULE", "PREFER_NO_SCHEDULE", "NO_EXECUTE"]
    assert [api_effect(e, "kubernetes") for e in get_args(Effect)] == list(get_args(Effect))


def test_one_problem_sink() -> None:
    """fleet.errors.Problems is the one class with `add(where, message, hint, accepted)`: the
    rules checker, the routing rules, the workload profile reader and four protocols once each
    defined their own."""
    defined = []
    for path in _sources(*PACKAGES):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, ast.FunctionDef) and item.name == "add" and \
                            [a.arg for a in item.args.args[:3]] == ["self", "where", "message"]:
                        defined.append(f"{path.relative_to(ROOT)}:{node.name}")
    assert defined == ["fleet/errors.py:Problems"]
