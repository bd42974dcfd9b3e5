"""How a plan spells a value nobody knows yet: the one spelling that the offline plan
(components.engine.plan) writes, its diff (components.engine.diff) compares and the policy
rules (policies.rules) forgive. A computed value is never taken as a literal."""

from __future__ import annotations

COMPUTED = "<computed>"  # a value the provider computes at deploy time
SECRET = "<secret>"  # a secret's value, never shown
