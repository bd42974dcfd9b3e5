"""The stack `pulumi stack select` chose, read the way the Pulumi CLI reads it.

Where Pulumi keeps the selection (pulumi/pulumi, sdk/go/common/workspace, read 2026-11-24):
- `workspace.go` (`settingsPath`): `<PULUMI_HOME>/workspaces/<project name>-<sha1 hex of the
  project file's absolute path>-workspace.json`;
- `paths.go`: `PULUMI_HOME` defaults to `~/.pulumi`; the project file is the nearest
  `Pulumi.yaml`, `Pulumi.yml` or `Pulumi.json` walking up from the working directory
  (`DetectProjectPathFrom`); a stack's config file is `Pulumi.<stack>.yaml` in the project's
  `stackConfigDir` (default: next to the project file);
- the settings document: `{"stack": "<name>"}` (every release until 2026) or, in newer
  releases, `{"stacks": {"<backend URL>": "<name>"}}` with `stack` kept as the legacy
  fallback (`StackForBackend`). The backend URL is `$PULUMI_BACKEND_URL`, else `current` in
  `<PULUMI_HOME>/credentials.json`.

A stack name may be fully qualified (`org/project/stack`); its config file takes the last part.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fleet.errors import InputError
from fleet.input_files import load_json, read_text

PROJECT_FILES = ("Pulumi.yaml", "Pulumi.yml", "Pulumi.json")
_MAX_BYTES = 1 << 20  # a workspace or project file is a few hundred bytes
_RESELECT = "run `pulumi stack select <stack>` again, or pass the stack file"


@dataclass(frozen=True)
class SelectedStack:
    name: str  # as Pulumi wrote it, possibly `org/project/stack`
    config_path: Path  # the stack file: <stackConfigDir>/Pulumi.<stack>.yaml
    workspace_file: Path  # where the selection was read


def pulumi_home(env: Mapping[str, str]) -> Path:
    home = env.get("PULUMI_HOME", "").strip()
    return Path(home) if home else Path.home() / ".pulumi"


def find_project(start: Path) -> Path | None:
    """The nearest Pulumi project file at or above `start`, or None. Made absolute without
    resolving links, as Go's `filepath.Abs` does: the workspace file's name hashes this path."""
    folder = Path(os.path.abspath(start))
    for candidate_dir in (folder, *folder.parents):
        for name in PROJECT_FILES:
            path = candidate_dir / name
            if path.is_file():
                return path
    return None


def workspace_file(project_file: Path, project_name: str, env: Mapping[str, str]) -> Path:
    digest = hashlib.sha1(str(project_file).encode(), usedforsecurity=False).hexdigest()
    return pulumi_home(env) / "workspaces" / f"{project_name}-{digest}-workspace.json"


def selected_stack(cwd: Path | None = None,
                   env: Mapping[str, str] | None = None) -> SelectedStack | None:
    """The stack `pulumi stack select` chose for the project around `cwd`, or None when
    there is no project or nothing is selected."""
    env = os.environ if env is None else env
    project_file = find_project(cwd or Path.cwd())
    if project_file is None:
        return None
    project = _project(project_file)
    name = project.get("name")
    if not isinstance(name, str) or not name:
        return None
    settings_path = workspace_file(project_file, name, env)
    if not settings_path.is_file():
        return None
    settings = load_json(settings_path, what="Pulumi workspace file", max_bytes=_MAX_BYTES,
                         hint=_RESELECT)
    stack = _stack_in(settings, env) if isinstance(settings, dict) else None
    if not stack:
        return None
    folder = _config_dir(project_file, project)
    return SelectedStack(stack, folder / f"Pulumi.{stack.rsplit('/', 1)[-1]}.yaml",
                         settings_path)


def stack_config_dir(project_file: Path) -> Path:
    """The folder of a project's stack files: its `stackConfigDir`, else the project's own."""
    return _config_dir(project_file, _project(project_file))


def _config_dir(project_file: Path, project: dict[str, Any]) -> Path:
    config_dir = project.get("stackConfigDir")
    return project_file.parent / config_dir if isinstance(config_dir, str) and config_dir \
        else project_file.parent


def _project(project_file: Path) -> dict[str, Any]:
    text = read_text(project_file, what="Pulumi project file", max_bytes=_MAX_BYTES,
                     hint="fix the project file, or pass the stack file")
    try:
        from fleet._yaml12 import load_data

        data = load_data(text)  # JSON is YAML too
    except Exception as exc:  # a project file Pulumi itself would refuse
        raise InputError(f"Pulumi project file {project_file} is not YAML: "
                         f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}",
                         hint="fix the project file (`pulumi about` names what is wrong), "
                         "or pass the stack file") from None
    return data if isinstance(data, dict) else {}


def _stack_in(settings: dict[str, Any], env: Mapping[str, str]) -> str | None:
    by_backend = settings.get("stacks")
    if isinstance(by_backend, dict) and by_backend:
        backend = env.get("PULUMI_BACKEND_URL", "").strip() or _current_backend(env)
        chosen = by_backend.get(backend) if backend else None
        if chosen is None and len(set(map(str, by_backend.values()))) == 1:
            chosen = next(iter(by_backend.values()))
        if isinstance(chosen, str) and chosen.strip():
            return chosen.strip()
    legacy = settings.get("stack")
    return legacy.strip() if isinstance(legacy, str) and legacy.strip() else None


def _current_backend(env: Mapping[str, str]) -> str | None:
    path = pulumi_home(env) / "credentials.json"
    if not path.is_file():
        return None
    try:
        creds = load_json(path, what="Pulumi credentials file", max_bytes=_MAX_BYTES,
                          hint="run `pulumi login` again")
    except InputError:
        return None  # the selection still has its legacy field; the backend is a tie-break
    current = creds.get("current") if isinstance(creds, dict) else None
    return current if isinstance(current, str) else None
