"""Scale-out: the node counts an instance shape can run a job on, and their training rates.

A shape's fewest nodes come from the layout search (:mod:`recommender.estimation.topology`); beyond
it, a shape on a fast fabric can run on 2, 4, 8 … times as many nodes, up to :data:`MAX_NODES`. Each
count gets its own plan (more data-parallel ranks shard the states further, so a leaner strategy may
do) and its own rate from the step-time model, which charges what scaling costs: gradient and shard
traffic on that fabric, the pipeline bubble, the optimizer step, and the failures of a larger
cluster (:mod:`recommender.estimation.steptime`). Which count an answer takes depends on the
objective and the price, so pricing chooses (:mod:`recommender.ranking.selection`); this module only
lists them.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

from recommender.estimation.global_batch import ceiling_tokens
from recommender.estimation.throughput import Network, tokens_per_hour
from recommender.estimation.topology import MULTI_NODE_LIMIT, LayoutSearch, Plan
from recommender.gpus import get_gpu
from recommender.pricing.offers import Offer
from recommender.workload import Workload

__all__ = [
    "MAX_NODES",
    "MIN_HOURS_TO_SCALE",
    "MIN_SCALING_GAIN",
    "Scaled",
    "ShapeScaling",
    "smallest_batch_tokens",
]

#: Most nodes of one shape an answer proposes: 2,048 nodes of 8 GPUs, the 16,384-GPU cluster
#: Llama 3 405B trained on (Llama 3 paper §3.3.1).
MAX_NODES = MULTI_NODE_LIMIT
#: Doubling the nodes must raise the rate by at least this much to be worth listing: past
#: it the extra nodes mostly wait on the network (ours: 1.2× for 2× the nodes is 60 %
#: scaling efficiency, below which published large runs do not go; Llama 3 §3.3.2 reports
#: 38-43 % MFU held from 8k to 16k GPUs).
MIN_SCALING_GAIN = 1.2
#: A run that already finishes within this many hours is not scaled out to save time:
#: provisioning a cluster, pulling the image and loading the model take a good part of an
#: hour (ours; SkyPilot launch logs: 5-15 min per launch, more for multi-node).
MIN_HOURS_TO_SCALE = 2.0


@dataclass(frozen=True, slots=True)
class Scaled:
    """One node count of a shape: the plan and its training rate on the shape's network."""

    plan: Plan
    tokens_per_hour: float

    @property
    def nodes(self) -> int:
        return self.plan.nodes


class ShapeScaling:
    """The layouts one instance shape offers a workload, for one question.

    ``base`` is the fewest nodes the job fits on (``None``: it fits on none); :meth:`at`
    gives the plan and rate on any count of nodes from there, each computed once.
    """

    def __init__(self, workload: Workload, search: LayoutSearch, offer: Offer) -> None:
        self._workload = workload
        self._search = search
        self._offer = offer
        self._network = Network.of(offer)
        self._gpu = get_gpu(offer.gpu_id)
        self._at: dict[int, Scaled | None] = {}
        fixed = workload.hardware is not None and workload.hardware.count is not None
        #: More nodes than the fewest only over a fast fabric, and never when the user
        #: fixed the GPU count.
        self.can_scale = offer.fabric.fast and not fixed
        plan = search.fit_on_nodes(
            self._gpu,
            gpus_per_node=offer.gpu_count,
            max_nodes=MAX_NODES,
            multi_node=offer.fabric.fast,
            host_ram_gib=offer.ram_gib,
        )
        self.base: Scaled | None = None
        if plan is not None:
            self.base = Scaled(plan, tokens_per_hour(workload, plan, self._network))
            self._at[plan.nodes] = self.base

    def at(self, nodes: int) -> Scaled | None:
        """The plan and rate on ``nodes`` nodes (from :attr:`base`'s count up to
        :data:`MAX_NODES`), or ``None`` where the job does not fit with the margin kept by
        the base plan."""
        if self.base is None or (not self.can_scale and nodes != self.base.nodes):
            return None
        if nodes not in self._at:
            plan = self._search.plan(
                self._gpu,
                gpus=nodes * self._offer.gpu_count,
                gpus_per_node=self._offer.gpu_count,
                host_ram_gib=self._offer.ram_gib,
            )
            keeps = plan.safe or (plan.fits and not self.base.plan.safe)
            self._at[nodes] = (
                Scaled(plan, tokens_per_hour(self._workload, plan, self._network))
                if keeps
                else None
            )
        return self._at[nodes]

    def counts(self) -> Iterator[Scaled]:
        """The node counts worth pricing, fewest first, computed as they are read: the
        base count, then each power of two above it up to :data:`MAX_NODES`, while each
        doubling still buys :data:`MIN_SCALING_GAIN` × the throughput and one micro-batch
        per data-parallel rank stays within the largest batch published runs of the model's
        size used (:func:`recommender.estimation.global_batch.ceiling_tokens`: past it more ranks
        stop buying progress per token, the critical batch size of McCandlish et al. 2018)."""
        if self.base is None:
            return
        yield self.base
        if not self.can_scale:
            return
        last = self.base
        nodes = 1
        while nodes <= self.base.nodes:
            nodes *= 2
        while nodes <= MAX_NODES:
            scaled = self.at(nodes)
            if scaled is not None and smallest_batch_tokens(self._workload, scaled.plan) > (
                ceiling_tokens(self._workload.model)
            ):
                return
            if scaled is not None:
                doublings = math.log2(scaled.nodes / last.nodes)
                if scaled.tokens_per_hour < last.tokens_per_hour * MIN_SCALING_GAIN**doublings:
                    return
                yield scaled
                last = scaled
            nodes *= 2


def smallest_batch_tokens(workload: Workload, plan: Plan) -> float:
    """The global batch a plan implies at the least: one micro-batch per data-parallel rank
    (the GPUs over one model replica of tensor × pipeline × context parallel ranks)."""
    ranks = plan.gpus // plan.strategy.parallel.replica
    return ranks * workload.micro_batch * workload.seq_len
