"""The Pulumi program: read the fleet from stack config, build it, export the inventory."""

from pathlib import Path

import pulumi

from components.engine.handoff import program_fleet, was_handed
from components.fleet import Fleet, FleetArgs
from fleet import AccelfleetError
from fleet.rules.scope import check_sibling_stacks
from fleet.stack.read import CONFIG_KEY

try:
    raw = pulumi.Config("accelfleet").require_object("fleet")
    # validated here, or handed over by the offline plan that validated it already
    checked = was_handed(raw)
    model = program_fleet(raw, source=f"stack {pulumi.get_stack()} ({CONFIG_KEY})")
    if not checked:  # `pulumi up`: names another stack file beside this one derives too
        check_sibling_stacks(Path(__file__).resolve().parent
                             / f"Pulumi.{pulumi.get_stack()}.yaml", model, raw)
except AccelfleetError as exc:
    raise pulumi.RunError(str(exc)) from None

for warning in model.warnings:  # allowed, but worth a look (a cluster without a system pool)
    pulumi.log.warn(warning.render())
fleet = Fleet("fleet", FleetArgs(fleet=model, stack=pulumi.get_stack()))
pulumi.export("inventory", fleet.inventory)
pulumi.export("clusters", {name: c.endpoint for name, c in fleet.clusters.items()})
pulumi.export("kubeconfigs", {name: c.kubeconfig for name, c in fleet.clusters.items()})
