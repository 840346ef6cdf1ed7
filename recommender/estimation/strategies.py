"""The ladder of training strategies a layout search climbs, cheapest first.

* one GPU: plain → activation checkpointing → optimizer CPU offload (DeepSpeed ZeRO-Offload)
  → parameter offload (ZeRO-3 offload), the offload rungs each without then with
  checkpointing;
* several GPUs in one node: DDP → ZeRO-1 → ZeRO-2 → FSDP full shard (≡ ZeRO-3) without
  checkpointing, then the same with it, offload last;
* several nodes: HSDP (full shard inside a node, replicated across) → FSDP across all GPUs,
  without then with checkpointing, offload last.

Model parallelism (:mod:`recommender.estimation.parallelism`) adds rungs that split the model: on
one node after every sharding rung and before offload (sharding alone does not fit); beyond one node
right after HSDP, before FSDP across every GPU (the model needs more than a node, and tensor
parallelism over NVLink beats gathering every weight across the fabric each micro-step); with ZeRO-1
(Megatron's distributed optimizer) then FSDP over the data-parallel ranks. Degrees the workload
fixes (``tp 8``) are honoured on every rung; ``3d parallel`` keeps only the split rungs.

Whatever the workload fixes (sharding, offload, checkpointing) is honoured.
"""

from __future__ import annotations

from dataclasses import dataclass

from recommender.estimation.parallelism import (
    NO_PARALLEL,
    Parallel,
    auto_layouts,
    requested,
    with_fixed,
)
from recommender.workload import Offload, Sharding, Workload

__all__ = ["MAX_GPUS_PER_NODE", "Strategy", "candidate_strategies"]

_SHARDING_LABEL = {
    Sharding.DDP: "DDP",
    Sharding.ZERO1: "ZeRO-1",
    Sharding.ZERO2: "ZeRO-2",
    Sharding.ZERO3: "ZeRO-3",
    Sharding.FSDP: "FSDP full shard",
    Sharding.FSDP_GRAD_OP: "FSDP grad-op shard",
    Sharding.HSDP: "HSDP (FSDP inside each node, replicated across nodes)",
}


@dataclass(frozen=True, slots=True)
class Strategy:
    """How the job is laid out on its GPUs. ``DDP`` on a single GPU means no sharding."""

    sharding: Sharding
    offload: Offload
    checkpointing: bool
    #: Model parallelism (tensor, pipeline, context, expert); data parallelism is the rest.
    parallel: Parallel = NO_PARALLEL

    def __post_init__(self) -> None:
        if not self.compatible(self.sharding, self.offload):
            raise ValueError("parameter offload needs ZeRO-3 or FSDP full sharding")

    @staticmethod
    def compatible(sharding: Sharding, offload: Offload) -> bool:
        """Whether ``offload`` can run with ``sharding``: parameter offload needs the
        parameters sharded (DeepSpeed's ``offload_param`` is a ZeRO stage 3 setting; FSDP's
        ``CPUOffload(offload_params=True)``)."""
        return offload is not Offload.PARAMS or sharding.shards_params

    def describe(self, gpus: int | None = None) -> str:
        """Plain words, e.g. ``FSDP full shard + activation checkpointing``.

        With ``gpus=1`` the sharding is not named (it does nothing on one GPU).
        """
        parts: list[str] = []
        if not self.parallel.trivial:
            dp = self.parallel.describe(gpus or self.parallel.replica)
            parts.append(f"{dp} with {_SHARDING_LABEL[self.sharding]}")
        elif gpus == 1:
            parts.append("single GPU")
        else:
            parts.append(_SHARDING_LABEL[self.sharding])
        if self.checkpointing:
            parts.append("activation checkpointing")
        if self.offload is Offload.OPTIMIZER:
            parts.append("optimizer CPU offload")
        elif self.offload is Offload.PARAMS:
            parts.append("parameter and optimizer CPU offload")
        return " + ".join(parts)


#: Largest single node the search considers: HGX/DGX boards carry 8 GPUs.
MAX_GPUS_PER_NODE = 8


def candidate_strategies(
    workload: Workload,
    *,
    gpus: int,
    nodes: int,
    allow_offload: bool = True,
    gpus_per_node: int | None = None,
    nvlink: bool = True,
) -> tuple[Strategy, ...]:
    """Strategies to try for this layout, cheapest first, honouring what the workload fixes.

    Offload rungs appear only with ``allow_offload`` or when the workload asks for offload.
    Model-parallel rungs need the node size (``gpus_per_node``); tensor parallelism is
    searched only over NVLink (``nvlink``). A strategy this layout cannot host (a fixed
    ``tp 8`` on 4 GPUs) is still returned; :meth:`Parallel.problem` says why it cannot run.
    """
    plain = _plain_strategies(workload, gpus=gpus, nodes=nodes, allow_offload=allow_offload)
    per_node = gpus_per_node or max(gpus // max(nodes, 1), 1)
    fixed = requested(workload)
    if gpus == 1 and not fixed:
        return plain
    splits = auto_layouts(workload, gpus=gpus, gpus_per_node=per_node, nvlink=nvlink)
    if fixed:
        splits = with_fixed(splits, fixed)
    m = workload.model
    feasible = [p for p in splits if p.problem(m, gpus=gpus, gpus_per_node=per_node) is None]
    if fixed and not feasible:  # say why, on the exact degrees asked for
        feasible = list(splits[:1])
    split_rungs = _split_rungs(workload, feasible)
    if fixed:
        return tuple(split_rungs)
    if workload.model_parallel:
        return tuple(split_rungs) or plain
    if nodes == 1:  # after every sharding rung, before offload
        offloads = [i for i, s in enumerate(plain) if s.offload is not Offload.NONE]
        cut = len(plain) if workload.offload is not None or not offloads else offloads[0]
        return tuple(plain[:cut]) + tuple(split_rungs) + tuple(plain[cut:])
    out: list[Strategy] = []
    for ckpt in (False, True):  # multi-node: HSDP, the splits, then FSDP across all
        same = [s for s in plain if s.checkpointing is ckpt and s.offload is Offload.NONE]
        out += [s for s in same if s.sharding is Sharding.HSDP]
        out += [s for s in split_rungs if s.checkpointing is ckpt]
        out += [s for s in same if s.sharding is not Sharding.HSDP]
    out += [s for s in plain if s.offload is not Offload.NONE]
    return tuple(out)


def _split_rungs(workload: Workload, splits: list[Parallel]) -> list[Strategy]:
    """Every split with ZeRO-1, then every split with FSDP over the data-parallel ranks,
    without then with checkpointing; the workload's sharding, checkpointing and offload
    where it fixes them."""
    shardings = (workload.sharding,) if workload.sharding else (Sharding.ZERO1, Sharding.FSDP)
    offload = workload.offload or Offload.NONE
    ckpts = (workload.checkpointing,) if workload.checkpointing is not None else (False, True)
    out: list[Strategy] = []
    for ckpt in ckpts:
        # ZeRO-1 reduces gradients once per optimizer step; FSDP gathers every weight each
        # micro-step over the fabric, so any split with ZeRO-1 comes before FSDP
        for sharding in shardings:
            for par in splits:
                if not Strategy.compatible(sharding, offload):
                    continue
                out.append(Strategy(sharding, offload, ckpt, par))
    return out


def _plain_strategies(
    workload: Workload, *, gpus: int, nodes: int, allow_offload: bool
) -> tuple[Strategy, ...]:
    """The sharding/offload/checkpointing ladder without model parallelism."""
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
    kept: list[tuple[Sharding, Offload, bool]] = []
    for rung_sharding, rung_offload, ckpt in rungs:
        chosen = sharding if sharding is not None else rung_sharding  # offload rungs stay
        if offload is not None and rung_offload is not offload:
            continue
        if offload is None and rung_offload is not Offload.NONE and not allow_offload:
            continue
        if not Strategy.compatible(chosen, rung_offload):
            continue
        if checkpointing is not None and ckpt is not checkpointing:
            continue
        kept.append((chosen, rung_offload, ckpt))
    # A fixed sharding repeats rungs: each is kept once, where it first comes.
    out = [Strategy(*rung) for rung in dict.fromkeys(kept)]
    if not out and offload is not None:
        # A fixed offload our ladder does not list for this layout (e.g. optimizer offload
        # with DDP): take the fixed sharding (or FSDP) with it.
        fixed = sharding or Sharding.FSDP
        if not Strategy.compatible(fixed, offload):
            fixed = Sharding.FSDP
        choices = (checkpointing,) if checkpointing is not None else (False, True)
        out = [Strategy(fixed, offload, c) for c in choices]
    return tuple(out)
