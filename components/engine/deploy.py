"""`accelfleet up` and `accelfleet preview`: the stack through Pulumi's Automation API
(`pulumi.automation`, which drives the Pulumi CLI), then smoke on what changed.

The engine's part needs the Pulumi CLI and credentials. What surrounds it is pure and tested
here with recorded engine events: which pools a deployment touched (`changed_pools`, from the
engine's resource events and the offline plan's parent tree), what the summary says, and
which of them `accelfleet up` proves (`pools_to_smoke`; the smoke run itself is the library call
`smoke.session.run_smoke`, in the same process).

    >>> events = [EngineEvent.from_json(line) for line in recorded]  # or live, from on_event
    >>> changed_pools(events, plan_dict)   # {"h100-train", "v5p-slice"}
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from fleet.errors import InputError, SetupError

PROJECT_DIR = Path(__file__).resolve().parents[2]  # Pulumi.yaml: main and config in stacks/
INSTALL_HINT = ("install the Pulumi CLI and put it on PATH: `curl -fsSL https://get.pulumi.com "
                "| sh` (or `brew install pulumi/tap/pulumi`), then `pulumi login`; in GitHub "
                "Actions, pulumi/actions with no command installs it")
# Engine step ops that change a resource; the rest (same, read, refresh, discard...) do not.
CHANGING = frozenset({"create", "update", "replace", "create-replacement", "delete",
                      "delete-replaced", "import", "import-replacement"})
SMOKE_CHOICES = ("changed", "all", "none")


def require_pulumi_cli() -> str:
    """The Pulumi CLI's path; SetupError (exit 2) with how to install it when absent."""
    found = shutil.which("pulumi")
    if found is None:
        raise SetupError("the Pulumi CLI is not on PATH; `accelfleet up` and `accelfleet "
                         "preview` drive it through Pulumi's Automation API "
                         "(`accelfleet plan` needs no CLI)", hint=INSTALL_HINT)
    return found


def _get(obj: Any, *names: str) -> Any:
    """An attribute of an Automation API event, or the same key of its JSON form."""
    for name in names:
        if isinstance(obj, Mapping):
            obj = obj.get(name)
        else:
            obj = getattr(obj, name, None)
        if obj is None:
            return None
    return obj


def step_of(event: Any) -> tuple[str, str] | None:
    """(op, urn) of a resource event (EngineEvent or its JSON), else None."""
    if isinstance(event, Mapping):
        metas = [_get(event, "resourcePreEvent", "metadata"),
                 _get(event, "resOutputsEvent", "metadata")]
    else:
        metas = [_get(event, "resource_pre_event", "metadata"),
                 _get(event, "res_outputs_event", "metadata")]
    for meta in metas:
        op, urn = _get(meta, "op"), _get(meta, "urn")
        op = getattr(op, "value", op)  # OpType is a str enum
        if op and urn:
            return str(op), str(urn)
    return None


def summary_of(events: Iterable[Any]) -> dict[str, int] | None:
    """The engine's resource-change counts (op -> count) from its summary event, if any."""
    for event in events:
        changes = (_get(event, "summaryEvent", "resourceChanges") if isinstance(event, Mapping)
                   else _get(event, "summary_event", "resource_changes"))
        if changes is not None:
            return {str(getattr(k, "value", k)): int(v) for k, v in changes.items()}
    return None


def urn_key(urn: str) -> str:
    """`urn:pulumi:S::P::A$B$TYPE::NAME` -> `TYPE::NAME`, the plan's resource key."""
    parts = urn.split("::")
    if len(parts) < 4:
        return urn
    return f"{parts[2].split('$')[-1]}::{'::'.join(parts[3:])}"


def changed_pools(events: Iterable[Any], plan: Mapping[str, Any]) -> set[str]:
    """The pools (of the fleet being deployed) that a deployment changed: a changed resource
    under a pool's component is that pool's; one under a cluster (its network, add-ons,
    device plugins) touches every pool of that cluster; one under neither (the fleet, a
    provider) touches every pool. Pools that no longer exist are not named."""
    from components.engine.diff import pool_owners

    owners = pool_owners(dict(plan))
    pools = {str(p["name"]): p.get("cluster") for p in plan.get("pools") or []}
    parent = {f"{r['type']}::{r['name']}": r.get("parent") for r in plan.get("resources") or []}
    out: set[str] = set()
    for event in events:
        step = step_of(event)
        if step is None or step[0] not in CHANGING:
            continue
        key = urn_key(step[1])
        if key in owners:
            if owners[key][0] in pools:
                out.add(owners[key][0])
            continue
        if key.startswith("pulumi:pulumi:Stack::"):
            continue
        cluster = _cluster_of(key, parent)
        out |= {p for p, c in pools.items() if cluster is None or c == cluster}
    return out


def _cluster_of(key: str, parent: Mapping[str, str | None]) -> str | None:
    """The cluster a resource belongs to (its accelfleet `...:Cluster` ancestor's name)."""
    seen: set[str] = set()
    cur: str | None = key
    while cur and cur not in seen:
        seen.add(cur)
        type_, _, name = cur.partition("::")
        if type_.startswith("accelfleet:") and type_.endswith(":Cluster"):
            return name
        cur = parent.get(cur)
    return None


def pools_to_smoke(choice: str, changed: set[str], every: Iterable[str]) -> list[str]:
    if choice not in SMOKE_CHOICES:
        raise InputError(f"unknown --smoke {choice!r} (accepted: {', '.join(SMOKE_CHOICES)})",
                         hint="changed: the pools this update touched; all; none")
    if choice == "none":
        return []
    if choice == "all":
        return sorted(every)
    return sorted(changed)


# --- the engine ---------------------------------------------------------------------------

class Engine(Protocol):
    """What `accelfleet up` asks of Pulumi (the Automation API stack, or a recording)."""

    def preview(self, on_event: Callable[[Any], None], on_output: Callable[[str], None]
                ) -> dict[str, int]: ...

    def up(self, on_event: Callable[[Any], None], on_output: Callable[[str], None]
           ) -> dict[str, Any]: ...


@dataclass
class AutomationEngine:
    """A stack of this project through `pulumi.automation` (LocalWorkspace on Pulumi.yaml)."""

    stack: str
    policy_packs: list[str] = field(default_factory=list)
    work_dir: Path = PROJECT_DIR

    def _stack(self) -> Any:
        from pulumi import automation as auto

        return auto.create_or_select_stack(stack_name=self.stack, work_dir=str(self.work_dir))

    def preview(self, on_event: Callable[[Any], None], on_output: Callable[[str], None]
                ) -> dict[str, int]:
        result = self._stack().preview(on_event=on_event, on_output=on_output,
                                       policy_packs=self.policy_packs or None, diff=True)
        return {str(getattr(k, "value", k)): int(v) for k, v in result.change_summary.items()}

    def up(self, on_event: Callable[[Any], None], on_output: Callable[[str], None]
           ) -> dict[str, Any]:
        result = self._stack().up(on_event=on_event, on_output=on_output,
                                  policy_packs=self.policy_packs or None)
        if result.summary.result != "succeeded":
            from fleet.errors import CheckFailed

            raise CheckFailed(f"pulumi up ended {result.summary.result}",
                              hint="read the engine's messages above")
        return {name: out.value for name, out in result.outputs.items()}


def engine_error(exc: Exception) -> Exception:
    """An Automation API failure in words: CommandError carries the CLI's stderr."""
    from fleet.errors import CheckFailed

    lines = str(getattr(exc, "stderr", "") or exc).strip().splitlines()
    detail = "; ".join(lines[-3:]) or type(exc).__name__
    return CheckFailed(f"pulumi failed: {detail}", hint="read the engine's messages above; "
                       "`pulumi login` and cloud credentials are needed")
