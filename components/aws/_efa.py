"""The EFA network-interface rule for a launch template, as one pure function.

An EFA instance type has several network cards; each gets one interface. Card 0 carries the
primary interface (`efa`: EFA plus ENA for IP traffic) at device index 0; every other card
carries an `efa-only` interface (no IP address, RDMA traffic only) at device index 1.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fleet.errors import CatalogError

EFA = "efa"
EFA_ONLY = "efa-only"


def efa_network_interfaces(count: int, security_group_ids: Sequence[Any]) -> list[dict[str, Any]]:
    """One launch-template network interface per network card, `count` cards in all.

    `security_group_ids` may hold plain strings or Pulumi outputs; each interface gets them all
    (the EFA self-referencing group and the cluster group the control plane talks through).
    """
    if count < 1:
        raise CatalogError(
            f"an EFA instance type needs at least one EFA interface, the catalog says {count}"
        )
    groups = list(security_group_ids)
    return [
        {
            "network_card_index": card,
            "device_index": 0 if card == 0 else 1,
            "interface_type": EFA if card == 0 else EFA_ONLY,
            "delete_on_termination": "true",
            "security_groups": groups,
        }
        for card in range(count)
    ]
