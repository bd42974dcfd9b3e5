"""The gate as a stack declares it (issue 26 item 1, docs/gate.md): on by default for every
accelerator pool in a cluster, off only with a reason, never on CPU pools or Cloud TPU VMs;
its re-proof interval, tiers, fabric check and quarantine cap validated like every field; the
stack's `gate:` section for the controller; the inventory and Kueue's flavors that follow."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cli._gate_words import gate_words
from fleet import validate_fleet
from fleet.catalog import load_catalog
from fleet.errors import InputError, SpecError
from fleet.gate import CONTROLLER_IMAGE, InventoryGate, gate_toleration
from fleet.inventory import Inventory, build_inventory
from fleet.labels import GATE_TAINT_KEY
from fleet.quarantine_cap import parse_cap
from fleet.routing import pool_flavor
from smoke.cluster.quarantine import Cap
from tests.fleet.conftest import only, pool, problems

GATE = {"key": GATE_TAINT_KEY, "operator": "Equal", "value": "unproven",
        "effect": "NoSchedule"}


def _fleet(spec: dict[str, Any], **gate: Any) -> Any:
    spec["pools"][0]["gate"] = gate
    return validate_fleet(spec)


def test_every_accelerator_pool_is_gated_by_default_and_cpu_and_tpu_vm_never(spec):
    spec["pools"] += [
        pool(name="l4", accelerator="g2-standard-24"),
        pool(name="v6e", accelerator="v6e 2x2", zone="us-central1-b", nodes=None),
        pool(name="p5", cluster="eks", accelerator="p5.48xlarge", zone="us-east-1a"),
        pool(name="cpu", accelerator="n2-standard-8"),
        pool(name="vm", cluster=None, runtime="tpu-vm", accelerator="v5e 2x2", nodes=None,
             zone="us-central1-a"),
    ]
    fleet = validate_fleet(spec)
    by = {p.name: p for p in fleet.pools}
    for name in ("h100", "l4", "v6e", "p5"):
        assert by[name].gated, name
        assert by[name].gate == InventoryGate(fabric=by[name].networking is not None)
    assert by["h100"].gate.fabric and by["p5"].gate.fabric  # GPUDirect-TCPX; EFA
    assert not by["l4"].gate.fabric and not by["v6e"].gate.fabric
    assert by["cpu"].gate is None and by["vm"].gate is None
    assert not by["cpu"].gated and not by["vm"].gated
    assert by["h100"].summary()["gate"] == {
        "enabled": True, "reason": None, "max_tier": 2, "fabric": True,
        "reprove_interval_s": 86_400, "max_quarantine": "10%", "mode": "enforce",
        "max_unavailable": "10%", "on_fail": "keep"}
    assert by["cpu"].summary()["gate"] is None


def test_the_declared_fields_reach_the_model(spec):
    fleet = _fleet(spec, max_tier=1, fabric="off", reprove_interval="12h", max_quarantine=2)
    gate = fleet.pools[0].gate
    assert gate == InventoryGate(max_tier=1, fabric=False, reprove_interval_s=12 * 3600,
                                 quarantine_cap="2")
    assert gate_words(gate) == "T0-T1, re-proof every 12h, quarantine at most 2"
    off = _fleet(spec, reprove_interval="off", max_quarantine="25%").pools[0].gate
    assert off.reprove_interval_s is None and off.quarantine_cap == "25%"
    assert _fleet(spec, reprove_interval="7d").pools[0].gate.reprove_interval_s == 7 * 86_400


def test_opting_out_takes_a_reason_and_shows_it(spec):
    p = only({**spec, "pools": [{**spec["pools"][0], "gate": {"enabled": False}}]},
             "pools[0] 'h100'.gate")
    assert "without a reason" in p.message and "reason:" in p.hint
    fleet = _fleet(spec, enabled=False, reason="serving fleet, proven by canaries")
    assert not fleet.pools[0].gated
    assert fleet.pools[0].gate.reason == "serving fleet, proven by canaries"
    assert gate_words(fleet.pools[0].gate) == "off (serving fleet, proven by canaries)"


@pytest.mark.parametrize("value", [False, "off"])
def test_a_bare_off_says_how_to_opt_out(spec, value):
    spec["pools"][0]["gate"] = value
    p = only(spec, "pools[0] 'h100'.gate")
    assert "reason" in p.message and "enabled: false" in p.hint


def test_a_reason_on_a_gate_that_is_on_is_refused(spec):
    spec["pools"][0]["gate"] = {"reason": "why not"}
    p = only(spec, "pools[0] 'h100'.gate")
    assert "turned off" in p.message and "enabled: false" in p.hint


@pytest.mark.parametrize(("value", "words"), [
    ("30m", "not an interval"), ("0h", "not an interval"), ("31d", "out of range"),
    ("daily", "not an interval"), ("24 h", "not an interval"), ("1000000h", "not an interval"),
])
def test_reprove_interval_is_bounded_and_explained(spec, value, words):
    spec["pools"][0]["gate"] = {"reprove_interval": value}
    p = only(spec, "pools[0] 'h100'.gate.reprove_interval")
    assert words in p.message and ("24h" in p.hint or "1h to 30d" in p.hint)


@pytest.mark.parametrize("value", ["0", "-1", "0%", "150%", "ten", "", True])
def test_max_quarantine_is_refused_as_smoke_refuses_it(spec, value):
    spec["pools"][0]["gate"] = {"max_quarantine": value}
    p = only(spec, "pools[0] 'h100'.gate.max_quarantine")
    assert p.message and p.hint


@given(st.one_of(st.text(max_size=8), st.sampled_from(["1", "3", "10%", "100%", "0.5%",
                                                       "101%", " 2 ", "1e3%", "nan%"])))
def test_one_rule_for_the_cap_smoke_and_the_gate_agree(text):
    smoke_ok = True
    try:
        Cap.parse(text)
    except InputError:
        smoke_ok = False
    assert smoke_ok == (parse_cap(text) is not None)


def test_gate_on_a_cpu_pool_or_a_tpu_vm_is_refused(spec):
    spec["pools"] += [pool(name="cpu", accelerator="n2-standard-8", gate={"max_tier": 1}),
                      pool(name="vm", cluster=None, runtime="tpu-vm", accelerator="v5e 2x2",
                           nodes=None, gate={"max_tier": 1})]
    cpu = only(spec, "pools 'cpu'.gate")  # rules name a pool without its position
    assert "never gated" in cpu.message and cpu.hint == "remove `gate`"
    vm = only(spec, "pools 'vm'.gate")
    assert "outside Kubernetes" in vm.message


def test_a_misspelt_gate_field_gets_did_you_mean(spec):
    spec["pools"][0]["gate"] = {"reprove_intreval": "12h"}
    p = only(spec, "pools[0] 'h100'.gate.reprove_intreval")
    assert "did you mean 'reprove_interval'" in p.message


def test_max_tier_is_a_per_node_tier(spec):
    spec["pools"][0]["gate"] = {"max_tier": 3}
    p = only(spec, "pools[0] 'h100'.gate.max_tier")
    assert "at most 2" in p.message


def test_the_stack_gate_section_defaults_and_bounds(spec):
    fleet = validate_fleet(spec)
    assert fleet.spec.gate.image is None and fleet.spec.gate.replicas == 2
    assert "@" in CONTROLLER_IMAGE or CONTROLLER_IMAGE.rsplit(":", 1)[1].startswith("v")
    spec["gate"] = {"image": "ghcr.io/acme/gate@sha256:" + "a" * 64, "replicas": 3}
    assert validate_fleet(spec).spec.gate.replicas == 3
    spec["gate"] = {"image": "not an image", "replicas": 0}
    found = {str(p.where): p for p in problems(spec)}
    assert "not a container image reference" in found["gate.image"].message
    assert "at least 1" in found["gate.replicas"].message
    with pytest.raises(SpecError) as err:  # `fleet validate --json` names the field in full
        validate_fleet(spec)
    fields = {r["field"]: r for r in err.value.records}
    assert fields["gate.image"]["value"] == "not an image"
    assert fields["gate.replicas"]["section"] == "gate"


def test_inventory_carries_the_gate_and_its_toleration(spec):
    spec["pools"] += [pool(name="serve", accelerator="g2-standard-24",
                           gate={"enabled": False, "reason": "canaries prove it"}),
                      pool(name="cpu", accelerator="n2-standard-8")]
    inv = build_inventory(validate_fleet(spec), "test")
    by = {p.name: p for p in inv.pools}
    assert by["h100"].gated and GATE in by["h100"].tolerations
    # routed through its owner team's Kueue queue (re-proofs go through it)
    assert by["h100"].gate == InventoryGate(fabric=True, queue="research",
                                            queue_namespace="research")
    assert not by["serve"].gated and GATE not in by["serve"].tolerations
    assert by["serve"].gate is not None and by["serve"].gate.reason == "canaries prove it"
    assert by["cpu"].gate is None and GATE not in by["cpu"].tolerations
    again = Inventory.from_dict(inv.to_dict())  # the controller reads it back from JSON
    assert again.pools == inv.pools


def test_no_kueue_flavor_tolerates_the_gate(spec):
    """Kueue adds a flavor's tolerations to every pod it admits: a team's job must never
    tolerate the gate, or it would land on unproven nodes."""
    fleet = validate_fleet(spec)
    flavor = pool_flavor(fleet.pools[0], load_catalog())
    assert gate_toleration() not in [dict(t) for t in flavor.tolerations]
    assert flavor.tolerations  # the GPU taint's toleration is still there


def test_the_gate_taint_is_not_declared_twice(spec):
    """A node holds one taint per key and effect: the stack does not repeat the gate's."""
    spec["pools"][0]["taints"] = [{"key": GATE_TAINT_KEY, "value": "mine"}]
    p = only(spec, "pools 'h100'.taints[0]")
    assert "gate's startup taint" in p.message and "remove it" in p.hint
    spec["pools"][0]["gate"] = {"enabled": False, "reason": "gated by hand"}
    assert validate_fleet(spec).pools[0].spec.taints  # without the gate, it is the stack's


@pytest.mark.parametrize(("field", "value"), [
    ("max_tier", 7), ("reprove_interval_s", 5), ("quarantine_cap", "lots")])
def test_a_malformed_gate_in_a_saved_inventory_is_refused(spec, field, value):
    """The controller reads the inventory from a file: its gate is checked at that boundary."""
    data = build_inventory(validate_fleet(spec), "test").to_dict()
    data["pools"][0]["gate"][field] = value
    with pytest.raises(InputError) as err:
        Inventory.from_dict(data)
    assert "gate." in err.value.message and err.value.exit_code == 2


def test_on_fail_max_unavailable_and_mode_reach_the_inventory(spec):
    """Issue 35: what becomes of a failed node, how many nodes a rolling re-proof takes, and
    shadow mode: declared per pool, carried to the controller through the inventory."""
    fleet = _fleet(spec, on_fail="replace", max_unavailable=2, mode="shadow")
    gate = fleet.pools[0].gate
    assert (gate.on_fail, gate.max_unavailable, gate.mode) == ("replace", "2", "shadow")
    assert fleet.pools[0].gated and not fleet.pools[0].gate_enforced  # proven, never tainted
    inv = build_inventory(fleet, "test")
    h100 = inv.pool("h100")
    assert h100.gated and not h100.gate_enforced
    assert GATE not in h100.tolerations  # a shadow pool's nodes carry no gate taint
    assert Inventory.from_dict(inv.to_dict()).pool("h100").gate == h100.gate
    assert gate_words(gate).startswith("shadow T0-T2 + fabric")


def test_the_defaults_keep_a_failed_node_and_re_prove_a_tenth_at_a_time(spec):
    gate = validate_fleet(spec).pools[0].gate
    assert (gate.on_fail, gate.max_unavailable, gate.mode) == ("keep", "10%", "enforce")
    assert gate.enforced and not gate.shadow


@pytest.mark.parametrize(("field", "value", "near"), [
    ("on_fail", "replce", "replace"), ("on_fail", "kept", "keep"),
    ("mode", "shadw", "shadow"), ("mode", "enforcing", "enforce")])
def test_on_fail_and_mode_get_did_you_mean(spec, field, value, near):
    spec["pools"][0]["gate"] = {field: value}
    p = only(spec, f"pools[0] 'h100'.gate.{field}")
    assert f"did you mean {near!r}" in p.message and p.hint == f"use {near!r}"


@pytest.mark.parametrize("value", ["0", "0%", "150%", "some", -1, True])
def test_max_unavailable_is_a_count_or_a_share(spec, value):
    spec["pools"][0]["gate"] = {"max_unavailable": value}
    p = only(spec, "pools[0] 'h100'.gate.max_unavailable")
    assert "max_unavailable" in p.hint or "count" in p.message


def test_a_shadow_gate_turned_off_is_refused(spec):
    spec["pools"][0]["gate"] = {"enabled": False, "reason": "x", "mode": "shadow"}
    p = only(spec, "pools[0] 'h100'.gate")
    assert "shadow mode is on" in p.message and "remove `mode: shadow`" in p.hint


def test_a_misspelt_on_fail_field_gets_did_you_mean(spec):
    spec["pools"][0]["gate"] = {"on_failure": "keep"}
    p = only(spec, "pools[0] 'h100'.gate.on_failure")
    assert "did you mean 'on_fail'" in p.message


def test_a_shadow_pool_declares_no_gate_taint_of_its_own(spec):
    fleet = _fleet(spec, mode="shadow")
    assert fleet.pools[0].gated and not fleet.pools[0].gate_enforced
    spec["pools"][0]["taints"] = [{"key": GATE_TAINT_KEY, "value": "mine"}]
    assert validate_fleet(spec).pools[0].spec.taints  # no gate taint of ours to clash with


@pytest.mark.parametrize(("field", "value"), [
    ("mode", "loud"), ("on_fail", "burn"), ("max_unavailable", "all")])
def test_a_malformed_lifecycle_field_in_a_saved_inventory_is_refused(spec, field, value):
    data = build_inventory(validate_fleet(spec), "test").to_dict()
    data["pools"][0]["gate"][field] = value
    with pytest.raises(InputError) as err:
        Inventory.from_dict(data)
    assert f"gate.{field}" in err.value.message and err.value.exit_code == 2


def test_an_inventory_from_before_the_lifecycle_fields_reads_with_their_defaults(spec):
    data = build_inventory(validate_fleet(spec), "test").to_dict()
    for field in ("mode", "on_fail", "max_unavailable"):
        del data["pools"][0]["gate"][field]
    gate = Inventory.from_dict(data).pools[0].gate
    assert (gate.mode, gate.on_fail, gate.max_unavailable) == ("enforce", "keep", "10%")


def test_the_gate_in_words_names_what_differs_from_the_defaults():
    assert gate_words(InventoryGate(on_fail="replace", max_unavailable="2")) == (
        "T0-T2, re-proof every 24h (2 at a time), quarantine at most 10%, failed nodes "
        "replaced")
    assert gate_words(InventoryGate()) == "T0-T2, re-proof every 24h, quarantine at most 10%"
    assert gate_words(InventoryGate(mode="shadow", reprove_interval_s=None)) == (
        "shadow T0-T2, no re-proof, reported only")
