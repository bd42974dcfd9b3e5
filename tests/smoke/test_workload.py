"""The manifests of a cluster smoke run: one workload per pool, what each pod gets (GPUs, EFA,
GKE's GPUDirect networks, TPU slices), labels, names, hostile values, options and the files
`accelfleet smoke render --out` writes. The schema checks are in test_workload_schemas.py."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import jinja2
import pytest
from ruamel.yaml import YAML

from fleet.catalog import image_ref_problem, load_catalog
from fleet.errors import InputError, UnknownNameError
from fleet.inventory import Inventory
from smoke.cluster._bundle import MOUNT_PATH, configmap_data
from smoke.cluster._templates import _environment, render_text
from smoke.cluster.workload import (
    NAME_MAX,
    RUN_LABEL,
    TPU_VM_SKIP,
    RenderedRun,
    RenderOptions,
    load_images,
    render_run,
    workload_name,
    write_manifests,
)
from tests.smoke.workload_stack import (
    MANAGED,
    POOL_LABEL,
    SKIPPED,
    agent_of,
    arg_of,
    env_of,
    inventory,
    job_of,
    objects_of,
    pod_of,
    run,
)

__all__ = ["inventory", "run"]  # fixtures



# -- one workload per pool -----------------------------------------------------------------------
def test_one_workload_per_pool(run: RenderedRun, inventory: Inventory) -> None:
    assert [w.pool.name for w in run.pools] == [p.name for p in inventory.pools]
    kinds = {w.pool.name: (w.kind, w.pods, [o["kind"] for o in w.objects]) for w in run.pools}
    assert kinds["tcpx"] == ("job", 2, ["Service", "Job"])
    assert kinds["l4"] == ("job", 1, ["Service", "Job"])
    assert kinds["v6e"] == ("jobset", 1, ["JobSet"])
    assert kinds["v5p"] == ("jobset", 16, ["JobSet"])
    assert kinds["v5p-ms"] == ("jobset", 4, ["JobSet"])
    assert {p for p, (k, _, _) in kinds.items() if k == "skipped"} == SKIPPED
    assert set(run.shared) == {"gke", "eks"}
    for w in run.pools:
        assert w.backend == ("jax" if w.pool.kind == "tpu" else "torch")
        if w.kind != "skipped":
            assert all(o["metadata"]["name"] == w.name for o in w.objects)


def test_skipped_pools_say_why(run: RenderedRun) -> None:
    vm = next(w for w in run.pools if w.pool.name == "v5p-vm")
    assert (vm.kind, vm.cluster, vm.objects, vm.skipped) == ("skipped", "", [], TPU_VM_SKIP)
    idle = next(w for w in run.pools if w.pool.name == "l4-idle")
    assert idle.skipped is not None and "0 nodes" in idle.skipped
    assert all(o["metadata"].get("labels", {}).get(POOL_LABEL) not in SKIPPED
               for c in run.shared for o in run.objects(c))


def test_gpu_jobs_one_pod_per_node_with_the_gpus(run: RenderedRun, inventory: Inventory) -> None:
    for name, gpus in (("tcpx", 8), ("rdma", 8), ("l4", 2), ("g6", 4), ("p5", 8)):
        pool = inventory.pool(name)
        job = job_of(run, name)
        spec = job["spec"]
        assert (spec["completionMode"], spec["completions"], spec["parallelism"]) == (
            "Indexed", pool.nodes, pool.nodes)
        assert (spec["backoffLimitPerIndex"], spec["activeDeadlineSeconds"],
                spec["ttlSecondsAfterFinished"]) == (0, 900, 3600)
        assert "backoffLimit" not in spec  # a crashed node must not end its healthy peers
        pod = spec["template"]["spec"]
        assert pod["restartPolicy"] == "Never"
        assert pod["subdomain"] == job["metadata"]["name"]
        assert pod["nodeSelector"] == pool.node_selector
        assert pod["tolerations"] == pool.tolerations
        agent = agent_of(spec["template"])
        assert agent["command"] == ["python", "-m", "smoke.probes.agent"]
        assert agent["resources"]["limits"][pool.resource] == str(gpus)
        requests, limits = agent["resources"]["requests"], agent["resources"]["limits"]
        assert {k: requests[k] for k in limits} == limits  # extended resources: requests = limits
        assert {"cpu", "memory"} <= set(requests) and not {"cpu", "memory"} & set(limits)
        assert {"name": "dshm", "emptyDir": {"medium": "Memory"}} in pod["volumes"]


def test_anti_affinity_is_scoped_to_the_run_and_pool(run: RenderedRun) -> None:
    job = job_of(run, "tcpx")
    (term,) = job["spec"]["template"]["spec"]["affinity"]["podAntiAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"]
    assert term["topologyKey"] == "kubernetes.io/hostname"
    assert term["labelSelector"] == {"matchLabels": {RUN_LABEL: run.run_id, POOL_LABEL: "tcpx"}}


def test_headless_service_and_rendezvous_env(run: RenderedRun) -> None:
    ports = {}
    for w in run.pools:
        if w.kind != "job":
            continue
        svc, job = w.objects
        assert svc["spec"]["clusterIP"] == "None" and svc["spec"]["publishNotReadyAddresses"]
        assert svc["spec"]["selector"] == {RUN_LABEL: run.run_id, POOL_LABEL: w.pool.name}
        (port,) = svc["spec"]["ports"]
        assert port["name"] == "rendezvous"
        env = env_of(agent_of(job["spec"]["template"]))
        assert env["ACCELFLEET_COORDINATOR"] == f"{w.name}-0.{w.name}"
        assert env["ACCELFLEET_COORDINATOR_PORT"] == str(port["port"])
        assert env["ACCELFLEET_NODES"] == str(w.pool.nodes)
        assert (env["ACCELFLEET_RUN"], env["ACCELFLEET_POOL"]) == (run.run_id, w.pool.name)
        assert env["PYTHONPATH"] == MOUNT_PATH and env["PYTHONUNBUFFERED"] == "1"
        assert env["NODE_NAME"] == {"fieldRef": {"fieldPath": "spec.nodeName"}}
        assert env["POD_NAME"] == {"fieldRef": {"fieldPath": "metadata.name"}}
        ports.setdefault(w.cluster, []).append(port["port"])
    assert ports == {"gke": [29500, 29501, 29502, 29503, 29504], "eks": [29500, 29501]}


def test_agent_argv_and_expectation(run: RenderedRun) -> None:
    agent = agent_of(job_of(run, "tcpx")["spec"]["template"])
    assert agent["args"][:10] == ["--tier", "3", "--backend", "torch", "--expect-json",
                                  agent["args"][5], "--pool", "tcpx", "--timeout-s", "900"]
    expect = json.loads(arg_of(agent, "--expect-json") or "")
    assert (expect["machine"], expect["devices"], expect["accelerator"]["key"]) == (
        "a3-highgpu-8g", 8, "h100-80gb")
    assert arg_of(agent, "--cross-node") == "torch"
    assert arg_of(agent, "--expect-transport") == "GPUDirectTCPX_v7"
    assert arg_of(agent, "--nccl-env-file") is None  # TCPX sets NCCL's variables directly
    plain = agent_of(job_of(run, "l4")["spec"]["template"])
    assert arg_of(plain, "--cross-node") == "torch" and arg_of(plain, "--expect-transport") is None


def test_below_tier_3_gpu_pods_stay_on_their_node(inventory: Inventory) -> None:
    run = render_run(inventory, RenderOptions(run_id="t2", tier=2), pools=["tcpxo", "v5p"])
    gpu = agent_of(job_of(run, "tcpxo")["spec"]["template"])
    assert "--cross-node" not in gpu["args"] and "--expect-transport" not in gpu["args"]
    tpu = agent_of(pod_of(run, "v5p"))  # multi-host JAX initialises together at every tier
    assert arg_of(tpu, "--cross-node") == "jax" and arg_of(tpu, "--tier") == "2"


# -- fabrics -----------------------------------------------------------------------------------
def _interfaces(run: RenderedRun, pool: str) -> list[tuple[str, str]] | None:
    ann = pod_of(run, pool)["metadata"].get("annotations", {})
    if "networking.gke.io/interfaces" not in ann:
        return None
    assert ann["networking.gke.io/default-interface"] == "eth0"
    return [(i["interfaceName"], i["network"]) for i in json.loads(
        ann["networking.gke.io/interfaces"])]


def test_gpudirect_interfaces_per_kind(run: RenderedRun) -> None:
    default = [("eth0", "default")]
    # GKE's names (container-engine-accelerators gpudirect-*/nccl-test*.yaml): vpc1..vpcN;
    # an RDMA pod's eight GPU NICs eth2..eth9 on rdma-0..rdma-7 (eth1 is the gVNIC network)
    assert _interfaces(run, "tcpx") == default + [(f"eth{i}", f"vpc{i}") for i in range(1, 5)]
    assert _interfaces(run, "tcpxo") == default + [(f"eth{i}", f"vpc{i}") for i in range(1, 9)]
    assert _interfaces(run, "rdma") == default + [(f"eth{i + 2}", f"rdma-{i}") for i in range(8)]
    for plain in ("tcpx-off", "l4", "p5", "g6"):
        assert _interfaces(run, plain) is None, plain


def test_pod_networks_are_the_networks_the_cluster_gets() -> None:
    """The interfaces annotation names the GKE `Network` objects components/gcp creates."""
    from components.gcp._k8s import network_objects
    from components.gcp._network import ExtraNetwork, gpudirect_plan

    cat = load_catalog()
    for kind, machine in (("tcpx", "a3-highgpu-8g"), ("tcpxo", "a3-megagpu-8g"),
                          ("rdma", "a3-ultragpu-8g")):
        net = cat.machines[machine].networking
        assert net is not None and net.kind == kind
        extra = [ExtraNetwork(n.name, n.vpc, n.subnet, n.device_mode)
                 for n in gpudirect_plan("c", [kind], cat)]
        created = [o["metadata"]["name"] for o in network_objects(extra)
                   if o["kind"] == "Network"]
        fabric = cat.fabrics[kind]
        assert {i.network for i in fabric.interfaces if i.interface != "eth0"} <= set(created)


def test_rxdm_sidecar_only_on_tcpx_and_tcpxo(run: RenderedRun) -> None:
    cat = load_catalog()
    for pool, kind in (("tcpx", "tcpx"), ("tcpxo", "tcpxo")):
        pod = pod_of(run, pool)
        daemon = cat.fabrics[kind].daemon
        assert daemon is not None
        (sidecar,) = pod["spec"]["initContainers"]
        assert (sidecar["name"], sidecar["image"], sidecar["restartPolicy"]) == (
            f"{kind}-daemon", daemon.image, "Always")
        devices = pod["metadata"]["annotations"][f"devices.gke.io/container.{kind}-daemon"]
        assert YAML(typ="safe").load(devices) == [{"path": d} for d in daemon.devices]
        assert "/dev/nvidia7" in devices
        volumes = {v["name"] for v in pod["spec"]["volumes"]}
        assert {m["name"] for m in sidecar["volumeMounts"]} <= volumes
    tcpxo = pod_of(run, "tcpxo")["spec"]["initContainers"][0]
    assert tcpxo["startupProbe"]["exec"]["command"] == ["cat", "/run/health-check"]
    assert env_of(tcpxo)["HEALTH_CHECK_LOG_FILE"] == "/run/health-check"
    assert "/dev/dmabuf_import_helper" in pod_of(run, "tcpxo")["metadata"]["annotations"][
        "devices.gke.io/container.tcpxo-daemon"]
    for pool in ("rdma", "tcpx-off", "l4", "p5", "g6"):
        pod = pod_of(run, pool)
        assert pod["spec"]["initContainers"] == [], pool
        assert not any(k.startswith("devices.gke.io/")
                       for k in pod["metadata"].get("annotations", {})), pool


def _host_mounts(pod: dict[str, Any]) -> dict[str, tuple[str, str]]:
    host = {v["name"]: v["hostPath"]["path"] for v in pod["spec"]["volumes"] if "hostPath" in v}
    return {m["mountPath"]: (m["name"], host[m["name"]])
            for m in agent_of(pod)["volumeMounts"] if m["name"] in host}


def test_gib_and_nccl_libraries_mounted_on_rdma(run: RenderedRun) -> None:
    pod = pod_of(run, "rdma")
    assert _host_mounts(pod) == {
        "/usr/local/nvidia": ("nvidia", "/home/kubernetes/bin/nvidia"),
        "/usr/local/gib": ("gib", "/home/kubernetes/bin/gib")}
    agent = agent_of(pod)
    assert arg_of(agent, "--expect-transport") == "gIB"
    assert arg_of(agent, "--nccl-env-file") == "/usr/local/gib/scripts/set_nccl_env.sh"
    assert env_of(agent)["LD_LIBRARY_PATH"] == "/usr/local/nvidia/lib64"
    tcpxo = agent_of(pod_of(run, "tcpxo"))
    assert arg_of(tcpxo, "--expect-transport") == "FasTrak"
    assert arg_of(tcpxo, "--nccl-env-file") == "/usr/local/nvidia/lib64/nccl-env-profile.sh"
    assert env_of(tcpxo)["NCCL_FASTRAK_LLCM_DEVICE_DIRECTORY"] == "/dev/aperture_devices"
    assert _host_mounts(pod_of(run, "l4")) == {}


def test_efa_pods_request_every_efa_interface(run: RenderedRun) -> None:
    agent = agent_of(pod_of(run, "p5"))
    assert agent["resources"]["limits"] == {"nvidia.com/gpu": "8", "vpc.amazonaws.com/efa": "32",
                                            "hugepages-2Mi": "5120Mi"}
    env = env_of(agent)
    assert (env["FI_PROVIDER"], env["FI_EFA_USE_DEVICE_RDMA"], env["FI_EFA_FORK_SAFE"]) == (
        "efa", "1", "1")
    assert arg_of(agent, "--expect-transport") == "Libfabric,AWS Libfabric"
    assert agent["image"] == load_images()["torch-efa"].ref
    g6 = agent_of(pod_of(run, "g6"))
    assert g6["resources"]["limits"] == {"nvidia.com/gpu": "4"}
    assert g6["image"] == load_images()["torch"].ref
    assert "FI_PROVIDER" not in env_of(g6)


# -- TPU ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(("pool", "slices", "hosts", "world"),
                         [("v6e", 1, 1, None), ("v5p", 1, 16, 64), ("v5p-ms", 2, 2, 16)])
def test_tpu_jobset_per_pool(run: RenderedRun, inventory: Inventory, pool: str, slices: int,
                             hosts: int, world: int | None) -> None:
    (js,) = objects_of(run, pool)
    inv = inventory.pool(pool)
    assert js["apiVersion"] == "jobset.x-k8s.io/v1alpha2"
    assert js["metadata"]["annotations"] == {
        "alpha.jobset.sigs.k8s.io/exclusive-topology": "cloud.google.com/gke-nodepool"}
    assert js["spec"]["failurePolicy"] == {"maxRestarts": 0}
    assert js["spec"]["ttlSecondsAfterFinished"] == 3600
    (rjob,) = js["spec"]["replicatedJobs"]
    assert rjob["replicas"] == slices == inv.slices
    job = rjob["template"]["spec"]
    assert (job["completionMode"], job["completions"], job["parallelism"]) == (
        "Indexed", hosts, hosts)
    assert (job["backoffLimit"], job["activeDeadlineSeconds"]) == (0, 900)
    pod = job["template"]["spec"]
    assert (pod["hostNetwork"], pod["dnsPolicy"], pod["restartPolicy"]) == (
        True, "ClusterFirstWithHostNet", "Never")
    assert pod["nodeSelector"] == inv.node_selector
    assert pod["nodeSelector"]["cloud.google.com/gke-tpu-topology"] == inv.topology
    assert "cloud.google.com/gke-tpu-accelerator" in pod["nodeSelector"]
    assert pod["tolerations"] == inv.tolerations
    agent = agent_of(job["template"])
    assert agent["securityContext"] == {"privileged": True}
    assert agent["resources"]["limits"] == {"google.com/tpu": str(inv.devices_per_node)}
    assert [p["containerPort"] for p in agent["ports"]] == [8471, 8080, 8431]
    assert arg_of(agent, "--backend") == "jax"
    assert agent["image"] == load_images()["jax"].ref
    if world is None:
        assert "--cross-node" not in agent["args"]
    else:
        assert arg_of(agent, "--cross-node") == "jax"
        assert arg_of(agent, "--expect-world") == str(world)


# -- labels, the shared objects, names ---------------------------------------------------------
def test_labels_on_every_object_and_pod(run: RenderedRun) -> None:
    for cluster in run.shared:
        ns, cm, *pool_objs = run.objects(cluster)
        assert ns["kind"] == "Namespace" and ns["metadata"]["labels"] == MANAGED
        assert ns["metadata"]["name"] == run.namespace == "accelfleet-smoke"
        assert cm["metadata"]["labels"] == {RUN_LABEL: run.run_id, **MANAGED}
        for obj in pool_objs:
            labels = obj["metadata"]["labels"]
            assert labels[RUN_LABEL] == run.run_id and labels[POOL_LABEL]
            assert obj["metadata"]["namespace"] == run.namespace
            templates = [obj["spec"].get("template")] if obj["kind"] == "Job" else [
                t for r in obj["spec"].get("replicatedJobs", [])
                for t in (r["template"], r["template"]["spec"]["template"])]
            for t in templates:
                if t is not None:
                    assert t["metadata"]["labels"] == labels
            assert labels == {RUN_LABEL: run.run_id, POOL_LABEL: labels[POOL_LABEL], **MANAGED}


def test_configmap_carries_the_agent_and_every_pod_mounts_it(run: RenderedRun) -> None:
    data, items = configmap_data()
    for cluster in run.shared:
        _, cm = run.shared[cluster]
        assert cm["metadata"]["name"] == f"accelfleet-smoke-{run.run_id}"
        assert cm["data"] == data
        assert {i["key"] for i in items} == set(cm["data"])
    for w in run.pools:
        if w.kind == "skipped":
            continue
        pod = pod_of(run, w.pool.name)
        (vol,) = [v for v in pod["spec"]["volumes"] if v["name"] == "agent"]
        assert vol["configMap"] == {"name": f"accelfleet-smoke-{run.run_id}", "items": items}
        assert {"name": "agent", "mountPath": MOUNT_PATH, "readOnly": True} in agent_of(pod)[
            "volumeMounts"]


def test_names_fit_and_stay_stable() -> None:
    assert workload_name("r1", "tcpx") == "af-r1-tcpx"
    long = "a-very-long-pool-name-for-the-vision-team"  # 41 characters
    name = workload_name("r20261122-1a2b3c", long)
    assert len(name) <= NAME_MAX and name == workload_name("r20261122-1a2b3c", long)
    assert name.startswith("af-r20261122-1a2b3c-a-very") and not name.endswith("-")
    assert workload_name("r20261122-1a2b3c", long + "x") != name
    assert len(f"{name}-slice-9-999") <= 63


def test_hostile_inventory_values_stay_data(inventory: Inventory, tmp_path: Path) -> None:
    evil = '"\n  evil: true'
    braces = "{{ 7 * 7 }} {% raw %}'\"\n- x: y"
    pool = inventory.pool("l4")
    hostile = replace(pool, node_selector={**pool.node_selector, "team": evil},
                      tolerations=[*pool.tolerations, {"key": "team", "operator": "Equal",
                                                       "value": braces,
                                                       "effect": "NoSchedule"}])
    run = render_run(Inventory("x", (hostile,)), RenderOptions(run_id="h1"))
    pod = job_of(run, "l4")["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == hostile.node_selector
    assert pod["tolerations"] == hostile.tolerations
    assert set(pod["nodeSelector"]) == set(hostile.node_selector)  # no `evil` key got in
    (path,) = write_manifests(run, tmp_path)
    assert list(YAML(typ="safe").load_all(path.read_text("utf-8"))) == run.objects("gke")
    bad_name = replace(pool, name='l4"\n# x')
    with pytest.raises(InputError, match="not a DNS label"):
        render_run(Inventory("x", (bad_name,)), RenderOptions(run_id="h1"))


def test_placeholders_give_the_objects_the_full_text_parses_to(
        inventory: Inventory, monkeypatch: pytest.MonkeyPatch) -> None:
    """`_render` parses a skeleton with placeholders; parsing the whole text (every value as
    JSON) must give exactly the same objects, for every pool kind, hostile values included."""
    import smoke.cluster.workload as workload

    evil = "\x00accelfleet:0 '\"\n- x: {{ y }}"
    pool = inventory.pool("l4")
    hostile = replace(pool, node_selector={**pool.node_selector, "team": evil})
    inv = Inventory("x", (*inventory.pools, replace(hostile, name="hostile")))
    fast = render_run(inv, RenderOptions(run_id="r1"))

    def whole_text(template: str, context: dict[str, Any]) -> list[dict[str, Any]]:
        text = render_text(template, context)
        return [d for d in YAML(typ="safe", pure=True).load_all(text) if d is not None]

    monkeypatch.setattr(workload, "_render", whole_text)
    assert render_run(inv, RenderOptions(run_id="r1")) == fast
    assert job_of(fast, "hostile")["spec"]["template"]["spec"]["nodeSelector"]["team"] == evil


def test_templates_refuse_values_not_encoded_as_json() -> None:
    with pytest.raises(jinja2.TemplateError, match="tojson"):
        _environment().from_string("name: {{ name }}").render(name="x")
    assert _environment().from_string("name: {{ name | tojson }}").render(name="x") == \
        'name: "x"'


# -- write_manifests ---------------------------------------------------------------------------
def test_write_manifests_round_trips(run: RenderedRun, tmp_path: Path) -> None:
    paths = write_manifests(run, tmp_path / "out")
    assert sorted(p.name for p in paths) == ["eks.yaml", "gke.yaml", "skipped.txt"]
    for cluster in run.shared:
        text = (tmp_path / "out" / f"{cluster}.yaml").read_text("utf-8")
        assert list(YAML(typ="safe").load_all(text)) == run.objects(cluster)
        comments = [line for line in text.splitlines() if line.startswith("# pool: ")]
        assert comments == [f"# pool: {w.pool.name}" for w in run.pools
                            if w.cluster == cluster and w.kind != "skipped"]
    skipped = (tmp_path / "out" / "skipped.txt").read_text("utf-8")
    assert skipped.startswith("l4-idle: no node to test") and f"v5p-vm: {TPU_VM_SKIP}" in skipped


def test_write_manifests_refuses_a_file(run: RenderedRun, tmp_path: Path) -> None:
    target = tmp_path / "taken"
    target.write_text("x", encoding="utf-8")
    with pytest.raises(InputError, match="not a directory"):
        write_manifests(run, target)


# -- options, selection, images ----------------------------------------------------------------
def test_pool_selection_and_typos(inventory: Inventory) -> None:
    run = render_run(inventory, RenderOptions(run_id="s1"), pools=["p5", "v6e"])
    assert [w.pool.name for w in run.pools] == ["v6e", "p5"]  # inventory order
    assert set(run.shared) == {"gke", "eks"}
    with pytest.raises(UnknownNameError) as exc:
        render_run(inventory, RenderOptions(run_id="s1"), pools=["tcpx0"])
    assert "tcpx" in exc.value.suggestions
    only_vm = render_run(inventory, RenderOptions(run_id="s1"), pools=["v5p-vm"])
    assert only_vm.shared == {} and only_vm.objects("gke") == []


@pytest.mark.parametrize("kwargs", [
    {"run_id": "Run_1"}, {"run_id": "r" * 17}, {"run_id": "r1", "namespace": "Bad NS"},
    {"run_id": "r1", "tier": 4}, {"run_id": "r1", "images": {"torch": "not an image!"}},
    {"run_id": "r1", "images": {"torch": "pytorch/pytorch"}},  # no tag: would float
])
def test_bad_options_are_input_errors(kwargs: dict[str, Any]) -> None:
    with pytest.raises(InputError):
        RenderOptions(**kwargs)


def test_image_overrides(inventory: Inventory) -> None:
    with pytest.raises(UnknownNameError) as exc:
        RenderOptions(run_id="i1", images={"troch": "pytorch/pytorch:2.11.0"})
    assert exc.value.suggestions[0] == "torch"
    ref = "registry.example.com:5000/ml/torch:2.11@sha256:" + "a" * 64
    run = render_run(inventory, RenderOptions(run_id="i1", images={"torch": ref}),
                     pools=["l4", "p5"])
    assert [w.image for w in run.pools] == [ref, load_images()["torch-efa"].ref]
    assert agent_of(pod_of(run, "l4"))["image"] == ref


def test_pinned_images_data() -> None:
    images = load_images()
    assert set(images) == {"torch", "torch-efa", "jax"}
    for image in images.values():
        assert image_ref_problem(image.ref) is None
        assert image.source and image.as_of
        assert ("@sha256:" in image.ref) == image.digest_found
    assert image_ref_problem("pytorch/pytorch:2.11.0-cuda12.8-cudnn9-runtime") is None
    for floating in ("ubuntu", "ubuntu:latest", "not an image!"):
        assert image_ref_problem(floating) is not None, floating


def test_fabric_pods_carry_the_fabric_the_nics_and_the_installers_nccl(
        run: RenderedRun, inventory: Inventory) -> None:
    # issue 19 items 3, 4, 6: the catalog's fabric kind and GPU NIC count reach the agent,
    # and where GKE's installer ships an NCCL core (container-engine-accelerators
    # nccl-*-installer.yaml copy lib64 to /home/kubernetes/bin/nvidia/lib64) it is named
    want = {"tcpx": ("tcpx", "4"), "tcpxo": ("tcpxo", "8"), "rdma": ("rdma", "8"),
            "p5": ("efa", "32")}
    for pool, (fabric, nics) in want.items():
        agent = agent_of(pod_of(run, pool))
        assert (arg_of(agent, "--expect-fabric"), arg_of(agent, "--expect-nics")) == (
            fabric, nics), pool
        lib = "" if fabric == "efa" else "/usr/local/nvidia/lib64/libnccl.so.2"
        assert (arg_of(agent, "--nccl-lib") or "") == lib, pool
    plain = agent_of(pod_of(run, "l4"))
    assert arg_of(plain, "--expect-fabric") is None and arg_of(plain, "--nccl-lib") is None
    # below tier 3 the node still runs NCCL (in-node all-reduce) with the fabric's environment
    t2 = render_run(inventory, RenderOptions(run_id="t2", tier=2), pools=["tcpxo"])
    agent = agent_of(job_of(t2, "tcpxo")["spec"]["template"])
    assert arg_of(agent, "--nccl-env-file") == "/usr/local/nvidia/lib64/nccl-env-profile.sh"
    assert arg_of(agent, "--expect-fabric") is None
