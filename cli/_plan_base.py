"""Where `accelfleet plan --diff / --base-ref` takes the base plan from: a saved plan JSON
(checked against the shape the diff reads) or the same stack file at a git ref, planned the same
way. `cli.plan_diff` re-exports these names."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

MAX_PLAN_BYTES = 64 * 2**20  # a 1,000-pool plan is about 20 MB
PLAN_HINT = "save one with `accelfleet plan STACK --json --out FILE`"


def load_plan_json(path: Path) -> dict[str, Any]:
    """A saved `accelfleet plan --json` document, checked against the shape the diff reads
    (`_PlanFile`); InputError (exit 2) naming each wrong field when it is not one."""
    from pydantic import ValidationError

    from fleet.errors import InputError
    from fleet.input_files import load_json, problems_in

    data = load_json(path, what="base plan", max_bytes=MAX_PLAN_BYTES, hint=PLAN_HINT)
    if not isinstance(data, dict) or "resources" not in data:
        raise InputError(f"base plan {path} is JSON but not an `accelfleet plan --json` "
                         "document (no `resources`)", hint=PLAN_HINT)
    try:
        _plan_file().model_validate(data)
    except ValidationError as exc:
        raise InputError(f"base plan {path} is not an `accelfleet plan --json` document:\n"
                         f"{problems_in(exc)}", hint=PLAN_HINT) from None
    return data


def _plan_file() -> Any:
    """The pydantic model of a saved plan: what the diff reads, each with its type (other
    fields are kept as they are: a plan of a newer accelfleet still diffs)."""
    from pydantic import BaseModel, ConfigDict, StrictBool, StrictInt, StrictStr

    class Part(BaseModel):
        model_config = ConfigDict(extra="allow", strict=True)

    class Resource(Part):
        type: StrictStr
        name: StrictStr
        parent: StrictStr | None = None
        provider: StrictStr | None = None
        custom: StrictBool = True
        inputs: dict[str, Any] | None = None

    class Pool(Part):
        name: StrictStr
        cluster: StrictStr | None = None
        team: StrictStr | None = None
        nodes: StrictInt | None = None

    class SystemPool(Part):
        cluster: StrictStr | None = None
        name: StrictStr = "system"
        nodes: StrictInt | None = None

    class Team(Part):
        name: StrictStr

    class PlanFile(Part):
        stack: StrictStr | None = None
        resources: list[Resource]
        pools: list[Pool] | None = None
        system_pools: list[SystemPool] | None = None
        teams: list[Team] | None = None

    return PlanFile


def plan_at_ref(stack_file: Path, ref: str) -> dict[str, Any]:
    """The stack file at `ref`, planned the same way (`run_plan`, today's program), as the
    plan JSON document; an empty plan when the file is new at HEAD."""
    import tempfile

    from components.engine.plan import run_plan
    from fleet.errors import InputError
    from fleet.stack.git import stack_text_at_ref

    text = stack_text_at_ref(stack_file, ref)
    if text is None:
        return {"stack": stack_file.stem.removeprefix("Pulumi."), "resources": [],
                "pools": [], "system_pools": [], "teams": []}
    with tempfile.TemporaryDirectory(prefix="accelfleet-base-") as tmp:
        base = Path(tmp) / stack_file.name  # the same name: the same stack
        base.write_text(text, encoding="utf-8")
        try:
            result: dict[str, Any] = run_plan(base).to_dict()
        except InputError as exc:
            raise InputError(f"the base version of {stack_file} (at {ref}) does not plan: "
                             f"{exc.message}".replace(str(base), f"{ref}:{stack_file.name}"),
                             hint=exc.hint) from None
    saved: dict[str, Any] = json.loads(json.dumps(result, sort_keys=True))  # as saved plans are
    return saved
