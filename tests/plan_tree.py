"""Walking a recorded plan in tests."""

from __future__ import annotations

from components.engine.plan import Plan, PlannedResource


def cluster_of(plan: Plan, resource: PlannedResource) -> str:
    """The name of the `accelfleet:*:Cluster` component a resource sits under."""
    by_urn = plan.by_urn()
    node: PlannedResource | None = resource
    while node is not None:
        if node.type.startswith("accelfleet:") and node.type.endswith(":Cluster"):
            return node.name
        node = by_urn.get(node.parent or "")
    raise AssertionError(f"{resource.name} is under no cluster")
