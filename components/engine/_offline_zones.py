"""What the offline plan answers for the AWS availability-zones lookup (no account to ask).

`pulumi up` and `pulumi preview` ask the deploying account which zones it has in the region
(components/aws/_network.py). The offline plan has no account: it answers with every zone the
catalog lists for the region (regions.yaml: codes a.. up to the region's AZ count) and the AZ
IDs of the uniform mapping (letter n is AZ ID n), which holds in every region opened after
November 2012 (https://docs.aws.amazon.com/global-infrastructure/latest/regions/az-ids.html);
in the oldest regions each account maps letters its own way, so the zones a plan pads with
there may differ from the ones `pulumi up` will pick. There, an AZ ID closed to new resources
(catalog aws.yaml `offline_az_ids`: apne1-az3) is given to no letter: which code it is
depends on the account, and the plan must not refuse a pool's zone on that guess (`fleet
validate` warns, `pulumi up` refuses with the account's real mapping); the letters take the
open IDs in order, and any left over an ID past the region's highest (a placeholder no
account has: ap-northeast-1d -> apne1-az5).
"""

from __future__ import annotations

from typing import Any

TOKEN = "aws:index/getAvailabilityZones:getAvailabilityZones"
# Region words as AZ IDs abbreviate them: us-east-1 -> use1, ap-northeast-1 -> apne1.
_WORDS = {"north": "n", "south": "s", "east": "e", "west": "w", "central": "c",
          "northeast": "ne", "northwest": "nw", "southeast": "se", "southwest": "sw"}


def az_id_prefix(region: str) -> str:
    """`us-east-1` -> `use1`, `ap-northeast-1` -> `apne1`, `us-gov-west-1` -> `usgw1`."""
    parts = region.split("-")
    words = [("g" if w == "gov" else _WORDS.get(w, w[:1])) for w in parts[1:-1]]
    return parts[0] + "".join(words) + parts[-1]


def offline_zones(region: str) -> dict[str, Any]:
    """The lookup's outputs for `region`, from the catalog."""
    from fleet.catalog import load_catalog
    from fleet.errors import InputError

    names = list(load_catalog().regions["aws"].zones.get(region, ()))
    if not names:
        raise InputError(f"the offline plan knows no Availability Zones of {region!r}",
                         hint="add the region and its AZ count to fleet/catalog/data/"
                         "regions.yaml (with its source), or run `pulumi preview` with "
                         "credentials, which asks the account")
    catalog = load_catalog()
    prefix = az_id_prefix(region)
    numbers = list(range(1, len(names) + 1))
    if region in catalog.zone_offers.aws_independent:
        closed = {int(z.rsplit("-az", 1)[1])
                  for z in catalog.eks_addons.offline_az_ids.get(region, ())}
        open_ = [n for n in numbers if n not in closed]
        past = max(numbers, default=0)
        numbers = (open_ + list(range(past + 1, past + 1 + len(names))))[:len(names)]
    return {"id": region, "names": names, "state": "available",
            "zoneIds": [f"{prefix}-az{n}" for n in numbers]}
