"""The workflows' cloud credentials, install and results (issue 38): OIDC first on both
clouds (Workload Identity Federation, an IAM role), a long-lived key only where no OIDC
variable is set; `id-token: write` only in the jobs that use it; CI installs no torch or jax;
deploy's smoke results go to a folder of their own (never the `smoke/` package), which is
what it uploads, HTML report included."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

ROOT = Path(__file__).resolve().parents[2]
FLOWS = ROOT / ".github" / "workflows"
CLOUD_WORKFLOWS = ("deploy.yml", "preview.yml")


def _load(name: str) -> dict[str, Any]:
    doc: dict[str, Any] = YAML(typ="safe").load((FLOWS / name).read_text(encoding="utf-8"))
    return doc


def _steps(job: dict[str, Any]) -> list[dict[str, Any]]:
    return list(job.get("steps") or [])


def _uses(step: dict[str, Any], action: str) -> bool:
    return str(step.get("uses", "")).startswith(action + "@")


def _cloud_jobs(name: str) -> dict[str, dict[str, Any]]:
    return {k: j for k, j in _load(name)["jobs"].items()
            if any(_uses(s, "google-github-actions/auth")
                   or _uses(s, "aws-actions/configure-aws-credentials") for s in _steps(j))}


@pytest.mark.parametrize("name", CLOUD_WORKFLOWS)
def test_oidc_is_the_default_and_a_key_only_the_fallback(name: str) -> None:
    jobs = _cloud_jobs(name)
    assert jobs, f"{name}: no job authenticates to a cloud"
    for job_name, job in jobs.items():
        where = f"{name} {job_name}"
        google = [s for s in _steps(job) if _uses(s, "google-github-actions/auth")]
        aws = [s for s in _steps(job) if _uses(s, "aws-actions/configure-aws-credentials")]
        wif = [s for s in google if "workload_identity_provider" in (s.get("with") or {})]
        role = [s for s in aws if "role-to-assume" in (s.get("with") or {})]
        assert len(wif) == 1 and len(role) == 1, where
        assert wif[0]["with"]["service_account"] == "${{ vars.GCP_SERVICE_ACCOUNT }}", where
        assert "vars.GCP_WORKLOAD_IDENTITY_PROVIDER != ''" in wif[0]["if"], where
        assert "vars.AWS_ROLE_ARN != ''" in role[0]["if"], where
        for step in google:
            if "credentials_json" in (step.get("with") or {}):
                assert "vars.GCP_WORKLOAD_IDENTITY_PROVIDER == ''" in step["if"], where
        for step in aws:
            if "aws-access-key-id" in (step.get("with") or {}):
                assert "vars.AWS_ROLE_ARN == ''" in step["if"], where
        assert job["permissions"].get("id-token") == "write", where
        env = " ".join(str(v) for v in (job.get("env") or {}).values())
        # no long-lived key in the job's environment: only the auth steps read them
        assert not re.search(r"secrets\.(GOOGLE_CREDENTIALS|AWS_ACCESS_KEY_ID|"
                             r"AWS_SECRET_ACCESS_KEY)\s*}}", env), where


@pytest.mark.parametrize("name", [*CLOUD_WORKFLOWS, "release.yml"])
def test_id_token_write_only_where_a_cloud_is_reached(name: str) -> None:
    doc = _load(name)
    assert "id-token" not in (doc.get("permissions") or {})
    cloud = _cloud_jobs(name) if name in CLOUD_WORKFLOWS else {}
    for job_name, job in doc["jobs"].items():
        has = (job.get("permissions") or {}).get("id-token") == "write"
        assert has == (job_name in cloud), f"{name} {job_name}"


@pytest.mark.parametrize("name", CLOUD_WORKFLOWS)
def test_ci_installs_no_torch_or_jax(name: str) -> None:
    text = (FLOWS / name).read_text(encoding="utf-8")
    assert "make PYTHON=python ci-install" in text
    assert ".installed-stamp" not in text  # make's full set-up: the torch and jax extras
    assert "pip install" not in text, "install through make ci-install only"
    make = (ROOT / "Makefile").read_text(encoding="utf-8")
    recipe = make[make.index("$(CI_STAMP): pyproject.toml"):make.index("ci-install: $(CI_STAMP)")]
    installs = re.findall(r"pip install[^\n]*-e '\.\[([^\]]*)\]'", recipe)
    assert installs == ["policy"], recipe


def test_deploy_keeps_its_results_in_a_folder_of_their_own_and_uploads_that() -> None:
    steps = _steps(_load("deploy.yml")["jobs"]["deploy"])
    run = next(s for s in steps if "smoke run" in str(s.get("run", "")))["run"]
    upload = next(s for s in steps if _uses(s, "actions/upload-artifact"))
    assert 'results="$RUNNER_TEMP/smoke-results"' in run
    assert '--out "$results"' in run and '--html "$results/report.html"' in run
    assert "smoke/" not in run.replace("smoke-results", "")
    assert upload["with"]["path"] == "${{ runner.temp }}/smoke-results/"
    assert upload.get("if") == "always()"
    summary = next(s for s in steps if "smoke report" in str(s.get("run", "")))
    assert summary.get("if") == "always()" and "GITHUB_STEP_SUMMARY" in summary["run"]


def test_docs_show_the_one_time_oidc_set_up_on_each_cloud() -> None:
    doc = (ROOT / "docs" / "ci.md").read_text(encoding="utf-8")
    for words in ("gcloud iam workload-identity-pools create",
                  "gcloud iam workload-identity-pools providers create-oidc",
                  "roles/iam.workloadIdentityUser", "attribute-condition",
                  "aws iam create-open-id-connect-provider", "sts:AssumeRoleWithWebIdentity",
                  "token.actions.githubusercontent.com:sub",
                  "environment:production",  # deploy runs in that environment: its `sub`
                  "`GCP_WORKLOAD_IDENTITY_PROVIDER`", "`GCP_SERVICE_ACCOUNT`",
                  "`AWS_ROLE_ARN`", "`AWS_REGION`", "make ci-install", "smoke report"):
        assert words in doc, words
