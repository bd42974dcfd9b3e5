"""Issue 35, deployable as shipped, in the stack:

- `gate.image_pull_secrets`: Secret names, checked as Kubernetes checks a Secret's name (a DNS
  subdomain), none twice; a bad one is refused with the fix (exit 2);
- `fleet validate` and `plan` warn (exit 0) while a stack with a gated pool runs the default
  controller image of a version no release published (fleet/catalog/data/gate_images.yaml);
  an image of the stack's own, a published default, or a stack with nothing gated: no warning.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from cli.main import app
from fleet import __version__, validate_fleet
from fleet import gate as G
from tests.fleet.conftest import only, pool

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = str(ROOT / "stacks" / "Pulumi.example.yaml")
DIGEST = "sha256:" + "ab" * 32
MINE = f"ghcr.io/acme/accelfleet-gate@{DIGEST}"


def _image_warnings(fleet: Any) -> list[Any]:
    return [w for w in fleet.warnings if w.where == "gate.image"]


@pytest.fixture
def published(monkeypatch: pytest.MonkeyPatch) -> list[G.PublishedImage]:
    """The published images, as a test sets them (gate_images.yaml otherwise)."""
    rows: list[G.PublishedImage] = []
    monkeypatch.setattr(G, "published_images", lambda: tuple(rows))
    return rows


# -- image_pull_secrets --------------------------------------------------------------------
def test_pull_secrets_are_accepted_and_reach_the_fleet(spec: dict[str, Any]) -> None:
    spec["gate"] = {"image": MINE, "image_pull_secrets": ["ghcr-pull", "mirror.example.com"]}
    fleet = validate_fleet(spec)
    assert fleet.spec.gate.image_pull_secrets == ["ghcr-pull", "mirror.example.com"]
    assert validate_fleet({**spec, "gate": {"image": MINE}}).spec.gate.image_pull_secrets == []


@pytest.mark.parametrize("value, says", [
    ("ghcr-pull", "a list of Secret names"),
    (["Ghcr_Pull"], "is not a Kubernetes Secret name"),
    (["-pull"], "is not a Kubernetes Secret name"),
    (["pull-"], "is not a Kubernetes Secret name"),
    (["a" * 254], "is not a Kubernetes Secret name"),
    (["a..b"], "is not a Kubernetes Secret name"),
    (["ghcr-pull", "ghcr-pull"], "named twice"),
    ([f"s{i}" for i in range(17)], "at most 16"),
])
def test_a_bad_pull_secret_is_refused_with_the_fix(spec: dict[str, Any], value: Any,
                                                   says: str) -> None:
    spec["gate"] = {"image_pull_secrets": value}
    problem = only(spec, "gate.image_pull_secrets")
    assert says in problem.message, problem
    assert problem.hint, problem


def test_the_longest_secret_name_kubernetes_takes_is_taken(spec: dict[str, Any]) -> None:
    name = ".".join(["a" * 63] * 3 + ["b" * 61])  # 253 characters, four labels
    assert len(name) == 253
    spec["gate"] = {"image": MINE, "image_pull_secrets": [name]}
    assert validate_fleet(spec).spec.gate.image_pull_secrets == [name]


# -- the unpublished default image -----------------------------------------------------------
def test_the_default_image_of_an_unpublished_release_warns(
        spec: dict[str, Any], published: list[G.PublishedImage]) -> None:
    [warning] = _image_warnings(validate_fleet(spec))
    assert G.CONTROLLER_IMAGE in warning.message and "not published" in warning.message
    assert "gate: {image:" in warning.hint and "image_pull_secrets" in warning.hint
    spec["gate"] = {"image": G.CONTROLLER_IMAGE}  # named, still the default
    assert len(_image_warnings(validate_fleet(spec))) == 1


def test_no_warning_for_a_published_default_an_own_image_or_nothing_gated(
        spec: dict[str, Any], published: list[G.PublishedImage]) -> None:
    spec["gate"] = {"image": MINE}
    assert _image_warnings(validate_fleet(spec)) == []
    del spec["gate"]
    published.append(G.PublishedImage(__version__, "ghcr.io/someone/accelfleet-gate", DIGEST))
    assert len(_image_warnings(validate_fleet(spec))) == 1  # a fork's is not ours
    published.append(G.PublishedImage(__version__, G.CONTROLLER_REPOSITORY, DIGEST))
    assert _image_warnings(validate_fleet(spec)) == []
    published.clear()
    spec["pools"] = [pool(name="cpu", accelerator="n2-standard-8")]
    assert _image_warnings(validate_fleet(spec)) == []


def test_the_shipped_data_file_reads_and_says_what_is_published() -> None:
    rows = G.published_images()  # the file in the package, as a stack reads it
    assert all(r.image and r.version and r.digest.startswith("sha256:") for r in rows)
    assert G.default_image_published(None) == any(
        r.version == __version__ and r.image == G.CONTROLLER_REPOSITORY for r in rows)
    assert G.default_image_published(MINE) is None


def test_validate_and_plan_warn_and_still_pass(published: list[G.PublishedImage]) -> None:
    runner = CliRunner()
    for argv in (["fleet", "validate", EXAMPLE], ["plan", EXAMPLE]):
        result = runner.invoke(app, argv)
        assert result.exit_code == 0, result.output
        flat = " ".join(result.output.split())
        assert "warning: gate.image: the default gate controller image" in flat, argv


def test_a_misspelt_pull_secrets_key_gets_a_did_you_mean(spec: dict[str, Any]) -> None:
    spec["gate"] = {"image_pull_secret": ["ghcr-pull"]}
    problem = only(spec, "gate.image_pull_secret")
    assert "did you mean 'image_pull_secrets'" in problem.message
