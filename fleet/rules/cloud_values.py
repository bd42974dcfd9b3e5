"""Values a stack may spell correctly that the cloud or Kubernetes still refuses at deploy time
(issue 21 item 12), refused here instead, each with the rule's source:

- taints: Kubernetes keeps one taint per (key, effect) on a node ("taints must be unique by
  key and effect pair", k8s.io/kubernetes pkg/apis/core/validation ValidateNodeTaints), and
  accelfleet adds the accelerator's own taint (catalog `kube` facts) to every pool, and the
  gate's startup taint to every gated pool (fleet.gate);
- node labels: a kubelet may not set labels in the kubernetes.io or k8s.io namespaces (their
  subdomains included, node-role.kubernetes.io among them) but the kubelet.kubernetes.io and
  node.kubernetes.io ones (the NodeRestriction admission plugin:
  https://kubernetes.io/docs/reference/access-authn-authz/admission-controllers/#noderestriction;
  gardener/gardener@v1.95.0:pkg/utils/kubernetes/node.go IsNodeLabelAllowedForKubelet, read
  2026-11-24);
- GKE address ranges: never in 0.0.0.0/8, 127.0.0.0/8, 169.254.0.0/16 or 224.0.0.0/4
  (https://cloud.google.com/vpc/docs/subnets#prohibited-ranges), nor
  overlapping the control plane's range (GKE_CONTROL_PLANE_CIDR, the
  `master_ipv4_cidr_block` components/gcp/_cluster.py gives every private cluster);
- at most 100 authorized networks on a GKE control plane (the limit issue 21 met at deploy
  time; https://cloud.google.com/kubernetes-engine/docs/how-to/authorized-networks);
- a GKE `kubernetes_version` is "latest", a minor version (1.33), a patch version (1.33.5) or
  a full GKE version (1.33.5-gke.1162000), the forms the `min_master_version` of the
  google provider's container_cluster takes (https://cloud.google.com/kubernetes-engine/versioning).

The smoke image names, the project id's restricted strings and `smoke.timeout_s` are checked by
the spec itself (`fleet.spec.fields`).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Sequence

from fleet.errors import Where
from fleet.gate import gate_taint
from fleet.model import ResolvedPool
from fleet.rules.problems import RuleProblems as Reporter
from fleet.spec.fields import FleetSpec

GKE_CONTROL_PLANE_CIDR = "172.16.0.0/28"  # == components.gcp._cluster.MASTER_CIDR (a test holds it)
GKE_PROHIBITED = tuple(ipaddress.ip_network(n) for n in
                       ("0.0.0.0/8", "127.0.0.0/8", "169.254.0.0/16", "224.0.0.0/4"))
GKE_MAX_AUTHORIZED_NETWORKS = 100
KUBELET_NAMESPACES = ("kubelet.kubernetes.io", "node.kubernetes.io")
# The kubernetes.io labels a kubelet sets itself (k8s.io/kubelet pkg/apis well_known_labels.go).
KUBELET_LABELS = frozenset({
    "kubernetes.io/hostname", "kubernetes.io/arch", "kubernetes.io/os",
    "topology.kubernetes.io/region", "topology.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region", "failure-domain.beta.kubernetes.io/zone",
    "node.kubernetes.io/instance-type", "beta.kubernetes.io/instance-type",
    "beta.kubernetes.io/arch", "beta.kubernetes.io/os"})
GKE_VERSION = re.compile(r"^(latest|1\.\d{1,3}(\.\d{1,3}(-gke\.\d{1,12})?)?)$")


def check_cloud_values(r: Reporter, spec: FleetSpec, pools: Sequence[ResolvedPool]) -> None:
    """Every rule above, on the spec and its resolved pools."""
    for pool in pools:
        _taints(r, pool)
        _labels(r, pool)
    for cluster in spec.clusters:
        at = Where("clusters", name=cluster.name)
        if cluster.cloud != "gcp":
            continue
        if len(cluster.authorized_cidrs) > GKE_MAX_AUTHORIZED_NETWORKS:
            r.add(at.dot("authorized_cidrs"), f"{len(cluster.authorized_cidrs)} authorized "
                  f"networks; a GKE control plane takes at most {GKE_MAX_AUTHORIZED_NETWORKS}",
                  "merge neighbouring addresses into larger CIDR blocks, or reach the control "
                  "plane through a VPN or bastion (private_endpoint: true)")
        version = cluster.kubernetes_version
        if version is not None and not GKE_VERSION.match(version):
            r.add(at.dot("kubernetes_version"), f"{version[:60]!r} is not a GKE version",
                  "write `latest`, a minor version such as 1.33, or a full GKE version such as "
                  "1.33.5-gke.1162000 (or leave it out: the release channel picks one)")
        net = cluster.network
        for field in ("cidr", "pods_cidr", "services_cidr"):
            _gke_range(r, at.dot(f"network.{field}"), getattr(net, field))


def _taints(r: Reporter, pool: ResolvedPool) -> None:
    at = Where("pools", name=pool.name, field="taints")
    seen: dict[tuple[str, str], int] = {}
    if pool.shape.kind != "cpu":
        ours = r.catalog.kube(pool.shape).taint
        seen[ours.key, ours.effect] = -1
    if pool.gate_enforced:  # the gate's startup taint (docs/gate.md), also accelfleet's own
        gate = gate_taint()
        seen[gate.key, gate.effect] = -2
    for i, taint in enumerate(pool.spec.taints):
        first = seen.setdefault((taint.key, taint.effect), i)
        if first == i:
            continue
        if first == -2:
            r.add(at.item(i), f"taint {taint.key}:{taint.effect} is the gate's startup taint, "
                  "which accelfleet adds to the pool's nodes itself", "remove it: the gate "
                  "taints every new node until its proof passes (docs/gate.md)")
        elif first < 0:
            r.add(at.item(i), f"taint {taint.key}:{taint.effect} is the accelerator taint "
                  "accelfleet adds to the pool's nodes itself", "remove it: the pool's nodes "
                  "carry it already (a node holds one taint per key and effect)")
        else:
            r.add(at.item(i), f"taint {taint.key}:{taint.effect} repeats taints[{first}]; "
                  "a node holds one taint per key and effect",
                  f"keep one of them (taints[{first}])")


def _labels(r: Reporter, pool: ResolvedPool) -> None:
    for key in pool.spec.labels:
        prefix, slash, _ = key.rpartition("/")
        if not slash or key in KUBELET_LABELS:
            continue
        kubernetes = any(prefix == ns or prefix.endswith("." + ns)
                         for ns in ("kubernetes.io", "k8s.io"))
        allowed = any(prefix == ns or prefix.endswith("." + ns) for ns in KUBELET_NAMESPACES)
        if kubernetes and not allowed:
            r.add(Where("pools", name=pool.name, field="labels"),
                  f"label key {key[:120]!r} is in the "
                  f"{prefix[:60]} namespace, which a node may not label itself with (the "
                  "NodeRestriction admission plugin refuses it when the node registers)",
                  "use a prefix of your own, e.g. example.com/role; a node-role label is set "
                  "by a cluster admin (`kubectl label node`), not by the pool")


def _gke_range(r: Reporter, where: Where, text: str) -> None:
    try:
        net = ipaddress.ip_network(text)
    except ValueError:
        return  # refused by the spec
    if net.version != 4:
        return
    for bad in GKE_PROHIBITED:
        if net.overlaps(bad):
            r.add(where, f"{net} overlaps {bad}, a range Google Cloud prohibits for subnets",
                  "use a private range (RFC 1918), e.g. 10.0.0.0/16")
            return
    plane = ipaddress.ip_network(GKE_CONTROL_PLANE_CIDR)
    if net.overlaps(plane):
        r.add(where, f"{net} overlaps {plane}, the range accelfleet gives the GKE control "
              "plane", "use a range apart from 172.16.0.0/28, e.g. 10.0.0.0/16")
