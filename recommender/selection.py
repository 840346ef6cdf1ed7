"""From a workload and a catalog to its priced offers: the first half of a recommendation.

Offers the workload rules out (provider, spot policy, named hardware, region) are dropped;
every instance shape left gets the smallest layout the job fits on, and that layout its
training rate on the offer's network (one plan per shape and one rate per network, remembered
for this question only: :class:`Shapes`); each offer is then priced under its provider's billing
rule (:mod:`recommender.costing`): offers of one shape from one provider, on-demand or spot,
share one plan and one set of economics, so an offer's expected cost is two multiplications
and an addition. :mod:`recommender.ranking` ranks what comes out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

from recommender.billing import BillingRule, rule_for
from recommender.catalog import Catalog
from recommender.caveats import Caveat, CaveatKind, Severity
from recommender.economics import Economics, checkpoint_gib, economics
from recommender.gpus import IntraNode, get_gpu
from recommender.offers import Fabric, Offer
from recommender.throughput import Network, tokens_per_hour
from recommender.topology import LayoutSearch, Plan
from recommender.workload import SpotPolicy, Workload

__all__ = ["MAX_NODES", "Priced", "Shapes", "allowed", "priced_offers", "shape_plan"]

# Largest cluster gpufit will propose for a single job.
MAX_NODES = 64  # ours: beyond 512 GPUs the answer is a sales conversation, not a rental

#: What an offer's plan depends on: GPU, GPUs per instance, link, fast fabric, host RAM.
_Shape = tuple[str, int, IntraNode, bool, float | None]
#: What shares one set of economics: the shape as listed (with its fabric and its rate), provider
#: and spot flag.
_Group = tuple[str, int, IntraNode | None, Fabric, float | None, float | None, str, bool]


class Priced(NamedTuple):
    """An offer the job fits on, with its plan and what the run costs on it."""

    offer: Offer
    plan: Plan
    econ: Economics
    expected_cost_usd: float
    #: What the region choice says of it (the sanity checks' caveats are the catalog's).
    caveats: tuple[Caveat, ...] = ()

    @property
    def meets_deadline(self) -> bool:
        return self.econ.meets_deadline

    @property
    def wall_hours(self) -> float:
        return self.econ.wall_hours

    @property
    def price_usd_per_hour(self) -> float:
        """Cluster price per hour (all nodes)."""
        return self.offer.price_usd_per_hour * self.econ.nodes

    @property
    def tokens(self) -> float:
        return self.econ.tokens


def allowed(workload: Workload, offer: Offer) -> bool:
    """Whether the workload allows the offer: its provider, spot policy, named hardware and
    regions (prefixes such as ``us-east`` or ``eu``)."""
    if workload.providers and offer.provider.lower() not in workload.providers:
        return False
    if workload.spot is SpotPolicy.NEVER and offer.spot:
        return False
    if workload.spot is SpotPolicy.ONLY and not offer.spot:
        return False
    hw = workload.hardware
    if hw is not None:
        if hw.gpu_id is not None and offer.gpu_id != hw.gpu_id:
            return False
        if hw.count is not None and hw.count % offer.gpu_count:
            return False  # cannot rent part of an instance, nor a non-whole number of them
    if workload.regions:
        region = offer.region.lower()
        return any(region.startswith(prefix) for prefix in workload.regions)
    return True


class Shapes:
    """One question's plan per instance shape and training rate per (shape, network).

    An offer's plan depends only on its shape (GPU, GPUs per instance, link, fast fabric, host
    RAM) and the layout's rate only on the plan and the network, not on the work asked
    (tokens, duration, budget), so the reference layout (:mod:`recommender.work`) and the
    pricing share them. Lives as long as the question's :class:`LayoutSearch`.
    """

    def __init__(self, search: LayoutSearch) -> None:
        self.search = search
        self._plans: dict[_Shape, Plan | None] = {}
        self._rates: dict[tuple[_Shape, Network], float] = {}

    def plan(self, offer: Offer) -> Plan | None:
        """:func:`shape_plan` of the offer's shape."""
        shape = shape_of(offer)
        if shape not in self._plans:
            self._plans[shape] = shape_plan(self.search, offer)
        return self._plans[shape]

    def tokens_per_hour(self, offer: Offer) -> float:
        """Tokens per hour of the offer's shape plan on the offer's network.

        Raises:
            ValueError: the job fits no layout of the offer's shape (:meth:`plan` is ``None``).
        """
        network = Network.of(offer)
        key = (shape_of(offer), network)
        if key not in self._rates:
            plan = self.plan(offer)
            if plan is None:
                raise ValueError(f"{offer.instance_type}: no layout of this shape fits the job")
            self._rates[key] = tokens_per_hour(self.search.workload, plan, network)
        return self._rates[key]


def shape_of(offer: Offer) -> _Shape:
    """What an offer's plan depends on: GPU, GPUs per instance, link, fast fabric, host RAM."""
    return (offer.gpu_id, offer.gpu_count, offer.link, offer.fabric.fast, offer.ram_gib)


def priced_offers(
    workload: Workload,
    catalog: Catalog,
    shapes: Shapes,
    rules: Mapping[str, BillingRule],
) -> list[Priced]:
    """Every allowed offer the job fits on, priced, one per (provider, instance, region,
    spot): its cheapest zone (on a tie, the first zone by name). In catalog order of first
    appearance.

    Only the offers the catalog's sanity checks keep are priced
    (:func:`recommender.sanity.screen`). Where one instance costs the same in several allowed
    regions (Lambda lists one price everywhere), one is kept, the first region by name, and it
    says "same price in N regions": the workload's regions, when it names some, have already
    narrowed the choice to the user's geography.
    """
    groups: dict[_Group, tuple[Plan, Economics] | None] = {}
    ckpt = checkpoint_gib(workload)
    best: dict[tuple[str, str, str, bool], Priced] = {}
    for offer in catalog.screened.offers:
        if not allowed(workload, offer):
            continue
        group_key = (
            offer.gpu_id,
            offer.gpu_count,
            offer.intra_node,
            offer.fabric,
            offer.fabric_gbps,
            offer.ram_gib,
            offer.provider,
            offer.spot,
        )
        if group_key not in groups:
            plan = shapes.plan(offer)
            group: tuple[Plan, Economics] | None = None
            if plan is not None:
                rule = rules.get(offer.provider.lower(), rule_for(offer.provider))
                econ = economics(
                    workload,
                    plan,
                    rule=rule,
                    spot=offer.spot,
                    tokens_per_hour=shapes.tokens_per_hour(offer),
                    checkpoint_size_gib=ckpt,
                    gpu_id=offer.gpu_id,
                )
                group = (plan, econ)
            groups[group_key] = group
        found = groups[group_key]
        if found is None:
            continue
        plan, econ = found
        expected = econ.expected_cost_usd(offer.price_usd_per_hour)
        zone_key = (offer.provider, offer.instance_type, offer.region, offer.spot)
        current = best.get(zone_key)
        if (
            current is None
            or expected < current.expected_cost_usd
            or (expected == current.expected_cost_usd and offer.zone < current.offer.zone)
        ):
            best[zone_key] = Priced(offer, plan, econ, expected)
    return _one_region_per_price(list(best.values()))


def _one_region_per_price(priced: list[Priced]) -> list[Priced]:
    """One offer per (provider, instance, spot, expected cost): the first region by name,
    with a caveat naming how many regions list it at that price."""
    same: dict[tuple[str, str, bool, float], list[Priced]] = {}
    for p in priced:
        o = p.offer
        same.setdefault((o.provider, o.instance_type, o.spot, p.expected_cost_usd), []).append(p)
    first = {
        key: min(group, key=lambda g: (g.offer.region, g.offer.zone)) for key, group in same.items()
    }
    out: list[Priced] = []
    for p in priced:
        o = p.offer
        key = (o.provider, o.instance_type, o.spot, p.expected_cost_usd)
        if p is not first[key]:
            continue
        group = same[key]
        if len(group) > 1:
            regions = sorted({g.offer.region for g in group})
            shown = ", ".join(regions[:4]) + (", …" if len(regions) > 4 else "")
            note = Caveat(
                CaveatKind.ZONE,
                Severity.INFO,
                f"same price in {len(regions)} regions ({shown}); {o.region} shown",
            )
            p = p._replace(caveats=(*p.caveats, note))
        out.append(p)
    return out


def shape_plan(search: LayoutSearch, offer: Offer) -> Plan | None:
    """The fewest whole nodes of the offer's instance shape the job fits on, more than one
    only over a fast fabric; a GPU count the workload names is evaluated as is."""
    return search.fit_on_nodes(
        get_gpu(offer.gpu_id),
        gpus_per_node=offer.gpu_count,
        max_nodes=MAX_NODES,
        multi_node=offer.fabric.fast,
        host_ram_gib=offer.ram_gib,
    )
