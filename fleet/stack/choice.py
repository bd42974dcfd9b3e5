"""Which stack file a command works on when none is named, the way Pulumi users expect.

The stack folder is the one of the Pulumi project around the working directory, found as the
Pulumi CLI finds it: the nearest `Pulumi.yaml` at or above the working directory, and its
`stackConfigDir` (fleet.stack.pulumi_workspace). Never the folder of the checkout accelfleet
happens to be installed from: a second clone run with the first one's virtualenv reads and
writes its own stacks. Outside any project the folder is `./stacks`.

1. the file named on the command line;
2. `$ACCELFLEET_STACK`, else `$PULUMI_STACK` (the variable the Pulumi CLI reads for its
   `--stack`): a stack name (`prod`, or Pulumi's `org/project/prod`) whose file is
   `Pulumi.<name>.yaml` in the stack folder, or the path of a stack file;
3. the stack `pulumi stack select` chose for the project;
4. the only stack file in the stack folder besides the example;
5. two or more stack files besides the example and none chosen: refused (exit 2), for reads
   and writes alike, listing them and the three ways to choose (`--stack`,
   `ACCELFLEET_STACK`, `pulumi stack select`): an answer read from the example (or from any
   one of them, guessed) would look like an answer about the user's fleet (issue 38: `pool
   expired` said "no pool has expired" while the user's own stack had one);
6. no stack file besides the example: the example stack (the project's own
   `Pulumi.example.yaml`, else the one shipped with accelfleet), which a command may read
   (list, validate, a dry run) but never write: a write without a chosen stack is refused,
   naming the ways to choose one.

A file found this way is named relative to the working directory (`stacks/Pulumi.prod.yaml`,
`../stacks/Pulumi.prod.yaml`), so every message says which file was read or written by a path
that means something where the user stands.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from fleet.errors import InputError, StackFileError
from fleet.stack.pulumi_workspace import find_project, selected_stack, stack_config_dir
from fleet.stack.read import EXAMPLE_STACK
from fleet.stack.rule import how_to_choose

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
    folder = stacks_dir or project_stacks_dir(cwd)
    for var in ENV_VARS:
        value = env.get(var, "").strip()
        if not value:
            continue
        as_path = Path(value)
        if value.endswith((".yaml", ".yml")) or as_path.is_file():
            path = as_path
        else:
            path = shown_path(folder / f"Pulumi.{value.rsplit('/', 1)[-1]}.yaml")
        if not path.is_file():
            raise InputError(f"${var} is {value!r}, but its stack file {path} does not exist",
                             hint=f"set ${var} to an existing stack (files in "
                             f"{shown_path(folder)}: {_listing(folder)}), or pass the stack "
                             "file")
        return StackChoice(path, f"${var}")
    selected = selected_stack(cwd, env)
    if selected is not None:
        if not selected.config_path.is_file():
            raise InputError(f"`pulumi stack select` chose {selected.name!r} (in "
                             f"{selected.workspace_file}), but its stack file "
                             f"{shown_path(selected.config_path)} does not exist",
                             hint=f"select a stack that has a file (`pulumi stack select`; "
                             f"files in {shown_path(selected.config_path.parent)}: "
                             f"{_listing(selected.config_path.parent)}), or pass the stack file")
        return StackChoice(shown_path(selected.config_path), "`pulumi stack select`")
    others = [p for p in _stack_files(folder) if p.name != EXAMPLE_STACK.name]
    if len(others) == 1:
        return StackChoice(shown_path(others[0]), "the only stack besides the example")
    if len(others) > 1:
        names = ", ".join(p.name for p in others)
        where = shown_path(folder).as_posix()
        raise InputError(f"which stack? {where}/ holds {len(others)} stacks besides the "
                         f"example ({names}) and none was chosen",
                         hint=how_to_choose(shown_path(others[0]).as_posix(),
                                            _stack_of(others[0])))
    own = folder / EXAMPLE_STACK.name
    return StackChoice(shown_path(own) if own.is_file() else EXAMPLE_STACK, "example")


def stack_to_read(given: Path | None) -> Path:
    """The stack a command that only reads works on (the example when nothing chose one)."""
    return choose_stack(given).path


def project_stacks_dir(cwd: Path | None = None) -> Path:
    """The stack folder of the Pulumi project around `cwd` (the working directory by
    default): its `stackConfigDir`; `./stacks` outside any project."""
    here = cwd or Path.cwd()
    project_file = find_project(here)
    if project_file is None:
        return Path(os.path.abspath(here)) / "stacks"
    return stack_config_dir(project_file)


def shown_path(path: Path) -> Path:
    """`path` as the user names it from the working directory: relative to it when the file
    is in the working directory's project (`stacks/Pulumi.prod.yaml`, or
    `../stacks/Pulumi.prod.yaml` from a subfolder), else absolute."""
    here = Path(os.path.abspath(Path.cwd()))
    target = Path(os.path.abspath(path))
    project_file = find_project(here)
    root = project_file.parent if project_file is not None else here
    if not target.is_relative_to(root):
        return target
    try:
        return Path(os.path.relpath(target, here))
    except ValueError:  # another drive (Windows)
        return target


def missing_stack(path: Path) -> None:
    """Refuse a named stack file that does not exist, listing the stacks there are (in the
    folder named, else the project's)."""
    try:
        if path.exists():
            return
    except OSError:  # a name too long to stat: the reader says so
        return
    raise StackFileError(f"stack file {path} does not exist", hint=stacks_there_are(path))


def stacks_there_are(path: Path) -> str:
    """The hint for a stack file `path` that does not exist: the stacks in its folder, else
    in the project's stack folder."""
    folder = path.parent if path.parent.is_dir() and _stack_files(path.parent) \
        else project_stacks_dir()
    return (f"the stack files in {shown_path(folder).as_posix()}/: {_listing(folder)}; pass "
            "one of them, or copy the example stack to start one")


def stack_for_write(given: Path | None, *, what: str, stacks_dir: Path | None = None,
                    env: Mapping[str, str] | None = None, cwd: Path | None = None) -> Path:
    """The stack a write goes to; refused when nothing chose one (never the example by
    default)."""
    if given is not None:
        missing_stack(given)
    choice = choose_stack(given, stacks_dir=stacks_dir, env=env, cwd=cwd)
    if choice.is_default_example:
        folder = stacks_dir or project_stacks_dir(cwd)
        raise InputError(f"{what} needs a stack: none was named, and {shown_path(folder)} "
                         "holds "
                         f"{_listing(folder)} (the example stack is never written by default)",
                         hint=how_to_choose() + "; --dry-run "
                         "and --patch show the change on the example without writing it")
    return choice.path


def _stack_of(path: Path) -> str:
    """`prod` of `Pulumi.prod.yaml`."""
    return path.name.removeprefix("Pulumi.").rsplit(".", 1)[0]


def _stack_files(folder: Path) -> list[Path]:
    try:
        return sorted(p for p in folder.glob("Pulumi.*.y*ml") if p.is_file())
    except OSError:
        return []


def _listing(folder: Path) -> str:
    files = [p.name for p in _stack_files(folder)]
    return ", ".join(files) if files else "no stack file"
