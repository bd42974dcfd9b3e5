from __future__ import annotations

import pytest

from fleet.catalog import _load, _tpu, load_catalog
from fleet.errors import CatalogError, InputError, UnknownNameError


@pytest.fixture(scope="module")
def cat():
    return load_catalog()


def test_v5p_128_is_64_chips_4x4x4_on_16_hosts(cat):
    s = cat.resolve("v5p-128")
    assert (s.chips, s.topology_str, s.hosts, s.devices_per_host) == (64, "4x4x4", 16, 4)
    assert s.machine_type == "ct5p-hightpu-4t"
    assert s.jax_devices == 64


def test_v6e_2x4_is_8_chips_on_2_hosts(cat):
    for words in ("v6e 2x4", "v6e-2x4", "v6e-8", "tpu-v6e-slice 2x4"):
        s = cat.resolve(words)
        assert (s.chips, s.hosts, s.devices_per_host) == (8, 2, 4), words
        assert s.machine_type == "ct6e-standard-4t"


def test_v6e_single_host_8t_machine(cat):
    s = cat.resolve("ct6e-standard-8t")
    assert (s.chips, s.hosts, s.topology_str) == (8, 1, "2x4")


def test_tpu7x_has_two_jax_devices_per_chip(cat):
    s = cat.resolve("tpu7x", topology="2x2x1")
    assert s.chips == 4 and s.hosts == 1
    assert s.jax_devices == 8
    assert cat.accelerator("tpu7x").jax_devices_per_chip == 2


def test_topology_sides_in_any_order_normalise(cat):
    assert cat.resolve("v5p", topology="1x2x2").topology_str == "2x2x1"
    assert cat.resolve("v5p", topology="8x4x4").topology_str == "4x4x8"


@pytest.mark.parametrize(
    ("words", "machine", "gpus"),
    [
        ("h100", "a3-highgpu-8g", 8),
        ("nvidia-h100-80gb", "a3-highgpu-8g", 8),
        ("nvidia-h100-mega-80gb", "a3-megagpu-8g", 8),
        ("a3-highgpu-8g", "a3-highgpu-8g", 8),
        ("p5.48xlarge", "p5.48xlarge", 8),
        ("G6.12XLARGE", "g6.12xlarge", 4),
        ("g2-standard-24", "g2-standard-24", 2),
    ],
)
def test_resolve_gpu_words(cat, words, machine, gpus):
    s = cat.resolve(words)
    assert s.machine_type == machine
    assert s.devices_per_host == gpus
    assert s.kind == "gpu"


def test_resolve_accelerator_on_a_cloud(cat):
    assert cat.resolve("h100", cloud="aws").machine_type == "p5.48xlarge"
    assert cat.resolve("h200", cloud="gcp").machine_type == "a3-ultragpu-8g"


def test_unknown_name_suggests_nearest(cat):
    with pytest.raises(UnknownNameError) as err:
        cat.resolve("h1000")
    assert "h100" in err.value.suggestions
    assert "did you mean" in str(err.value)
    assert err.value.exit_code == 2


def test_machine_on_wrong_cloud(cat):
    with pytest.raises(InputError, match="not offered on aws"):
        cat.resolve("a3-highgpu-8g", cloud="aws")
    with pytest.raises(InputError, match="gcp only"):
        cat.resolve("v5p-8", cloud="aws")


def test_invalid_topology_lists_valid_ones(cat):
    with pytest.raises(UnknownNameError) as err:
        cat.resolve("v5p", topology="3x3x3")
    assert "2x2x1" in err.value.hint
    assert err.value.suggestions  # nearest by chip count
    with pytest.raises(UnknownNameError):
        cat.resolve("v6e", topology="2x2x2")  # 3 sides on a 2D generation


def test_bad_slice_size(cat):
    with pytest.raises(InputError, match="not a v5p slice size"):
        cat.resolve("v5p-100")


def test_topologies_follow_the_rules(cat):
    assert cat.topologies("v6e") == ["1x1", "2x2", "2x4", "4x4", "4x8", "8x8", "8x16", "16x16"]
    v5p = cat.topologies("v5p")
    assert v5p[:5] == ["2x2x1", "2x2x2", "2x2x4", "2x4x4", "4x4x4"]
    gen = cat.tpu_generation("v5p")
    for t in _tpu.topologies(gen):
        chips = t[0] * t[1] * t[2]
        assert chips <= gen.max_chips
        assert chips <= 32 or all(side % 4 == 0 for side in t)
    assert "16x16x24" in cat.topologies("v4") or "16x16x16" in cat.topologies("v4")
    assert "2x2x3" not in v5p


def test_slice_names_count_tensorcores_or_chips(cat):
    assert cat.slice_names("v5p")[:3] == ["v5p-8", "v5p-16", "v5p-32"]
    assert cat.slice_names("v6e")[:3] == ["v6e-1", "v6e-4", "v6e-8"]


def test_every_accelerator_has_a_source_and_units(cat):
    for acc in cat.accelerators.values():
        assert acc.source
        assert acc.memory_gib > 0 or acc.kind == "cpu"  # cpu: the CPU machines' "none"
    for key in ("h100-80gb", "tpu-v5p", "l4"):
        acc = cat.accelerator(key)
        assert acc.bf16_tflops and acc.memory_gbps


def test_gpudirect_networking_from_catalog(cat):
    assert cat.resolve("a3-highgpu-8g").networking.extra_vpcs == 4
    assert cat.resolve("a3-megagpu-8g").networking.extra_vpcs == 8
    rdma = cat.resolve("a3-ultragpu-8g").networking
    assert (rdma.kind, rdma.extra_vpcs, rdma.rdma_subnets) == ("rdma", 1, 8)
    assert cat.resolve("p5.48xlarge").networking.efa_interfaces == 32
    assert cat.resolve("p5en.48xlarge").networking.efa_interfaces == 16
    assert cat.resolve("g6.xlarge").networking is None


def test_every_gpu_fabric_has_its_pod_side_facts(cat):
    kinds = {m.networking.kind for m in cat.machines.values() if m.networking}
    assert kinds == set(cat.fabrics) == {"tcpx", "tcpxo", "rdma", "efa"}
    names = {k: f.nccl_networks for k, f in cat.fabrics.items()}
    assert names == {"tcpx": ("GPUDirectTCPX_v7",), "tcpxo": ("FasTrak",), "rdma": ("gIB",),
                     "efa": ("Libfabric", "AWS Libfabric")}
    for kind, machine in (("tcpx", "a3-highgpu-8g"), ("tcpxo", "a3-megagpu-8g"),
                          ("rdma", "a3-ultragpu-8g")):
        fabric, net = cat.fabrics[kind], cat.resolve(machine).networking
        modes = [n.device_mode for n in fabric.networks]
        assert (modes.count("NetDevice"), modes.count("RDMA")) == (net.extra_vpcs,
                                                                   net.rdma_subnets)
        assert fabric.source
    assert [d.daemon is not None for d in cat.fabrics.values()] == [True, True, False, False]
    assert cat.fabrics["rdma"].nccl_env_file == "/usr/local/gib/scripts/set_nccl_env.sh"
    assert dict(cat.fabrics["efa"].env)["FI_PROVIDER"] == "efa"
    # GPU NICs per machine as NCCL should count them (issue 19 item 6)
    nics = {m: cat.machines[m].networking.gpu_nics for m in (
        "a3-highgpu-8g", "a3-megagpu-8g", "a3-ultragpu-8g", "p5.48xlarge", "p5en.48xlarge")}
    assert nics == {"a3-highgpu-8g": 4, "a3-megagpu-8g": 8, "a3-ultragpu-8g": 8,
                    "p5.48xlarge": 32, "p5en.48xlarge": 16}


def test_efa_gdr_per_instance_type(cat):
    # aws/aws-ofi-nccl@2daf7d303aa139a03140aa530957d10521e4478d src/platform-aws.cpp
    # platform_data_map: gdr_required true for p4d/p4de/p5/p5e/p5en/p6-b200, false for
    # g5.48xlarge, no entry for g4dn/g6/g6e (the recorded g6e log ran with GDR disabled)
    gdr = {m: cat.machines[m].networking.efa_gdr for m in (
        "p4d.24xlarge", "p4de.24xlarge", "p5.48xlarge", "p5e.48xlarge", "p5en.48xlarge",
        "p6-b200.48xlarge", "g4dn.12xlarge", "g5.48xlarge", "g6.48xlarge", "g6e.48xlarge")}
    assert [m for m, on in gdr.items() if on] == [
        "p4d.24xlarge", "p4de.24xlarge", "p5.48xlarge", "p5e.48xlarge", "p5en.48xlarge",
        "p6-b200.48xlarge"]


@pytest.mark.parametrize(("family", "change", "message"), [
    ("g6e", lambda f: f.pop("efa_gdr"), "states efa_gdr"),
    ("p5en", lambda f: f.pop("efa_gdr_source"), "efa_gdr_source"),
    ("p5en", lambda f: f.update(efa_gdr="yes"), "states efa_gdr"),
])
def test_every_efa_family_states_whether_nccl_runs_with_gdr(cat, monkeypatch, family, change,
                                                            message):
    real = _load.read_yaml
    data = real("aws.yaml")
    change(next(f for f in data["machine_families"] if f["family"] == family))
    monkeypatch.setattr(_load, "read_yaml", lambda name: data if name == "aws.yaml"
                        else real(name))
    with pytest.raises(CatalogError, match=message):
        _load.load_machines("aws", cat.accelerators)


def _break_fabrics(fabrics):
    fabrics[0]["networks"].pop()  # tcpx: one GKE network short of its 4 VPCs
    fabrics[0]["interfaces"].pop()


@pytest.mark.parametrize(("breakage", "message"), [
    (_break_fabrics, "3 NetDevice and 0 RDMA GKE networks"),
    (lambda f: f[2]["interfaces"].append({"interface": "eth1", "network": "rdma-9"}),
     "not one of its networks"),
    (lambda f: f.pop(2), "no entry for the 'rdma'"),
    (lambda f: f[1]["daemon"].update(image="example.com/rxdm:latest"), "would float"),
    (lambda f: f[3]["env"].update(FI_EFA_FORK_SAFE=1), "must be a string"),
    (lambda f: f[3].update(nccl_networks=[]), "NCCL prints"),
    (lambda f: f[2].update(colour="red"), "colour"),
    (lambda f: f[1].update(nccl_lib="/usr/lib/libnccl.so.2"), "not under one of its mounts"),
])
def test_fabric_data_is_checked_on_load(cat, monkeypatch, breakage, message):
    real = _load.read_yaml
    data = real("fabrics.yaml")
    breakage(data["fabrics"])
    monkeypatch.setattr(_load, "read_yaml", lambda name: data if name == "fabrics.yaml"
                        else real(name))
    networking = {m.networking.kind: m.networking for m in cat.machines.values()
                  if m.networking}
    with pytest.raises(CatalogError, match=message):
        _load.load_fabrics(networking)


def test_kube_facts(cat):
    tpu = cat.kube(cat.resolve("v5p-128"))
    assert tpu.resource == "google.com/tpu"
    assert tpu.node_selector["cloud.google.com/gke-tpu-topology"] == "4x4x4"
    assert tpu.node_selector["cloud.google.com/gke-tpu-accelerator"] == "tpu-v5p-slice"
    gpu = cat.kube(cat.resolve("a3-highgpu-8g"))
    assert gpu.node_selector["cloud.google.com/gke-accelerator"] == "nvidia-h100-80gb"
    assert (gpu.taint.key, gpu.taint.effect) == ("nvidia.com/gpu", "NoSchedule")


def test_prices_have_sources_and_cost_arithmetic(cat):
    for price in cat.prices.values():
        assert price.source and price.as_of
    shape = cat.resolve("p5.48xlarge")
    hourly = cat.hourly_usd(shape)
    if hourly is not None:
        assert cat.monthly_usd(shape, 2) == pytest.approx(hourly * 2 * 730)


def test_shapes_listing_filters(cat):
    aws = cat.shapes(cloud="aws")
    assert aws and all(s.cloud == "aws" for s in aws)
    tpus = cat.shapes(kind="tpu")
    assert tpus and all(s.kind == "tpu" for s in tpus)
    assert not cat.shapes(cloud="aws", kind="tpu")
