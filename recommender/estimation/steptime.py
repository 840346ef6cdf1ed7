"""Time of one training micro-step, built from the workload and the layout.

A micro-step on each GPU is bounded by three things that run concurrently: the matmul
FLOPs at an achievable fraction of the dense peak, reading the weights from HBM (the bound
at small batches, e.g. LoRA at micro-batch 1) and the sharding/offload traffic over the
actual links. The slower of compute and traffic sets the pace and a share of the faster
one stays exposed (collectives steal SMs and memory bandwidth; the first gather and the
last reduce-scatter overlap nothing). QLoRA adds its NF4 dequantisation, the optimizer step
is amortised over the micro-steps of one global batch (stated, or the published-runs rule
of :mod:`recommender.estimation.global_batch`, which also sets the micro-batches in flight and so
the pipeline bubble), and large clusters lose time to failures (goodput). A micro-step is never
shorter than launching its kernels. :meth:`StepTime.breakdown` says where the time goes. Every
constant names its source; "ours" marks a judgement.

Calibrated on tokens/s of published runs (``bench/time_calibration.py``,
``tests/recommender/data/time_calibration.csv``: a calibration set, and a validation set
never tuned on); hardware FLOPs (with recompute) are divided by HFU-style efficiencies, so
recomputation is counted exactly once.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from recommender.estimation import finetune_speed
from recommender.estimation.activations import DEFAULT_KERNELS, Kernels
from recommender.estimation.efficiency import (
    ATTENTION_RELATIVE_RATE,
    FP8_GENERATIONS,
    Generation,
    compute_efficiency,
    dense_tflops,
    fp8_speedup,
    generation,
    unfused_score_bytes,
)
from recommender.estimation.global_batch import FINETUNE_BATCH_TOKENS, default_batch_tokens
from recommender.estimation.links import cross_pod_factor, link_gbs, node_nic_gbs
from recommender.estimation.parallel_time import (
    CAPACITY_FACTOR,
    SplitTraffic,
    bubble_share,
    expert_params,
    routed_params,
    split_traffic,
)
from recommender.estimation.posttrain import extra_flops_per_param
from recommender.estimation.strategies import Strategy
from recommender.gpus import GpuSpec, IntraNode
from recommender.models import Architecture
from recommender.pricing.offers import Fabric
from recommender.workload import Method, Offload, Precision, Sharding, Workload

__all__ = [
    "FINETUNE_BATCH_TOKENS",
    "Generation",
    "StepTime",
    "TimeBreakdown",
    "compute_efficiency",
    "dense_tflops",
    "fp8_speedup",
    "generation",
    "goodput",
    "link_gbs",
    "step_time",
]


# ------------------------------------------------------------------ memory and links

# HBM reaches ~80-90 % of its nominal bandwidth in streaming kernels (STREAM-like
# measurements on A100/H100, e.g. NVIDIA's babelstream numbers); 0.8 (ours)
HBM_EFFICIENCY = 0.8
# bitsandbytes NF4 dequantisation costs as much time as streaming ~8 B per weight and pass
# (LitGPT resource tables, Llama 2 7B on A100-40GB: QLoRA 3.68 vs LoRA 2.36 min/1k iters)
DEQUANT_BYTES_PER_PARAM = 8.0
# Host↔GPU copies for offload: pinned PCIe Gen4 x16 ~24 GB/s measured (ours: 20)
HOST_GBS = 20.0
# Share of the shorter of compute and communication that stays exposed (first gather,
# last reduce-scatter, SM contention); fitted on llm-foundry rows with small micro-batches
# (13B on 8×H100 at 2×2048 tokens: HFU 0.40 vs 0.51-0.57 with larger batches)
EXPOSED_SHARE = 0.35


# ------------------------------------------------------------------ optimizer and goodput

# AdamW step in fp32 reads param, grad, m, v and writes param, m, v and a 16-bit copy:
# ~30 B per parameter of HBM traffic (ZeRO §3 state sizes; ours for the count)
ADAM_BYTES_PER_PARAM = 30.0
# CPU-Adam updates ~1-2 B parameters/s on a two-socket host (ZeRO-Offload, Ren et al. 2021,
# §4.1: 5-7× PyTorch's CPU Adam); 1.5e9 per node (ours within that range)
CPU_ADAM_PARAMS_PER_S = 1.5e9
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


# Every kernel costs a launch whatever its size: a few µs each on the host ("Getting Started
# with CUDA Graphs", NVIDIA developer blog 2019), more through PyTorch's dispatcher (ours:
# 5 µs); a decoder block runs ~30 kernels forward and twice that backward in eager PyTorch
# (ours: counted from a Llama block's ops). A micro-step shorter than that waits on the host.
KERNEL_LAUNCH_S = 5e-6
KERNELS_PER_LAYER_PASS = 30


# ------------------------------------------------------------------ the step

NO_SPLIT = SplitTraffic()  # no model parallelism: no TP/CP/PP/EP traffic


@dataclass(frozen=True, slots=True)
class TimeBreakdown:
    """Where a whole run's wall-clock goes on the chosen layout, seconds per micro-step per
    GPU (they run in step), with the assumptions the figures rest on."""

    compute_s: float  # matmuls at the assumed efficiency, or HBM-bound weight reads
    tp_s: float  # exposed tensor-parallel collectives (NVLink)
    cp_s: float  # exposed context-parallel K/V ring
    pp_s: float  # exposed pipeline sends (the fabric between nodes)
    dp_s: float  # exposed data-parallel / FSDP traffic (the slowest ring hop)
    ep_s: float  # exposed expert all-to-all (NVLink and each GPU's own NIC)
    offload_s: float  # exposed host↔GPU copies of CPU offload
    bubble_s: float  # pipeline bubble, amortised per micro-step
    optimizer_s: float  # optimizer step (and CPU work), amortised per micro-step
    posttrain_s: float  # rollout generation, GPUs set aside for it, an eager stack's CPU pace
    failures_frac: float  # wall-clock lost to failures and restarts
    stalls_frac: float  # wall-clock lost to checkpoint saves, evaluation and data stalls
    global_batch_tokens: float  # the batch assumed (stated, or the rule's)
    micro_batches: float  # micro-batches per pipeline per optimizer step
    efficiency: float  # share of the dense peak assumed for the matmuls
    tokens_per_second: float  # the whole layout, averaged over a whole run


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
    global_batch_tokens: float = 0.0  # the global batch the step was costed for
    micro_batches: float = 1.0  # micro-batches per pipeline per optimizer step
    efficiency: float = 0.0  # share of the dense peak the matmuls are assumed to reach
    split: SplitTraffic = NO_SPLIT
    dp_s: float = 0.0  # of comm_s: data-parallel / sharding traffic
    offload_s: float = 0.0  # of comm_s: host↔GPU copies
    launch_s: float = 0.0  # host time launching the micro-step's kernels
    # GPUs set aside for rollouts, and the rollouts or an eager stack's CPU pace
    # (recommender.estimation.finetune_speed)
    posttrain_scale: float = 1.0
    posttrain_s: float = 0.0

    @property
    def work_s(self) -> float:
        """The GPU's own work: compute or weight reads (plus dequantisation), or the host's
        kernel launches when the micro-step is shorter than those."""
        return max(self.compute_s, self.weights_s, self.launch_s) + self.dequant_s

    @property
    def busy_s(self) -> float:
        """Compute/memory bound and traffic: the slower sets the pace, part of the other
        stays exposed; tensor-parallel collectives and the pipeline bubble add to it."""
        work = self.work_s
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

    def breakdown(self) -> TimeBreakdown:
        """The step's time by cause. Overlappable traffic (CP, PP, DP, offload) is exposed
        as far as it outlasts the work plus ``EXPOSED_SHARE`` of the overlap, shared out in
        proportion to each kind's seconds; TP and EP collectives are exposed whole."""
        work = self.work_s
        exposed = max(work, self.comm_s) + EXPOSED_SHARE * min(work, self.comm_s) - work
        share = exposed / self.comm_s if self.comm_s > 0 else 0.0
        failures = 1.0 - goodput_failures(self.goodput)
        return TimeBreakdown(
            compute_s=work,
            tp_s=self.split.tp_s,
            cp_s=self.split.cp_s * share,
            pp_s=self.split.pp_s * share,
            dp_s=self.dp_s * share,
            ep_s=self.split.ep_s * share if self.split.ep_hidden else self.split.ep_s,
            offload_s=self.offload_s * share,
            bubble_s=self.bubble_s,
            optimizer_s=self.serial_s,
            posttrain_s=max(self._step_s - self.busy_s - self.serial_s, 0.0),
            failures_frac=failures,
            stalls_frac=(1.0 - failures) * (1.0 - RUN_EFFICIENCY),
            global_batch_tokens=self.global_batch_tokens,
            micro_batches=self.micro_batches,
            efficiency=self.efficiency,
            tokens_per_second=self.tokens_per_second,
        )


def goodput_failures(goodput_: float) -> float:
    """The failures-only part of an end-to-end goodput (it includes ``RUN_EFFICIENCY``)."""
    return min(goodput_ / RUN_EFFICIENCY, 1.0)


_ADAPTERS = (Method.LORA, Method.QLORA)


def _matmul_params(m: Architecture) -> float:
    """Parameters a token's matmuls pass through: the active ones, less an untied input
    embedding (a lookup)."""
    return float(m.active_params if m.tied_embeddings else m.active_params - m.vocab * m.hidden)


def hw_flops_per_token(workload: Workload, checkpointing: bool) -> tuple[float, float]:
    """Executed FLOPs per token (recompute included): the weight matmuls, and attention."""
    m = workload.model
    weights = (4.0 if workload.method in _ADAPTERS else 6.0) + (2.0 if checkpointing else 0.0)
    weights += extra_flops_per_param(workload)  # post-training: reference, reward, generation
    # causal attention with flash kernels: half of PaLM's 12·L·h·s (App. B)
    attention = 6.0 * m.layers * m.hidden * workload.seq_len
    if checkpointing:
        attention *= 4 / 3
    return weights * _matmul_params(m), attention


def _block_linear_params(m: Architecture) -> float:
    """Weights NF4 quantises: all block linears (embeddings and the head stay 16-bit)."""
    return float(max(m.params - m.embedding_params, 0))


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
    kernels: Kernels = DEFAULT_KERNELS,
) -> StepTime:
    """The micro-step of ``workload`` on ``gpus`` × ``gpu`` laid out as ``strategy``; a
    pretraining run without a stated ``global_batch_tokens`` gets the published-runs rule
    (:func:`recommender.estimation.global_batch.pretrain_batch_tokens`); ``kernels`` says whether
    the attention is fused (the memory model's rule,
    :class:`recommender.estimation.activations.Kernels`)."""
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
    if precision is Precision.FP8_MIXED and gpu.supports_fp8 and gen in FP8_GENERATIONS:
        peak *= fp8_speedup(m.hidden)
    efficiency = compute_efficiency(gpu, m.hidden)
    dense, attention = hw_flops_per_token(workload, ckpt)
    # routed experts: the busiest expert rank sets the pace (``CAPACITY_FACTOR``)
    dense *= 1 + (CAPACITY_FACTOR - 1) * routed_params(m) / max(_matmul_params(m), 1.0)
    flops = (dense + attention / ATTENTION_RELATIVE_RATE) * per_gpu_tokens
    compute_s = flops / (peak * efficiency) / replica
    passes = 3.0 if ckpt else 2.0
    launch_s = KERNEL_LAUNCH_S * KERNELS_PER_LAYER_PASS * (passes + 1) * m.layers / par.pp
    hbm = gpu.mem_bandwidth_tbps * 1e12 * HBM_EFFICIENCY
    if not kernels.fused_for(workload):  # every s×s score through HBM (efficiency.py)
        scores = per_gpu_tokens * m.layers * m.heads * workload.seq_len
        traffic = unfused_score_bytes(checkpointing=ckpt, dropout=kernels.attention_dropout)
        compute_s += scores * traffic / hbm / replica
    # LoRA's adapters beside the frozen layers: elementwise traffic no GEMM hides
    adapters = finetune_speed.adapter_bytes_per_token(workload, checkpointing=ckpt)
    compute_s += per_gpu_tokens * adapters / hbm / replica

    # HBM: every pass (forward, recompute, backward) reads all the weights it multiplies
    w_bytes = precision.compute_bytes
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
    grad_bytes = precision.compute_bytes
    w_store = (params - _block_linear_params(m)) * w_bytes + _block_linear_params(m) * (
        0.5 if method is Method.QLORA else w_bytes
    )
    pipelines = gpus / replica  # data-parallel replicas, each fed its own micro-batches
    batch = (
        float(global_batch_tokens)
        if global_batch_tokens
        else default_batch_tokens(workload, par, gpus)
    )
    accum = max(batch / (per_gpu_tokens * pipelines), 1.0)
    sharding = strategy.sharding
    dp_s = 0.0
    split = NO_SPLIT
    ranks = gpus  # the data-parallel group (FSDP shards over dp·cp)
    if not par.trivial:
        # tp·cp rings run side by side, one per rank in the node, each on its own rail:
        # across nodes each gets its share of the node's NICs, at most its NVLink rate
        node_bw = node_nic_gbs(gpu, gpus_per_node=gpn, fabric=fabric, fabric_gbps=fabric_gbps)
        rails = min(par.tp * par.cp, gpn)
        ring_bw = min(intra_bw, node_bw * 1e9 / rails) if nodes > 1 else intra_bw
        split = split_traffic(
            workload,
            par,
            checkpointing=ckpt,
            gpus_per_node=gpn,
            nodes=nodes,
            intra_bw=intra_bw,
            span_bw=ring_bw,
            nic_bw=node_bw * 1e9 / gpn,
        )
        trained, w_store, ranks = trained / mp, w_store / mp, dp * par.cp
        if par.ep > 1:  # an expert's gradients reduce only over the ranks holding it
            trained *= 1 - expert_params(m) / params * (1 - 1 / par.ep)
        span_bw = intra_bw if ranks * par.tp <= gpn else ring_bw
    span_bw *= cross_pod_factor(fabric, gpus=gpus, ranks=ranks)
    if ranks > 1:
        ring = (ranks - 1) / ranks
        if sharding.shards_params and sharding is not Sharding.HSDP:
            # all-gather fwd + bwd, reduce-scatter grads
            dp_s = (2 * w_store + trained * grad_bytes) * ring / span_bw
        elif sharding is Sharding.FSDP_GRAD_OP:  # gather once, reduce-scatter each micro-step
            dp_s = (w_store + trained * grad_bytes) * ring / span_bw
        elif sharding is Sharding.HSDP:  # full shard in the node, all-reduce across nodes
            if gpn > 1:
                dp_s = (2 * w_store + trained * grad_bytes) * (gpn - 1) / gpn / intra_bw
            if nodes > 1:
                across = 2 * trained * grad_bytes / gpn * (nodes - 1) / nodes
                dp_s += across / span_bw / accum
        else:  # DDP, ZeRO-1/2: all-reduce (or RS + AG) once per optimizer step
            dp_s = 2 * trained * grad_bytes * ring / span_bw / accum

    # optimizer step, amortised over the micro-steps of one global batch
    shard = ranks if sharding is not Sharding.DDP else 1
    if sharding is Sharding.HSDP:
        shard = gpn
    offload = strategy.offload
    serial_s = offload_s = 0.0
    if offload is Offload.NONE:
        serial_s = trained / shard * ADAM_BYTES_PER_PARAM / hbm / accum
    else:
        # grads to the host every micro-step (overlaps backward), the update on the CPU and
        # the 16-bit weights back once per optimizer step (ZeRO-Offload's schedule, §4)
        offload_s = trained / shard * grad_bytes / (HOST_GBS * 1e9)
        cpu = trained / shard * gpn / CPU_ADAM_PARAMS_PER_S
        serial_s = (cpu + trained / shard * w_bytes / (HOST_GBS * 1e9)) / accum
        if offload is Offload.PARAMS:  # every gather streams the shard in from host memory
            offload_s += 2 * w_store / max(shard, 1) / (HOST_GBS * 1e9)
    bubble_s = 0.0
    if par.pp > 1:  # the 1F1B bubble over the accum micro-batches of one optimizer step
        work = max(compute_s, weights_s, launch_s) + dequant_s
        bubble_s = bubble_share(par, accum) * (work + split.exposed_s)
    step = StepTime(
        tokens=per_gpu_tokens * pipelines,
        compute_s=compute_s,
        weights_s=weights_s,
        dequant_s=dequant_s,
        comm_s=split.overlap_s + dp_s + offload_s,
        serial_s=serial_s,
        goodput=goodput(gpus),
        split_s=split.exposed_s,
        bubble_s=bubble_s,
        global_batch_tokens=batch,
        micro_batches=accum,
        efficiency=efficiency,
        split=split,
        dp_s=dp_s,
        offload_s=offload_s,
        launch_s=launch_s,
    )
    # the one hook for fine-tunes and post-training (issue #32,
    # recommender.estimation.finetune_speed)
    rate = peak * efficiency
    split_model = not par.trivial
    scale, added = finetune_speed.micro_step(
        workload, gpu, step, gpus=gpus, split=split_model, rate=rate
    )
    return replace(step, posttrain_scale=scale, posttrain_s=added)
