"""The agent's code as ConfigMap data: how `python -m smoke.probes.agent` reaches a stock image.

The bundle is the source of the modules the agent imports (its whole import closure outside the
standard library and the framework), read from this installed accelfleet, plus two package
files written here: `fleet/__init__.py` and `fleet/catalog/__init__.py` stand empty in the pod,
so importing `fleet.errors` or the catalog's record types pulls in neither pydantic nor YAML.
A test runs the agent from a bundle with those packages blocked.

ConfigMap keys may not hold '/', so each file is a key (`smoke.probes.agent.py`) mapped back to its
path (`smoke/probes/agent.py`) by the volume's `items`.
"""

from __future__ import annotations

import hashlib
from importlib import resources

# What the pod gets: the `smoke` package file, the whole node-side folder (smoke/probes: the
# agent, its probes, verdicts and results; an import-linter contract keeps it free of
# kubernetes, pydantic, ruamel and the rest of smoke), and the fleet modules it reads (each
# stdlib-only, importing no other accelfleet module).
PROBES = "smoke.probes"
FLEET_MODULES: tuple[tuple[str, str], ...] = (("fleet", "errors.py"),
                                              ("fleet", "smoke_defaults.py"),
                                              ("fleet", "words.py"),
                                              ("fleet.catalog", "records.py"))
_STUB = '"""accelfleet agent bundle: only the modules the in-pod agent imports."""\n'
STUBS: dict[str, str] = {"fleet/__init__.py": _STUB, "fleet/catalog/__init__.py": _STUB}
MOUNT_PATH = "/opt/accelfleet"


def agent_modules() -> tuple[tuple[str, str], ...]:
    """(package, file) of every module the bundle carries, in a stable order."""
    probes = sorted(entry.name for entry in resources.files(PROBES).iterdir()
                    if entry.name.endswith(".py"))
    return (("smoke", "__init__.py"), *((PROBES, name) for name in probes), *FLEET_MODULES)


def bundle_files() -> dict[str, str]:
    """Relative path -> source text of every file the agent needs, in a stable order."""
    files: dict[str, str] = {}
    for package, name in agent_modules():
        path = f"{package.replace('.', '/')}/{name}"
        files[path] = resources.files(package).joinpath(name).read_text(encoding="utf-8")
    files.update(STUBS)
    return dict(sorted(files.items()))


def key_for(path: str) -> str:
    """`smoke/probes/agent.py` -> `smoke.probes.agent.py`: a valid ConfigMap key, unique per
    path."""
    return path.replace("/", ".")


def configmap_data() -> tuple[dict[str, str], list[dict[str, str]]]:
    """(data, items) for a ConfigMap and the volume that mounts it as a package tree."""
    files = bundle_files()
    data = {key_for(p): text for p, text in files.items()}
    items = [{"key": key_for(p), "path": p} for p in files]
    if len(data) != len(files):
        raise AssertionError("two bundle paths map to one ConfigMap key")
    return data, items


def digest() -> str:
    """A short content hash of the bundle: the agent version a run used."""
    h = hashlib.sha256()
    for path, text in bundle_files().items():
        h.update(path.encode() + b"\0" + text.encode() + b"\0")
    return h.hexdigest()[:12]
