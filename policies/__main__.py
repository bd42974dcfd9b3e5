"""accelfleet's CrossGuard policy pack: `pulumi preview --policy-pack policies`.

Every policy is a function of `policies.rules` (the ones `accelfleet plan --policies` runs
offline), wrapped as a mandatory `ResourceValidationPolicy`. Needs `pulumi-policy`
(`pip install -e '.[policy]'`); PulumiPolicy.yaml points the pack at the project's .venv.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    PolicyPack,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
)
from pulumi_policy.proxy import UnknownValueError

try:
    from policies import rules
except ImportError:  # run from a checkout where accelfleet is not installed
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from policies import rules
from fleet.placeholders import COMPUTED

PACK = "accelfleet"


def plain(value: Any) -> Any:
    """The engine's inputs as plain dicts and lists, each unknown (a value only the provider
    will know, during preview) as "<computed>", the offline plan's spelling."""
    if isinstance(value, Mapping):
        out = {}
        for key in value:
            try:
                out[str(key)] = plain(value[key])
            except UnknownValueError:
                out[str(key)] = COMPUTED
        return out
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        items = []
        for i in range(len(value)):
            try:
                items.append(plain(value[i]))
            except UnknownValueError:
                items.append(COMPUTED)
        return items
    return value


def wrap(policy: rules.Policy) -> ResourceValidationPolicy:
    def validate(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
        if args.resource_type not in policy.types:
            return
        for message in policy.check(args.resource_type, plain(args.props)):
            report_violation(message, None)

    return ResourceValidationPolicy(
        name=policy.name, description=policy.description, validate=validate,
        enforcement_level=EnforcementLevel.MANDATORY)


def pack() -> PolicyPack:
    return PolicyPack(name=PACK, enforcement_level=EnforcementLevel.MANDATORY,
                      policies=[wrap(p) for p in rules.POLICIES])


if __name__ == "__main__":
    pack()
