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
