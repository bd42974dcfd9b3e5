"""accelfleet's domain model: the catalog, the fleet spec and its rules, the inventory.

No cloud SDK and no ML framework is imported here. The public names load lazily, so that
`import fleet.errors` (every CLI command does it) does not pull in pydantic and the rules.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from fleet.errors import AccelfleetError, CheckFailed, InputError, SpecError

if TYPE_CHECKING:
    from fleet.model import Fleet, ResolvedPool
    from fleet.rules.validate import validate_fleet
    from fleet.stack.read import read_stack_file

_LAZY = {"Fleet": "fleet.model", "ResolvedPool": "fleet.model",
         "validate_fleet": "fleet.rules.validate", "read_stack_file": "fleet.stack.read"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'fleet' has no attribute {name!r}")


def load_fleet(path: str) -> Fleet:
    """Read and validate the fleet of a stack file, and refuse a name wider than a stack that
    another stack file beside it derives too (fleet.rules.scope)."""
    from fleet.rules.scope import check_sibling_stacks
    from fleet.rules.validate import validate_fleet
    from fleet.stack.read import read_stack_file

    raw = read_stack_file(path)
    fleet = validate_fleet(raw, source=str(path))
    check_sibling_stacks(path, fleet, raw)
    return fleet


__version__ = "0.1.0"

__all__ = [
    "AccelfleetError",
    "CheckFailed",
    "Fleet",
    "InputError",
    "ResolvedPool",
    "SpecError",
    "__version__",
    "load_fleet",
    "read_stack_file",
    "validate_fleet",
]
