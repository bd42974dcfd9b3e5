"""accelfleet's policies: the fleet's secure defaults and rules as pure functions
(`policies.rules`), run offline by `accelfleet plan --policies` and, as a Pulumi CrossGuard
policy pack (`policies/__main__.py`, `PulumiPolicy.yaml`), by
`pulumi preview --policy-pack policies`."""
