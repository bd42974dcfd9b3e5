"""The arithmetic of every `advise` preset, worked by hand: parameters from the shape, FLOPs per
token (6 N_matmul + 12 L h s), steps, model state (16 bytes a parameter), activations
(Korthikanti et al.), and for inference the KV cache and the bytes of a decode step.

Each expected figure is written as the sum a person would do, so that a change to a formula or
to a preset shows here as a wrong sum, not as a moved number."""

from __future__ import annotations

import math

import pytest

from fleet.advise import load_workload, presets
from fleet.advise.workload import Workload

V, GIB = 128_256, 2**30

# Llama 3 8B: 32 layers, hidden 4096, MLP 14336 (SwiGLU: 3 matrices), 32 heads, 8 KV heads of
# 128: k and v are 1024 wide.
L8, H8, F8 = 32, 4096, 14336
ATTN8 = H8 * (H8 + 1024 + 1024 + H8)  # q, k, v, o = 41,943,040
MLP8 = 3 * H8 * F8  # 176,160,768
LAYER8 = ATTN8 + MLP8  # 218,103,808 multiplied weights a layer
N8 = 2 * V * H8 + L8 * (LAYER8 + 2 * H8) + H8  # embeddings and output, layers with 2 norms, norm
N8_MATMUL = L8 * LAYER8 + V * H8

# Llama 3 70B: 80 layers, hidden 8192, MLP 28672, 64 heads, 8 KV heads of 128.
L70, H70, F70 = 80, 8192, 28672
LAYER70 = H70 * (H70 + 1024 + 1024 + H70) + 3 * H70 * F70  # 855,638,016
N70 = 2 * V * H70 + L70 * (LAYER70 + 2 * H70) + H70
N70_MATMUL = L70 * LAYER70 + V * H70


def test_the_shapes_count_the_published_parameters() -> None:
    """Llama 3 8B has 8.03B parameters and 70B 70.6B (arXiv:2407.21783, the released
    configs): the counts by hand match them, and the presets count the same."""
    assert N8 == 8_030_261_248
    assert N70 == 70_553_706_496
    assert load_workload("llama3-8b-pretrain").model.total_parameters == N8  # type: ignore[union-attr]
    assert load_workload("llama3-70b-pretrain").model.total_parameters == N70  # type: ignore[union-attr]


def test_llama3_8b_pretrain() -> None:
    w = load_workload("llama3-8b-pretrain")
    t = w.training
    assert t is not None and w.devices == 256 and w.kind == "training"
    assert w.model is not None and w.model.matmul_parameters == N8_MATMUL == 7_504_658_432
    # 6 N_matmul + 12 L h s: 45,027,950,592 + 12,884,901,888. NVIDIA counts 4.74e14 model
    # FLOPs for one 8192-token sequence of Llama 3.1 8B (dgxc-benchmarking llama3.1 README):
    # the same 5.79e10 a token.
    per_token = 6 * 7_504_658_432 + 12 * 32 * 4096 * 8192
    assert per_token == 57_912_852_480
    assert w.training_flops_per_token() == per_token
    assert abs(per_token * 8192 - 4.74e14) / 4.74e14 < 0.001
    assert t.tokens_per_step == 512 * 8192 == 4_194_304
    assert w.steps == math.ceil(1.6e11 / 4_194_304) == 38_147  # 20 tokens a parameter
    assert w.training_step_flops() == per_token * 4_194_304
    assert w.state_bytes() == 16 * N8 == 128_484_179_968
    # full recomputation: 2 s h bytes a layer kept, one layer's 34 s h recomputed, and the fp32
    # logits of the loss, 4 s V
    assert w.activation_bytes() == 32 * 8192 * 4096 * 2 + 34 * 8192 * 4096 + 4 * 8192 * V
    assert w.activation_bytes() == 7_491_026_944
    assert w.gathered_layer_bytes() == 2 * 2 * LAYER8
    assert w.gradient_bytes() == 2 * N8


def test_llama3_70b_pretrain() -> None:
    w = load_workload("llama3-70b-pretrain")
    assert w.devices == 512 and w.training is not None
    per_token = 6 * N70_MATMUL + 12 * 80 * 8192 * 8192
    assert per_token == 6 * 69_501_714_432 + 64_424_509_440 == 481_434_796_032
    assert w.training_flops_per_token() == per_token
    assert w.steps == math.ceil(1.4e12 / (512 * 8192)) == 333_787  # Chinchilla's 1.4T tokens
    assert w.state_bytes() == 16 * 70_553_706_496
    assert w.activation_bytes() == 80 * 8192 * 8192 * 2 + 34 * 8192 * 8192 + 4 * 8192 * V


def test_llama3_8b_finetune() -> None:
    w = load_workload("llama3-8b-finetune")
    t = w.training
    assert t is not None and w.devices == 8 and t.checkpointing == "selective"
    assert w.training_flops_per_token() == 6 * N8_MATMUL + 12 * 32 * 4096 * 4096
    assert w.steps == math.ceil(1e9 / (128 * 4096)) == 1908
    # selective recomputation keeps 34 s h a layer
    assert w.activation_bytes() == 32 * 4096 * 4096 * 34 + 4 * 4096 * V == 20_354_957_312


def test_llama3_70b_batch_inference() -> None:
    w = load_workload("llama3-70b-batch-inference")
    i, m = w.inference, w.model
    assert i is not None and m is not None and w.kind == "inference" and w.devices == 8
    assert w.state_bytes() == 2 * N70  # bf16 weights
    kv_per_token = 2 * 80 * 1024 * 2  # keys and values, 80 layers, 1024 wide, bf16
    assert m.kv_cache_bytes_per_token() == kv_per_token == 327_680
    assert w.kv_cache_bytes() == 64 * (1024 + 256) * kv_per_token == 26_843_545_600
    context = 1024 + 256 / 2  # a decode step's mean context
    assert w.decode_step_flops() == 64 * (2 * N70_MATMUL + 4 * 80 * 8192 * context)
    assert w.decode_step_bytes() == 2 * N70 + 64 * context * kv_per_token
    assert w.prefill_flops() == 64 * 1024 * (2 * N70_MATMUL + 4 * 80 * 8192 * 1024)
    assert w.decode_collective_bytes() == 2 * 80 * 64 * 8192 * 2
    assert w.total_tokens == 1_000_000 * 256


@pytest.mark.parametrize("name", sorted(presets()))
def test_every_preset_names_its_sources_and_resolves_by_alias(name: str) -> None:
    preset = presets()[name]
    assert preset.sources and preset.description
    assert all(isinstance(s, str) and s for s in preset.sources)
    for alias in preset.aliases:
        assert load_workload(alias) is preset.workload
    assert load_workload(name.upper()) is preset.workload


def test_a_parameters_only_model_counts_6n_and_says_so() -> None:
    from fleet.advise import parse_workload

    w: Workload = parse_workload({"kind": "training", "model": {"parameters": 7e9},
                                  "sequence_length": 2048, "global_batch_sequences": 64,
                                  "steps": 10}, "test")
    assert w.training_flops_per_token() == 6 * 7e9
    assert w.activation_bytes() == 0 and w.notes and "6 N" in w.notes[0]
    assert w.state_bytes() == 16 * 7e9 and w.steps == 10
