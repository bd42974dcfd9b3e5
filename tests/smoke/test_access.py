"""Cluster access: every way a cluster can be out of reach is exit 2 naming it and the fix."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from kubernetes.client.exceptions import ApiException

from fleet.errors import InputError, SetupError
from smoke.cluster.access import ClusterRef, connect, parse_contexts, transient, with_retries

GKE = ClusterRef("ml-gke", "gcp", "us-central1", "acme-ml-prod")
EKS = ClusterRef("ml-eks", "aws", "us-east-1")


def _kubeconfig(path: Path, server: str, contexts: list[str]) -> Path:
    lines = ["apiVersion: v1", "kind: Config", "clusters:", "- name: c", "  cluster:",
             f"    server: {server}", "users:", "- name: u", "  user: {token: t}", "contexts:"]
    for ctx in contexts:
        lines += [f"- name: {ctx}", "  context: {cluster: c, user: u}"]
    lines.append(f"current-context: {contexts[0]}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_context_flags_parse_and_reject_malformed() -> None:
    assert parse_contexts(["ml-gke=gke_acme_us-central1_ml-gke"]) == {
        "ml-gke": "gke_acme_us-central1_ml-gke"}
    with pytest.raises(InputError, match="CLUSTER=CONTEXT"):
        parse_contexts(["ml-gke"])


def test_missing_context_names_the_cluster_and_the_gcloud_fix(tmp_path: Path) -> None:
    cfg = _kubeconfig(tmp_path / "kc", "http://127.0.0.1:1", ["other"])
    with pytest.raises(SetupError) as err:
        connect([GKE], kubeconfig=cfg)
    text = str(err.value)
    assert "cluster ml-gke" in text and "gcloud container clusters get-credentials ml-gke " \
        "--region us-central1 --project acme-ml-prod" in text
    with pytest.raises(SetupError, match="aws eks update-kubeconfig --name ml-eks"):
        connect([EKS], kubeconfig=cfg)
    with pytest.raises(SetupError, match="no context 'nope'"):
        connect([GKE], kubeconfig=cfg, contexts={"ml-gke": "nope"})
    with pytest.raises(InputError, match="does not use: zz"):
        connect([GKE], kubeconfig=cfg, contexts={"zz": "other"})


def test_a_mistyped_context_or_cluster_says_did_you_mean_and_lists_them(tmp_path: Path
                                                                        ) -> None:
    """Issue 38: `--context ml-gke=<typo>` named no near context and no list to pick from."""
    cfg = _kubeconfig(tmp_path / "kc", "http://127.0.0.1:1",
                      ["gke_acme-ml-prod_us-central1_ml-gke", "kind-dev"])
    with pytest.raises(SetupError) as err:
        connect([GKE], kubeconfig=cfg, contexts={"ml-gke": "gke_acme-ml-prod_us-central_ml-gke"})
    text = str(err.value)
    assert "did you mean 'gke_acme-ml-prod_us-central1_ml-gke'?" in text, text
    assert "its contexts: gke_acme-ml-prod_us-central1_ml-gke, kind-dev" in text, text
    with pytest.raises(InputError) as bad:
        connect([GKE, EKS], kubeconfig=cfg, contexts={"ml-gk": "kind-dev"})
    assert "ml-gk; did you mean 'ml-gke'" in str(bad.value), str(bad.value)
    assert "ml-gke, ml-eks" in (bad.value.hint or "")


def test_unreachable_api_server_is_a_setup_error(tmp_path: Path) -> None:
    cfg = _kubeconfig(tmp_path / "kc", f"http://127.0.0.1:{_closed_port()}",
                      ["gke_acme-ml-prod_us-central1_ml-gke"])
    with pytest.raises(SetupError) as err:
        connect([GKE], kubeconfig=cfg)  # the gcloud-style context name is found by itself
    assert "cluster ml-gke" in str(err.value) and "unreachable" in str(err.value)


def test_transient_errors_are_retried_with_backoff() -> None:
    calls, sleeps = [], []

    def flaky() -> str:
        calls.append(1)
        if len(calls) <= 2:
            raise ApiException(status=500, reason="boom")
        return "ok"

    assert with_retries(flaky, sleep=sleeps.append) == "ok"
    assert len(calls) == 3 and sleeps == [0.2, 0.4]
    assert transient(ApiException(status=429)) and not transient(ApiException(status=422))
    with pytest.raises(ApiException):
        with_retries(lambda: (_ for _ in ()).throw(ApiException(status=403)), sleep=sleeps.append)
