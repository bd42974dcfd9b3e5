"""The README is a front door (issue 22): short, pointing at every page of docs/, every link
it and the docs hold leads somewhere, and the output its walk-through shows is what the
commands print today."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.main import app

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
PAGES = sorted((ROOT / "docs").glob("*.md"))
MAX_README_BYTES = 8 * 1024
LINK = re.compile(r"\]\(([^)\s]+)\)")
FENCED = re.compile(r"```.*?```", re.DOTALL)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to '-'."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    prose = FENCED.sub("", path.read_text(encoding="utf-8"))
    return {slug(h) for h in re.findall(r"^#+ (.*)$", prose, flags=re.MULTILINE)}


def test_the_readme_is_short() -> None:
    size = len(README.read_bytes())
    assert size < MAX_README_BYTES, (
        f"README.md is {size:,} bytes, over {MAX_README_BYTES:,}: move reference material to "
        "docs/ and link it")


def test_the_readme_links_every_docs_page() -> None:
    linked = {Path(link.partition("#")[0]).name
              for link in LINK.findall(README.read_text(encoding="utf-8"))}
    missing = [p.name for p in PAGES if p.name not in linked]
    assert not missing, f"README.md links no docs/{missing}"


@pytest.mark.parametrize("page", [README, *PAGES], ids=lambda p: p.name)
def test_every_relative_link_resolves(page: Path) -> None:
    for link in LINK.findall(FENCED.sub("", page.read_text(encoding="utf-8"))):
        if re.match(r"^[a-z]+:", link):
            continue  # https:, mailto:
        path, _, anchor = link.partition("#")
        target = (page.parent / path).resolve() if path else page
        assert target.exists(), f"{page.name} links {link}: no such file"
        if anchor and target.suffix == ".md":
            assert anchor in anchors(target), f"{page.name} links {link}: no such heading"


def test_the_walk_through_shows_what_validate_prints(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)  # the README runs it from the checkout
    result = CliRunner().invoke(app, ["fleet", "validate", "stacks/Pulumi.example.yaml"],
                                env={"COLUMNS": "150"})
    assert result.exit_code == 0, result.output
    text = README.read_text(encoding="utf-8")
    first = result.output.splitlines()[0].strip()
    assert first in text, f"README.md shows another `fleet validate` result than {first!r}"
    for line in result.output.splitlines():
        if line.startswith("team "):
            assert line.strip() in text, f"README.md lacks {line.strip()!r}"


def test_the_walk_through_shows_what_plan_prints(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every line of the README's `accelfleet plan` excerpt is a line the plan prints today
    (a line cut short with `...` is its start): the system pool's machine type and the
    resource counts drifted (issue 38: m6i.large, where the catalog's default is m6i.xlarge)."""
    monkeypatch.chdir(ROOT)
    result = CliRunner().invoke(app, ["plan", "stacks/Pulumi.example.yaml"],
                                env={"COLUMNS": "400"})
    assert result.exit_code == 0, result.output
    printed = [line.rstrip() for line in result.output.splitlines()]
    text = README.read_text(encoding="utf-8")
    block = text[text.index("$ accelfleet plan stacks/Pulumi.example.yaml"):]
    block = block[:block.index("```")].splitlines()[1:]
    shown = [line.rstrip() for line in block if line.strip() not in ("", "...")]
    assert len(shown) >= 4, block
    for line in shown:
        if line.endswith("...)"):
            start = line[:-len("...)")]
            assert any(p.startswith(start) for p in printed), f"README.md: {line!r}"
        else:
            assert line in printed, f"README.md shows {line!r}, which plan no longer prints"


def test_the_example_names_the_catalogs_system_pool_defaults() -> None:
    from fleet.catalog import load_catalog

    example = (ROOT / "stacks" / "Pulumi.example.yaml").read_text(encoding="utf-8")
    cat = load_catalog()
    for cloud in ("gcp", "aws"):
        sp = cat.system_pool_defaults(cloud)
        assert f"{sp.nodes} x {sp.machine_type} on {'GKE' if cloud == 'gcp' else 'EKS'}" \
            in " ".join(example.split()), (cloud, sp)
