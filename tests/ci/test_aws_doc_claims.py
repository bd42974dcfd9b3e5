"""Issue 27 item 10: docs/aws.md says what the code does, held here claim by claim where a
claim is checkable (each test reads the doc's sentence and the code's value)."""

from __future__ import annotations

from pathlib import Path

from components.aws._layout import AccountZones, cluster_zones, subnet_layout

DOC = (Path(__file__).resolve().parents[2] / "docs" / "aws.md").read_text(encoding="utf-8")
ONE_LINE = " ".join(DOC.split())


def test_zones_are_the_pools_and_the_accounts_first_two() -> None:
    assert "the account's first two zones that EKS accepts for its control plane" in ONE_LINE
    assert "padded to two (EKS needs two) with the region's" not in ONE_LINE
    account = AccountZones(("us-east-1a", "us-east-1b", "us-east-1c", "us-east-1d"),
                           ("use1-az1", "use1-az2", "use1-az3", "use1-az4"))
    planned = cluster_zones("us-east-1", ["us-east-1d"], account)
    assert planned.control_plane == planned.system == ["us-east-1a", "us-east-1b"]
    assert planned.zones == ["us-east-1a", "us-east-1b", "us-east-1d"]


def test_a_zones_range_is_the_block_of_its_letter() -> None:
    assert "a zone's private subnet is the block of its letter" in ONE_LINE
    alone = subnet_layout("10.0.0.0/16", ["us-east-1d"])
    among = subnet_layout("10.0.0.0/16", ["us-east-1a", "us-east-1d"])
    assert alone[0].private_cidr == among[1].private_cidr == "10.0.96.0/19"
    assert "/19 of a /16" in ONE_LINE and "/22 each of a /16" in ONE_LINE
    assert alone[0].public_cidr == "10.0.236.0/22"


def test_admins_and_the_deployer() -> None:
    assert "no field for" not in ONE_LINE  # the spec has `admins` (issue 20)
    assert "`bootstrap_cluster_creator_admin_permissions: false`" in ONE_LINE
    source = (Path(__file__).resolve().parents[2] / "components" / "aws" / "_eks.py"
              ).read_text(encoding="utf-8")
    assert "bootstrap_cluster_creator_admin_permissions=False" in source


def test_reserved_groups_update_minimally() -> None:
    assert "`updateStrategy: MINIMAL`" in ONE_LINE


def _validate(cluster: dict[str, object], *pools: dict[str, object]) -> list[str]:
    from fleet.errors import SpecError
    from fleet.rules.validate import validate_fleet

    spec = {"clouds": {"aws": {"account": "123456789012", "region": "us-east-1"}},
            "clusters": [{"name": "e", "cloud": "aws", **cluster}], "teams": [{"name": "t"}],
            "pools": list(pools)}
    try:
        validate_fleet(spec)
    except SpecError as err:
        return [f"{p.where}: {p.message}" for p in err.problems]
    return []


def test_the_endpoint_claims() -> None:
    assert "the private endpoint is always on (the nodes use it), and so is the public one: " \
           "`private_endpoint: true` is refused on EKS" in ONE_LINE
    assert "`private_endpoint: true` turns the public one off" not in ONE_LINE
    assert "`private_endpoint: true` is refused on EKS" in ONE_LINE.split("## Control plane")[1]
    refused = _validate({"private_endpoint": True})
    assert any(p.startswith("clusters 'e'.private_endpoint") for p in refused)
    source = " ".join((Path(__file__).resolve().parents[2] / "components" / "aws" / "_eks.py"
                       ).read_text(encoding="utf-8").split())
    assert "endpoint_private_access=True" in source


def test_the_system_group_sits_in_the_accounts_first_two_zones() -> None:
    system = ONE_LINE.split("## System node group and CPU pools")[1]
    assert "in the account's first two zones that EKS accepts for its control plane" in system
    assert "padded with `a`, `b`" not in ONE_LINE
    from fleet.system_pools import PAD_ZONE_LETTERS

    assert PAD_ZONE_LETTERS["aws"] == ""  # no letter is guessed on AWS
    account = AccountZones(("us-east-1a", "us-east-1b", "us-east-1c"),
                           ("use1-az1", "use1-az2", "use1-az3"))
    assert cluster_zones("us-east-1", ["us-east-1c"], account).system == \
        ["us-east-1a", "us-east-1b"]


def test_no_admins_leaves_the_deployer_alone_warned() -> None:
    from fleet.rules.validate import validate_fleet

    assert "without it only the identity that runs `pulumi up` (its own access entry" in ONE_LINE
    assert "only the identity that created the cluster" not in ONE_LINE
    fleet = validate_fleet({"clouds": {"aws": {"account": "123456789012",
                                               "region": "us-east-1"}},
                            "clusters": [{"name": "e", "cloud": "aws"}],
                            "teams": [{"name": "t"}], "pools": []})
    assert any("only the identity that runs the first `pulumi up`" in w.message
               for w in fleet.warnings)


def test_the_efa_table_is_the_catalogs() -> None:
    """Every row of the doc's EFA table against the catalog, both ways."""
    from fleet.catalog import load_catalog

    table = DOC.split("| EFA interfaces | instance types |")[1].split("\n\n")[0]
    documented: dict[str, int] = {}
    for row in table.strip().splitlines()[1:]:
        count, machines = (cell.strip() for cell in row.strip("|").split("|"))
        for machine in machines.split(", "):
            documented[machine] = int(count)
    catalog = {m.name: m.networking.efa_interfaces for m in load_catalog().machines.values()
               if m.cloud == "aws" and m.networking is not None
               and m.networking.kind == "efa" and m.networking.efa_interfaces}
    assert documented == catalog


def test_the_ami_table_claim() -> None:
    from fleet.catalog.support import load_support

    assert "catalog `support.yaml` `amis`" in ONE_LINE
    assert {a.ami for a in load_support().amis if a.cloud == "aws"} == {"al2023", "bottlerocket"}
