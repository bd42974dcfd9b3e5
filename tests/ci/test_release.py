"""The gate controller's image (issue 26, docs/gate.md): docker/gate.Dockerfile installs the
project without dev, torch or jax extras and runs as the non-root user the Deployment names;
release.yml builds it from that file only on a version tag and pushes it to ghcr.io with the
job's own token. Nothing here can run Docker: these read the files (actionlint runs in
test_workflows)."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from components.k8s._gate import USER_ID
from fleet.gate import CONTROLLER_IMAGE, CONTROLLER_REPOSITORY, HEALTH_PORT, METRICS_PORT

ROOT = Path(__file__).resolve().parent.parent.parent
DOCKERFILE = ROOT / "docker" / "gate.Dockerfile"
RELEASE = ROOT / ".github" / "workflows" / "release.yml"


def _instructions() -> list[tuple[str, str]]:
    text = DOCKERFILE.read_text(encoding="utf-8").replace("\\\n", " ")
    return [(line.split(None, 1)[0].upper(), line.split(None, 1)[1] if " " in line else "")
            for line in (raw.strip() for raw in text.splitlines())
            if line and not line.startswith("#")]


def test_the_image_installs_the_project_without_extras() -> None:
    runs = " ".join(arg for op, arg in _instructions() if op == "RUN")
    installs = re.findall(r"pip install ([^&]+)", runs)
    assert [i.strip() for i in installs] == ["."], installs
    for extra in ("[dev", "[torch", "[jax", "torch", "jax"):
        assert extra not in runs, extra
    copied = [arg.split()[0] for op, arg in _instructions() if op == "COPY"
              and not arg.startswith("--from")]
    assert "tests" not in copied and "." not in copied  # the packages, not the repository


def test_the_image_runs_as_the_deployments_non_root_user() -> None:
    ops = _instructions()
    final = max(i for i, (op, _) in enumerate(ops) if op == "FROM")
    users = [arg for op, arg in ops[final:] if op == "USER"]
    assert users == [f"{USER_ID}:{USER_ID}"] and USER_ID != 0
    exposed = {int(p) for op, arg in ops if op == "EXPOSE" for p in arg.split()}
    assert exposed == {HEALTH_PORT, METRICS_PORT}
    assert ("ENTRYPOINT", '["accelfleet"]') in ops


def test_release_builds_that_file_on_a_version_tag_only() -> None:
    flow = yaml.safe_load(RELEASE.read_text(encoding="utf-8"))
    on = flow[True]  # YAML 1.1 reads the `on` key as True
    assert set(on) == {"push"} and on["push"] == {"tags": ["v*.*.*"]}
    assert set(flow["jobs"]) == {"gate-image", "record"}
    job = flow["jobs"]["gate-image"]
    assert job["permissions"] == {"contents": "read", "packages": "write"}
    assert flow["jobs"]["record"]["permissions"] == {"contents": "write",
                                                     "pull-requests": "write"}
    build = next(s for s in job["steps"] if s.get("id") == "build")
    assert build["uses"].startswith("docker/build-push-action@")
    assert build["with"]["file"] == "docker/gate.Dockerfile" and build["with"]["push"] is True
    login = next(s for s in job["steps"] if "docker/login-action@" in s.get("uses", ""))
    assert login["with"]["registry"] == "ghcr.io"
    assert login["with"]["password"] == "${{ secrets.GITHUB_TOKEN }}"  # no stored secret


def test_the_default_image_is_what_release_publishes() -> None:
    text = RELEASE.read_text(encoding="utf-8")
    assert "/accelfleet-gate" in text and CONTROLLER_REPOSITORY.endswith("/accelfleet-gate")
    from fleet import __version__

    assert CONTROLLER_IMAGE == f"{CONTROLLER_REPOSITORY}:v{__version__}"
