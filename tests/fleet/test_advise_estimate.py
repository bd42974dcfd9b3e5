"""`fleet.advise`: the roofline, the devices that hold a model, sizing in machines and TPU
slices, costs at list price or a pool's rate, the ranking, and the switch from datasheet to
measured figures when the smoke history has runs (a fake history here: fleet never imports
smoke)."""

from __future__ import annotations

import copy
import math
from typing import Any

import pytest

from fleet.advise import (
    Estimate,
    Excluded,
    MeasuredFigures,
    Offer,
    advise,
    catalog_offers,
    effective,
    estimate,
    load_workload,
    parse_workload,
    pool_offers,
)
from fleet.advise.figures import advise_data
from fleet.catalog import load_catalog
from fleet.rules.validate import validate_fleet
from tests.fleet.conftest import BASE, pool

GIB = 2**30
cat = load_catalog()


def _offer(words: str) -> Offer:
    shape = cat.resolve(words)
    return Offer(shape.machine_type if shape.tpu is None else f"TPU {shape.tpu.key}", shape)


def _est(workload: str, words: str, reader: Any = None) -> Estimate:
    result = estimate(load_workload(workload), _offer(words), cat, reader)
    assert isinstance(result, Estimate), result
    return result


def test_an_8b_pretrain_on_v6e_by_hand() -> None:
    """256 chips of a 16x16 v6e slice at 918 x 0.60 TFLOP/s; the run's cost is its hours
    times the slice's list price."""
    e = _est("llama3-8b-pretrain", "v6e")
    flops = 57_912_852_480 * 4_194_304
    compute = flops / (256 * 918 * 0.60 * 1e12)
    assert e.chips == 256 and e.placement.topology == "16x16" and e.placement.units == 1
    assert e.step.compute_s == pytest.approx(compute)
    assert e.bound == "compute" and e.step.step_s == pytest.approx(compute)
    assert e.run_s == pytest.approx(38_147 * compute)
    slice_usd = cat.hourly_usd(cat.tpu_slice("v6e", "16x16"))
    assert slice_usd and e.usd_per_run == pytest.approx(slice_usd * e.run_s / 3600)
    usable = 32 * GIB * 0.9
    assert e.chips_to_fit == math.ceil(16 * 8_030_261_248 / (usable - 7_491_026_944
                                                                - 4 * 218_103_808)) == 6
    # all-reduce of bf16 gradients over ICI at 400 GB/s x 0.8
    assert e.step.network_s == pytest.approx(2 * 255 / 256 * 2 * 8_030_261_248 / 320e9)
    assert e.figures.origin == "datasheet" and e.figures.words() == "datasheet"


def test_an_h100_node_network_bound_across_nodes() -> None:
    """Across A3 High nodes the gradient all-reduce runs at the GPUDirect-TCPX network's 800
    Gbit/s x 0.8 per node, not at NVLink's 450 GB/s."""
    e = _est("llama3-8b-pretrain", "a3-highgpu-8g")
    assert e.collective is not None and "tcpx" in e.collective.hop
    assert e.collective.busbw_gbps == pytest.approx(800 / 8 * 0.8)
    assert e.placement.units == 32 and e.placement.nodes == 32
    inside = _est("llama3-8b-finetune", "a3-highgpu-8g")  # 8 GPUs: one node, NVLink
    assert inside.collective is not None and inside.collective.hop == "NVLink"
    assert inside.collective.busbw_gbps == pytest.approx(450 * 0.8)


def test_the_bound_is_named_for_each_kind_of_limit() -> None:
    """Compute-bound training; memory-bound decoding (a small batch reads every weight per
    token); network-bound when a model's gradients cross a thin network."""
    assert _est("llama3-8b-pretrain", "p5.48xlarge").bound == "compute"
    small = parse_workload({
        "kind": "inference", "model": {"layers": 32, "hidden_size": 4096,
                                       "attention_heads": 32, "vocab_size": 32000},
        "prompt_tokens": 16, "output_tokens": 512, "batch_sequences": 1, "requests": 10},
        "decode")
    e = estimate(small, _offer("p5.48xlarge"), cat)
    assert isinstance(e, Estimate) and e.bound == "memory" and e.step.bound == "memory"
    thin = _est("llama3-70b-pretrain", "a2-highgpu-1g")  # one A100 per machine, 12.5 Gbit/s
    assert thin.bound == "network" and thin.collective is not None
    assert "no GPU fabric" in thin.collective.hop


def test_switches_from_datasheet_to_measured_when_the_history_has_runs() -> None:
    data = advise_data().efficiency["gpu"]
    acc = cat.accelerator("h100-80gb")
    before = effective(acc)
    assert before is not None and before.origin == "datasheet"
    assert before.tflops == pytest.approx(989 * data.mfu)

    def history(key: str) -> MeasuredFigures | None:
        return MeasuredFigures(700.0, 2900.0, 7, 380.0) if key == "h100-80gb" else None

    after = effective(acc, history)
    assert after is not None and after.origin == "measured" and after.runs == 7
    assert after.words() == "measured (7 runs)"
    assert after.tflops == pytest.approx(700 * data.mfu / data.matmul_of_peak)
    assert after.gbps == 2900 and after.node_busbw_gbps == 380
    datasheet = _est("llama3-8b-finetune", "p5.48xlarge")
    measured = _est("llama3-8b-finetune", "p5.48xlarge", history)
    assert measured.figures.origin == "measured" and measured.collective is not None
    assert measured.collective.origin == "measured" and measured.collective.busbw_gbps == 380
    assert measured.step.compute_s == pytest.approx(
        datasheet.step.compute_s * before.tflops / after.tflops)
    other = _est("llama3-8b-finetune", "v6e", history)  # no runs of v6e: datasheet still
    assert other.figures.origin == "datasheet"


def test_a_model_whose_activations_never_fit_is_excluded_with_the_reason() -> None:
    """A 70B model's 8192-token micro-batch does not fit a 16 GiB v5e chip at any device
    count (model state shards, activations do not)."""
    result = estimate(load_workload("llama3-70b-pretrain"), _offer("v5e"), cat)
    assert isinstance(result, Excluded)
    assert "activations" in result.reason and "14.4 GiB" in result.reason
    assert "sequence_length" in result.fix
    selective = load_workload("llama3-8b-finetune")  # selective: the fix names full
    on_l4 = parse_workload({**_profile("llama3-8b-finetune"), "sequence_length": 16384},
                           "long")
    assert selective.training is not None
    result = estimate(on_l4, _offer("g2-standard-12"), cat)
    assert isinstance(result, Excluded) and "activation_checkpointing: full" in result.fix


def _profile(name: str) -> dict[str, Any]:
    from fleet.catalog import read_yaml

    raw = next(p for p in read_yaml("workloads.yaml")["presets"] if p["name"] == name)
    return copy.deepcopy(dict(raw["workload"]))


def _fleet(*pools: dict[str, Any]) -> Any:
    spec = copy.deepcopy(BASE)
    spec["pools"] = list(pools)
    return validate_fleet(spec, source="test")


def test_a_pool_too_small_for_the_model_is_excluded_and_a_big_one_ranked() -> None:
    fleet = _fleet(pool(name="small", nodes=1),
                   pool(name="big", nodes=4),
                   pool(name="cpu", accelerator="n2-standard-8", nodes=1))
    offers = pool_offers(list(fleet.pools))
    assert [o.label for o in offers] == ["small", "big"]  # a CPU pool is no candidate
    result = advise(load_workload("llama3-70b-pretrain"), offers, cat)
    assert [x.label for x in result.excluded] == ["small"]
    reason = result.excluded[0].reason
    assert "needs at least 20" in reason and "has at most 8" in reason
    big = result.estimates[0]
    assert big.offer.label == "big" and big.chips == 32
    assert any("fewer than the 512 wanted" in n for n in big.notes)
    # the pool's own rate (a3-highgpu-8g list price per node) times its 4 nodes
    list_usd = cat.hourly_usd(cat.resolve("a3-highgpu-8g"))
    assert list_usd and big.placement.usd_per_hour == pytest.approx(4 * list_usd)
    assert big.placement.price_source.startswith("list")


def test_a_stack_rate_prices_the_pool() -> None:
    spec_pool = pool(name="tpu", accelerator="v5p", topology="2x2x2", nodes=None)
    fleet = validate_fleet({**copy.deepcopy(BASE), "pools": [spec_pool],
                            "prices": [{"tpu": "v5p", "usd_per_chip_hour": 1.0}]}, source="t")
    result = advise(load_workload("llama3-8b-finetune"), pool_offers(list(fleet.pools)), cat)
    e = result.estimates[0]
    assert e.chips == 8 and e.placement.usd_per_hour == pytest.approx(8.0)
    assert e.placement.price_source.startswith("stack rate")


def test_ranked_by_cost_unpriced_last_never_zero() -> None:
    result = advise(load_workload("llama3-8b-pretrain"), catalog_offers(cat), cat)
    costs = [e.usd_per_run for e in result.estimates]
    priced = [c for c in costs if c is not None]
    assert priced == sorted(priced) and all(c > 0 for c in priced)
    first_unpriced = costs.index(None)
    assert all(c is None for c in costs[first_unpriced:])
    kinds = {e.placement.shape.kind for e in result.estimates}
    assert kinds == {"gpu", "tpu"}
    # no peak figures (T4 has no bf16; the RTX PRO 6000's are not confirmed)
    assert {x.accelerator for x in result.excluded} == {"a10g", "t4", "rtx-pro-6000"}


def test_tpu_slices_grow_to_a_multislice_past_the_largest() -> None:
    from fleet.advise.offers import place

    offer = _offer("v6e")
    assert place(cat, offer, 8).shape.topology_str == "2x4"
    assert place(cat, offer, 9).shape.chips == 16
    many = place(cat, offer, 600)
    assert many.units == 3 and many.shape.chips == 256 and many.chips == 768
    v5e = estimate(parse_workload({**_profile("llama3-8b-pretrain"), "devices": 512},
                                  "two slices"), _offer("v5e"), cat)
    assert isinstance(v5e, Estimate) and v5e.placement.units == 2
    assert v5e.collective is not None and "DCN" in v5e.collective.hop


def test_inference_replicas_hold_weights_and_kv_cache() -> None:
    e = _est("llama3-70b-batch-inference", "p5.48xlarge")
    # 141.1 GB of weights and 26.8 GB of KV cache need 3 H100s; replicas are powers of two
    assert e.chips_to_fit == 4 and e.replicas == 2 and e.chips == 8
    assert e.prefill is not None and e.collective is not None
    w = load_workload("llama3-70b-batch-inference")
    per_batch = e.prefill.step_s + 256 * e.step.step_s
    assert e.run_s == pytest.approx(1_000_000 / (64 * 2) * per_batch)
    assert e.tokens_per_s_per_chip == pytest.approx(w.total_tokens / e.run_s / 8)
