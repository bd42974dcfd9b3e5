"""What a stack declares: the fleet spec, parsed strictly with pydantic.

The models here check types and single fields; the gate's fields live in `_gate.py` and what
every section shares (the model base, SpecValueError, request text, image references) in
`_values.py`, both imported from here. Rules that span fields, pools and the catalog
live in `fleet.rules.validate`; `fleet.validate_fleet` runs both and returns a `fleet.model.Fleet`.
"""

from __future__ import annotations

import ipaddress
import re
from datetime import date
from typing import Any, Literal

from pydantic import (
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from fleet import smoke_defaults as SD
from fleet.spec._gate import GATE_TOP_TIER as GATE_TOP_TIER
from fleet.spec._gate import MAX_UNAVAILABLE_DEFAULT as MAX_UNAVAILABLE_DEFAULT
from fleet.spec._gate import MODES as MODES
from fleet.spec._gate import ON_FAIL as ON_FAIL
from fleet.spec._gate import REPROVE_DEFAULT as REPROVE_DEFAULT
from fleet.spec._gate import REPROVE_MAX_S as REPROVE_MAX_S
from fleet.spec._gate import REPROVE_MIN_S as REPROVE_MIN_S
from fleet.spec._gate import Gate as Gate
from fleet.spec._gate import PoolGate as PoolGate
from fleet.spec._gate import interval_s as interval_s
from fleet.spec._gate import interval_text as interval_text
from fleet.spec._gate import secret_names as secret_names
from fleet.spec._upgrade import BlueGreen as BlueGreen
from fleet.spec._upgrade import Upgrade as Upgrade
from fleet.spec._values import SpecValueError as SpecValueError
from fleet.spec._values import _Model
from fleet.spec._values import image_reference as image_reference
from fleet.spec._values import registry_path as registry_path
from fleet.spec._values import request_date as request_date
from fleet.spec._values import request_text as request_text
from fleet.taints import NO_SCHEDULE, Effect

GCP_PROJECT = r"^[a-z][-a-z0-9]{4,28}[a-z0-9]$"
GCP_REGION = r"^[a-z]+-[a-z]+\d+$"
AWS_ACCOUNT = r"^\d{12}$"
AWS_REGION = r"^[a-z]{2}(-gov)?-[a-z]+-\d$"
# Each pattern above in words, with an example: what a refusal says instead of the regex.
PATTERN_WORDS = {
    GCP_PROJECT: ("a Google Cloud project id: 6-30 lower-case letters, digits and '-', starting "
                  "with a letter and not ending with '-'", "acme-ml-prod"),
    GCP_REGION: ("a Google Cloud region such as us-central1 (a zone like us-central1-a goes "
                 "under a pool's `zone`)", "us-central1"),
    AWS_ACCOUNT: ("an AWS account id: exactly 12 digits, in quotes", '"123456789012"'),
    AWS_REGION: ("an AWS region such as us-east-1 (an Availability Zone like us-east-1a goes "
                 "under a pool's `zone`)", "us-east-1"),
}


class GcpCloud(_Model):
    """A Google Cloud project and the region the fleet lives in."""

    project: str = Field(pattern=GCP_PROJECT)
    region: str = Field(pattern=GCP_REGION)

    @field_validator("project")
    @classmethod
    def _restricted(cls, value: str) -> str:
        # Resource Manager refuses project ids holding restricted strings such as google
        # (https://cloud.google.com/resource-manager/docs/creating-managing-projects); issue 21
        # met it as a refusal at deploy time.
        if "google" in value:
            raise SpecValueError(f"{value!r} contains 'google', which Google Cloud refuses in "
                                 "a project id", "use the id of your project as the console "
                                 "shows it (e.g. acme-ml-prod)")
        return value


class AwsCloud(_Model):
    """An AWS account and the region the fleet lives in."""

    account: str = Field(pattern=AWS_ACCOUNT)
    region: str = Field(pattern=AWS_REGION)


class Clouds(_Model):
    gcp: GcpCloud | None = None
    aws: AwsCloud | None = None

    def of(self, cloud: str) -> GcpCloud | AwsCloud | None:
        """The declared settings of `cloud` ("gcp", "aws"); None where it is not declared."""
        return self.gcp if cloud == "gcp" else self.aws if cloud == "aws" else None


def _cidr(value: str) -> str:
    try:
        ipaddress.ip_network(value)
    except ValueError:
        try:
            loose = ipaddress.ip_network(value, strict=False)
        except ValueError:
            raise SpecValueError(f"{value!r} is not an address range",
                                 "write a CIDR block: an address and a prefix length, such as "
                                 "10.0.0.0/16") from None
        raise SpecValueError(f"{value!r} has host bits set after its /{loose.prefixlen}",
                             f"write the range's first address: {loose}") from None
    return value


class Network(_Model):
    """Address ranges of the cluster's network."""

    cidr: str = "10.0.0.0/16"
    pods_cidr: str = "10.64.0.0/14"
    services_cidr: str = "10.96.0.0/20"

    _check = field_validator("cidr", "pods_cidr", "services_cidr")(_cidr)


# An IAM role or user an EKS access entry can name (the principal of `admins`). An STS
# assumed-role session ARN is refused by EKS: the entry names the role itself.
# https://docs.aws.amazon.com/eks/latest/userguide/creating-access-entries.html (read 2026-11-24)
IAM_PRINCIPAL = re.compile(
    r"^arn:aws(-cn|-us-gov)?:iam::\d{12}:(role|user)/[A-Za-z0-9+=,.@_/-]{1,512}$")
_ASSUMED = re.compile(r"^arn:aws(-cn|-us-gov)?:sts::(\d{12}):assumed-role/([^/]+)/")


def _iam_principal(value: str) -> str:
    """`admins[]`: an IAM role or user ARN, as an EKS access entry names it."""
    if IAM_PRINCIPAL.match(value):
        return value
    assumed = _ASSUMED.match(value)
    if assumed:
        partition = f"aws{assumed[1] or ''}"
        raise SpecValueError(
            f"{value!r} is an STS session of a role, not the role",
            f"name the role: arn:{partition}:iam::{assumed[2]}:role/{assumed[3]} "
            "(`aws sts get-caller-identity` prints the session)")
    raise SpecValueError(
        f"{value!r} is not an IAM role or user ARN",
        "write arn:aws:iam::<12-digit account>:role/<name> (or :user/<name>), e.g. "
        "arn:aws:iam::123456789012:role/ci-deployer")


class Cluster(_Model):
    """A Kubernetes cluster: GKE on gcp, EKS on aws.

    admins (EKS): IAM roles or users given cluster admin through EKS access entries, beside
    the identity that creates the cluster (CI roles, teammates running `pulumi up` or smoke).
    """

    name: str
    cloud: Literal["gcp", "aws"]
    kubernetes_version: str | None = None
    release_channel: Literal["RAPID", "REGULAR", "STABLE"] = "REGULAR"
    private_endpoint: bool = False
    authorized_cidrs: list[str] = Field(default_factory=list)
    admins: list[str] = Field(default_factory=list)
    network: Network = Network()
    system_pool: SystemPool = Field(default_factory=lambda: SystemPool())

    @field_validator("authorized_cidrs")
    @classmethod
    def _cidrs(cls, value: list[str]) -> list[str]:
        return [_cidr(v) for v in value]

    @field_validator("admins")
    @classmethod
    def _admins(cls, value: list[str]) -> list[str]:
        if len(set(value)) != len(value):
            raise SpecValueError("an ARN is listed twice", "list each admin once")
        return [_iam_principal(v) for v in value]


class Capacity(_Model):
    """How nodes are obtained. A string is shorthand: on-demand, spot, flex-start, queued."""

    spot: bool = False
    reservation: str | None = None
    flex_start: bool = False
    queued: bool = False
    block: bool = False  # aws: `reservation` is an EC2 Capacity Block for ML, not an ODCR

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, value: Any) -> Any:
        if isinstance(value, str):
            table = {
                "on-demand": {},
                "spot": {"spot": True},
                "flex-start": {"flex_start": True},
                "queued": {"queued": True},
            }
            if value not in table:
                raise SpecValueError(
                    f"{value!r} is not a capacity",
                    f"use one of {', '.join(table)}, or a mapping with spot / reservation / "
                    "flex_start / queued",
                )
            return table[value]
        return value

    @property
    def label(self) -> str:
        if self.reservation:
            kind = "capacity block" if self.block else "reservation"
            return f"{kind} {self.reservation}"
        for flag, name in ((self.spot, "spot"), (self.queued, "queued"),
                           (self.flex_start, "flex-start")):
            if flag:
                return name
        return "on-demand"


class Autoscaling(_Model):
    min_nodes: int = Field(ge=0)
    max_nodes: int = Field(ge=1)


def _zone_shorthand(value: Any) -> Any:
    """`zone: Z` is shorthand for `zones: [Z]`."""
    if isinstance(value, dict) and "zone" in value:
        value = dict(value)
        zone = value.pop("zone")
        if "zones" in value:
            raise SpecValueError("both `zone` and `zones` are given",
                                 "keep one: `zone: Z` is short for `zones: [Z]`")
        value["zones"] = [zone]
    return value


class SystemPool(_Model):
    """The cluster's system pool: untainted CPU nodes for the cluster's add-ons (DNS, the
    device plugin chart's node-feature-discovery master, the JobSet controller), paid by the
    platform. Every field left out comes from the catalog's defaults for the cloud; the zones
    default to the cluster's pools' zones. `enabled: false` removes it (with a warning)."""

    enabled: bool = True
    machine_type: str | None = None
    nodes: int | None = Field(default=None, ge=1)
    autoscaling: Autoscaling | None = None
    zones: list[str] = Field(default_factory=list)
    disk_size_gb: int | None = Field(default=None, ge=50)
    upgrade: Upgrade | None = None  # as a pool's (docs/stack.md "Upgrades")

    _zone = model_validator(mode="before")(_zone_shorthand)


class NodeTaint(_Model):
    key: str
    value: str = ""
    effect: Effect = NO_SCHEDULE


class Pool(_Model):
    """One node pool (GPU), TPU slice (or multislice), or Cloud TPU VM group."""

    name: str
    team: str
    accelerator: str
    cluster: str | None = None
    runtime: Literal["gke", "eks", "tpu-vm"] | None = None
    topology: str | None = None
    nodes: int | None = Field(default=None, ge=0)
    zones: list[str] = Field(default_factory=list)
    capacity: Capacity = Capacity()
    driver: Literal["default", "latest", "disabled"] = "default"
    ami: Literal["al2023", "bottlerocket"] | None = None
    labels: dict[str, str] = Field(default_factory=dict)
    taints: list[NodeTaint] = Field(default_factory=list)
    autoscaling: Autoscaling | None = None
    placement: Literal["compact", "none"] | None = None
    multislice: int = Field(default=1, ge=1)
    fabric: Literal["auto", "off"] = "auto"
    disk_size_gb: int = Field(default=200, ge=50)
    gate: PoolGate | None = None  # None: the default gate (accelerator pools; docs/gate.md)
    # how the cloud replaces the nodes when it upgrades or rolls them (docs/stack.md
    # "Upgrades"); None: fleet.upgrade's default for the pool's cloud and capacity
    upgrade: Upgrade | None = None
    # Request metadata (`accelfleet pool request` writes it): who asked, why, and the last day
    # the pool is needed; `fleet validate` warns once it has passed (`accelfleet pool expired`).
    requested_by: str | None = None
    reason: str | None = None
    expires: date | None = None

    @field_validator("requested_by", "reason", mode="before")
    @classmethod
    def _request_text(cls, value: Any, info: ValidationInfo) -> Any:
        return request_text(value, str(info.field_name))

    @field_validator("expires", mode="before")
    @classmethod
    def _expires(cls, value: Any) -> Any:
        return request_date(value)

    _zone = model_validator(mode="before")(_zone_shorthand)


class Team(_Model):
    name: str
    monthly_budget_usd: float | None = Field(default=None, ge=0)
    contact: str | None = None


MAX_SMOKE_TIMEOUT_S = SD.MAX_TIMEOUT_S
class Smoke(_Model):
    """How `accelfleet smoke run` tests the fleet."""

    max_tier: int = Field(default=SD.MAX_TIER, ge=0, le=SD.TOP_TIER)  # 0 inventory .. 3 fabric
    namespace: str = SD.NAMESPACE
    timeout_s: int = Field(default=SD.TIMEOUT_S, ge=30, le=SD.MAX_TIMEOUT_S)
    torch_image: str | None = None
    jax_image: str | None = None
    # A registry path that mirrors Docker Hub (an Artifact Registry remote repository, an ECR
    # pull-through cache): every pinned image from Docker Hub is pulled through it instead,
    # same path, same digest (docs/smoke.md, "Where proof pods pull from").
    docker_hub_mirror: str | None = None

    @field_validator("torch_image", "jax_image")
    @classmethod
    def _image(cls, value: str | None) -> str | None:
        return image_reference(value)

    @field_validator("docker_hub_mirror")
    @classmethod
    def _mirror(cls, value: str | None) -> str | None:
        return registry_path(value)


class StackRate(_Model):
    """A rate the stack pays (negotiated, committed-use), which wins over the catalog's list
    price: `usd_per_hour` for a machine type, or `usd_per_chip_hour` for a TPU generation;
    `capacity` limits it to on-demand, spot or reservation pools (default: all of them).
    `fleet.pricing` checks the names and the figures against the catalog."""

    machine_type: str | None = None
    tpu: str | None = None
    usd_per_hour: float | None = None
    usd_per_chip_hour: float | None = None
    capacity: Literal["on-demand", "spot", "reservation"] | None = None
    note: str = ""


class RoutingTeam(_Model):
    """Where one team's work goes on one cluster (`fleet.routing` resolves it into Kueue).

    prefer: pools or accelerators, first choice first (an accelerator stands for every pool
    of it on the cluster, the team's own first); another team's pool is borrowed while idle.
    cluster: the cluster these pools are on (default: the one its pools name, else every
    cluster the team has pools on). namespace: the team's namespace there (default: its name).
    """

    team: str
    prefer: list[str] = Field(default_factory=list)
    cluster: str | None = None
    namespace: str | None = None
    borrowing_limit_percent: int | None = Field(default=None, ge=0, le=100)
    lending_limit_percent: int | None = Field(default=None, ge=0, le=100)


class Routing(_Model):
    """Kueue routing: each team's flavor order, and how much idle quota moves between teams
    of a cluster (its cohort). A team may borrow at most `borrowing_limit_percent` of another
    team's pool it routes to, and lends at most `lending_limit_percent` of each of its own."""

    borrowing_limit_percent: int = Field(default=100, ge=0, le=100)
    lending_limit_percent: int = Field(default=100, ge=0, le=100)
    teams: list[RoutingTeam] = Field(default_factory=list)


class FleetSpec(_Model):
    """The whole fleet as one stack declares it."""

    clouds: Clouds = Clouds()
    clusters: list[Cluster] = Field(default_factory=list)
    teams: list[Team] = Field(default_factory=list)
    pools: list[Pool] = Field(default_factory=list)
    prices: list[StackRate] = Field(default_factory=list)
    smoke: Smoke = Smoke()
    routing: Routing = Routing()
    gate: Gate = Gate()

    def region_of(self, cloud: str) -> str | None:
        """The region `cloud` ("gcp", "aws") is declared in: every cluster and pool on that
        cloud lives there; the one place a region is looked up. None where the cloud is not
        declared (the cluster rules report it)."""
        declared = self.clouds.of(cloud)
        return declared.region if declared is not None else None
