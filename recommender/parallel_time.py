"""Step-time terms of model parallelism, for :mod:`recommender.steptime`.

Per micro-batch and GPU (Megatron-LM's schedules; Narayanan et al. 2021, Korthikanti et al.
2022): tensor parallelism with sequence parallelism all-gathers and reduce-scatters the
layer activations twice forward and twice backward (and again when recomputing), over
NVLink inside the node, and nothing hides it; context parallelism passes K and V round a
ring, overlapped with attention; pipeline stages send activations and their gradients to
the next node; expert parallelism's all-to-all dispatch and combine sit in each MoE layer.
The 1F1B pipeline idles (p−1)/(m+p−1) of a step of m micro-batches: the busy time grows by
(p−1)/m, ÷vp when interleaved.
"""

from __future__ import annotations

from dataclasses import dataclass

from recommender.parallelism import Parallel
from recommender.workload import Precision, Workload

__all__ = ["SplitTraffic", "bubble_share", "split_traffic"]

# Megatron sequence parallelism: per layer an all-gather and a reduce-scatter before and
# after attention and MLP, i.e. 4 collectives of s·b·h forward and 4 backward (Korthikanti
# et al. 2022 §4.2.2: the same bytes as tensor parallelism's 2 all-reduces each way)
TP_COLLECTIVES_PER_LAYER = 4
# MoE all-to-all: dispatch and combine forward, and both again backward (GShard, Lepikhin
# et al. 2020 §2.2)
EP_ALL_TO_ALLS_PER_LAYER = 4


@dataclass(frozen=True, slots=True)
class SplitTraffic:
    """Seconds per micro-batch on one GPU: exposed (``exposed_s``: TP and EP collectives)
    and overlappable (``overlap_s``: CP ring, pipeline sends)."""

    exposed_s: float
    overlap_s: float


def split_traffic(
    workload: Workload,
    par: Parallel,
    *,
    checkpointing: bool,
    gpus_per_node: int,
    nodes: int,
    intra_bw: float,
    span_bw: float,
) -> SplitTraffic:
    """Traffic of ``par`` for one micro-batch; bandwidths are bytes/s per GPU (``span_bw``:
    one GPU's share when the group crosses nodes)."""
    m = workload.model
    act = 4.0 if workload.precision is Precision.FP32 else 2.0
    tokens = workload.seq_len * workload.micro_batch / par.cp  # this GPU's sequence share
    layers = m.layers / par.pp
    layer_bytes = tokens * m.hidden * act  # one s·b·h tensor
    exposed = overlap = 0.0
    if par.tp > 1:
        passes = 3 if checkpointing else 2
        ops = TP_COLLECTIVES_PER_LAYER * passes * layers
        exposed += ops * layer_bytes * (par.tp - 1) / par.tp / intra_bw
    if par.cp > 1:
        kv = 2 * layer_bytes * m.kv_heads / m.heads / par.tp  # this GPU's K and V chunk
        bw = intra_bw if par.tp * par.cp <= gpus_per_node else span_bw
        overlap += 3 * (par.cp - 1) * kv * layers / bw  # forward K,V; backward K,V + grads
    if par.pp > 1:
        bw = span_bw if nodes > 1 else intra_bw
        overlap += 2 * layer_bytes / par.tp / bw  # activations out, their gradient back
    if par.ep > 1 and m.experts > 1:
        routed = layer_bytes * m.experts_per_token / par.tp
        bw = intra_bw if par.tp * par.cp * par.ep <= gpus_per_node else span_bw
        exposed += EP_ALL_TO_ALLS_PER_LAYER * layers * routed * (par.ep - 1) / par.ep / bw
    return SplitTraffic(exposed_s=exposed, overlap_s=overlap)


def bubble_share(par: Parallel, micro_batches: float) -> float:
    """Busy time the pipeline bubble adds, as a share of the ideal: (p−1)/(vp·m)."""
    if par.pp == 1:
        return 0.0
    return (par.pp - 1) / (par.vp * max(micro_batches, 1.0))
