"""Who can reach a cluster's control plane: what GKE refuses, what the policy pack refuses, and
what leaves the machine running `pulumi up` unable to reach the API it configures.

The same `pulumi up` that creates a cluster installs its Helm releases and Kueue objects
through the cluster's API endpoint; when the runner cannot reach that endpoint, every one of
them times out after the cluster exists. `fleet validate` says so before anything is built.

"Valid" means CI passes: whatever `accelfleet plan --policies` refuses (policies/rules.py,
`public-endpoint-authorized-cidrs`) is at least a warning here, with the same fix.
"""

from __future__ import annotations

import ipaddress

from fleet.errors import Problem, Where
from fleet.spec.fields import Cluster, FleetSpec

# GKE, "Add authorized networks for control plane access"
# (https://cloud.google.com/kubernetes-engine/docs/how-to/authorized-networks; issue 20 item 4
# quotes it, the page was not read here): with the public endpoint disabled, authorized
# networks can only be internal addresses; the API refuses a public range.
GKE_AUTHORIZED_NETWORKS_DOC = "https://cloud.google.com/kubernetes-engine/docs/how-to/authorized-networks"
OPEN = ("0.0.0.0/0", "::/0")  # what the policy pack calls "open to all"
EXAMPLE_RUNNER_CIDR = "203.0.113.0/24"  # documentation range (RFC 5737), for the hints


def endpoint_checks(spec: FleetSpec) -> tuple[list[Problem], list[Problem]]:
    """(problems, warnings) about every cluster's control-plane endpoint."""
    problems: list[Problem] = []
    warnings: list[Problem] = []
    for c in spec.clusters:
        where = Where("clusters", name=c.name)
        if c.private_endpoint:
            _private(c, where, problems, warnings)
        else:
            _public(c, where, warnings)
    return problems, warnings


# Internal ranges: RFC 1918, the shared space of RFC 6598 and IPv6 unique-local addresses.
# Documentation ranges (203.0.113.0/24) are not among them: a router would never carry them
# to a private endpoint either.
INTERNAL = tuple(ipaddress.ip_network(n) for n in (
    "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10", "fc00::/7"))


def _is_public(cidr: str) -> bool:
    try:
        net = ipaddress.ip_network(cidr, strict=False)
    except ValueError:  # the spec's own validator reports a malformed CIDR
        return False
    return not any(net.version == i.version and net.subnet_of(i)  # type: ignore[arg-type]
                   for i in INTERNAL)


def _private(c: Cluster, where: Where, problems: list[Problem],
             warnings: list[Problem]) -> None:
    public = [cidr for cidr in c.authorized_cidrs if _is_public(cidr)]
    if c.cloud == "gcp" and public:
        what = "is a public range" if len(public) == 1 else "are public ranges"
        problems.append(Problem(
            where.dot("authorized_cidrs"),
            f"{', '.join(public)} {what}, but the cluster has only a private endpoint: "
            "GKE accepts only internal "
            f"(private) ranges then ({GKE_AUTHORIZED_NETWORKS_DOC})",
            "list the private ranges of the networks that reach the VPC (VPN, interconnect, "
            "a bastion's subnet), or set `private_endpoint: false` to keep public ranges"))
    if c.cloud != "gcp":
        return  # EKS private endpoints: their own rules (issue 20, item 12)
    warnings.append(Problem(
        where.dot("private_endpoint"),
        "the control plane has only a private endpoint: the machine running `pulumi up` must "
        "be inside the cluster's VPC or a network connected to it, or the Helm releases and "
        "Kueue objects of the same `pulumi up` time out after the cluster is created",
        "run `pulumi up` from a runner in the VPC (or over VPN/interconnect) and list its "
        "range in `authorized_cidrs`, or set `private_endpoint: false` with the runner's "
        f"egress range in `authorized_cidrs` (e.g. [{EXAMPLE_RUNNER_CIDR}])"))


def _public(c: Cluster, where: Where, warnings: list[Problem]) -> None:
    opened = [cidr for cidr in c.authorized_cidrs if cidr in OPEN]
    if opened:
        warnings.append(Problem(
            where.dot("authorized_cidrs"),
            f"{', '.join(opened)} opens the public control-plane endpoint to every network; "
            "`accelfleet plan --policies` refuses it (public-endpoint-authorized-cidrs)",
            "in `authorized_cidrs`, list only the networks that need the API: your CI "
            f"runners' and your office's egress ranges (e.g. [{EXAMPLE_RUNNER_CIDR}])"))
        return
    if c.authorized_cidrs:
        return
    if c.cloud == "gcp":
        reach = ("GKE turns master authorized networks on with no range: no machine outside "
                 "Google Cloud reaches the API, so a `pulumi up` run from outside times out on "
                 "every Helm release and Kueue object after the cluster is created")
    else:
        reach = "the EKS public endpoint then answers every network"
    warnings.append(Problem(
        where.dot("authorized_cidrs"),
        f"the control plane has a public endpoint and no `authorized_cidrs`: {reach}; "
        "`accelfleet plan --policies` (what CI runs) refuses it "
        "(public-endpoint-authorized-cidrs)",
        "add the egress range of the machine running `pulumi up` (your CI runners') and of "
        f"whoever runs `accelfleet smoke`, e.g. `authorized_cidrs: [{EXAMPLE_RUNNER_CIDR}]`"))

