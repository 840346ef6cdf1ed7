"""Step-time terms of model parallelism, for :mod:`recommender.estimation.steptime`.

Per micro-batch and GPU (Megatron-LM's schedules; Narayanan et al. 2021, Korthikanti et al.
2022): tensor parallelism with sequence parallelism all-gathers and reduce-scatters the
layer activations twice forward and twice backward (and again when recomputing), over
NVLink inside the node, and nothing hides it; context parallelism passes K and V round a
ring, overlapped with attention; pipeline stages send activations and their gradients to
the next node; expert parallelism's all-to-all dispatch and combine sit in each MoE layer,
the share of each GPU's tokens routed to experts on other nodes crossing that GPU's own NIC
and the rest NVLink, at the same time. The 1F1B pipeline idles (p−1)/(m+p−1) of a step of
m micro-batches: the busy time grows by (p−1)/m, ÷vp when interleaved.

Mixtures of experts also compute more than their active parameters say: routing is never
even, and the busiest expert rank sets the pace (:func:`routed_params`, ``CAPACITY_FACTOR``).
"""

from __future__ import annotations

from dataclasses import dataclass

from recommender.estimation.parallelism import Parallel
from recommender.models import Architecture
from recommender.workload import Workload

__all__ = [
    "CAPACITY_FACTOR",
    "SplitTraffic",
    "bubble_share",
    "expert_params",
    "routed_params",
    "split_traffic",
]

# Megatron sequence parallelism: per layer an all-gather and a reduce-scatter before and
# after attention and MLP, i.e. 4 collectives of s·b·h forward and 4 backward (Korthikanti
# et al. 2022 §4.2.2: the same bytes as tensor parallelism's 2 all-reduces each way)
TP_COLLECTIVES_PER_LAYER = 4
# MoE all-to-all: dispatch and combine forward, and both again backward (GShard, Lepikhin
# et al. 2020 §2.2)
EP_ALL_TO_ALLS_PER_LAYER = 4
# The busiest expert gets more than its even share of tokens: Switch Transformer trains at
# capacity factor 1.25 (Fedus et al. 2022 §2.2 and Table 1; GShard uses 2.0 with token
# dropping); dropless MoE (Megablocks, Megatron-Core) still waits for the busiest rank
CAPACITY_FACTOR = 1.25


@dataclass(frozen=True, slots=True)
class SplitTraffic:
    """Seconds per micro-batch on one GPU, by kind: on the critical path (``tp_s``, and
    ``ep_s`` without a pipeline) and overlappable with compute (``cp_s``, ``pp_s``, and
    ``ep_s`` when ``ep_hidden``: another micro-batch computes while one is dispatched)."""

    tp_s: float = 0.0
    ep_s: float = 0.0
    cp_s: float = 0.0
    pp_s: float = 0.0
    ep_hidden: bool = False

    @property
    def exposed_s(self) -> float:
        return self.tp_s + (0.0 if self.ep_hidden else self.ep_s)

    @property
    def overlap_s(self) -> float:
        return self.cp_s + self.pp_s + (self.ep_s if self.ep_hidden else 0.0)


def expert_params(m: Architecture) -> float:
    """Parameters in routed experts, all of them (0 for a dense model): expert parallelism
    splits these, and each is reduced only over the data-parallel ranks holding it
    (Megatron-Core's expert data-parallel group)."""
    if m.experts <= 1:
        return 0.0
    every_layer = m.mlp_matrices * m.hidden * m.ffn * m.layers * m.experts
    # at most what the active parameters leave outside the routed experts: DeepSeek-V3's
    # first 3 of 61 layers are dense (DeepSeek-AI 2024 §4.2), which the shape does not say
    return float(min(every_layer, m.params - (m.active_params - routed_params(m))))


def routed_params(m: Architecture) -> float:
    """Active parameters a token passes through in routed experts (0 for a dense model)."""
    if m.experts <= 1:
        return 0.0
    return float(m.mlp_matrices * m.hidden * m.ffn * m.layers * m.experts_per_token)


def split_traffic(
    workload: Workload,
    par: Parallel,
    *,
    checkpointing: bool,
    gpus_per_node: int,
    nodes: int,
    intra_bw: float,
    span_bw: float,
    nic_bw: float | None = None,
) -> SplitTraffic:
    """Traffic of ``par`` for one micro-batch; bandwidths are bytes/s per GPU (``span_bw``:
    one GPU's share of a ring that crosses nodes; ``nic_bw``: one GPU's own NIC, for the
    expert all-to-all, ``span_bw`` when not given)."""
    m = workload.model
    act = workload.precision.compute_bytes
    tokens = workload.seq_len * workload.micro_batch / par.cp  # this GPU's sequence share
    layers = m.layers / par.pp
    layer_bytes = tokens * m.hidden * act  # one s·b·h tensor
    tp_s = ep_s = cp_s = pp_s = 0.0
    if par.tp > 1:
        passes = 3 if checkpointing else 2
        ops = TP_COLLECTIVES_PER_LAYER * passes * layers
        tp_s = ops * layer_bytes * (par.tp - 1) / par.tp / intra_bw
    if par.cp > 1:
        kv = 2 * layer_bytes * m.kv_heads / m.heads / par.tp  # this GPU's K and V chunk
        bw = intra_bw if par.tp * par.cp <= gpus_per_node else span_bw
        cp_s = 3 * (par.cp - 1) * kv * layers / bw  # forward K,V; backward K,V + grads
    if par.pp > 1:
        bw = span_bw if nodes > 1 else intra_bw
        # activations out, their gradient back; ×vp interleaved, each micro-batch crossing
        # every rank vp times (Narayanan et al. 2021 §2.2.2: communication grows by v)
        pp_s = 2 * par.vp * layer_bytes / par.tp / bw
    if par.ep > 1 and m.experts > 1:
        token_bytes = layer_bytes / par.tp  # one copy of this GPU's tokens
        k = m.experts_per_token
        # Megatron orders tp, cp, then ep inside the node: the EP peers on this node
        local = max(min(par.ep, gpus_per_node // (par.tp * par.cp)), 1)
        on_node = token_bytes * k * (local - 1) / par.ep / intra_bw
        # across nodes a token goes once to each node holding one of its k experts and is
        # forwarded over NVLink there (DeepSeek-V3 §3.2.2; DeepEP): of n = ep/local nodes,
        # n·(1 − (1 − 1/n)^k) expected, all but this node's share remote
        n = par.ep / local
        remote = n * (1 - (1 - 1 / n) ** k) * (n - 1) / n
        off_node = token_bytes * remote / (nic_bw or span_bw)
        ep_s = EP_ALL_TO_ALLS_PER_LAYER * layers * max(on_node, off_node)
    # Under a pipeline the dispatch of one micro-batch overlaps another's compute (DeepSeek-V3
    # §3.2.1 DualPipe; Megatron-Core MoE's EP all-to-all overlap with 1F1B)
    return SplitTraffic(tp_s=tp_s, ep_s=ep_s, cp_s=cp_s, pp_s=pp_s, ep_hidden=par.pp > 1)


def bubble_share(par: Parallel, micro_batches: float) -> float:
    """Busy time the pipeline bubble adds, as a share of the ideal: (p−1)/(vp·m)."""
    if par.pp == 1:
        return 0.0
    return (par.pp - 1) / (par.vp * max(micro_batches, 1.0))
