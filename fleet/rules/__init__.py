"""Every rule a stack must pass, by area: `validate` (the entry point, `validate_fleet`, and the
checker that runs the rest), names, limits, network, endpoints, EKS, TPU VMs, routing, expiry,
and what the clouds would refuse (`cloud_values`). Budgets are `fleet.pricing.check_budgets`."""
