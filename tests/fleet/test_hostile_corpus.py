"""The hostile corpus of issue 10 (values the cloud would refuse, messages a person can act on),
run through the CLI: each stack file gets exit 2, a message that says what is wrong and the fix,
and no traceback. Every case runs in-process (typer's CliRunner, bounded by the runner: a hang
fails the case, no timing is asserted); one case of each class also runs through the real
command, `python -m cli fleet validate FILE`, in a subprocess with a timeout. Hypothesis then
throws random names, labels and taints at the rules: each either validates and fits every
place it lands, or is refused with a fix."""

from __future__ import annotations

import concurrent.futures
import copy
import json
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from cli.main import app
from fleet import validate_fleet
from fleet.errors import SpecError
from fleet.names import slice_pool_names

ROOT = Path(__file__).resolve().parents[2]
RUNNER_BOUND_S = 60  # a hang, not a timing: each case takes well under a second
NOT_MESSAGES = ("Traceback", "internal error", "Value error", "String should match pattern",
                "Input should be", "correct the value", "^[a-z")

BASE: dict[str, Any] = {
    "clouds": {"gcp": {"project": "acme-ml-prod", "region": "us-central1"},
               "aws": {"account": "123456789012", "region": "us-east-1"}},
    "clusters": [{"name": "gke", "cloud": "gcp"},
                 {"name": "eks", "cloud": "aws", "network": {"cidr": "10.20.0.0/16"}}],
    "teams": [{"name": "research"}],
    "pools": [{"name": "h100", "cluster": "gke", "team": "research",
               "accelerator": "a3-highgpu-8g", "nodes": 2, "zone": "us-central1-a"}],
}
Mutate = Callable[[dict[str, Any]], None]


def stack(mutate: Mutate) -> str:
    """A stack file: BASE changed by `mutate`, written as YAML (JSON is YAML's flow style)."""
    fleet = copy.deepcopy(BASE)
    mutate(fleet)
    return "config:\n  accelfleet:fleet: " + json.dumps(fleet, ensure_ascii=False) + "\n"


def pool0(**fields: Any) -> Mutate:
    def apply(f: dict[str, Any]) -> None:
        f["pools"][0].update(fields)
        for k in [k for k, v in f["pools"][0].items() if v is None]:
            del f["pools"][0][k]
    return apply


def tpu_pool(**fields: Any) -> Mutate:
    return pool0(**{"accelerator": "v5p", "topology": "2x2x4", "nodes": None, **fields})


def eks_pool(**fields: Any) -> Mutate:
    """The pool moved to the EKS cluster (a g6.12xlarge in one zone), with `fields`."""
    return pool0(**{"cluster": "eks", "accelerator": "g6.12xlarge", "zone": "us-east-1a",
                    "nodes": 1, **fields})


def at(path: str, value: Any) -> Mutate:
    """Set a dotted path (list items by index) to `value`."""
    def apply(f: dict[str, Any]) -> None:
        node: Any = f
        parts = path.split(".")
        for part in parts[:-1]:
            node = node[int(part)] if part.isdigit() else node.setdefault(part, {})
        node[int(parts[-1]) if parts[-1].isdigit() else parts[-1]] = value
    return apply


def both(*steps: Mutate) -> Mutate:
    def apply(f: dict[str, Any]) -> None:
        for step in steps:
            step(f)
    return apply


def team(name: str) -> Mutate:
    return both(at("teams.0.name", name), at("pools.0.team", name))


@dataclass(frozen=True)
class Case:
    cls: str  # the class: names, regions, ranges, bounds, smoke, messages, files
    text: str | bytes
    says: tuple[str, ...]  # what the message must say
    code: int = 2
    real: bool = False  # also run through the real command in a subprocess


def case(cls: str, change: Mutate | str | bytes, *says: str, real: bool = False) -> Case:
    text = change if isinstance(change, (str, bytes)) else stack(change)
    return Case(cls, text, says, real=real)


UNQUOTED_ACCOUNT = stack(lambda f: None).replace('"123456789012"', "012345678901")

CORPUS: dict[str, Case] = {
    # -- names: every place a name lands ---------------------------------------------------
    "team-with-space": case("names", team("Research Team"), "team name 'Research Team'",
                            "rename it, e.g. 'research-team'", real=True),
    "team-not-latin": case("names", team("研究"), "team name '研究'", "accelfleet.io/team"),
    "team-upper-case-on-gcp": case("names", team("Research"), "accelfleet-team",
                                   "upper-case"),
    "pool-upper-case": case("names", pool0(name="H100"), "GKE node pool name", "'h100'"),
    "pool-41-chars": case("names", pool0(name="p" * 41), "41 characters", "over the 40"),
    "multislice-43-chars": case("names", tpu_pool(name="s" * 40, multislice=4),
                                "'" + "s" * 40 + "-s3'", "43 characters",
                                "shorten the pool name to 37"),
    # a multi-host slice's smoke and gate JobSet: its pods `<jobset>-slice-<j>-<i>-<5>` pass
    # 63 at the longest run id, which JobSet's webhook refuses (issue 36 class 2)
    "multihost-slice-28-chars": case("names", tpu_pool(name="s" * 28), "JobSet's webhook",
                                     "-slice-0-3-abcde", "64 characters",
                                     "shorten the pool name to 27"),
    "multislice-35-chars": case("names", tpu_pool(name="s" * 35, multislice=4),
                                "JobSet's last pod", "-slice-3-3-abcde",
                                "shorten the pool name to 27"),
    # EKS takes label keys of 1-63 whole, values of 1-63, taint keys of 1-63 (the EKS API)
    "eks-label-key-70-chars": case("names", eks_pool(labels={"e" * 60 + ".com/owner": "a"}),
                                   "an EKS node group takes label keys of at most 63"),
    "eks-label-value-empty": case("names", eks_pool(labels={"example.com/owner": ""}),
                                  "an empty value", "label values of 1-63"),
    "eks-taint-key-64-chars": case("names", eks_pool(taints=[
        {"key": "t" * 51 + ".io/dedicated", "value": "x"}]),
        "an EKS node group takes taint keys of at most 63"),
    "duplicate-pool": case("names", lambda f: f["pools"].append(dict(f["pools"][0])),
                           "used 2 times", "'h100-2'"),
    "cluster-underscore": case("names", both(at("clusters.0.name", "ml_gke"),
                                             at("pools.0.cluster", "ml_gke")),
                               "cluster name 'ml_gke'", "'ml-gke'"),
    "label-value": case("names", pool0(labels={"owner": "bad value!"}),
                        "label value 'bad value!'", "use a value that fits, e.g. 'bad-value'"),
    "label-prefix": case("names", pool0(labels={"Example.COM/owner": "a"}), "prefix",
                         "'example.com'"),
    "label-reserved": case("names", pool0(labels={"kubernetes.io/role": "gpu"}),
                           "uses a prefix that accelfleet or the clouds set"),
    "taint-value": case("names", pool0(taints=[{"key": "dedicated", "value": "-x"}]),
                        "taint value '-x'"),
    "taint-key": case("names", pool0(taints=[{"key": "bad key!"}]), "taint key 'bad key!'"),
    "smoke-namespace": case("names", at("smoke", {"namespace": "Smoke_NS"}),
                            "Kubernetes namespace"),
    "gce-reservation": case("names", pool0(capacity={"reservation": "My_Reservation"}),
                            "Compute Engine reservation name", "'my-reservation'"),
    # -- regions and zones -----------------------------------------------------------------
    "region-narnia": case("regions", at("clouds.gcp.region", "narnia-east1"),
                          "'narnia-east1' is not a Google Cloud region", real=True),
    "region-typo": case("regions", at("clouds.gcp.region", "us-cental1"),
                        "did you mean 'us-central1'"),
    "aws-region-fake": case("regions", at("clouds.aws.region", "zz-fake-9"),
                            "'zz-fake-9' is not an AWS region"),
    "zone-unknown": case("regions", pool0(zone="us-central1-z"),
                         "us-central1 has no zone 'us-central1-z'", "us-central1-a"),
    "zone-other-region": case("regions", pool0(zone="europe-west4-a"),
                              "not in region us-central1"),
    "aws-zone-unknown": case("regions", both(pool0(cluster="eks", accelerator="p5.48xlarge",
                                                   zone="us-east-1q")),
                             "us-east-1 has no zone 'us-east-1q'"),
    # -- address ranges --------------------------------------------------------------------
    "ranges-overlap": case("ranges", at("clusters.0.network", {"cidr": "10.64.0.0/16"}),
                           "overlaps the cluster's cidr", real=True),
    "clusters-overlap": case("ranges", lambda f: f["clusters"].append(
        {"name": "gke2", "cloud": "gcp"}), "overlaps cluster 'gke'", "10.1.0.0/16"),
    "node-range-small": case("ranges", both(at("clusters.0.network", {"cidr": "10.0.0.0/29"}),
                                            pool0(nodes=10)),
                             "the node range 10.0.0.0/29 holds 4 nodes", "/28"),
    "pod-range-small": case("ranges", both(at("clusters.0.network",
                                              {"pods_cidr": "10.64.0.0/22"}), pool0(nodes=8)),
                            "the pod range 10.64.0.0/22 holds the pods of 4", "/20"),
    "eks-vpc-huge": case("ranges", at("clusters.1.network", {"cidr": "10.0.0.0/8"}),
                         "an Amazon VPC is /16 to /28"),
    "eks-services-public": case("ranges", at("clusters.1.network.services_cidr", "8.8.0.0/16"),
                                "not an EKS service range"),
    "eks-subnet-small": case("ranges", both(
        at("clusters.1.network", {"cidr": "10.20.0.0/20"}),
        pool0(cluster="eks", accelerator="p5.48xlarge", zone="us-east-1a", nodes=6)),
        "zone us-east-1a's subnet", "max Pods"),
    "eks-private-allow-list": case("ranges", at("clusters.1.authorized_cidrs", ["10.0.0.0/8"]),
                                   "private range", "public addresses"),
    "host-bits": case("ranges", at("clusters.0.network", {"cidr": "10.0.0.1/16"}),
                      "host bits", "10.0.0.0/16"),
    "ipv6": case("ranges", at("clusters.0.network", {"cidr": "fd00::/64"}), "IPv6"),
    # -- upper bounds ----------------------------------------------------------------------
    "kueue-outgrows-the-system-pool": case("bounds", pool0(nodes=512),
                                           "kueue-controller-manager (sized for 512 nodes)",
                                           "machine_type: e2-standard-8"),
    "nodes-per-zone": case("bounds", pool0(nodes=1001), "nodes per zone is 1,001",
                           "kubernetes-engine/quotas", real=True),
    "autoscaling-max": case("bounds", pool0(nodes=None, autoscaling={"min_nodes": 0,
                                                                     "max_nodes": 5000}),
                            "autoscaling.max_nodes", "5,000"),
    "disk-huge": case("bounds", pool0(disk_size_gb=100_000), "100,000 GB", "65,536 GB"),
    "aws-disk-huge": case("bounds", pool0(cluster="eks", accelerator="p5.48xlarge",
                                          zone="us-east-1a", disk_size_gb=70_000),
                          "70,000 GB", "ebs"),
    "multislice-100000": case("bounds", tpu_pool(topology="2x2x1", multislice=100_000),
                              "multislice is 100,000", "accelfleet allows"),
    "cluster-nodes": case("bounds", tpu_pool(topology="16x16x24", multislice=10),
                          "the cluster's nodes", "15,000"),
    "gke-clusters-101": case("bounds", lambda f: f["clusters"].extend(
        {"name": f"g{i}", "cloud": "gcp", "network": {"cidr": f"10.{100 + i}.0.0/24",
                                                       "pods_cidr": f"172.16.{i}.0/24",
                                                       "services_cidr": f"192.168.{i}.0/24"}}
        for i in range(100)), "the number of GKE clusters is 101", "100"),
    "clusters-1002": case("bounds", lambda f: f["clusters"].extend(
        {"name": f"g{i}", "cloud": "gcp"} for i in range(1000)),
        "declares 1,002 clusters", "split the fleet"),
    # -- smoke -----------------------------------------------------------------------------
    "max-tier-4": case("smoke", at("smoke", {"max_tier": 4}), "smoke.max_tier",
                       "at most 3", real=True),
    # -- messages a person can act on ------------------------------------------------------
    "tpu-v5q": case("messages", pool0(accelerator="v5q", topology="2x2x1", nodes=None),
                    "did you mean 'v5p'", "accelerator: v5p", real=True),
    "tpu-v6": case("messages", pool0(accelerator="v6", topology="2x2", nodes=None),
                   "did you mean 'v6e'"),
    "account-unquoted": case("messages", UNQUOTED_ACCOUNT, "leading zeros",
                             'account: "012345678901"'),
    "account-number": case("messages", at("clouds.aws.account", 123456789012),
                           'quote it: account: "123456789012"'),
    "project-pattern": case("messages", at("clouds.gcp.project", "Acme"),
                            "Google Cloud project id", "acme-ml-prod"),
    "field-typo": case("messages", pool0(nodez=3), "did you mean 'nodes'"),
    "quoted-number": case("messages", pool0(nodes="2"), "without quotes"),
    "driver-literal": case("messages", pool0(driver="newest"),
                           "not one of default, latest, disabled"),
    "capacity-word": case("messages", pool0(capacity="spotty"), "'spotty' is not a capacity",
                          "on-demand, spot"),
    "zone-and-zones": case("messages", pool0(zones=["us-central1-b"]), "keep one"),
    # -- files -----------------------------------------------------------------------------
    "not-utf8": case("files", "config:\n  accelfleet:fleet: {teams: [{name: équipe}]}\n"
                     .encode("latin-1"), "not UTF-8", "save it as UTF-8", real=True),
}
VALID: dict[str, Mutate] = {  # what the clouds accept is not refused
    "base": lambda f: None,
    "40-char-names": both(at("pools.0.name", "p" * 40), team("t" * 63)),
    "27-char-multislice": tpu_pool(name="s" * 27, multislice=4),
    # Kubernetes (and GKE) take a long prefixed key and an empty value; only EKS refuses them
    "gke-label-key-70-chars-and-empty-value": pool0(labels={"e" * 60 + ".com/owner": ""},
                                                    taints=[{"key": "t" * 51 + ".io/dedicated",
                                                             "value": ""}]),
    "zone-f-and-ai-zone": both(pool0(zone="us-central1-f", accelerator="a2-highgpu-8g"),
                               lambda f: f["pools"].append(
        {**f["pools"][0], "name": "ai", "zone": "us-central1-ai1a"})),
    # Kueue for 1,000 nodes asks 4 CPUs / 32000Mi: a system pool that holds it (issue 27)
    "1000-nodes-in-a-/14": both(pool0(nodes=1000),
                                at("clusters.0.system_pool", {"machine_type": "e2-standard-16"})),
    "aws-upper-case-team": both(team("Research"), pool0(cluster="eks",
                                                       accelerator="p5.48xlarge",
                                                       zone="us-east-1a")),
}


def write(tmp_path: Path, text: str | bytes) -> Path:
    path = tmp_path / "Pulumi.hostile.yaml"
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def invoke(path: Path) -> tuple[int, str]:
    """`accelfleet fleet validate FILE` in-process, bounded by the runner, not asserted."""
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
    try:
        result = pool.submit(CliRunner().invoke, app, ["fleet", "validate", str(path)]
                             ).result(timeout=RUNNER_BOUND_S)
    finally:
        pool.shutdown(wait=False)
    return result.exit_code, result.output


def judge(c: Case, code: int, out: str) -> None:
    assert code == c.code, out[-3000:]
    for phrase in c.says:
        assert phrase in out, f"{phrase!r} not in:\n{out[-3000:]}"
    assert "fix:" in out or "hint:" in out
    for phrase in NOT_MESSAGES:
        assert phrase not in out, f"{phrase!r} in:\n{out[-3000:]}"


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_hostile_stack(name: str, tmp_path: Path) -> None:
    c = CORPUS[name]
    code, out = invoke(write(tmp_path, c.text))
    judge(c, code, out)


def test_the_corpus_covers_every_class() -> None:
    classes = {c.cls for c in CORPUS.values()}
    assert classes == {"names", "regions", "ranges", "bounds", "smoke", "messages", "files"}
    assert {c.cls for c in CORPUS.values() if c.real} == classes
    assert len(CORPUS) >= 50


def test_one_case_of_each_class_through_the_real_command(tmp_path: Path) -> None:
    """The console command itself, each in its own process with a timeout, side by side."""
    chosen = {n: c for n, c in CORPUS.items() if c.real}
    paths = {}
    for n, c in chosen.items():
        (tmp_path / n).mkdir()
        paths[n] = write(tmp_path / n, c.text)

    def run(n: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "cli", "fleet", "validate", str(paths[n])],
                              cwd=ROOT, capture_output=True, text=True,
                              timeout=RUNNER_BOUND_S)

    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
        results = dict(zip(chosen, pool.map(run, chosen), strict=True))
    for n, out in results.items():
        judge(chosen[n], out.returncode, out.stdout + out.stderr)


@pytest.mark.parametrize("name", sorted(VALID))
def test_what_the_clouds_accept_validates(name: str, tmp_path: Path) -> None:
    code, out = invoke(write(tmp_path, stack(VALID[name])))
    assert code == 0, out[-3000:]


# -- hypothesis: names and labels either fit everywhere they land or are refused ----------
# Independent oracles, from the providers' docs (not the catalog's patterns).
GKE_NAME = re.compile(r"[a-z]([-a-z0-9]{0,38}[a-z0-9])?")  # node pools and clusters
K8S_VALUE = re.compile(r"([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?")
EKS_NODE_GROUP = re.compile(r"[0-9A-Za-z][A-Za-z0-9_-]{0,62}")


def gce_label_value(v: str) -> bool:
    return len(v) <= 63 and v == v.lower() and all(c.isalnum() or c in "_-" for c in v)


names = st.one_of(
    st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=70),
    st.from_regex(r"[a-z][-a-z0-9]{0,45}", fullmatch=True),
    st.from_regex(r"[A-Za-z0-9_.\- ]{0,70}", fullmatch=True),
)


def refused_at(spec: dict[str, Any], where: str) -> bool:
    try:
        validate_fleet(spec)
    except SpecError as err:
        hits = [p for p in err.problems if p.where.startswith(where)]
        assert all(p.hint for p in err.problems)
        return bool(hits)
    return False


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=names, slices=st.integers(min_value=1, max_value=12))
def test_any_pool_name_fits_every_place_or_is_refused(name: str, slices: int) -> None:
    spec = copy.deepcopy(BASE)
    spec["pools"] = [{"name": name, "cluster": "gke", "team": "research", "accelerator": "v5p",
                      "topology": "2x2x4", "multislice": slices, "zone": "us-central1-a"}]
    if refused_at(spec, f"pools {name!r}"):
        return
    for derived in [name, *slice_pool_names(name, slices)]:
        assert GKE_NAME.fullmatch(derived), derived
    assert K8S_VALUE.fullmatch(name) and gce_label_value(name)
    assert EKS_NODE_GROUP.fullmatch(name) and len(name) <= 256


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=names)
def test_any_team_name_fits_every_place_or_is_refused(name: str) -> None:
    spec = copy.deepcopy(BASE)
    spec["teams"] = [{"name": name}]
    spec["pools"][0]["team"] = name
    if refused_at(spec, f"teams {name!r}"):
        return
    assert K8S_VALUE.fullmatch(name) and gce_label_value(name)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(key=names, value=names)
def test_any_label_fits_kubernetes_or_is_refused(key: str, value: str) -> None:
    spec = copy.deepcopy(BASE)
    spec["pools"][0]["labels"] = {key: value}
    spec["pools"][0]["taints"] = [{"key": key, "value": value}]
    if refused_at(spec, "pools 'h100'.labels") or refused_at(spec, "pools 'h100'.taints"):
        return
    prefix, _, name_part = key.rpartition("/")
    assert K8S_VALUE.fullmatch(value) and K8S_VALUE.fullmatch(name_part) and name_part
    assert len(prefix) <= 253 and "/" not in prefix
    assert prefix == "" or re.fullmatch(r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?", prefix)
