"""accelfleet's domain model: the catalog, the fleet spec and its rules, the inventory.

No cloud SDK and no ML framework is imported here.
"""

from fleet.errors import AccelfleetError, CheckFailed, InputError, SpecError
from fleet.model import Fleet, ResolvedPool
from fleet.rules import validate_fleet
from fleet.stackfile import read_stack_file


def load_fleet(path: str) -> Fleet:
    """Read and validate the fleet of a stack file."""
    return validate_fleet(read_stack_file(path), source=str(path))


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
