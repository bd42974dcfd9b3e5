"""What the offline plan answers for the AWS caller-identity lookups (no credentials to ask).

`pulumi up` makes the identity running it an EKS cluster admin unless the stack lists it
(components/aws/_eks.py creator_arn). The offline plan has no identity: both lookups answer
"<computed>", so the plan shows the creator's access entry with a principal known at deploy.
"""

from __future__ import annotations

from typing import Any

from fleet.placeholders import COMPUTED

CALLER_TOKEN = "aws:index/getCallerIdentity:getCallerIdentity"
SESSION_TOKEN = "aws:iam/getSessionContext:getSessionContext"


def offline_identity(token: str) -> dict[str, Any] | None:
    """The lookup's outputs, or None for another token."""
    if token == CALLER_TOKEN:
        return {"accountId": COMPUTED, "arn": COMPUTED, "userId": COMPUTED, "id": COMPUTED}
    if token == SESSION_TOKEN:
        return {"arn": COMPUTED, "issuerArn": COMPUTED, "issuerId": COMPUTED,
                "issuerName": COMPUTED, "sessionName": COMPUTED, "id": COMPUTED}
    return None
