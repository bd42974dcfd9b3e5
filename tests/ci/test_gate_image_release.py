"""Issue 35, deployable as shipped: the release publishes an image nodes can pull, and the
project knows which default images are published.

- release.yml checks, right after the push, that the image pulls with no credentials
  (.github/scripts/anonymous-pull.sh), and fails with the one-time step when it does not: a new
  ghcr.io package is private and no workflow can make it public. Here the script runs against
  a stand-in `curl` (no network): public, private, the registry's token refused.
- the `record` job appends the published image to fleet/catalog/data/gate_images.yaml
  (.github/scripts/record_gate_image.py), which `fleet.gate.default_image_published` reads.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from fleet import gate as G

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ROOT / ".github" / "scripts"
RELEASE = ROOT / ".github" / "workflows" / "release.yml"
DIGEST = "sha256:" + "ab" * 32

# a stand-in curl: the token URL answers with a token (or fails, FAKE_TOKEN=fail); the
# manifest URL answers 200 when FAKE_PUBLIC=1, else fails as curl -f does on a 401
FAKE_CURL = """#!/usr/bin/env bash
url="${@: -1}"
echo "$url" >> "$FAKE_LOG"
for a in "$@"; do
  [ "$a" = "Authorization: Bearer anon-token" ] && echo "bearer" >> "$FAKE_LOG"
done
case "$url" in
  */token\\?*) [ "${FAKE_TOKEN:-ok}" = fail ] && exit 22; echo '{"token": "anon-token"}' ;;
  */manifests/*) [ "${FAKE_PUBLIC:-0}" = 1 ] && exit 0; echo "curl: (22) 401" >&2; exit 22 ;;
  *) exit 6 ;;
esac
"""


def _pull(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    curl = bin_dir / "curl"
    curl.write_text(FAKE_CURL, encoding="utf-8")
    curl.chmod(0o755)
    log = tmp_path / "curl.log"
    full = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "FAKE_LOG": str(log),
            **env}
    return subprocess.run([str(SCRIPTS / "anonymous-pull.sh"), "ghcr.io/acme/accelfleet-gate",
                           "v0.1.0"], capture_output=True, text=True, env=full, timeout=60,
                          check=False)


def test_a_public_image_passes_with_an_anonymous_token(tmp_path: Path) -> None:
    got = _pull(tmp_path, FAKE_PUBLIC="1")
    assert got.returncode == 0, got.stderr
    asked = (tmp_path / "curl.log").read_text(encoding="utf-8").split()
    assert asked[0] == ("https://ghcr.io/token?scope=repository:acme/accelfleet-gate:pull")
    assert asked[1:] == ["https://ghcr.io/v2/acme/accelfleet-gate/manifests/v0.1.0", "bearer"]
    assert "is public" in got.stdout


@pytest.mark.parametrize("env", [{}, {"FAKE_TOKEN": "fail"}])
def test_a_private_image_fails_with_the_one_time_step(tmp_path: Path,
                                                      env: dict[str, str]) -> None:
    got = _pull(tmp_path, **env)
    assert got.returncode == 1
    for words in ("cannot be pulled without credentials", "Change visibility",
                  "https://github.com/orgs/acme/packages/container/package/accelfleet-gate",
                  "gate.image_pull_secrets"):
        assert words in got.stderr, got.stderr


def test_release_checks_the_pull_after_the_push_then_records_it() -> None:
    flow = yaml.safe_load(RELEASE.read_text(encoding="utf-8"))
    steps = flow["jobs"]["gate-image"]["steps"]
    build = next(i for i, s in enumerate(steps) if s.get("id") == "build")
    pull = next(i for i, s in enumerate(steps)
                if "anonymous-pull.sh" in str(s.get("run", "")))
    assert pull > build
    assert "org.opencontainers.image.source" in steps[build]["with"]["labels"]
    record = flow["jobs"]["record"]
    assert record["needs"] == "gate-image"
    run = " ".join(str(s.get("run", "")) for s in record["steps"])
    assert "record_gate_image.py" in run and "gh pr create" in run


def _data(tmp_path: Path, text: str | None = None) -> Path:
    path = tmp_path / "gate_images.yaml"
    path.write_text(text or (ROOT / "fleet" / "catalog" / "data" / "gate_images.yaml")
                    .read_text(encoding="utf-8"), encoding="utf-8")
    return path


def _record(path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPTS / "record_gate_image.py"), *args,
                           str(path)], capture_output=True, text=True, timeout=60,
                          check=False)


def test_the_record_appends_keeps_the_comments_and_is_idempotent(tmp_path: Path) -> None:
    path = _data(tmp_path)
    before = path.read_text(encoding="utf-8")
    assert _record(path, "0.1.0", G.CONTROLLER_REPOSITORY, DIGEST).returncode == 0
    assert _record(path, "0.2.0", G.CONTROLLER_REPOSITORY, DIGEST.replace("ab", "cd"))\
        .returncode == 0
    once = path.read_text(encoding="utf-8")
    assert _record(path, "0.1.0", G.CONTROLLER_REPOSITORY, DIGEST).returncode == 0  # re-run
    assert path.read_text(encoding="utf-8") == once
    comments = [line for line in before.splitlines() if line.startswith("#")]
    assert comments and comments == [x for x in once.splitlines() if x.startswith("#")]
    rows = yaml.safe_load(once)["published"]
    assert [(r["version"], r["image"], r["digest"]) for r in rows] == [
        ("0.1.0", G.CONTROLLER_REPOSITORY, DIGEST),
        ("0.2.0", G.CONTROLLER_REPOSITORY, DIGEST.replace("ab", "cd"))]


@pytest.mark.parametrize("args, says", [
    (("0.1", G.CONTROLLER_REPOSITORY, DIGEST), "version"),
    (("0.1.0", "GHCR.io/Acme", DIGEST), "image"),
    (("0.1.0", G.CONTROLLER_REPOSITORY, "sha256:xyz"), "digest"),
])
def test_the_record_refuses_what_is_not_a_release(tmp_path: Path, args: tuple[str, ...],
                                                  says: str) -> None:
    path = _data(tmp_path)
    before = path.read_text(encoding="utf-8")
    got = _record(path, *args)
    assert got.returncode == 1 and says in got.stderr
    assert path.read_text(encoding="utf-8") == before


def test_a_tag_pushed_twice_with_another_digest_is_refused(tmp_path: Path) -> None:
    path = _data(tmp_path)
    assert _record(path, "0.1.0", G.CONTROLLER_REPOSITORY, DIGEST).returncode == 0
    got = _record(path, "0.1.0", G.CONTROLLER_REPOSITORY, DIGEST.replace("ab", "ef"))
    assert got.returncode == 1 and "pushed twice" in got.stderr


def test_what_the_record_writes_is_what_the_rule_reads(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch
                                                       ) -> None:
    """The record's line read by fleet.gate: the default image of that version is published,
    another version's is not, and a fork's image (another owner) publishes nothing of ours."""
    path = _data(tmp_path)
    assert _record(path, "9.8.7", G.CONTROLLER_REPOSITORY, DIGEST).returncode == 0
    assert _record(path, "9.8.8", "ghcr.io/someone/accelfleet-gate", DIGEST).returncode == 0
    from fleet._yaml12 import load_data

    monkeypatch.setattr("fleet.catalog.read_yaml",
                        lambda name: load_data(path.read_text(encoding="utf-8")))
    assert [p.version for p in G.published_images()] == ["9.8.7", "9.8.8"]
    assert G.default_image_published(None, "9.8.7") is True
    assert G.default_image_published(f"{G.CONTROLLER_REPOSITORY}:v9.8.7", "9.8.7") is True
    assert G.default_image_published(None, "9.8.8") is False  # only a fork's
    assert G.default_image_published("ghcr.io/acme/mine@" + DIGEST, "9.8.8") is None
