"""The offline plan: run the stack's Pulumi program under Pulumi's own mocks and record every
resource it registers (type, name, parent, provider, inputs). No CLI, no credentials.

It is the same program that `pulumi up` runs (`stacks/__main__.py`), fed the stack file's
config. Values a provider would compute are shown as "<computed>", secrets as "<secret>".

    >>> from components.engine.plan import run_plan
    >>> plan = run_plan("stacks/Pulumi.example.yaml")
    >>> plan.to_json()  # deterministic: sorted keys and resources, byte-identical across runs
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import runpy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from components.engine._offline_identity import offline_identity
from components.engine._offline_zones import TOKEN as ZONES_TOKEN
from components.engine._offline_zones import offline_zones
from fleet.errors import AccelfleetError, InputError
from fleet.model import SYSTEM_POOL, Fleet
from fleet.placeholders import COMPUTED, SECRET

PROGRAM = Path(__file__).resolve().parents[2] / "stacks" / "__main__.py"
PROJECT = "accelfleet"
SCHEMA_VERSION = 1
# Components that hold one pool: named after the pool, or "<cluster>-<pool>".
POOL_COMPONENTS = ("GpuNodePool", "TpuSlice", "TpuVm", "GpuNodeGroup", "CpuNodePool",
                   "CpuNodeGroup")


@dataclass(frozen=True)
class PlannedResource:
    """One registered resource: what `pulumi up` would ask its provider to create."""

    urn: str
    type: str
    name: str
    custom: bool
    parent: str | None
    provider: str | None
    inputs: dict[str, Any]
    # URNs it waits for (depends_on, and resources whose outputs it takes); not in the JSON.
    dependencies: tuple[str, ...] = ()
    # The resource options that change what a diff does (Pulumi property paths, as given):
    # inputs whose changes `pulumi up` ignores, and inputs whose changes replace it.
    ignore_changes: tuple[str, ...] = ()
    replace_on_changes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "type": self.type, "name": self.name, "custom": self.custom, "parent": self.parent,
            "provider": self.provider, "inputs": self.inputs}
        # only where set, so that a plan of resources without them reads as before
        if self.ignore_changes:
            out["ignore_changes"] = sorted(self.ignore_changes)
        if self.replace_on_changes:
            out["replace_on_changes"] = sorted(self.replace_on_changes)
        return out


@dataclass
class Plan:
    """Every resource of one stack, plus the fleet it came from (for pools and costs)."""

    stack: str
    fleet: Fleet
    resources: list[PlannedResource] = field(default_factory=list)
    # Indexes built once per resource count, so that walking the tree stays linear.
    _kids: dict[str | None, list[PlannedResource]] = field(
        default_factory=dict, init=False, repr=False, compare=False)
    _pools: dict[str, PlannedResource] = field(
        default_factory=dict, init=False, repr=False, compare=False)
    _clusters: dict[str, str] = field(
        default_factory=dict, init=False, repr=False, compare=False)
    _indexed: int = field(default=-1, init=False, repr=False, compare=False)

    def _index(self) -> None:
        if self._indexed == len(self.resources):
            return
        kids: dict[str | None, list[PlannedResource]] = {}
        pools: dict[str, PlannedResource] = {}
        for r in self.resources:
            kids.setdefault(r.parent, []).append(r)
            if r.type.startswith("accelfleet:") and r.type.endswith(POOL_COMPONENTS):
                pools.setdefault(r.name, r)
        for group in kids.values():
            group.sort(key=lambda r: (r.custom, r.type, r.name))
        self._kids, self._pools, self._indexed = kids, pools, len(self.resources)
        self._clusters = {p.name: p.spec.cluster for p in self.fleet.pools if p.spec.cluster}

    def by_urn(self) -> dict[str, PlannedResource]:
        return {r.urn: r for r in self.resources}

    def of_type(self, type_: str) -> list[PlannedResource]:
        return [r for r in self.resources if r.type == type_]

    def children(self, urn: str | None) -> list[PlannedResource]:
        self._index()
        return list(self._kids.get(urn, ()))

    def descendants(self, urn: str) -> list[PlannedResource]:
        out: list[PlannedResource] = []
        todo = [urn]
        while todo:
            kids = self.children(todo.pop())
            out += kids
            todo += [k.urn for k in kids if not k.custom]
        return out

    def provider_input(self, ref: str, key: str) -> str:
        """An input of the provider resource an invoke names (`<urn>::<id>`), or ""."""
        urn = (ref or "").rsplit("::", 1)[0]
        found = next((r for r in self.resources if r.urn == urn), None)
        value = found.inputs.get(key) if found is not None else None
        return value if isinstance(value, str) else ""

    def pool_component(self, pool: str) -> PlannedResource | None:
        """The component that holds a pool of the fleet, if the program made one: named
        after the pool, or `<cluster>-<pool>`."""
        self._index()
        if pool in self._pools:
            return self._pools[pool]
        cluster = self._clusters.get(pool)
        return self._pools.get(f"{cluster}-{pool}") if cluster else None

    def system_pool_component(self, cluster: str) -> PlannedResource | None:
        """The component that holds a cluster's system pool (named "<cluster>-system")."""
        return next((r for r in self.resources if r.type.startswith("accelfleet:")
                     and r.type.endswith(("CpuNodePool", "CpuNodeGroup"))
                     and r.name == f"{cluster}-{SYSTEM_POOL}"), None)

    def pool_resources(self) -> dict[str, list[PlannedResource]]:
        """Pool name -> the provider resources under its component."""
        out = {}
        for p in self.fleet.pools:
            comp = self.pool_component(p.name)
            out[p.name] = [d for d in self.descendants(comp.urn) if d.custom] if comp else []
        return out

    def to_dict(self) -> dict[str, Any]:
        urn_name = {r.urn: f"{r.type}::{r.name}" for r in self.resources}
        resources = sorted(
            ({**r.to_dict(), "parent": urn_name.get(r.parent or ""),
              "provider": urn_name.get(r.provider or "")} for r in self.resources),
            key=lambda d: (d["type"], d["name"]))
        counts: dict[str, int] = {}
        for r in self.resources:
            if r.custom:
                counts[r.type] = counts.get(r.type, 0) + 1
        per_pool = self.pool_resources()
        pools = [{**p.summary(), "resources": len(per_pool.get(p.name, []))}
                 for p in self.fleet.pools]
        # every team's cost: at the declared size and its range; the platform pays the
        # system pools unless a team of that name is declared
        teams = [t.summary() for t in self.fleet.team_costs()]
        systems = []
        for p in self.fleet.system_pools:
            comp = self.system_pool_component(p.cluster.name) if p.cluster else None
            made = [d for d in self.descendants(comp.urn) if d.custom] if comp else []
            systems.append({**p.summary(), "resources": len(made)})
        return {
            "schema_version": SCHEMA_VERSION, "stack": self.stack,
            # each resource carries the ignore_changes / replace_on_changes its component set
            # (absent where none); a plan saved before this carries none, and `plan --diff`
            # then falls back on the replacement table's `ignore_changes` rows
            "resource_options": True,
            "summary": {"resources": sum(counts.values()), "by_type": counts},
            "pools": sorted(pools, key=lambda d: d["name"]),
            "system_pools": sorted(systems, key=lambda d: d["cluster"] or ""),
            "warnings": [w.render() for w in self.fleet.warnings],
            "teams": sorted(teams, key=lambda d: d["name"]),
            # what each EKS control plane costs (the platform pays it, as the system pools)
            "control_planes": [c.summary() for c in self.fleet.control_planes],
            # Kueue: per cluster its cohort, a flavor per pool, a queue per team (in order)
            "routing": [r.summary() for r in self.fleet.routing],
            "resources": resources,
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n"


def stack_config(path: str | Path) -> tuple[str, dict[str, str], Fleet]:
    """(stack name, Pulumi config as strings, validated fleet) of a stack file.

    Raises the fleet's own errors (StackFileError, SpecError: exit 2) before any Pulumi code.
    """
    from fleet.rules.scope import check_sibling_stacks
    from fleet.rules.validate import validate_fleet
    from fleet.stack.read import fleet_config, read_stack_document, stack_name

    data = read_stack_document(path)  # parsed once, bounded
    # validates: bad input fails here with the SpecError
    raw = fleet_config(data, str(path))
    fleet = validate_fleet(raw, source=str(path))
    check_sibling_stacks(path, fleet, raw)  # names another stack beside it derives too
    config = {str(key): value if isinstance(value, str) else json.dumps(
        _config_value(value), sort_keys=True)
              for key, value in (data.get("config") or {}).items()}
    return stack_name(path), config, fleet


def _config_value(value: Any) -> Any:
    """A config value as JSON can carry it, as text where JSON has no type (a YAML date as ISO
    8601, `!!binary` as base64, a set as a sorted list, keys as strings), so that another key's
    odd value never stops a plan. Nesting is bounded by the stack file's MAX_DEPTH."""
    import base64
    import datetime

    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, dict):
        return {str(k): _config_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_config_value(v) for v in value]
    if isinstance(value, set | frozenset):
        return sorted((_config_value(v) for v in value), key=str)
    if isinstance(value, datetime.date | datetime.datetime):
        return value.isoformat()
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(value).decode("ascii")
    return str(value)


def run_plan(path: str | Path, *, program: Path = PROGRAM) -> Plan:
    """Run the stack program of `path` under mocks and return what it would create."""
    stack, config, fleet = stack_config(path)
    plan = Plan(stack=stack, fleet=fleet)
    # A fresh context: Pulumi keeps its settings and root stack resource in context variables.
    contextvars.copy_context().run(_run, plan, config, program)
    return plan


def _run(plan: Plan, config: dict[str, str], program: Path) -> None:
    import pulumi
    from pulumi.runtime import settings
    from pulumi.runtime.mocks import MockMonitor, Mocks, set_mocks
    from pulumi.runtime.stack import run_pulumi_func
    from pulumi.runtime.sync_await import _sync_await

    from components.engine.handoff import handed
    from fleet.stack.read import CONFIG_KEY

    class _Mocks(Mocks):
        def new_resource(self, args: Any) -> tuple[str, dict[str, Any]]:
            # Ids are the provider's to choose; outputs not echoed here stay unknown.
            resource_id = f"{args.name}-id" if args.custom else ""
            return resource_id, dict(args.inputs)

        def call(self, args: Any) -> tuple[dict[str, Any], list[tuple[str, str]]]:
            # the account's zones: see components.engine._offline_zones
            if args.token == ZONES_TOKEN:
                return offline_zones(plan.provider_input(args.provider, "region")), []
            return offline_identity(args.token) or {}, []  # the caller: _offline_identity

    class _Recorder(MockMonitor):  # type: ignore[misc]
        def RegisterResource(self, request: Any) -> Any:  # the gRPC method name
            from pulumi.runtime import rpc

            response = super().RegisterResource(request)  # type: ignore[no-untyped-call]
            if request.type != "pulumi:pulumi:Stack":
                inputs = rpc.deserialize_properties(request.object, keep_unknowns=True)
                plan.resources.append(PlannedResource(
                    urn=response.urn, type=request.type, name=request.name,
                    custom=bool(request.custom), parent=_parent(request.parent),
                    provider=request.provider.rsplit("::", 1)[0] or None,
                    inputs=_clean(inputs), dependencies=tuple(request.dependencies),
                    ignore_changes=tuple(request.ignoreChanges),
                    replace_on_changes=tuple(request.replaceOnChanges)))
            _close_worker_loop()
            return response

        def Invoke(self, request: Any) -> Any:  # the gRPC method name
            response = super().Invoke(request)  # type: ignore[no-untyped-call]
            _close_worker_loop()
            return response

        def ReadResource(self, request: Any) -> Any:  # the gRPC method name
            response = super().ReadResource(request)  # type: ignore[no-untyped-call]
            _close_worker_loop()
            return response

    mocks = _Mocks()
    settings.ROOT.set(None)
    # Every registration captures the Python stack for the engine's source positions (about a
    # third of a ms each); an offline plan records no source positions, so it skips them.
    from pulumi.runtime import resource as sdk_resource

    stack_trace = sdk_resource._get_stack_trace
    sdk_resource._get_stack_trace = _no_stack_trace
    if _thread_loop() is None:  # a plan before this one closed and unset its loop
        asyncio.set_event_loop(asyncio.new_event_loop())
    set_mocks(mocks, project=PROJECT, stack=plan.stack, preview=True, monitor=_Recorder(mocks))
    pulumi.runtime.set_all_config({k: v for k, v in config.items()})
    # the program reads the fleet as JSON from its config: hand it the fleet validated from it
    raw = json.loads(config[CONFIG_KEY]) if CONFIG_KEY in config else None
    try:
        with handed(raw, plan.fleet):
            _sync_await(run_pulumi_func(lambda: _run_program(program)))
    except AccelfleetError:
        raise
    except pulumi.RunError as exc:
        raise InputError(str(exc), hint="fix the stack file; `accelfleet fleet validate` "
                         "checks it") from None
    finally:
        sdk_resource._get_stack_trace = stack_trace
        _close_loop_at_exit()


# Pulumi's `_sync_await` and its mock monitor make an event loop where the thread has none
# (`_ensure_event_loop`: the main thread's, and one in each executor thread that registers a
# resource) and never close them; the interpreter collects them at exit, sometimes after their
# self-pipe is closed: "Exception ignored in: BaseEventLoop.__del__ ... Invalid file descriptor:
# -1" on stderr (issue 27 item 11). The plan closes each once it is done with it.
def _thread_loop() -> asyncio.AbstractEventLoop | None:
    """The loop set on this thread, without making one (None where none is set)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            return asyncio.get_event_loop_policy().get_event_loop()
        except RuntimeError:
            return None


def _close_worker_loop() -> None:
    """Close the loop Pulumi's mock monitor made on this executor thread."""
    import threading

    if threading.current_thread() is threading.main_thread():
        return
    loop = _thread_loop()
    if loop is not None and not loop.is_running():
        asyncio.set_event_loop(None)
        loop.close()


_CLOSING: list[bool] = []


def _close_loop_at_exit() -> None:
    """Close the main thread's loop when the process exits, not now: the next plan in the same
    process (and Pulumi's own mocks in tests) runs on it."""
    if not _CLOSING:
        import atexit

        atexit.register(_close_loop)
        _CLOSING.append(True)


def _close_loop() -> None:
    """Finish what the program left on the main thread's loop (cancelled), then close it and
    unset it."""
    loop = _thread_loop()
    if loop is None or loop.is_running() or loop.is_closed():
        return
    try:
        pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
        for task in pending:
            task.cancel()
        if pending:
            loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.run_until_complete(loop.shutdown_default_executor())
    finally:
        asyncio.set_event_loop(None)
        loop.close()


def _no_stack_trace() -> Any:
    from pulumi.runtime.proto import source_pb2

    return source_pb2.StackTrace()


def _run_program(program: Path) -> None:
    runpy.run_path(str(program), run_name="__main__")


def _parent(urn: str) -> str | None:
    """The parent's URN, or None for the root stack (urn:pulumi:S::P::TYPE-CHAIN::NAME)."""
    if not urn:
        return None
    type_chain = urn.split("::")[2]
    return None if type_chain.split("$")[-1] == "pulumi:pulumi:Stack" else urn


_SECRET_SIG = "4dabf18193072939515e22adb298388d"


def _clean(value: Any) -> Any:
    """Make recorded inputs plain JSON: unknowns -> <computed>, secrets -> <secret>,
    whole floats -> ints, dict keys sorted by the JSON writer."""
    from pulumi.output import Unknown

    if isinstance(value, Unknown):
        return COMPUTED
    if isinstance(value, dict):
        if _SECRET_SIG in value:
            return SECRET
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value == "04da6b54-80e4-46f7-96ec-b56ff0331ba9":
        return COMPUTED
    return value
