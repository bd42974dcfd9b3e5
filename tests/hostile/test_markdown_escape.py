"""Item 16: a value with a line break and a code fence never escapes the PR comment's code
block (`plan --diff --format markdown`) nor the plain plan's (`plan --format markdown`), and
never breaks a table row or a list item: every value shown in markdown is escaped."""

from __future__ import annotations

import re

from cli.plan_diff import fenced, render_markdown
from components.engine.diff import diff_plans

HOSTILE = "x\n```\n# injected heading\n<img src=x onerror=alert(1)>\n````"


def _plan(value: str) -> dict[str, object]:
    return {"stack": "s", "resources": [
        {"type": "gcp:container/nodePool:NodePool", "name": "ml-gke-h100", "custom": True,
         "inputs": {"nodeConfig": {"labels": {"team": value}}}}],
        "pools": [], "teams": [{"name": "t|eam\n## x", "monthly_usd": 1.0}]}


def _blocks(markdown: str) -> list[tuple[str, list[str]]]:
    """Each fenced code block as CommonMark reads it: (fence, lines inside)."""
    out: list[tuple[str, list[str]]] = []
    fence: str | None = None
    inside: list[str] = []
    for line in markdown.splitlines():
        run = re.match(r"^(`{3,})", line)
        if fence is None and run:
            fence, inside = run[1], []
        elif fence is not None and run and len(run[1]) >= len(fence) and \
                line.strip("`") == "":
            out.append((fence, inside))
            fence = None
        elif fence is not None:
            inside.append(line)
    assert fence is None, "a code block is never closed"
    return out


def test_a_fence_in_a_value_stays_inside_the_diff_block() -> None:
    text = render_markdown(diff_plans(_plan("a"), _plan(HOSTILE), base="base.json"))
    blocks = _blocks(text)
    assert len(blocks) == 1
    body = "\n".join(blocks[0][1])
    assert "injected heading" in body and "```" in body  # shown, inside the block
    outside = text.replace(body, "")
    assert "# injected" not in outside and "<img" not in outside


def test_a_team_name_with_a_pipe_and_newline_stays_in_its_table_row() -> None:
    text = render_markdown(diff_plans(_plan("a"), {**_plan("a"), "teams": [
        {"name": "t|eam\n## x", "monthly_usd": 2.0}]}, base="base.json"))
    rows = [line for line in text.splitlines() if "t\\|eam" in line]
    assert rows and all(line.startswith("|") and line.endswith("|") for line in rows)
    assert not any(line.startswith("## x") for line in text.splitlines())


def test_fenced_picks_a_fence_longer_than_any_backtick_run() -> None:
    lines = fenced(HOSTILE, "text")
    assert lines[0] == "`````text" and lines[-1] == "`````"
    assert _blocks("\n".join(lines)) == [("`````", HOSTILE.splitlines())]
