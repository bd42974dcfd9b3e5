"""Every rendered manifest against the real schemas: Kubernetes objects with kubernetes-validate
(strict), the JobSet against its v1alpha2 fields and the published JobSet v0.12.0 CRD schema
(shipped in tests/smoke/data, descriptions removed) made strict."""

from __future__ import annotations

import copy
import os
from dataclasses import replace
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
from ruamel.yaml import YAML

from fleet import load_fleet
from fleet.inventory import Inventory, build_inventory
from smoke.cluster.workload import RenderedRun, RenderOptions, render_run
from tests.schemas import strict
from tests.smoke.workload_stack import REPO, inventory, job_of, objects_of, run

__all__ = ["inventory", "run"]  # fixtures

K8S_VERSION = "1.37"  # the newest schema set kubernetes-validate ships here


# -- schemas -----------------------------------------------------------------------------------
# The JobSet v1alpha2 fields (kubernetes-sigs/jobset v0.12.0, api/jobset/v1alpha2): an envelope
# checked on every run; the embedded Job is checked against Kubernetes' own schema.
_OBJ: dict[str, Any] = {"type": "object"}
JOBSET_ENVELOPE: dict[str, Any] = {
    "type": "object", "additionalProperties": False,
    "required": ["apiVersion", "kind", "metadata", "spec"],
    "properties": {
        "apiVersion": {"const": "jobset.x-k8s.io/v1alpha2"}, "kind": {"const": "JobSet"},
        "metadata": _OBJ, "status": _OBJ,
        "spec": {"type": "object", "additionalProperties": False, "properties": {
            "coordinator": _OBJ, "managedBy": {"type": "string"}, "startupPolicy": _OBJ,
            "successPolicy": _OBJ, "suspend": {"type": "boolean"}, "volumeClaimPolicies": {
                "type": "array"},
            "ttlSecondsAfterFinished": {"type": "integer", "minimum": 0},
            "failurePolicy": {"type": "object", "additionalProperties": False, "properties": {
                "maxRestarts": {"type": "integer"}, "restartStrategy": {"type": "string"},
                "rules": {"type": "array"}}},
            "network": {"type": "object", "additionalProperties": False, "properties": {
                "enableDNSHostnames": {"type": "boolean"},
                "publishNotReadyAddresses": {"type": "boolean"},
                "subdomain": {"type": "string"}}},
            "replicatedJobs": {"type": "array", "minItems": 1, "items": {
                "type": "object", "additionalProperties": False, "required": ["name", "template"],
                "properties": {
                    "name": {"type": "string"}, "groupName": {"type": "string"},
                    "replicas": {"type": "integer", "minimum": 1}, "dependsOn": {"type": "array"},
                    "template": {"type": "object", "additionalProperties": False,
                                 "properties": {"metadata": _OBJ, "spec": _OBJ}}}}}}},
    },
}
JOBSET_CRD_NAME = "jobset.x-k8s.io_jobsets-v0.12.0"


def _published_jobset_schema() -> dict[str, Any] | None:
    """The openAPIV3Schema of the published JobSet v0.12.0 CRD, where this checkout has it:
    $ACCELFLEET_JOBSET_CRD (the CRD YAML, `config/components/crd/bases/
    jobset.x-k8s.io_jobsets.yaml` at tag v0.12.0), tests/smoke/data/<name>.json, or
    shared/reference/<name>.yaml beside the repository."""
    candidates = [os.environ.get("ACCELFLEET_JOBSET_CRD", ""),
                  str(REPO / "tests" / "smoke" / "data" / f"{JOBSET_CRD_NAME}.json"),
                  str(REPO.parent / "shared" / "reference" / f"{JOBSET_CRD_NAME}.yaml")]
    for candidate in candidates:
        if candidate and Path(candidate).is_file():
            data = YAML(typ="safe", pure=True).load(Path(candidate).read_text("utf-8"))
            if "openAPIV3Schema" in data:
                return dict(data["openAPIV3Schema"])
            (version,) = [v for v in data["spec"]["versions"] if v["name"] == "v1alpha2"]
            return dict(version["schema"]["openAPIV3Schema"])
    return None


def _validate(obj: dict[str, Any]) -> None:
    if obj["kind"] != "JobSet":
        kubernetes_validate.validate(obj, K8S_VERSION, strict=True)
        return
    jsonschema.validate(obj, JOBSET_ENVELOPE)
    # ObjectMeta through a plain object, and each replicated Job as a batch/v1 Job
    kubernetes_validate.validate({"apiVersion": "v1", "kind": "ConfigMap",
                                  "metadata": obj["metadata"]}, K8S_VERSION, strict=True)
    for rjob in obj["spec"]["replicatedJobs"]:
        kubernetes_validate.validate({
            "apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": f"{obj['metadata']['name']}-{rjob['name']}-0",
                         **rjob["template"].get("metadata", {})},
            "spec": rjob["template"]["spec"]}, K8S_VERSION, strict=True)

def test_every_object_passes_the_kubernetes_schemas(run: RenderedRun) -> None:
    kinds = []
    for cluster in run.shared:
        for obj in run.objects(cluster):
            _validate(obj)
            kinds.append(obj["kind"])
    assert sorted(set(kinds)) == ["ConfigMap", "Job", "JobSet", "Namespace", "Service"]


def test_jobsets_pass_the_published_crd_schema(run: RenderedRun) -> None:
    schema = _published_jobset_schema()
    assert schema is not None, "tests/smoke/data carries the JobSet v0.12.0 CRD schema"
    validator = jsonschema.Draft7Validator(strict(schema))
    jobsets = [o for c in run.shared for o in run.objects(c) if o["kind"] == "JobSet"]
    assert len(jobsets) == 3
    for js in jobsets:
        errors = [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(js)]
        assert errors == []
    bad = copy.deepcopy(jobsets[0])
    bad["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["containers"][0][
        "imagePullPolicyy"] = "Always"
    assert list(validator.iter_errors(bad))


def test_the_schema_checks_catch_unknown_fields(run: RenderedRun) -> None:
    job = copy.deepcopy(job_of(run, "l4"))
    job["spec"]["template"]["spec"]["containers"][0]["imagee"] = "x"
    with pytest.raises(kubernetes_validate.ValidationError):
        _validate(job)
    js = copy.deepcopy(objects_of(run, "v5p")[0])
    js["spec"]["failurePolicy"]["maxRestart"] = 0
    with pytest.raises(jsonschema.ValidationError):
        _validate(js)
    js = copy.deepcopy(objects_of(run, "v5p")[0])
    js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["hostNetwrk"] = True
    with pytest.raises(kubernetes_validate.ValidationError):
        _validate(js)


def test_the_example_stack_renders_every_pool_validly() -> None:
    inv = build_inventory(load_fleet(str(REPO / "stacks" / "Pulumi.example.yaml")), "example")
    run = render_run(inv, RenderOptions(run_id="example"))
    assert [w.pool.name for w in run.pools] == [p.name for p in inv.pools]
    assert all(w.kind in ("job", "jobset") for w in run.pools)
    for cluster in run.shared:
        for obj in run.objects(cluster):
            _validate(obj)


# -- kubectl's YAML ----------------------------------------------------------------------------
# kubectl reads manifests with sigs.k8s.io/yaml (go-yaml v2), whose plain scalars resolve by YAML
# 1.1: `yes`/`no`/`on`/`off`/`y`/`n` are booleans, `012` octal, `1:20` a number (go-yaml v2
# resolve.go, https://github.com/go-yaml/yaml/blob/v2/resolve.go, read 2026-11-27). PyYAML's
# safe_load resolves by YAML 1.1 too, so the written files must read back to the same objects,
# every string still a string, and pass the schemas as read.
def test_the_written_render_reads_the_same_under_yaml_1_1(inventory: Inventory,
                                                          tmp_path: Path) -> None:
    import yaml

    from smoke.cluster.workload import write_manifests

    l4 = inventory.pool("l4")
    words = replace(l4, name="yes", node_selector={**l4.node_selector, "rack": "012"},
                    tolerations=[*l4.tolerations, {"key": "on", "operator": "Equal",
                                                   "value": "1:20", "effect": "NoSchedule"}])
    inv = Inventory(inventory.stack, (*inventory.pools, words))
    run = render_run(inv, RenderOptions(run_id="r20261122-1a2b3c", tier=3))
    args = job_of(run, "p5")["spec"]["template"]["spec"]["containers"][0]["args"]
    assert args[args.index("--expect-gdr") + 1] in ("yes", "no")  # the value that broke kubectl
    for path in write_manifests(run, tmp_path):
        if path.suffix != ".yaml":
            continue
        as_kubectl_reads = [d for d in yaml.safe_load_all(path.read_text("utf-8"))
                            if d is not None]
        assert as_kubectl_reads == run.objects(path.stem)
        for obj in as_kubectl_reads:
            _validate(obj)
    pod = job_of(run, "yes")["spec"]["template"]["spec"]
    assert pod["nodeSelector"]["rack"] == "012"
