"""The ladder of training strategies a layout search climbs, cheapest first.

* one GPU: plain → activation checkpointing → optimizer CPU offload (DeepSpeed ZeRO-Offload)
  → parameter offload (ZeRO-3 offload), the offload rungs each without then with
  checkpointing;
* several GPUs in one node: DDP → ZeRO-1 → ZeRO-2 → FSDP full shard (≡ ZeRO-3) without
  checkpointing, then the same with it, offload last;
* several nodes: HSDP (full shard inside a node, replicated across) → FSDP across all GPUs,
  without then with checkpointing, offload last.

Whatever the workload fixes (sharding, offload, checkpointing) is honoured.
"""

from __future__ import annotations

from recommender.memory import Strategy
from recommender.model_states import FULL_SHARDING
from recommender.workload import Offload, Sharding, Workload

__all__ = ["MAX_GPUS_PER_NODE", "candidate_strategies"]

#: Largest single node the search considers: HGX/DGX boards carry 8 GPUs.
MAX_GPUS_PER_NODE = 8


def candidate_strategies(
    workload: Workload, *, gpus: int, nodes: int, allow_offload: bool = True
) -> tuple[Strategy, ...]:
    """Strategies to try for this layout, cheapest first, honouring what the workload fixes.

    Offload rungs appear only with ``allow_offload`` or when the workload asks for offload.
    """
    sharding, offload, checkpointing = workload.sharding, workload.offload, workload.checkpointing
    single_gpu, single_node = gpus == 1, nodes == 1
    if single_gpu:
        base: list[tuple[Sharding, Offload]] = [
            (Sharding.DDP, Offload.NONE),
            (Sharding.ZERO2, Offload.OPTIMIZER),  # ZeRO-Offload (Ren et al. 2021)
            (Sharding.ZERO3, Offload.PARAMS),  # ZeRO-Infinity style parameter offload
        ]
    elif single_node:
        base = [
            (Sharding.DDP, Offload.NONE),
            (Sharding.ZERO1, Offload.NONE),
            (Sharding.ZERO2, Offload.NONE),
            (Sharding.FSDP, Offload.NONE),
            (Sharding.FSDP, Offload.OPTIMIZER),
            (Sharding.FSDP, Offload.PARAMS),
        ]
    else:
        base = [
            (Sharding.HSDP, Offload.NONE),
            (Sharding.FSDP, Offload.NONE),
            (Sharding.FSDP, Offload.OPTIMIZER),
            (Sharding.FSDP, Offload.PARAMS),
        ]
    # Rungs without offload: every sharding without checkpointing, then with it. ZeRO-1/2
    # move as many bytes as DDP and FSDP 1.5× (ZeRO §7), mostly overlapped with compute,
    # while checkpointing costs a third more compute for certain. Offload rungs come last.
    rungs: list[tuple[Sharding, Offload, bool]] = [
        (sh, off, ck) for ck in (False, True) for sh, off in base if off is Offload.NONE
    ]
    rungs += [(sh, off, ck) for sh, off in base if off is not Offload.NONE for ck in (False, True)]
    out: list[Strategy] = []
    for rung_sharding, rung_offload, ckpt in rungs:
        chosen = sharding if sharding is not None else rung_sharding  # offload rungs stay
        if offload is not None and rung_offload is not offload:
            continue
        if offload is None and rung_offload is not Offload.NONE and not allow_offload:
            continue
        if rung_offload is Offload.PARAMS and chosen not in FULL_SHARDING:
            continue
        if checkpointing is not None and ckpt is not checkpointing:
            continue
        strategy = Strategy(sharding=chosen, offload=rung_offload, checkpointing=ckpt)
        if strategy not in out:
            out.append(strategy)
    if not out and offload is not None:
        # A fixed offload our ladder does not list for this layout (e.g. optimizer offload
        # with DDP): take the fixed sharding (or FSDP) with it.
        fixed = sharding or Sharding.FSDP
        if offload is Offload.PARAMS and fixed not in FULL_SHARDING:
            fixed = Sharding.FSDP
        choices = (checkpointing,) if checkpointing is not None else (False, True)
        out = [Strategy(fixed, offload, c) for c in choices]
    return tuple(out)
