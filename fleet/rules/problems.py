"""The problem sink of the fleet rules: `fleet.errors.Problems` with the catalog the rules read.
`fleet.rules.validate` checks a whole spec through one; `fleet.rules.routing` through its own."""

from __future__ import annotations

from fleet.catalog import Catalog
from fleet.errors import Problems


class RuleProblems(Problems):
    """Problems, and the catalog the rules that report them read."""

    def __init__(self, catalog: Catalog) -> None:
        super().__init__()
        self.catalog = catalog
