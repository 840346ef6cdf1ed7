"""Time of one training micro-step, built from the workload and the layout.

A micro-step on each GPU is bounded by three things that run concurrently: the matmul
FLOPs at an achievable fraction of the dense peak, reading the weights from HBM (the bound
at small batches, e.g. LoRA at micro-batch 1) and the sharding/offload traffic over the
actual links. The slower of compute and traffic sets the pace and a share of the faster
one stays exposed (collectives steal SMs and memory bandwidth; the first gather and the
last reduce-scatter overlap nothing). QLoRA adds its NF4 dequantisation, the optimizer step
is amortised over the micro-steps of one global batch, and large clusters lose time to
failures (goodput). Every constant names its source; "ours" marks a judgement.

Calibrated on tokens/s of published runs (``bench/time_calibration.py``,
``tests/recommender/data/time_calibration.csv``); hardware FLOPs (with recompute) are
divided by HFU-style efficiencies, so recomputation is counted exactly once.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from enum import StrEnum

from recommender import finetune_speed
from recommender.gpus import GpuSpec, IntraNode
from recommender.models import Architecture
from recommender.offers import Fabric
from recommender.parallel_time import bubble_share, split_traffic
from recommender.posttrain import extra_flops_per_param
from recommender.strategies import Strategy
from recommender.workload import Method, Offload, Precision, Sharding, Workload

__all__ = [
    "Generation",
    "StepTime",
    "compute_efficiency",
    "dense_tflops",
    "fp8_speedup",
    "generation",
    "goodput",
    "link_gbs",
    "step_time",
]


class Generation(StrEnum):
    """Accelerator family, inferred from the spec's id (it sets the achievable peak)."""

    BLACKWELL = "blackwell"
    HOPPER = "hopper"
    AMPERE = "ampere"  # data-centre A100/A800
    AMPERE_PRO = "ampere-pro"  # A10/A10G/A40/RTX A6000/RTX 3090
    ADA = "ada"
    VOLTA = "volta"
    TURING = "turing"
    PASCAL = "pascal"
    CDNA = "cdna"  # AMD Instinct
    GAUDI = "gaudi"


_GEN_PREFIXES: tuple[tuple[str, Generation], ...] = (
    ("GB2", Generation.BLACKWELL),
    ("B2", Generation.BLACKWELL),
    ("B3", Generation.BLACKWELL),
    ("H", Generation.HOPPER),
    ("GH", Generation.HOPPER),
    ("A100", Generation.AMPERE),
    ("A800", Generation.AMPERE),
    ("L4", Generation.ADA),
    ("RTX-4", Generation.ADA),
    ("RTX-6000-ADA", Generation.ADA),
    ("A", Generation.AMPERE_PRO),
    ("RTX", Generation.AMPERE_PRO),
    ("V100", Generation.VOLTA),
    ("T4", Generation.TURING),
    ("P", Generation.PASCAL),
    ("MI", Generation.CDNA),
    ("GAUDI", Generation.GAUDI),
)


def generation(gpu: GpuSpec) -> Generation:
    """The family of ``gpu`` from its canonical id (unknown parts count as Ampere-class)."""
    gid = gpu.id.upper()
    for prefix, gen in _GEN_PREFIXES:
        if gid.startswith(prefix):
            return gen
    return Generation.AMPERE_PRO


# ------------------------------------------------------------------ compute

# Asymptotic share of the dense bf16 peak that large matmuls reach in training (hardware
# FLOPs incl. recompute, causal flash attention), fitted on measured tokens/s:
_PEAK_SHARE = {
    # llm-foundry A100 HFU 0.65-0.75 for MPT-7B..70B (benchmarking README) → fit 0.80·h/(h+h0)
    Generation.AMPERE: 0.80,
    # llm-foundry H100 bf16 HFU 0.46-0.58 (7B-70B), torchtitan 8B, NeMo/Llama 3 → fit
    Generation.HOPPER: 0.57,
    # no public training table yet; taken at about Hopper's share (ours, a judgement call)
    Generation.BLACKWELL: 0.58,
    # torchtune RTX 4090 LoRA 8B ~0.5 of the 165 TFLOP/s dense rate (README) (ours: 0.55)
    Generation.ADA: 0.55,
    # workstation/inference Ampere: less HBM bandwidth per FLOP than A100 (ours)
    Generation.AMPERE_PRO: 0.60,
    # Megatron-LM 8.3B on 512 V100: 39 % of peak end to end (Shoeybi et al. 2019 §5.1)
    Generation.VOLTA: 0.50,
    Generation.TURING: 0.35,  # T4: 70 W power cap throttles the tensor cores (ours)
    Generation.PASCAL: 0.45,  # P100 fp16 SIMT, no tensor cores (ours)
    # MI300X training reports sit well below Hopper's share of peak (ours, conservative)
    Generation.CDNA: 0.42,
    Generation.GAUDI: 0.50,  # ours
}
# Matmul efficiency grows with the hidden size h as h/(h + H0): llm-foundry HFU on A100 is
# ~0.42 at h=768, ~0.56 at h=2048, ~0.70 at h≥4096 (benchmarking README, fitted)
HIDDEN_KNEE = 640
# FP8 linears gain more the wider the GEMMs, as the casts and scales cost per element while
# the GEMM grows with h: 1 + G·h/(h + K) through three published end-to-end gains, torchtitan
# Llama 3.1 8B (h=4096) on 8×H100 6667 → 8532 tok/s/GPU, ×1.28
# (benchmarks/llama3_h100_202412_torchtitan.md); Llama 3 70B (h=8192) on 128 H100 ×1.50, 80 %
# of it from compute, ×1.40 (PyTorch dev-discuss "Enabling float8 all-gather in FSDP2", 2024);
# 405B (h=16384) on 512 GPUs "up to 1.5x" (pytorch/ao torchao/float8 README). GPT-2 124M
# (h=768) gains ~7 % (karpathy/llm.c fp8 note), which the fit gives (×1.08).
FP8_GAIN = 0.68
FP8_KNEE = 5800
# Flash attention runs at about half the rate of the weight GEMMs: FlashAttention-2 reaches
# 50-73 % of A100 peak forward and less backward (Dao 2023, §4.1) against ~80 % for GEMMs;
# fitted on llm-foundry rows at seq 8192 vs 2048
ATTENTION_RELATIVE_RATE = 0.5
_FP8_GENERATIONS = frozenset({Generation.HOPPER, Generation.ADA, Generation.BLACKWELL})


def fp8_speedup(hidden: int) -> float:
    """End-to-end speed-up of FP8 linears over bf16, on FP8 tensor cores, at width ``hidden``."""
    return 1.0 + FP8_GAIN * hidden / (hidden + FP8_KNEE)


def compute_efficiency(gpu: GpuSpec, hidden: int) -> float:
    """Achievable share of the dense (bf16/fp16/fp32) peak for matmuls of width ``hidden``."""
    return _PEAK_SHARE[generation(gpu)] * hidden / (hidden + HIDDEN_KNEE)


# ------------------------------------------------------------------ memory and links

# HBM reaches ~80-90 % of its nominal bandwidth in streaming kernels (STREAM-like
# measurements on A100/H100, e.g. NVIDIA's babelstream numbers); 0.8 (ours)
HBM_EFFICIENCY = 0.8
# bitsandbytes NF4 dequantisation costs as much time as streaming ~8 B per weight and pass
# (LitGPT resource tables, Llama 2 7B on A100-40GB: QLoRA 3.68 vs LoRA 2.36 min/1k iters)
DEQUANT_BYTES_PER_PARAM = 8.0
# NCCL ring bus bandwidth reaches ~80 % of the NVLink per-direction rate (nccl-tests on
# DGX A100: ~230-240 GB/s of 300)
NVLINK_EFFICIENCY = 0.8
# PCIe Gen4 x16 moves ~22-25 GB/s per direction; NCCL without peer-to-peer bounces through
# host memory (ours: 16 GB/s bus bandwidth for PCIe-only and bridge-paired cards)
PCIE_GBS = 16.0
# Host↔GPU copies for offload: pinned PCIe Gen4 x16 ~24 GB/s measured (ours: 20)
HOST_GBS = 20.0
# Per-GPU NIC: DGX H100 8×400 Gb/s NDR, DGX A100 8×200 Gb/s HDR (NVIDIA DGX datasheets);
# AWS p5 3200 Gbps/8 GPUs, p4d 400 Gbps/8 GPUs (EC2 instance pages); ~80 % achieved (ours)
_NIC_GBITS_NEW, _NIC_GBITS_OLD, _EFA_GBITS_OLD = 400.0, 200.0, 50.0
NET_EFFICIENCY = 0.8
# Plain TCP Ethernet between nodes: ~100 Gb/s per node shared by its GPUs (ours)
ETHERNET_NODE_GBITS = 100.0
# Share of the shorter of compute and communication that stays exposed (first gather,
# last reduce-scatter, SM contention); fitted on llm-foundry rows with small micro-batches
# (13B on 8×H100 at 2×2048 tokens: HFU 0.40 vs 0.51-0.57 with larger batches)
EXPOSED_SHARE = 0.35


def link_gbs(
    gpu: GpuSpec,
    *,
    gpus_per_node: int,
    nodes: int,
    link: IntraNode,
    fabric: Fabric,
    fabric_gbps: float | None = None,
) -> tuple[float, float]:
    """Achievable ring bandwidth per GPU, GB/s per direction: inside a node, and for a ring
    that spans the nodes. With one NIC per GPU (rail-optimised), a node receives what it
    lacks through all its NICs at once, so a spanning ring runs at the slower of the GPU's
    own link and the node's aggregate NIC rate: the instance's stated rate (``fabric_gbps``,
    Gbit/s per node, as the feeds give it) or else a typical one for the fabric kind."""
    if link is IntraNode.NVLINK and gpu.interconnect_gbps:
        intra = gpu.interconnect_gbps / 2 * NVLINK_EFFICIENCY
    else:
        intra = PCIE_GBS
    if gpus_per_node <= 1:
        intra = math.inf
    if nodes <= 1:
        return intra, intra
    new = generation(gpu) in (Generation.HOPPER, Generation.BLACKWELL)
    if fabric_gbps:
        node_gbits = fabric_gbps
    elif fabric in (Fabric.INFINIBAND, Fabric.ROCE):
        node_gbits = (_NIC_GBITS_NEW if new else _NIC_GBITS_OLD) * gpus_per_node
    elif fabric is Fabric.EFA:
        node_gbits = (_NIC_GBITS_NEW if new else _EFA_GBITS_OLD) * gpus_per_node
    else:
        node_gbits = ETHERNET_NODE_GBITS
    return intra, min(intra, node_gbits / 8 * NET_EFFICIENCY)


# ------------------------------------------------------------------ optimizer and goodput

# AdamW step in fp32 reads param, grad, m, v and writes param, m, v and a 16-bit copy:
# ~30 B per parameter of HBM traffic (ZeRO §3 state sizes; ours for the count)
ADAM_BYTES_PER_PARAM = 30.0
# CPU-Adam updates ~1-2 B parameters/s on a two-socket host (ZeRO-Offload, Ren et al. 2021,
# §4.1: 5-7× PyTorch's CPU Adam); 1.5e9 per node (ours within that range)
CPU_ADAM_PARAMS_PER_S = 1.5e9
# Default global batch when the workload gives none: pretraining runs use ~1-4M tokens
# (Llama 2: 4M; GPT-3 1.3B: 1M), fine-tunes ~128K (NeMo SFT/LoRA GBS 32 × 4096)
PRETRAIN_BATCH_TOKENS = 1_048_576
FINETUNE_BATCH_TOKENS = 131_072
# Llama 3 paper §3.3.4: 466 interruptions in 54 days on 16,384 H100s, >90 % effective
# training time → 2.2e-5 interruptions per GPU-hour, each losing ~0.3 h (restart + lost work)
FAILURES_PER_GPU_HOUR = 466 / (54 * 24 * 16_384)
HOURS_LOST_PER_FAILURE = 0.3


# A whole run also saves checkpoints, evaluates, waits on data and restarts: MPT-7B took
# 9.5 days on 440 A100-40GB for 1T tokens (MosaicML blog, 2023) = 2,770 tok/s/GPU against
# 3,620-3,680 in llm-foundry's steady-state table (0.76); Llama 3.1 405B's model card
# (30.84M GPU-h, 15.6T tokens) against the paper's 400-430 TFLOP/s (0.82-0.88) → 0.8
RUN_EFFICIENCY = 0.8


def goodput(gpus: int, *, end_to_end: bool = True) -> float:
    """Share of wall-clock time that trains at the steady rate: after checkpoints,
    evaluation and data stalls (``end_to_end``), and hardware failures and restarts."""
    failures = 1.0 / (1.0 + gpus * FAILURES_PER_GPU_HOUR * HOURS_LOST_PER_FAILURE)
    return failures * RUN_EFFICIENCY if end_to_end else failures


# ------------------------------------------------------------------ the step


@dataclass(frozen=True, slots=True)
class StepTime:
    """One micro-step of the whole layout; times are seconds per GPU (they run in step)."""

    tokens: float  # tokens the layout trains per micro-step
    compute_s: float
    weights_s: float  # reading the weights from HBM
    dequant_s: float
    comm_s: float  # collectives and offload copies that can overlap compute
    serial_s: float  # amortised optimizer step and CPU work that overlap nothing
    goodput: float
    split_s: float = 0.0  # tensor/expert-parallel collectives on the critical path
    bubble_s: float = 0.0  # pipeline bubble, amortised per micro-step
    posttrain_scale: float = 1.0  # GPUs set aside for rollouts (recommender.finetune_speed)
    posttrain_s: float = 0.0  # rollouts, the CPU's pace (recommender.finetune_speed)

    @property
    def busy_s(self) -> float:
        """Compute/memory bound and traffic: the slower sets the pace, part of the other
        stays exposed; tensor-parallel collectives and the pipeline bubble add to it."""
        work = max(self.compute_s, self.weights_s) + self.dequant_s
        overlapped = max(work, self.comm_s) + EXPOSED_SHARE * min(work, self.comm_s)
        return overlapped + self.split_s + self.bubble_s

    @property
    def seconds(self) -> float:
        return self._step_s / self.goodput

    @property
    def _step_s(self) -> float:
        return self.busy_s * self.posttrain_scale + self.serial_s + self.posttrain_s

    @property
    def tokens_per_second(self) -> float:
        """End to end: what a whole run averages."""
        return self.tokens / self.seconds

    @property
    def steady_tokens_per_second(self) -> float:
        """Between checkpoints and evaluations: what throughput benchmarks report."""
        return self.tokens * self.goodput / RUN_EFFICIENCY / self._step_s


_ADAPTERS = (Method.LORA, Method.QLORA)
_FULL_SHARD = (Sharding.FSDP, Sharding.ZERO3)


def hw_flops_per_token(workload: Workload, checkpointing: bool) -> tuple[float, float]:
    """Executed FLOPs per token (recompute included): the weight matmuls, and attention."""
    m = workload.model
    n = m.active_params if m.tied_embeddings else m.active_params - m.vocab * m.hidden
    weights = (4.0 if workload.method in _ADAPTERS else 6.0) + (2.0 if checkpointing else 0.0)
    weights += extra_flops_per_param(workload)  # post-training: reference, reward, generation
    # causal attention with flash kernels: half of PaLM's 12·L·h·s (App. B)
    attention = 6.0 * m.layers * m.hidden * workload.seq_len
    if checkpointing:
        attention *= 4 / 3
    return weights * n, attention


def _block_linear_params(m: Architecture) -> float:
    """Weights NF4 quantises: all block linears (embeddings and the head stay 16-bit)."""
    return float(max(m.params - m.embedding_params, 0))


def dense_tflops(gpu: GpuSpec, precision: Precision) -> float:
    """The dense 16- or 32-bit peak TFLOP/s the precision's matmuls run at (FP8 is a speed-up
    on top, or its own peak: :func:`recommender.throughput.peak_tflops`). bf16 falls back to
    the fp16 rate on V100/T4/P100, which have no bf16 (memory.md §11); fp32 runs at the fp32
    rate because PyTorch keeps TF32 matmuls off by default (allow_tf32 = False since 1.12)."""
    half = gpu.bf16_tflops if gpu.supports_bf16 and gpu.bf16_tflops else gpu.fp16_tflops
    if precision is Precision.FP32:
        rate = gpu.fp32_tflops or gpu.tf32_tflops
    elif precision is Precision.FP16_MIXED:
        rate = gpu.fp16_tflops or half
    else:
        rate = half
    return float(rate or half or gpu.fp32_tflops or 1.0)


def step_time(
    workload: Workload,
    gpu: GpuSpec,
    strategy: Strategy,
    *,
    gpus: int,
    nodes: int,
    link: IntraNode,
    fabric: Fabric,
    fabric_gbps: float | None = None,
    global_batch_tokens: float | None = None,
) -> StepTime:
    """The micro-step of ``workload`` on ``gpus`` × ``gpu`` laid out as ``strategy``."""
    m = workload.model
    method, precision = workload.method, workload.precision
    ckpt = strategy.checkpointing
    per_gpu_tokens = float(workload.micro_batch * workload.seq_len)
    gpn = max(gpus // max(nodes, 1), 1)
    # Model parallelism: a replica of tp·pp·cp GPUs shares each micro-batch's work and the
    # weights (tp·pp); data parallelism runs over dp = gpus/replica (and cp for sharding).
    par = strategy.parallel
    replica, mp = par.replica, par.tp * par.pp
    dp = max(gpus // replica, 1)

    # compute: hardware FLOPs at the achievable share of the dense peak
    gen = generation(gpu)
    peak = dense_tflops(gpu, precision) * 1e12
    if precision is Precision.FP8_MIXED and gpu.supports_fp8 and gen in _FP8_GENERATIONS:
        peak *= fp8_speedup(m.hidden)
    dense, attention = hw_flops_per_token(workload, ckpt)
    flops = (dense + attention / ATTENTION_RELATIVE_RATE) * per_gpu_tokens
    compute_s = flops / (peak * compute_efficiency(gpu, m.hidden)) / replica

    # HBM: every pass (forward, recompute, backward) reads all the weights it multiplies
    hbm = gpu.mem_bandwidth_tbps * 1e12 * HBM_EFFICIENCY
    passes = 3.0 if ckpt else 2.0
    w_bytes = 4.0 if precision is Precision.FP32 else 2.0
    n_active = float(m.active_params)
    frozen_q = _block_linear_params(m) * n_active / m.params if method is Method.QLORA else 0.0
    stored = (n_active - frozen_q) * w_bytes + frozen_q * 0.5
    weights_s = passes * stored / hbm / mp
    dequant_s = passes * frozen_q * DEQUANT_BYTES_PER_PARAM / hbm / mp

    # traffic per micro-step over the slowest link, bytes × (N-1)/N
    intra_gbs, span_gbs = link_gbs(
        gpu, gpus_per_node=gpn, nodes=nodes, link=link, fabric=fabric, fabric_gbps=fabric_gbps
    )
    intra_bw, span_bw = intra_gbs * 1e9, span_gbs * 1e9
    params = float(m.params)
    trained = params if method.trains_all_weights else params * 0.01  # adapters: ~1 % (ours)
    grad_bytes = 4.0 if precision is Precision.FP32 else 2.0
    w_store = (params - _block_linear_params(m)) * w_bytes + _block_linear_params(m) * (
        0.5 if method is Method.QLORA else w_bytes
    )
    batch = global_batch_tokens or (
        PRETRAIN_BATCH_TOKENS if method is Method.PRETRAIN else FINETUNE_BATCH_TOKENS
    )
    accum = max(batch / (per_gpu_tokens * gpus / replica), 1.0)
    sharding = strategy.sharding
    comm_s = split_s = bubble_s = 0.0
    ranks = gpus  # the data-parallel group (FSDP shards over dp·cp)
    if not par.trivial:
        traffic = split_traffic(
            workload,
            par,
            checkpointing=ckpt,
            gpus_per_node=gpn,
            nodes=nodes,
            intra_bw=intra_bw,
            span_bw=span_bw / min(par.tp * par.cp, gpn),
        )
        split_s, comm_s = traffic.exposed_s, traffic.overlap_s
        trained, w_store, ranks = trained / mp, w_store / mp, dp * par.cp
        # tp·cp data-parallel rings run side by side, one per rank in the node: across
        # nodes each gets its share of the node's NICs; inside a node, NVLink
        if ranks * par.tp <= gpn:
            span_bw = intra_bw
        else:
            span_bw = min(intra_bw, span_bw / min(par.tp * par.cp, gpn))
    if ranks > 1:
        ring = (ranks - 1) / ranks
        if sharding in _FULL_SHARD:  # all-gather fwd + bwd, reduce-scatter grads
            comm_s += (2 * w_store + trained * grad_bytes) * ring / span_bw
        elif sharding is Sharding.FSDP_GRAD_OP:  # gather once, reduce-scatter each micro-step
            comm_s += (w_store + trained * grad_bytes) * ring / span_bw
        elif sharding is Sharding.HSDP:  # full shard in the node, all-reduce across nodes
            if gpn > 1:
                comm_s += (2 * w_store + trained * grad_bytes) * (gpn - 1) / gpn / intra_bw
            if nodes > 1:
                across = 2 * trained * grad_bytes / gpn * (nodes - 1) / nodes
                comm_s += across / span_bw / accum
        else:  # DDP, ZeRO-1/2: all-reduce (or RS + AG) once per optimizer step
            comm_s += 2 * trained * grad_bytes * ring / span_bw / accum

    # optimizer step, amortised over the micro-steps of one global batch
    shard = ranks if sharding is not Sharding.DDP else 1
    if sharding is Sharding.HSDP:
        shard = gpn
    offload = strategy.offload
    serial_s = 0.0
    if offload is Offload.NONE:
        serial_s = trained / shard * ADAM_BYTES_PER_PARAM / hbm / accum
    else:
        # grads to the host every micro-step (overlaps backward), the update on the CPU and
        # the 16-bit weights back once per optimizer step (ZeRO-Offload's schedule, §4)
        comm_s += trained / shard * grad_bytes / (HOST_GBS * 1e9)
        cpu = trained / shard * gpn / CPU_ADAM_PARAMS_PER_S
        serial_s = (cpu + trained / shard * w_bytes / (HOST_GBS * 1e9)) / accum
        if offload is Offload.PARAMS:  # every gather streams the shard in from host memory
            comm_s += 2 * w_store / max(shard, 1) / (HOST_GBS * 1e9)
    if par.pp > 1:  # the 1F1B bubble over the accum micro-batches of one optimizer step
        bubble_s = bubble_share(par, accum) * (max(compute_s, weights_s) + dequant_s + split_s)
    step = StepTime(
        tokens=per_gpu_tokens * gpus / replica,
        compute_s=compute_s,
        weights_s=weights_s,
        dequant_s=dequant_s,
        comm_s=comm_s,
        serial_s=serial_s,
        goodput=goodput(gpus),
        split_s=split_s,
        bubble_s=bubble_s,
    )
    # the one hook for fine-tunes and post-training (issue #32, recommender.finetune_speed)
    rate = peak * compute_efficiency(gpu, m.hidden)
    split = not par.trivial
    scale, added = finetune_speed.micro_step(workload, gpu, step, gpus=gpus, split=split, rate=rate)
    return replace(step, posttrain_scale=scale, posttrain_s=added)
