"""Where a cluster smoke run gets its facts: the inventory, the smoke settings, and the clusters.

The inventory comes from the stack file (computed offline, exactly as the Pulumi program
exports it) or from `--outputs`, a saved `pulumi stack output --json --show-secrets` whose
`inventory` is what was really deployed and whose `kubeconfigs` reach its clusters.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fleet import smoke_defaults as SD
from fleet.errors import InputError, StackFileError
from fleet.inventory import Inventory, build_inventory
from fleet.placeholders import SECRET
from smoke.cluster.access import ClusterRef


@dataclass(frozen=True)
class SmokeSettings:
    """The stack's `smoke:` section (defaults when the run has no stack file)."""

    max_tier: int = SD.MAX_TIER
    namespace: str = SD.NAMESPACE
    timeout_s: int = SD.TIMEOUT_S
    images: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class RunSource:
    inventory: Inventory
    settings: SmokeSettings
    clusters: dict[str, ClusterRef]
    kubeconfigs: dict[str, str]  # cluster -> kubeconfig YAML, from the stack's outputs
    stack_file: Path | None = None  # the stack file read (None: the outputs alone)

    def read(self, outputs: Path | Mapping[str, Any] | None = None) -> str:
        """What the run was read from, in words: the stack file, the outputs file, or both."""
        parts = [self.stack_file.as_posix()] if self.stack_file is not None else []
        if isinstance(outputs, Path):
            parts.append(f"outputs {outputs.as_posix()}")
        elif outputs is not None:
            parts.append("the stack's outputs")
        return " and ".join(parts) or "nothing"


MAX_OUTPUTS_BYTES = 64 * 2**20  # a stack's outputs with every kubeconfig: a few MB at most
OUTPUTS_HINT = "save it with `pulumi stack output --json --show-secrets > FILE`"


def _read_outputs(path: Path) -> dict[str, Any]:
    from fleet.input_files import load_json

    data = load_json(path, what="outputs file", max_bytes=MAX_OUTPUTS_BYTES, hint=OUTPUTS_HINT)
    if not isinstance(data, dict) or "inventory" not in data:
        raise InputError(f"outputs file {path} has no `inventory` output",
                         hint="these are not the outputs of an accelfleet stack; use "
                         "`pulumi stack output --json --show-secrets` of the fleet's stack")
    return data


def _outputs(outputs: Path | Mapping[str, Any]) -> tuple[Mapping[str, Any], str]:
    """The outputs, and how errors name them."""
    if isinstance(outputs, Path):
        return _read_outputs(outputs), f"outputs file {outputs}"
    if "inventory" not in outputs:
        raise InputError("the stack's outputs have no `inventory` output",
                         hint="these are not the outputs of an accelfleet stack")
    return outputs, "the stack's outputs"


def _mirrored(mirror: str | None) -> dict[str, str]:
    """The pinned images from Docker Hub, each pulled through the stack's Docker Hub mirror
    (none without one: the pins stand)."""
    if not mirror:
        return {}
    from smoke.cluster.workload import load_images, mirrored

    return {key: mirrored(image.ref, mirror) for key, image in load_images().items()
            if mirrored(image.ref, mirror) != image.ref}


def load_source(stack_file: Path | None, outputs: Path | Mapping[str, Any] | None) -> RunSource:
    """The run's facts from a stack file, an outputs file, or both (outputs' inventory wins:
    it is what was deployed; the stack file adds the smoke settings and the clusters' places).
    `outputs` may be the outputs themselves, as the Automation API returns them."""
    from fleet import load_fleet
    from fleet.stack.choice import stack_to_read
    from fleet.stack.read import stack_name

    if stack_file is None and outputs is None:
        stack_file = stack_to_read(None)
    settings = SmokeSettings()
    refs: dict[str, ClusterRef] = {}
    inventory: Inventory | None = None
    if stack_file is not None:
        if not stack_file.is_file():
            from fleet.stack.choice import stacks_there_are

            raise StackFileError(f"stack file {stack_file} does not exist",
                                 hint=stacks_there_are(stack_file))
        fleet = load_fleet(str(stack_file))
        s = fleet.spec.smoke
        images = _mirrored(s.docker_hub_mirror)
        images |= {k: v for k, v in (("torch", s.torch_image), ("jax", s.jax_image)) if v}
        settings = SmokeSettings(max_tier=min(s.max_tier, SD.TOP_TIER), namespace=s.namespace,
                                 timeout_s=s.timeout_s, images=images)
        gcp = fleet.spec.clouds.gcp
        for c in fleet.spec.clusters:
            region = fleet.spec.region_of(c.cloud)
            if region is not None:
                refs[c.name] = ClusterRef(c.name, c.cloud, region, gcp.project
                                          if c.cloud == "gcp" and gcp is not None else "")
        inventory = build_inventory(fleet, stack_name(stack_file))
    kubeconfigs: dict[str, str] = {}
    if outputs is not None:
        data, label = _outputs(outputs)
        try:
            inventory = Inventory.from_dict(data["inventory"])
        except InputError as exc:
            raise InputError(f"{label}: {exc.message}", hint=exc.hint) from None
        raw = data.get("kubeconfigs") or {}
        if not isinstance(raw, dict):
            raise InputError(f"{label}: `kubeconfigs` is not a mapping",
                             hint="save the outputs with --show-secrets")
        for name, value in raw.items():
            if not isinstance(value, str) or value in ("[secret]", SECRET):
                raise InputError(f"{label}: the kubeconfig of {name} is "
                                 "hidden", hint="save the outputs with `pulumi stack output "
                                 "--json --show-secrets`")
            kubeconfigs[str(name)] = value
    assert inventory is not None
    for p in inventory.pools:  # clusters only the inventory names: its region and project
        if p.cluster and p.cluster not in refs:
            refs[p.cluster] = ClusterRef(p.cluster, p.cloud, p.region or ClusterRef.region,
                                         p.project or "")
    return RunSource(inventory, settings, refs, kubeconfigs, stack_file)
