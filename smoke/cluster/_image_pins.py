"""The stock framework images a smoke pod runs the agent in (smoke/cluster/data/images.yaml:
pinned by digest, each with its source), and a Docker Hub image pulled through a mirror
(smoke.cluster.workload re-exports these)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib import resources

from fleet.catalog import image_ref_problem
from fleet.errors import CatalogError


@dataclass(frozen=True)
class Image:
    """A stock framework image the agent runs in (smoke/cluster/data/images.yaml)."""

    key: str
    backend: str
    ref: str
    source: str
    as_of: str
    digest_found: bool = True
    note: str = ""


@cache
def _images() -> tuple[Image, ...]:
    from ruamel.yaml import YAML

    text = resources.files("smoke.cluster").joinpath("data", "images.yaml").read_text(
        encoding="utf-8")
    data = YAML(typ="safe", pure=True).load(text)
    if not isinstance(data, dict) or data.get("schema_version") != 1:
        raise CatalogError("smoke/cluster/data/images.yaml: schema_version 1 expected")
    out = []
    for raw in data.get("images") or []:
        try:
            image = Image(**raw)
        except TypeError as exc:
            raise CatalogError(f"smoke/cluster/data/images.yaml {raw.get('key')}: {exc}") from None
        problem = image_ref_problem(image.ref)
        if problem is None and not image.source:
            problem = "needs a source"
        if problem is None and image.digest_found != ("@sha256:" in image.ref):
            problem = "digest_found must say whether the reference carries a digest"
        if problem:
            raise CatalogError(f"smoke/cluster/data/images.yaml {image.key}: {problem}")
        out.append(image)
    if len({i.key for i in out}) != len(out):
        raise CatalogError("smoke/cluster/data/images.yaml: duplicate key")
    return tuple(out)


DOCKER_HUB_HOSTS = ("docker.io", "index.docker.io", "registry-1.docker.io")


def docker_hub_path(ref: str) -> str | None:
    """The repository path (and tag, digest) of a Docker Hub image reference, as a mirror of
    Docker Hub serves it (`pytorch/pytorch:2.11@sha256:...`; an official image `ubuntu:22.04`
    is `library/ubuntu:22.04`); None for an image of another registry. A reference names its
    registry when its first component has a dot or a colon, or is `localhost`; else it is
    Docker Hub's (distribution/reference normalize.go, splitDockerDomain: the rule the Docker
    CLI and containerd apply, as its ports, e.g. realityone/docker-image-py, spell it; read
    2026-11-28)."""
    first, sep, rest = ref.partition("/")
    if sep and (first in DOCKER_HUB_HOSTS):
        ref = rest
    elif sep and ("." in first or ":" in first or first == "localhost"):
        return None
    name = ref.split("@", 1)[0].split(":", 1)[0]
    return ref if "/" in name else f"library/{ref}"


def mirrored(ref: str, mirror: str | None) -> str:
    """`ref` pulled through `mirror` when it is a Docker Hub image, else `ref` itself."""
    path = docker_hub_path(ref) if mirror else None
    return f"{mirror}/{path}" if mirror and path else ref


def load_images() -> dict[str, Image]:
    """The pinned images by key (torch, torch-efa, jax)."""
    return {i.key: i for i in _images()}
