"""Every component has the same shape (issue 22): `(name, args, opts=None)` with an args
dataclass, as Pulumi's own components do, and every node pool (GKE) and node group (EKS),
GPU and CPU alike, registers the same output names (`NODE_POOL_OUTPUTS`) first."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import pkgutil
from collections.abc import Iterator
from typing import Any

import pulumi
import pytest

import components
from components.engine.plan import run_plan
from components.outputs import NODE_POOL_OUTPUTS
from fleet.stack.read import EXAMPLE_STACK

NODE_POOLS = ("GpuNodePool", "CpuNodePool", "GpuNodeGroup", "CpuNodeGroup")


def _component_classes() -> Iterator[type[pulumi.ComponentResource]]:
    seen: set[type] = set()
    for info in pkgutil.walk_packages(components.__path__, "components."):
        module = importlib.import_module(info.name)
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if issubclass(cls, pulumi.ComponentResource) and cls.__module__ == module.__name__ \
                    and cls not in seen:
                seen.add(cls)
                yield cls


CLASSES = sorted(_component_classes(), key=lambda c: c.__qualname__)


def test_the_components_are_found() -> None:
    names = {c.__name__ for c in CLASSES}
    assert {"Fleet", "GcpCluster", "TpuVms", "TpuVm", "GpuNodeGroup", "CpuNodePool"} <= names


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__qualname__)
def test_every_component_takes_name_args_opts(cls: type[pulumi.ComponentResource]) -> None:
    params = list(inspect.signature(cls.__init__).parameters.values())
    assert [p.name for p in params] == ["self", "name", "args", "opts"], cls
    assert params[3].default is None
    hints = inspect.get_annotations(cls.__init__, eval_str=True)
    assert dataclasses.is_dataclass(hints["args"]), f"{cls.__name__}: args is {hints['args']}"


def test_node_pools_and_node_groups_register_the_same_output_names(
        monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, set[tuple[str, ...]]] = {}
    real = pulumi.ComponentResource.register_outputs

    def record(self: pulumi.ComponentResource, outputs: Any) -> None:
        kind = type(self).__name__
        if kind in NODE_POOLS:
            seen.setdefault(kind, set()).add(tuple(outputs)[:len(NODE_POOL_OUTPUTS)])
        real(self, outputs)

    monkeypatch.setattr(pulumi.ComponentResource, "register_outputs", record)
    run_plan(EXAMPLE_STACK)
    assert set(seen) == set(NODE_POOLS)  # the example has each kind, GKE and EKS
    assert all(keys == {NODE_POOL_OUTPUTS} for keys in seen.values()), seen
