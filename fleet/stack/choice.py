"""Which stack file a command works on when none is named, the way Pulumi users expect:

1. the file named on the command line;
2. `$ACCELFLEET_STACK`, else `$PULUMI_STACK` (the variable the Pulumi CLI reads for its
   `--stack`): a stack name (`prod`, or Pulumi's `org/project/prod`) whose file is
   `stacks/Pulumi.<name>.yaml`, or the path of a stack file;
3. the stack `pulumi stack select` chose for the Pulumi project around the working directory
   (fleet.stack.pulumi_workspace);
4. the only stack file in `stacks/` besides the example;
5. otherwise the example stack, which a command may read (list, validate, a dry run) but never
   write: a write without a chosen stack is refused, naming the ways to choose one.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from fleet.errors import InputError
from fleet.stack.pulumi_workspace import selected_stack
from fleet.stack.read import EXAMPLE_STACK

ENV_VARS = ("ACCELFLEET_STACK", "PULUMI_STACK")


@dataclass(frozen=True)
class StackChoice:
    path: Path
    # "named", "$ACCELFLEET_STACK", "`pulumi stack select`", "the only stack besides the
    # example", "example"
    why: str

    @property
    def is_default_example(self) -> bool:
        return self.why == "example"


def choose_stack(given: Path | None, *, stacks_dir: Path | None = None,
                 env: Mapping[str, str] | None = None, cwd: Path | None = None) -> StackChoice:
    """The stack file to work on (see the module's docstring)."""
    if given is not None:
        return StackChoice(given, "named")
    env = os.environ if env is None else env
    folder = stacks_dir or EXAMPLE_STACK.parent
    for var in ENV_VARS:
        value = env.get(var, "").strip()
        if not value:
            continue
        as_path = Path(value)
        if value.endswith((".yaml", ".yml")) or as_path.is_file():
            path = as_path
        else:
            path = folder / f"Pulumi.{value.rsplit('/', 1)[-1]}.yaml"
        if not path.is_file():
            raise InputError(f"${var} is {value!r}, but its stack file {path} does not exist",
                             hint=f"set ${var} to an existing stack (files in {folder}: "
                             f"{_listing(folder)}), or pass the stack file")
        return StackChoice(path, f"${var}")
    selected = selected_stack(cwd, env)
    if selected is not None:
        if not selected.config_path.is_file():
            raise InputError(f"`pulumi stack select` chose {selected.name!r} (in "
                             f"{selected.workspace_file}), but its stack file "
                             f"{selected.config_path} does not exist",
                             hint=f"select a stack that has a file (`pulumi stack select`; "
                             f"files in {selected.config_path.parent}: "
                             f"{_listing(selected.config_path.parent)}), or pass the stack file")
        return StackChoice(selected.config_path, "`pulumi stack select`")
    others = [p for p in _stack_files(folder) if p.name != EXAMPLE_STACK.name]
    if len(others) == 1:
        return StackChoice(others[0], "the only stack besides the example")
    return StackChoice(EXAMPLE_STACK, "example")


def stack_to_read(given: Path | None) -> Path:
    """The stack a command that only reads works on (the example when nothing chose one)."""
    return choose_stack(given).path


def stack_for_write(given: Path | None, *, what: str, stacks_dir: Path | None = None,
                    env: Mapping[str, str] | None = None, cwd: Path | None = None) -> Path:
    """The stack a write goes to; refused when nothing chose one (never the example by
    default)."""
    choice = choose_stack(given, stacks_dir=stacks_dir, env=env, cwd=cwd)
    if choice.is_default_example:
        folder = stacks_dir or EXAMPLE_STACK.parent
        raise InputError(f"{what} needs a stack: none was named, and {folder} holds "
                         f"{_listing(folder)} (the example stack is never written by default)",
                         hint="pass the stack file (e.g. `--stack stacks/Pulumi.prod.yaml`), "
                         "select one (`pulumi stack select prod`), or set ACCELFLEET_STACK=prod "
                         "(PULUMI_STACK works too); --dry-run "
                         "and --patch show the change on the example without writing it")
    return choice.path


def _stack_files(folder: Path) -> list[Path]:
    try:
        return sorted(p for p in folder.glob("Pulumi.*.y*ml") if p.is_file())
    except OSError:
        return []


def _listing(folder: Path) -> str:
    files = [p.name for p in _stack_files(folder)]
    return ", ".join(files) if files else "no stack file"
