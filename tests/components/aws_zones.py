"""What the AWS provider's availability-zones lookup answers in the tests' mocks: one real
account's zones, never our catalog's.

us-east-1: an account's `aws ec2 describe-availability-zones --region us-east-1` (ZoneName ->
ZoneId), as published in the bryanlabs.net post "Deploy AWS Resources to Zone Ids" (stored copy
read 2026-11-24 through the code index): letters map to AZ IDs per account in this region, and
us-east-1e is use1-az3, the AZ ID EKS refuses for control-plane subnets
(https://docs.aws.amazon.com/eks/latest/userguide/network-reqs.html).
ap-northeast-1: accounts created after ap-northeast-1b was closed to new customers have a, c and
d only (apne1-az4, apne1-az1, apne1-az2); the AWS "Availability Zones" page lists apne1-az1, az2
and az4 for the region (https://docs.aws.amazon.com/global-infrastructure/latest/regions/aws-availability-zones.html).
"""

from __future__ import annotations

from typing import Any

TOKEN = "aws:index/getAvailabilityZones:getAvailabilityZones"

ACCOUNT_ZONES: dict[str, list[tuple[str, str]]] = {
    "us-east-1": [("us-east-1a", "use1-az1"), ("us-east-1b", "use1-az2"),
                  ("us-east-1c", "use1-az4"), ("us-east-1d", "use1-az6"),
                  ("us-east-1e", "use1-az3"), ("us-east-1f", "use1-az5")],
    "ap-northeast-1": [("ap-northeast-1a", "apne1-az4"), ("ap-northeast-1c", "apne1-az1"),
                       ("ap-northeast-1d", "apne1-az2")],
}


def zones_answer(args: Any, region: str = "us-east-1") -> dict[str, Any] | None:
    """The lookup's outputs when `args` (MockCallArgs) is that lookup, else None. The call
    must ask for available zones that need no opt-in, as components/aws/_network.py does."""
    if args.token != TOKEN:
        return None
    assert args.args.get("state") == "available", args.args
    assert {"name": "opt-in-status", "values": ["opt-in-not-required"]} in (
        args.args.get("filters") or []), args.args
    zones = ACCOUNT_ZONES[region]
    return {"id": region, "state": "available", "names": [n for n, _ in zones],
            "zoneIds": [i for _, i in zones]}
