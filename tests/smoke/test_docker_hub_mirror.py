"""Issue 38: proof pods pull the pinned torch image from Docker Hub, anonymously, through the
cluster's NAT (Docker Hub: 10 pulls an hour per IPv4 address for unauthenticated users), so a
pool of new nodes behind one address is throttled. `smoke.docker_hub_mirror` pulls every
pinned Docker Hub image through a mirror (an Artifact Registry remote repository, an ECR
pull-through cache): same path, same digest; other registries' images are left alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from fleet.errors import SpecError
from fleet.rules.validate import validate_fleet
from fleet.stack.read import EXAMPLE_STACK
from smoke.cluster.workload import docker_hub_path, load_images, mirrored
from smoke.session import SmokeRequest, plan_run
from tests.fleet.conftest import BASE

MIRROR = "us-docker.pkg.dev/acme-ml-prod/docker-hub"


@pytest.mark.parametrize(("ref", "path"), [
    ("pytorch/pytorch:2.11@sha256:" + "e" * 64, "pytorch/pytorch:2.11@sha256:" + "e" * 64),
    ("ubuntu:22.04", "library/ubuntu:22.04"),
    ("docker.io/pytorch/pytorch:2.11", "pytorch/pytorch:2.11"),
    ("index.docker.io/library/busybox", "library/busybox"),
    ("public.ecr.aws/deep-learning-containers/pytorch-training:2.7", None),
    ("us-docker.pkg.dev/cloud-tpu-images/jax-ai-image/tpu:jax0.8.1-rev1", None),
    ("localhost/agent:1", None),
    ("registry:5000/agent:1", None),
])
def test_a_docker_hub_reference_is_told_from_another_registrys(ref: str, path: str | None
                                                               ) -> None:
    assert docker_hub_path(ref) == path
    assert mirrored(ref, MIRROR) == (f"{MIRROR}/{path}" if path else ref)
    assert mirrored(ref, None) == ref


def _stack(tmp_path: Path, smoke_lines: str) -> Path:
    text = EXAMPLE_STACK.read_text(encoding="utf-8")
    marker = "      timeout_s: 900\n"
    assert marker in text
    stack = tmp_path / "Pulumi.mirror.yaml"
    stack.write_text(text.replace(marker, marker + smoke_lines), encoding="utf-8")
    return stack


def _images(stack: Path) -> set[str]:
    run, _, _ = plan_run(SmokeRequest(stack_file=stack), run_id="render")
    return {w.image for w in run.pools if w.kind != "skipped"}


def test_the_mirror_pulls_the_pinned_docker_hub_image_through_it(tmp_path: Path) -> None:
    pinned = load_images()["torch"].ref
    assert docker_hub_path(pinned) is not None  # the stock torch image is Docker Hub's
    plain = _images(_stack(tmp_path, ""))
    assert pinned in plain
    images = _images(_stack(tmp_path, f"      docker_hub_mirror: {MIRROR}\n"))
    assert f"{MIRROR}/{pinned}" in images and pinned not in images
    assert "@sha256:" in f"{MIRROR}/{pinned}"  # the digest still pins it
    others = plain - {pinned}
    assert others and others <= images  # the EFA and TPU images (ECR, Artifact Registry) stay


def test_torch_image_still_wins_over_the_mirror(tmp_path: Path) -> None:
    own = "us-docker.pkg.dev/acme-ml-prod/smoke/torch:2.11"
    images = _images(_stack(tmp_path, f"      docker_hub_mirror: {MIRROR}\n"
                                      f"      torch_image: {own}\n"))
    assert own in images and not any(i.startswith(f"{MIRROR}/pytorch") for i in images)


@pytest.mark.parametrize("value", ["https://us-docker.pkg.dev/acme/hub", "hub", "a b/c",
                                   "us-docker.pkg.dev/acme/hub:latest",
                                   "us-docker.pkg.dev/acme/hub@sha256:" + "0" * 64])
def test_a_mirror_that_is_no_registry_path_is_refused(value: str) -> None:
    spec = {**BASE, "smoke": {"docker_hub_mirror": value}}
    with pytest.raises(SpecError) as err:
        validate_fleet(spec)
    text = str(err.value)
    assert "smoke.docker_hub_mirror" in text and "not a registry path" in text, text
    assert "pull-through cache" in text, text


def test_the_docs_say_where_proof_pods_pull_from() -> None:
    root = Path(__file__).resolve().parents[2]
    smoke = " ".join((root / "docs" / "smoke.md").read_text(encoding="utf-8").split())
    assert "Where proof pods pull from" in smoke
    assert "10 pulls per hour" in smoke and "docker_hub_mirror" in smoke
    stack = (root / "docs" / "stack.md").read_text(encoding="utf-8")
    assert "| `docker_hub_mirror` |" in stack
