"""The gate's fields (docs/gate.md): a pool's `gate` (PoolGate: the startup taint, tiers,
re-proof interval, quarantine cap, what becomes of a failed node, how many nodes a rolling
re-proof takes at once, enforcing or shadowing, opting out with a reason) and the stack's `gate`
(Gate: the controller's image, the Secrets its pods pull images with, and its replicas).
Imported through `fleet.spec.fields`."""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from fleet import smoke_defaults as SD
from fleet.quarantine_cap import DEFAULT_CAP, parse_cap
from fleet.spec._values import SpecValueError, _Model, image_reference, request_text

# The gate (docs/gate.md): how often an idle proven node is proven again, and its bounds: at
# most hourly (a proof takes the node's accelerators for minutes), at least monthly.
REPROVE_DEFAULT = "24h"
REPROVE_OFF = "off"
HOUR_S = 60 * 60
DAY_S = 24 * HOUR_S
REPROVE_MIN_S = HOUR_S
REPROVE_MAX_S = 30 * DAY_S
GATE_TOP_TIER = 2  # the per-node tiers (T0-T2); the fabric check (T3) is `gate.fabric`
# What becomes of a node that fails its proof (docs/gate.md "A failed node and the
# autoscalers"): `keep` holds it for diagnosis (scale-down disabled), `replace` leaves it to the
# autoscaler, Karpenter or the node group to remove and replace.
ON_FAIL = ("keep", "replace")
ON_FAIL_DEFAULT = "keep"
# `enforce`: new nodes carry the startup taint until proven; `shadow`: nothing is tainted,
# cordoned or quarantined, every node is proven and reported (as node-readiness-controller's
# `dryRun`), to try the gate on a live cluster before it holds capacity.
MODES = ("enforce", "shadow")
MODE_DEFAULT = "enforce"
# A rolling re-proof takes at most this many of a pool's nodes at once: a count or a share of
# the pool, never less than one node (a share rounds down, as Kubernetes' maxUnavailable does).
MAX_UNAVAILABLE_DEFAULT = "10%"
_INTERVAL = re.compile(r"^([1-9][0-9]{0,5})([hd])$")
# A Secret's name is a DNS subdomain: at most 253 characters of lower-case letters, digits, '-'
# and '.', starting and ending with a letter or digit (Kubernetes v1.36.2
# pkg/apis/core/validation/validation.go ValidateSecretName = NameIsDNSSubdomain;
# k8s.io/apimachinery pkg/util/validation IsDNS1123Subdomain, read 2026-11-28).
SECRET_NAME_MAX = 253
_SECRET_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
PULL_SECRETS_MAX = 16


def interval_s(text: str) -> int | None:
    """`gate.reprove_interval` in seconds: `24h`, `12h`, `7d`; None for `off`. SpecValueError
    for anything else or outside REPROVE_MIN_S..REPROVE_MAX_S."""
    words = text.strip()
    if words == REPROVE_OFF:
        return None
    m = _INTERVAL.match(words)
    if m is None:
        raise SpecValueError(f"{text[:40]!r} is not an interval",
                             "write hours or days, e.g. reprove_interval: 24h (or 12h, 7d), "
                             "or `off` to prove each node only when it joins")
    seconds = int(m[1]) * (HOUR_S if m[2] == "h" else DAY_S)
    if not REPROVE_MIN_S <= seconds <= REPROVE_MAX_S:
        raise SpecValueError(f"{words} is out of range: a re-proof runs at most hourly and at "
                             "least every 30 days", "use a value from 1h to 30d, e.g. 24h, "
                             "or `off`")
    return seconds


def interval_text(seconds: int) -> str:
    """`interval_s` backwards, as a stack writes it: 86400 -> `24h`, 604800 -> `7d`."""
    if seconds % DAY_S == 0 and seconds > DAY_S:
        return f"{seconds // DAY_S}d"
    return f"{seconds // HOUR_S}h"


class PoolGate(_Model):
    """A pool's gate (docs/gate.md): its new nodes carry a startup taint that only proof pods
    tolerate, until the gate controller proves them with tiers 0..`max_tier` (and the fabric
    check, `fabric: auto`, where the pool has a GPU fabric). Idle proven nodes are proven again
    every `reprove_interval` (`off`: never), at most `max_unavailable` of the pool at once (`1`
    or `10%`, never less than one node); a failed proof quarantines at most `max_quarantine` of
    the pool (`3` nodes or `10%`, as `smoke run --max-quarantine`), and `on_fail` says what
    becomes of the failed node (`keep` for diagnosis, `replace`: the autoscaler replaces it).
    `mode: shadow` proves and reports without tainting anything.
    On by default for every accelerator pool; `enabled: false` opts out, with a `reason`."""

    enabled: bool = True
    reason: str | None = None
    mode: Literal["enforce", "shadow"] = "enforce"
    max_tier: int = Field(default=SD.MAX_TIER, ge=0, le=GATE_TOP_TIER)
    fabric: Literal["auto", "off"] = "auto"
    reprove_interval: str = REPROVE_DEFAULT
    max_unavailable: str = MAX_UNAVAILABLE_DEFAULT
    max_quarantine: str = DEFAULT_CAP
    on_fail: Literal["keep", "replace"] = "keep"

    @model_validator(mode="before")
    @classmethod
    def _mapping(cls, value: Any) -> Any:
        if isinstance(value, bool | str) and value in (False, "off", "false", "disabled"):
            raise SpecValueError("a gate is turned off with a reason",
                                 'write gate: {enabled: false, reason: "why this pool takes '
                                 'work unproven"}')
        return value

    @field_validator("reason", mode="before")
    @classmethod
    def _reason(cls, value: Any) -> Any:
        return request_text(value, "reason")

    @field_validator("reprove_interval")
    @classmethod
    def _interval(cls, value: str) -> str:
        interval_s(value)
        return value.strip()

    @field_validator("max_quarantine", mode="before")
    @classmethod
    def _cap(cls, value: Any) -> Any:
        text = str(value) if isinstance(value, int) and not isinstance(value, bool) else value
        if isinstance(text, str) and parse_cap(text) is None:
            raise SpecValueError(f"{text[:40]!r} is not a count of 1 or more nor a percentage "
                                 "in (0, 100]", f"write e.g. max_quarantine: 2 or "
                                 f"max_quarantine: 25% (default {DEFAULT_CAP} of the pool)")
        return text.strip() if isinstance(text, str) else text

    @field_validator("max_unavailable", mode="before")
    @classmethod
    def _unavailable(cls, value: Any) -> Any:
        text = str(value) if isinstance(value, int) and not isinstance(value, bool) else value
        if isinstance(text, str) and parse_cap(text) is None:
            raise SpecValueError(f"{text[:40]!r} is not a count of 1 or more nor a percentage "
                                 "in (0, 100]", "write e.g. max_unavailable: 2 or "
                                 f"max_unavailable: 25% (default {MAX_UNAVAILABLE_DEFAULT} of "
                                 "the pool, at least one node)")
        return text.strip() if isinstance(text, str) else text

    @model_validator(mode="after")
    def _opt_out(self) -> PoolGate:
        if not self.enabled and self.reason is None:
            raise SpecValueError("the gate is off without a reason",
                                 'add `reason: "..."`: why this pool\'s nodes may take work '
                                 "unproven (it is shown by `fleet validate` and `plan`)")
        if self.enabled and self.reason is not None:
            raise SpecValueError("`reason` is for a gate that is turned off",
                                 "remove `reason`, or add `enabled: false`")
        if not self.enabled and self.mode == "shadow":
            raise SpecValueError("a gate in shadow mode is on (it proves and reports every "
                                 "node, tainting none)",
                                 "remove `enabled: false` and `reason` to shadow the pool, or "
                                 "remove `mode: shadow` to turn the gate off")
        return self

    @property
    def reprove_interval_s(self) -> int | None:
        return interval_s(self.reprove_interval)


def secret_names(value: Any) -> Any:
    """`gate.image_pull_secrets`: a list of Secret names (each a DNS subdomain), no repeats;
    SpecValueError with the fix otherwise."""
    if isinstance(value, str):
        raise SpecValueError("image_pull_secrets is a list of Secret names",
                             f"write image_pull_secrets: [{value.strip()[:60] or 'ghcr-pull'}]")
    if not isinstance(value, list | tuple):
        return value  # pydantic says what the type should be
    if len(value) > PULL_SECRETS_MAX:
        raise SpecValueError(f"{len(value)} image pull Secrets; at most {PULL_SECRETS_MAX}",
                             "name the Secrets of the registries the images come from")
    seen: set[str] = set()
    for name in value:
        if not isinstance(name, str) or len(name) > SECRET_NAME_MAX \
                or not _SECRET_NAME.match(name):
            raise SpecValueError(f"{str(name)[:80]!r} is not a Kubernetes Secret name",
                                 "a Secret's name is lower-case letters, digits, '-' and '.', "
                                 f"at most {SECRET_NAME_MAX} characters, starting and ending "
                                 "with a letter or digit, e.g. ghcr-pull")
        if name in seen:
            raise SpecValueError(f"Secret {name!r} is named twice", "name each Secret once")
        seen.add(name)
    return list(value)


class Gate(_Model):
    """The gate controller (docs/gate.md), on each cluster with a gated pool: its image
    (default `fleet.gate.CONTROLLER_IMAGE`; pin your own by digest), the Secrets (of type
    kubernetes.io/dockerconfigjson, in the smoke namespace) its pods and every proof pod pull
    images with (`image_pull_secrets`, none by default: the default image is public) and its
    replicas (two: one leads through a Lease, the other waits to take over).
    `dcgm_exporter` (on by default): NVIDIA's DCGM exporter on every GPU node of a cluster
    with a gated GPU pool, which the gate reads between proofs (docs/gate.md "Between
    proofs"); `false` installs none, and the gate then says of each proven GPU node that
    its passive signals are not read."""

    image: str | None = None
    image_pull_secrets: list[str] = Field(default_factory=list)
    replicas: int = Field(default=2, ge=1, le=5)
    dcgm_exporter: bool = True

    @field_validator("image")
    @classmethod
    def _image(cls, value: str | None) -> str | None:
        return image_reference(value)

    @field_validator("image_pull_secrets", mode="before")
    @classmethod
    def _pull_secrets(cls, value: Any) -> Any:
        return secret_names(value)
