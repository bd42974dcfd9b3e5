"""Cluster access for a smoke run: one Kubernetes API client per cluster of the inventory.

Where a cluster's credentials come from, first match wins:
1. `--context CLUSTER=CTX`: that context of the user's kubeconfig;
2. the stack's outputs (`pulumi stack output --json --show-secrets`): its `kubeconfigs` entry;
3. the user's kubeconfig: a context named like the cluster, or the one `gcloud container
   clusters get-credentials` (`gke_<project>_<location>_<cluster>`) or `aws eks
   update-kubeconfig` (`arn:aws:eks:<region>:<account>:cluster/<cluster>`) wrote.
Each client is checked (`GET /version`) before anything is submitted: a missing context, an
unreachable API server or a refused credential is a SetupError (exit 2) naming the cluster and
the command that fixes it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from fleet.errors import InputError, SetupError
from smoke.cluster._api import (
    MAX_PAGES,
    RETRY_STATUSES,
    ApiTimeout,
    Body,
    TooLong,
    bounded,
    pages,
    track,
    transient,
    with_retries,
)

if TYPE_CHECKING:
    from kubernetes.client import ApiClient

__all__ = ["MAX_PAGES", "RETRY_STATUSES", "Body", "ClusterRef", "TooLong", "bounded", "connect",
           "pages", "preflight", "transient", "with_retries"]  # the bounded calls live in
# smoke.cluster._api; `bounded` and its `Body` for the gate's exporter reads (smoke.gate._exporter)
PREFLIGHT_TIMEOUT_S = (3.0, 10.0)  # (connect, read); 10 s is also the whole answer's bound


@dataclass(frozen=True)
class ClusterRef:
    """What the fix hint needs to name: the cluster, its cloud and where it lives."""

    name: str
    cloud: str
    region: str = "REGION"
    project: str = ""

    def fix(self) -> str:
        if self.cloud == "gcp":
            project = f" --project {self.project}" if self.project else ""
            cmd = (f"gcloud container clusters get-credentials {self.name} "
                   f"--region {self.region}{project}")
        else:
            cmd = f"aws eks update-kubeconfig --name {self.name} --region {self.region}"
        return (f"run `{cmd}`, or pass --context {self.name}=CONTEXT, or --outputs with the "
                "stack's `pulumi stack output --json --show-secrets`")


def key_values(values: list[str], option: str, shape: str, example: str) -> dict[str, str]:
    """Repeated `--OPTION KEY=VALUE` values -> {key: value}; InputError naming `shape` and
    `example` on a malformed one."""
    out: dict[str, str] = {}
    for v in values:
        key, sep, value = v.partition("=")
        if not sep or not key or not value:
            raise InputError(f"{option} {v!r} is not {shape}", hint=f"e.g. {option} {example}")
        out[key] = value
    return out


def parse_contexts(values: list[str]) -> dict[str, str]:
    """`--context CLUSTER=CTX` values -> {cluster: context}; InputError on a malformed one."""
    return key_values(values, "--context", "CLUSTER=CONTEXT", "ml-gke=gke_acme_us-central1_ml-gke")


def default_kubeconfig() -> Path:
    first = os.environ.get("KUBECONFIG", "").split(os.pathsep)[0]
    return Path(first) if first else Path.home() / ".kube" / "config"


def _contexts(path: Path) -> list[str]:
    import yaml
    from kubernetes import config  # type: ignore[attr-defined]

    try:
        contexts, _ = config.list_kube_config_contexts(config_file=str(path))
    except (config.ConfigException, OSError, TypeError, ValueError, AttributeError,
            RecursionError, yaml.YAMLError):
        return []
    if not isinstance(contexts, list):
        return []
    return [str(c["name"]) for c in contexts if isinstance(c, dict) and "name" in c]


def _did_you_mean(name: str, known: list[str]) -> str:
    """`; did you mean 'x'?` for the known names nearest to `name`, else ''."""
    from fleet.errors import suggest

    near = suggest(name, known)
    return f"; did you mean {' or '.join(map(repr, near))}?" if near else ""


def _guess_context(cluster: str, names: list[str]) -> str | None:
    for name in names:
        if name == cluster or name.endswith((f"_{cluster}", f"cluster/{cluster}")):
            return name
    return None


def connect(refs: list[ClusterRef], *, kubeconfig: Path | None = None,
            contexts: Mapping[str, str] | None = None,
            outputs_kubeconfigs: Mapping[str, str] | None = None,
            check: bool = True) -> dict[str, ApiClient]:
    """An API client per cluster, each checked reachable and authorised (`check`); every
    cluster that cannot be used is named in one SetupError."""
    path = kubeconfig or default_kubeconfig()
    wanted = dict(contexts or {})
    unknown = set(wanted) - {r.name for r in refs}
    if unknown:
        used = [r.name for r in refs]
        raise InputError("--context names cluster(s) the run does not use: "
                         + "; ".join(f"{c}{_did_you_mean(c, used)}" for c in sorted(unknown)),
                         hint=f"the run's clusters: {', '.join(used) or 'none'}")
    from fleet.input_files import regular_or_absent

    regular_or_absent(path, what="kubeconfig",
                      hint="pass a kubeconfig file with --kubeconfig (or $KUBECONFIG)")
    names = _contexts(path) if path.exists() else []
    clients: dict[str, ApiClient] = {}
    failed: list[SetupError] = []
    for ref in refs:  # every cluster tried: all that cannot be reached are named at once
        try:
            clients[ref.name] = track(_client(ref, path, names, wanted, outputs_kubeconfigs))
            if check:
                preflight(ref, clients[ref.name])
        except SetupError as exc:
            failed.append(exc)
    if len(failed) == 1:
        raise failed[0]
    if failed:  # each cluster's fix under its own line, not one run-on hint for all
        lines = [line for e in failed
                 for line in (f"  - {e.message}", *([f"    fix: {e.hint}"] if e.hint else []))]
        raise SetupError(f"{len(failed)} of {len(refs)} clusters cannot be used:\n"
                         + "\n".join(lines),
                         hint="fix each cluster as its line says, then run again")
    return clients


def _client(ref: ClusterRef, path: Path, names: list[str], wanted: Mapping[str, str],
            outputs_kubeconfigs: Mapping[str, str] | None) -> ApiClient:
    """The API client of one cluster (not yet checked reachable); SetupError when its
    kubeconfig or context cannot be used."""
    import yaml
    from kubernetes import config  # type: ignore[attr-defined]
    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError

    try:
        if ref.name in wanted:
            if wanted[ref.name] not in names:
                listed = (f"its contexts: {', '.join(names[:20])}"
                          + (f" and {len(names) - 20} more" if len(names) > 20 else "")
                          if names else "it holds no context")
                raise SetupError(
                    f"cluster {ref.name}: no context {wanted[ref.name]!r} in {path}"
                    f"{_did_you_mean(wanted[ref.name], names)} ({listed})",
                    hint=ref.fix())
            client: ApiClient = config.new_client_from_config(config_file=str(path),
                                                              context=wanted[ref.name])
            return client
        if outputs_kubeconfigs and ref.name in outputs_kubeconfigs:
            doc = YAML(typ="safe").load(outputs_kubeconfigs[ref.name])
            client = config.new_client_from_config_dict(doc)
            return client
        ctx = _guess_context(ref.name, names)
        if ctx is None:
            where = f"{path}" if path.exists() else f"{path} (missing)"
            raise SetupError(f"cluster {ref.name}: no kubeconfig context for it in "
                             f"{where}", hint=ref.fix())
        client = config.new_client_from_config(config_file=str(path), context=ctx)
        return client
    except (config.ConfigException, ValueError, TypeError, AttributeError, KeyError,
            RecursionError, YAMLError, yaml.YAMLError) as exc:
        words = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
        raise SetupError(f"cluster {ref.name}: its kubeconfig cannot be used (it is not "
                         f"a kubeconfig: {words})", hint=ref.fix()) from None


def preflight(ref: ClusterRef, client: ApiClient) -> None:
    """GET /version: reachable, and the credential accepted."""
    from kubernetes.client import VersionApi
    from kubernetes.client.exceptions import ApiException

    host = client.configuration.host
    try:  # the whole answer within the read timeout: a drip does not hold it (issue 29)
        bounded(VersionApi(client).get_code, budget_s=PREFLIGHT_TIMEOUT_S[1],
                _request_timeout=PREFLIGHT_TIMEOUT_S)
    except ApiTimeout:
        raise SetupError(f"cluster {ref.name}: the API server at {host} did not answer "
                         f"GET /version within {PREFLIGHT_TIMEOUT_S[1]:g} s",
                         hint="check the network path to the control plane (a proxy in "
                         "front of it that holds answers, a VPN); " + ref.fix()) from None
    except ApiException as exc:
        if exc.status in (401, 403):
            raise SetupError(f"cluster {ref.name}: the API server at {host} refused the "
                             f"credential ({exc.status} {exc.reason})",
                             hint="your token may have expired; " + ref.fix()) from None
        raise SetupError(f"cluster {ref.name}: the API server at {host} answered "
                         f"{exc.status} {exc.reason}", hint=ref.fix()) from None
    except Exception as exc:  # urllib3 connection errors, TLS errors, exec-plugin failures
        raise SetupError(f"cluster {ref.name}: the API server at {host} is unreachable "
                         f"({type(exc).__name__})",
                         hint="check the network path to the control plane (a private "
                         "endpoint needs a VPN or bastion); " + ref.fix()) from None
