"""What every field of the stack shares: the strict model base, the refusal with its fix
(SpecValueError), and the values more than one section reads (request text and dates, container
image references). Imported through `fleet.spec.fields`."""

from __future__ import annotations

import re
from datetime import date, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class SpecValueError(ValueError):
    """A value a field refuses, with the fix in words (`fleet.spec.errors` shows both)."""

    def __init__(self, message: str, fix: str) -> None:
        super().__init__(message)
        self.fix = fix


REQUEST_TEXT_MAX = {"requested_by": 254, "reason": 500}  # an e-mail address; a sentence or two
# A bare YAML date reaches the Pulumi program as midnight UTC: Pulumi reads stack files with Go's
# yaml.v3, which turns `2026-12-31` into a timestamp (go-yaml/yaml#770).
_DATE = re.compile(r"^(\d{4}-\d{2}-\d{2})(?:T00:00:00(?:Z|[+-]00:00))?$")


def request_text(value: Any, field: str) -> Any:
    """`requested_by` and `reason`: one line of printable text, not empty, not too long."""
    if not isinstance(value, str):
        return value  # pydantic names the type it wants
    limit = REQUEST_TEXT_MAX[field]
    if not value.strip():
        raise SpecValueError(f"`{field}` is empty", f"write the {field.replace('_', ' ')}, or "
                             f"remove `{field}`")
    if len(value) > limit:
        raise SpecValueError(f"`{field}` is {len(value)} characters long, over the {limit} "
                             "allowed", f"shorten it to {limit} characters (link to a ticket for "
                             "the details)")
    if any(not c.isprintable() for c in value):
        raise SpecValueError(f"`{field}` holds a line break or another control character",
                             "write it on one line of printable text")
    return value


def request_date(value: Any) -> Any:
    """`expires`: a calendar date (YAML `2026-12-31`, or the same text quoted), never a time."""
    if isinstance(value, datetime):
        raise SpecValueError(f"{value.isoformat()!r} is a date and time",
                             f"write the day only, e.g. expires: {value.date().isoformat()}")
    if isinstance(value, date) or value is None:
        return value
    m = _DATE.match(value) if isinstance(value, str) else None
    if m is not None:
        try:
            return date.fromisoformat(m[1])
        except ValueError:
            pass
    raise SpecValueError(f"{value!r} is not a date",
                         "write the last day the pool is needed as YYYY-MM-DD, e.g. "
                         "expires: 2026-12-31")


# A container image reference, as the distribution project's grammar has it
# (github.com/distribution/reference regexp.go: domain, path components, tag, digest).
_LABEL = r"[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?"
_DOMAIN = rf"{_LABEL}(?:\.{_LABEL})*"
_PATH = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
IMAGE_REFERENCE = re.compile(
    rf"(?:{_DOMAIN}(?::[0-9]+)?/)?{_PATH}(?:/{_PATH})*(?::[\w][\w.-]{{0,127}})?"
    r"(?:@[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,})?")


REGISTRY_PATH = re.compile(rf"{_DOMAIN}(?::[0-9]+)?(?:/{_PATH})*")


def registry_path(value: str | None) -> str | None:
    """A registry host and path under which images are pulled (`us-docker.pkg.dev/acme/hub`,
    `123456789012.dkr.ecr.us-east-1.amazonaws.com/docker-hub`), or None; SpecValueError with
    the fix otherwise (a scheme, a tag or digest, spaces, no registry host)."""
    if value is None:
        return None
    text = value.strip().rstrip("/")
    if "://" in text or not REGISTRY_PATH.fullmatch(text) or "." not in text.split("/")[0]:
        raise SpecValueError(f"{value[:80]!r} is not a registry path (a registry host, then "
                             "an optional path, no scheme, tag or digest)",
                             "write e.g. us-docker.pkg.dev/acme/docker-hub (an Artifact "
                             "Registry remote repository) or 123456789012.dkr.ecr.us-east-1."
                             "amazonaws.com/docker-hub (an ECR pull-through cache)")
    return text


def image_reference(value: str | None) -> str | None:
    """A container image reference, or None; SpecValueError with the fix otherwise."""
    if value is not None and not IMAGE_REFERENCE.fullmatch(value):
        raise SpecValueError(f"{value[:80]!r} is not a container image reference",
                             "write registry/repository:tag or @sha256:digest with no "
                             "spaces, e.g. us-docker.pkg.dev/acme/smoke/torch:2.5")
    return value
