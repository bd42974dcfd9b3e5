"""The Pulumi program: read the fleet from stack config, build it, export the inventory."""

import pulumi

from components.fleet import Fleet, FleetArgs
from fleet import AccelfleetError, validate_fleet
from fleet.stack.read import CONFIG_KEY

try:
    raw = pulumi.Config("accelfleet").require_object("fleet")
    model = validate_fleet(raw, source=f"stack {pulumi.get_stack()} ({CONFIG_KEY})")
except AccelfleetError as exc:
    raise pulumi.RunError(str(exc)) from None

for warning in model.warnings:  # allowed, but worth a look (a cluster without a system pool)
    pulumi.log.warn(warning.render())
fleet = Fleet("fleet", FleetArgs(fleet=model, stack=pulumi.get_stack()))
pulumi.export("inventory", fleet.inventory)
pulumi.export("clusters", {name: c.endpoint for name, c in fleet.clusters.items()})
pulumi.export("kubeconfigs", {name: c.kubeconfig for name, c in fleet.clusters.items()})
