"""Writing pool changes into stack files (fleet.stack.edit): every comment, key order and quoting
of the example survive request, resize and remove; the file is replaced atomically under a
lock, so that 50 concurrent requests all land while a reader never sees a half-written file."""

from __future__ import annotations

import os
import shutil
import stat
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from benchmarks.bench_pool_requests import comment_lines, concurrent_requests
from fleet.catalog import load_catalog
from fleet.errors import InputError, RequestRefused
from fleet.requests.request import PoolRequest, remove_pool, request_pool, resize_pool
from fleet.rules.validate import validate_fleet
from fleet.stack.edit import edit_stack, lock_path
from fleet.stack.read import EXAMPLE_STACK, read_stack_file

CAT = load_catalog()
TODAY = date(2026, 11, 23)


@pytest.fixture
def stack(tmp_path: Path) -> Path:
    path = tmp_path / "Pulumi.edit.yaml"
    shutil.copy(EXAMPLE_STACK, path)
    return path


def ask(**fields: Any) -> Any:
    return lambda raw: request_pool(raw, PoolRequest(**fields), catalog=CAT, today=TODAY)


def in_order(needles: list[str], haystack: list[str]) -> bool:
    """Every needle is in the haystack, in the same order."""
    it = iter(haystack)
    return all(any(n == h for h in it) for n in needles)


def test_request_resize_and_remove_keep_every_comment_in_place(stack: Path) -> None:
    original = stack.read_text(encoding="utf-8")
    comments = comment_lines(original)
    assert len(comments) > 40
    steps = [ask(team="vision", accelerator="v6e 2x4", reason="ViT: eval # 2",
                 requested_by="ana@acme.com", expires=date(2027, 1, 31)),
             lambda raw: resize_pool(raw, "vision-v6e-2x4", topology="4x4", catalog=CAT,
                                     reason="more eval"),
             lambda raw: resize_pool(raw, "l4-spot", nodes=2, catalog=CAT, reason="INC-7"),
             lambda raw: resize_pool(raw, "v6e-serve", topology="2x4", catalog=CAT,
                                     reason="serving # load"),
             lambda raw: remove_pool(raw, "vision-v6e-2x4", catalog=CAT)]
    for step in steps:
        edit = edit_stack(stack, step, write=True)
        text = stack.read_text(encoding="utf-8")
        assert edit.written and text == edit.new_text
        assert in_order(comments, comment_lines(text)), step
        assert read_stack_file(stack) == edit.change.spec
        validate_fleet(read_stack_file(stack))
    text = stack.read_text(encoding="utf-8")
    # only the three values resized differ from the example, each on its own line, and each
    # resize that raised a cost recorded its reason on a line of its own
    import difflib

    diff = [d for d in difflib.ndiff(original.splitlines(), text.splitlines())
            if d[:2] in ("- ", "+ ")]
    assert sorted(diff) == sorted([
        "-         nodes: 1", "+         nodes: 2", "-         accelerator: v6e 2x2",
        "+         accelerator: v6e", "+         topology: 2x4", "+         reason: INC-7",
        "+         reason: 'serving # load'"]), diff
    assert any("# 2 x L4" in line for line in text.splitlines()[74:78])  # l4-spot's comment


def test_a_new_pool_lands_after_the_last_one_not_in_the_next_section(stack: Path) -> None:
    edit_stack(stack, ask(team="vision", accelerator="v6e 2x4", reason="it's: quoted",
                          requested_by="ana@acme.com"), write=True)
    lines = stack.read_text(encoding="utf-8").splitlines()
    at = lines.index("      - name: vision-v6e-2x4")
    assert lines[at - 1] == "" and lines[at - 2] == "        fabric: off"
    assert lines[at + 1:at + 8] == [
        "        cluster: ml-gke", "        team: vision", "        accelerator: v6e",
        "        topology: 2x4", "        zone: us-central1-b",
        "        requested_by: ana@acme.com", "        reason: \"it's: quoted\""]
    assert lines[at + 8] == "" and lines[at + 9].startswith("    # The rates you pay")


def test_removing_a_pool_takes_its_own_heading_comment_and_nothing_else(stack: Path) -> None:
    original = stack.read_text(encoding="utf-8")
    edit_stack(stack, lambda raw: remove_pool(raw, "g6-ci", catalog=CAT), write=True)
    text = stack.read_text(encoding="utf-8")
    gone = [c for c in comment_lines(original) if c not in comment_lines(text)]
    assert gone == ["      # One g6.12xlarge (4 x L4) for CI jobs. g6.12xlarge has an EFA "
                    "interface, but EFA does",
                    "      # not cross zones and CI needs none: `fabric: off` lets the pool "
                    "span two zones."]
    assert "\n\n\n" not in text and "g6-ci" not in text


def test_a_refusal_leaves_the_file_byte_identical(stack: Path) -> None:
    before = stack.read_bytes()
    mtime = stack.stat().st_mtime_ns
    with pytest.raises(RequestRefused):
        edit_stack(stack, ask(team="vision", accelerator="v6e 2x4", zone="us-central1-f"),
                   write=True)
    assert stack.read_bytes() == before and stack.stat().st_mtime_ns == mtime
    assert sorted(p.name for p in stack.parent.iterdir()) == sorted(
        [stack.name, lock_path(stack).name])  # no temporary file left behind


def test_the_write_keeps_permissions_and_follows_a_symlink(tmp_path: Path, stack: Path) -> None:
    os.chmod(stack, 0o600)
    link = tmp_path / "Pulumi.link.yaml"
    link.symlink_to(stack)
    edit_stack(link, ask(team="vision", accelerator="v6e 2x4"), write=True)
    assert link.is_symlink() and "vision-v6e-2x4" in stack.read_text(encoding="utf-8")
    assert stat.S_IMODE(stack.stat().st_mode) == 0o600


def _minimal(pools: str) -> str:
    return ("config:\n  accelfleet:fleet:\n    clouds:\n      gcp: {project: acme-ml-prod, "
            "region: us-central1}\n    clusters:\n      - {name: gke, cloud: gcp}  # one\n"
            "    teams:\n      - name: vision\n" + pools)


@pytest.mark.parametrize("pools", ["    pools: []   # none yet\n", ""])
def test_a_stack_with_no_pools_gets_a_pools_list(tmp_path: Path, pools: str) -> None:
    path = tmp_path / "Pulumi.empty.yaml"
    path.write_text(_minimal(pools), encoding="utf-8")
    edit_stack(path, ask(team="vision", accelerator="v6e 2x4"), write=True)
    text = path.read_text(encoding="utf-8")
    assert [p["name"] for p in read_stack_file(path)["pools"]] == ["vision-v6e-2x4"]
    assert "# one" in text and ("# none yet" in text) == bool(pools.strip().endswith("yet"))
    edit_stack(path, lambda raw: remove_pool(raw, "vision-v6e-2x4", catalog=CAT), write=True)
    assert read_stack_file(path)["pools"] == [] and "pools: []" in path.read_text()


def test_a_flow_style_pool_list_is_refused_with_the_fix(tmp_path: Path) -> None:
    path = tmp_path / "Pulumi.flow.yaml"
    path.write_text(_minimal("    pools: [{name: a, cluster: gke, team: vision, accelerator: "
                             "v6e, topology: 2x2, zone: us-central1-b}]\n"), encoding="utf-8")
    with pytest.raises(InputError, match="flow style"):
        edit_stack(path, ask(team="vision", accelerator="v6e 2x4"), write=True)


@pytest.mark.slow
def test_sixteen_concurrent_requests_all_land_and_a_reader_never_sees_half_a_file(
        stack: Path) -> None:
    """16 `python -m cli pool request` processes at once (eight per core here, each a whole
    CLI start; benchmarks/bench_pool_requests.py times 50); the lock serialises the writes,
    os.replace makes each one whole."""
    original = stack.read_text(encoding="utf-8")
    result = concurrent_requests(stack, 16)
    assert result.errors == [] and set(result.exit_codes) == {0}
    assert result.read_failures == [] and result.reads > 0
    pools = read_stack_file(stack)["pools"]
    assert {f"burst-{i:03d}" for i in range(16)} <= {p["name"] for p in pools}
    assert len(pools) == 6 + 16
    assert in_order(comment_lines(original), comment_lines(stack.read_text(encoding="utf-8")))
    validate_fleet(read_stack_file(stack))
