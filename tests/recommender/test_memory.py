"""Memory per GPU: model states by regime and optimizer, sharding, LoRA/QLoRA, activations."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from recommender.estimation.activations import Kernels
from recommender.estimation.memory import (
    CUDA_CONTEXT_GIB,
    GIB,
    MemoryBreakdown,
    estimate_memory,
    usable_gib,
)
from recommender.estimation.model_states import NF4_BYTES, NF4_DOUBLE_QUANT_BYTES, lora_params
from recommender.estimation.strategies import Strategy
from recommender.gpus import get_gpu
from recommender.models import Architecture, Block
from recommender.workload import Method, Offload, Optimizer, Precision, Sharding, Workload
from tests.factories import model, workload

PLAIN = Strategy(Sharding.DDP, Offload.NONE, checkpointing=False)
CKPT = Strategy(Sharding.DDP, Offload.NONE, checkpointing=True)


def toy(**overrides: object) -> Architecture:
    """A small Llama-style model whose counts are easy to check by hand."""
    base = Architecture(
        name="toy",
        params=1_000_000_000,
        layers=10,
        hidden=1024,
        heads=16,
        kv_heads=16,
        ffn=4096,
        vocab=32000,
        tied_embeddings=False,
    )
    return replace(base, **overrides)  # type: ignore[arg-type]


def states_per_param(w: Workload, strategy: Strategy = PLAIN, gpus: int = 1) -> float:
    """Bytes of weights + gradients + optimizer per parameter of the model."""
    mem = estimate_memory(w, strategy, gpus=gpus, gpus_per_node=min(gpus, 8))
    return (mem.model_states_gib - mem.gathered_gib) * GIB / w.model.params


class TestModelStates:
    @pytest.mark.parametrize(
        ("precision", "optimizer", "expected"),
        [
            (Precision.FP32, Optimizer.ADAMW, 16),
            (Precision.FP32, Optimizer.ADAMW_8BIT, 10),
            (Precision.FP32, Optimizer.SGD_MOMENTUM, 12),
            (Precision.FP32, Optimizer.SGD, 8),
            (Precision.BF16_MIXED, Optimizer.ADAMW, 16),
            (Precision.FP16_MIXED, Optimizer.ADAMW, 16),
            (Precision.FP8_MIXED, Optimizer.ADAMW, 16),
            (Precision.BF16_MIXED, Optimizer.ADAMW_8BIT, 10),
            (Precision.BF16_MIXED, Optimizer.LION, 12),
            (Precision.BF16_MIXED, Optimizer.ADAFACTOR, 12),
            (Precision.BF16_MIXED, Optimizer.SGD, 8),
            (Precision.BF16_TRUE, Optimizer.ADAMW, 8),
            (Precision.BF16_TRUE, Optimizer.ADAMW_8BIT, 6),
            (Precision.BF16_TRUE, Optimizer.LION, 6),
            (Precision.BF16_TRUE, Optimizer.SGD, 4),
        ],
    )
    def test_bytes_per_parameter_follow_the_regime_table(
        self, precision: Precision, optimizer: Optimizer, expected: float
    ) -> None:
        """Full training costs the memory.md §1.2 bytes per parameter for each regime."""
        w = workload(model=toy(), precision=precision, optimizer=optimizer)
        assert states_per_param(w) == pytest.approx(expected)

    def test_mixed_precision_master_copy_counts_as_optimizer_state(self) -> None:
        """Mixed AdamW splits as 2 (weights) + 2 (grads) + 12 (master + m + v), ZeRO §3.1."""
        mem = estimate_memory(workload(model=toy()), PLAIN, gpus=1, gpus_per_node=1)
        params = toy().params
        assert mem.weights_gib * GIB / params == pytest.approx(2)
        assert mem.gradients_gib * GIB / params == pytest.approx(2)
        assert mem.optimizer_gib * GIB / params == pytest.approx(12)


class TestSharding:
    @pytest.mark.parametrize(
        ("sharding", "expected"),
        [
            (Sharding.DDP, 16),
            (Sharding.ZERO1, 4 + 12 / 8),
            (Sharding.ZERO2, 2 + 14 / 8),
            (Sharding.FSDP_GRAD_OP, 2 + 14 / 8),
            (Sharding.ZERO3, 16 / 8),
            (Sharding.FSDP, 16 / 8),
            (Sharding.HSDP, 16 / 8),
        ],
    )
    def test_stages_divide_what_they_partition(self, sharding: Sharding, expected: float) -> None:
        """Each stage divides by the data-parallel degree what ZeRO §5 says it partitions."""
        w = workload(model=toy())
        got = states_per_param(w, Strategy(sharding, Offload.NONE, False), gpus=8)
        assert got == pytest.approx(expected)

    def test_hybrid_shards_inside_a_node_only(self) -> None:
        """HSDP on 4 nodes of 8 keeps the per-GPU states of 8-way sharding, FSDP of 32-way."""
        w = workload(model=toy())
        hsdp = estimate_memory(
            w, Strategy(Sharding.HSDP, Offload.NONE, False), gpus=32, gpus_per_node=8
        )
        fsdp = estimate_memory(
            w, Strategy(Sharding.FSDP, Offload.NONE, False), gpus=32, gpus_per_node=8
        )
        assert hsdp.model_states_gib - hsdp.gathered_gib == pytest.approx(
            16 * toy().params / 8 / GIB
        )
        assert fsdp.model_states_gib - fsdp.gathered_gib == pytest.approx(
            16 * toy().params / 32 / GIB
        )

    def test_full_sharding_adds_the_gathered_units(self) -> None:
        """ZeRO-3/FSDP keep the current and prefetched unit unsharded, plus one unit's grads."""
        w = workload(model=toy())
        mem = estimate_memory(
            w, Strategy(Sharding.FSDP, Offload.NONE, False), gpus=8, gpus_per_node=8
        )
        assert mem.gathered_gib > 0
        zero2 = estimate_memory(
            w, Strategy(Sharding.ZERO2, Offload.NONE, False), gpus=8, gpus_per_node=8
        )
        assert zero2.gathered_gib == 0

    def test_one_gpu_full_shard_gathers_nothing(self) -> None:
        """FSDP on one rank holds everything already; no gathered term is added."""
        mem = estimate_memory(
            workload(model=toy()),
            Strategy(Sharding.FSDP, Offload.NONE, False),
            gpus=1,
            gpus_per_node=1,
        )
        assert mem.gathered_gib == 0

    def test_comms_buffers_only_with_several_ranks(self) -> None:
        """Communication buffers appear once the world size is above one."""
        w = workload(model=toy())
        one = estimate_memory(
            w, Strategy(Sharding.DDP, Offload.NONE, False), gpus=1, gpus_per_node=1
        )
        two = estimate_memory(
            w, Strategy(Sharding.DDP, Offload.NONE, False), gpus=2, gpus_per_node=2
        )
        assert two.overhead_gib - one.overhead_gib == pytest.approx(1.0)


class TestOffload:
    def test_optimizer_offload_leaves_16_bit_weights_on_the_gpu(self) -> None:
        """ZeRO-Offload keeps 2Ψ on the GPU and ~16Ψ (× DeepSpeed's 1.5 buffer) on the host."""
        w = workload(model=toy())
        mem = estimate_memory(
            w, Strategy(Sharding.ZERO2, Offload.OPTIMIZER, False), gpus=1, gpus_per_node=1
        )
        assert mem.model_states_gib * GIB == pytest.approx(2 * toy().params)
        assert mem.cpu_offload_gib * GIB == pytest.approx(16 * 1.5 * toy().params)

    def test_parameter_offload_leaves_only_gathered_units(self) -> None:
        """With parameters offloaded the GPU holds just the units being computed."""
        w = workload(model=toy())
        mem = estimate_memory(
            w, Strategy(Sharding.ZERO3, Offload.PARAMS, False), gpus=8, gpus_per_node=8
        )
        assert mem.model_states_gib == pytest.approx(mem.gathered_gib)

    def test_parameter_offload_needs_full_sharding(self) -> None:
        """A strategy cannot offload parameters it does not shard."""
        with pytest.raises(ValueError, match="ZeRO-3"):
            Strategy(Sharding.ZERO2, Offload.PARAMS, False)


class TestLora:
    def test_adapter_count_from_rank_and_targets(self) -> None:
        """r·(d_in + d_out) per adapted matrix: q,k,v,o for attention, plus gate/up/down."""
        m = toy(kv_heads=4)  # kv width 256
        attention = 8 * ((1024 + 1024) * 2 + (1024 + 256) * 2) * 10
        assert lora_params(m, 8, "attention") == attention
        assert lora_params(m, 8, "all") == attention + 8 * (1024 + 4096) * 3 * 10

    def test_frozen_base_in_bf16_and_fp32_adapters_under_amp(self) -> None:
        """LoRA under bf16 mixed: base 2 B/param, adapters 16 B each (fp32 + AdamW states)."""
        w = workload(model=toy(), method=Method.LORA)
        mem = estimate_memory(w, PLAIN, gpus=1, gpus_per_node=1)
        adapters = lora_params(toy(), 16, "all")
        assert mem.weights_gib * GIB == pytest.approx(2 * toy().params + 4 * adapters)
        assert mem.gradients_gib * GIB == pytest.approx(4 * adapters)
        assert mem.optimizer_gib * GIB == pytest.approx(8 * adapters)

    def test_pure_bf16_adapters_are_16_bit(self) -> None:
        """Under pure bf16 (torchtune, LitGPT bf16-true) adapters and their states are bf16."""
        w = workload(model=toy(), method=Method.LORA, precision=Precision.BF16_TRUE)
        mem = estimate_memory(w, PLAIN, gpus=1, gpus_per_node=1)
        assert mem.optimizer_gib * GIB == pytest.approx(4 * lora_params(toy(), 16, "all"))

    def test_fp32_lora_keeps_an_fp32_base(self) -> None:
        """In fp32 training the frozen base is fp32 (the PEFT README setting)."""
        w = workload(model=toy(), method=Method.LORA, precision=Precision.FP32)
        bf16 = workload(model=toy(), method=Method.LORA)
        gap = (
            estimate_memory(w, PLAIN, gpus=1, gpus_per_node=1).weights_gib
            - estimate_memory(bf16, PLAIN, gpus=1, gpus_per_node=1).weights_gib
        )
        assert gap * GIB == pytest.approx(2 * toy().params)

    @pytest.mark.parametrize(
        ("double_quant", "nf4"), [(True, NF4_DOUBLE_QUANT_BYTES), (False, NF4_BYTES)]
    )
    def test_qlora_quantises_blocks_and_keeps_embeddings_bf16(
        self, double_quant: bool, nf4: float
    ) -> None:
        """QLoRA: block linears in NF4 (4.127 or 4.5 bits), embeddings and head in bf16."""
        m = model("Llama 3 8B")
        w = workload(
            model=m, method=Method.QLORA, lora_targets="attention", nf4_double_quant=double_quant
        )
        mem = estimate_memory(w, PLAIN, gpus=1, gpus_per_node=1)
        adapters = lora_params(m, 16, "attention")
        base = mem.weights_gib * GIB - 4 * adapters
        block = m.hidden * m.head_dim * (2 * m.heads + 2 * m.kv_heads) + 3 * m.hidden * m.ffn
        linear = m.layers * block
        assert base == pytest.approx(linear * nf4 + (m.params - linear) * 2, rel=1e-6)

    @pytest.mark.parametrize("method", [Method.QLORA, Method.LORA])
    def test_old_bitsandbytes_keeps_each_4bit_input(self, method: Method) -> None:
        """bitsandbytes < 0.43.2 keeps the input of every 4-bit linear (PR #1270): per token
        and layer 2·(3h + f) bytes more for QLoRA, none for LoRA (no 4-bit linears)."""
        m = model("Llama 2 7B")
        w = workload(model=m, method=method, seq_len=1024, micro_batch=2)
        old = estimate_memory(
            w, PLAIN, gpus=1, gpus_per_node=1, kernels=Kernels(nf4_keeps_input=True)
        )
        new = estimate_memory(w, PLAIN, gpus=1, gpus_per_node=1)
        kept = 2 * (3 * m.hidden + m.ffn) * 1024 * 2 * m.layers if method is Method.QLORA else 0
        assert (old.activations_gib - new.activations_gib) * GIB == pytest.approx(kept, rel=1e-9)

    def test_double_quant_bits(self) -> None:
        """NF4 with double quantisation costs ≈4.127 bits, without 4.5 bits (QLoRA §3)."""
        assert pytest.approx(4.127, abs=1e-3) == NF4_DOUBLE_QUANT_BYTES * 8
        assert pytest.approx(4.5) == NF4_BYTES * 8


class TestActivations:
    def test_gpt_block_reproduces_korthikanti(self) -> None:
        """A GPT block without flash attention keeps s·b·h·(34 + 5·a·s/h) bytes per layer."""
        m = toy(block=Block.GPT, vocab=8)
        w = workload(model=m, seq_len=512, micro_batch=2)
        mem = estimate_memory(
            w, PLAIN, gpus=1, gpus_per_node=1, kernels=Kernels(flash_attention=False)
        )
        s, b, h, a = 512, 2, m.hidden, m.heads
        per_layer = s * b * h * (34 + 5 * a * s / h)
        body = mem.activations_gib * GIB - mem.logits_gib * GIB
        assert body == pytest.approx(per_layer * m.layers)

    def test_flash_attention_drops_the_quadratic_term(self) -> None:
        """The fused kernel saves exactly the 5·a·s²·b term per layer."""
        w = workload(model=toy(), seq_len=4096)
        flash = estimate_memory(w, PLAIN, gpus=1, gpus_per_node=1)
        eager = estimate_memory(
            w, PLAIN, gpus=1, gpus_per_node=1, kernels=Kernels(flash_attention=False)
        )
        gap = (eager.activations_gib - flash.activations_gib) * GIB
        assert gap == pytest.approx(5 * toy().heads * 4096**2 * toy().layers)

    def test_t5_defaults_to_materialised_attention(self) -> None:
        """T5's relative position bias keeps it off the fused kernels by default."""
        assert Kernels().flash_for(Block.T5) is False
        assert Kernels().flash_for(Block.LLAMA) is True

    def test_checkpointing_keeps_layer_inputs_and_one_layer(self) -> None:
        """Full recomputation: 2·s·b·h per layer plus one layer's full activations."""
        w = workload(model=toy(), seq_len=1024, micro_batch=1)
        full = estimate_memory(w, PLAIN, gpus=1, gpus_per_node=1)
        ck = estimate_memory(w, CKPT, gpus=1, gpus_per_node=1)
        one_layer = (full.activations_gib - full.logits_gib) / toy().layers
        expected = 2 * 1024 * 1024 * toy().layers / GIB + one_layer
        assert ck.activations_gib - ck.logits_gib == pytest.approx(expected)

    def test_logits_are_ten_bytes_per_entry(self) -> None:
        """bf16 logits + fp32 upcast + fp32 gradient (plus the head's input) per token."""
        w = workload(model=toy(), seq_len=1000, micro_batch=1)
        mem = estimate_memory(w, PLAIN, gpus=1, gpus_per_node=1)
        assert mem.logits_gib * GIB == pytest.approx(1000 * (32000 * 10 + 2 * 1024))

    def test_chunked_loss_removes_most_of_the_fp32_logits(self) -> None:
        """torchtune's chunked cross-entropy keeps the bf16 logits and one fp32 chunk."""
        w = workload(model=toy(), seq_len=1000)
        chunked = estimate_memory(
            w, PLAIN, gpus=1, gpus_per_node=1, kernels=Kernels(chunked_loss=True)
        )
        assert chunked.logits_gib * GIB == pytest.approx(1000 * (32000 * 3 + 2 * 1024))

    def test_grouped_query_attention_shrinks_kv_activations(self) -> None:
        """Fewer KV heads mean smaller saved K and V."""
        mha = estimate_memory(workload(model=toy()), PLAIN, gpus=1, gpus_per_node=1)
        gqa = estimate_memory(workload(model=toy(kv_heads=4)), PLAIN, gpus=1, gpus_per_node=1)
        assert gqa.activations_gib < mha.activations_gib

    def test_fp32_training_doubles_activations(self) -> None:
        """fp32 keeps 4-byte activations."""
        m = toy(block=Block.LLAMA)
        b16 = estimate_memory(workload(model=m), PLAIN, gpus=1, gpus_per_node=1)
        f32 = estimate_memory(
            workload(model=m, precision=Precision.FP32), PLAIN, gpus=1, gpus_per_node=1
        )
        body16 = b16.activations_gib - b16.logits_gib
        body32 = f32.activations_gib - f32.logits_gib
        assert body32 == pytest.approx(2 * body16)

    @given(
        seq=st.integers(min_value=1, max_value=32768),
        batch=st.integers(min_value=1, max_value=64),
    )
    def test_activations_grow_with_tokens_and_checkpointing_never_costs_more(
        self, seq: int, batch: int
    ) -> None:
        """More tokens never need less memory; checkpointing never needs more."""
        w = workload(model=toy(), seq_len=seq, micro_batch=batch)
        bigger = replace(w, micro_batch=batch + 1)
        a = estimate_memory(w, PLAIN, gpus=1, gpus_per_node=1)
        assert estimate_memory(bigger, PLAIN, gpus=1, gpus_per_node=1).total_gib > a.total_gib
        assert estimate_memory(w, CKPT, gpus=1, gpus_per_node=1).total_gib <= a.total_gib


class TestBreakdown:
    def test_total_is_the_sum_of_its_parts(self) -> None:
        """total_gib adds weights, gradients, optimizer, activations and overhead."""
        mem = MemoryBreakdown(1.0, 2.0, 3.0, 4.0, 5.0)
        assert mem.total_gib == 15.0
        assert mem.model_states_gib == 6.0

    def test_pytorch_view_excludes_the_cuda_context(self) -> None:
        """What torch's allocator reports is the total less the CUDA context."""
        mem = estimate_memory(workload(model=toy()), PLAIN, gpus=1, gpus_per_node=1)
        assert mem.total_gib - mem.pytorch_gib == pytest.approx(CUDA_CONTEXT_GIB)


class TestUsable:
    @pytest.mark.parametrize(
        ("gpu_id", "expected"),
        [
            ("A100-SXM-80GB", 79.15),  # PyTorch: "total capacity of 79.15 GiB" (LitGPT oom.md)
            ("A100-SXM-40GB", 39.6),
            ("H100-SXM-80GB", 79.15),
            ("RTX-4090", 23.7),  # no ECC
            ("L4", 22.3),  # ECC reserves 1/16
            ("T4", 14.8),
        ],
    )
    def test_usable_capacity_below_the_label(self, gpu_id: str, expected: float) -> None:
        """Usable GiB is the label read as GiB, less driver reserve and (GDDR) ECC."""
        assert usable_gib(get_gpu(gpu_id)) == pytest.approx(expected, abs=0.1)
