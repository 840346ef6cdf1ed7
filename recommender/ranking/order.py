"""The rank order an objective gives (:mod:`recommender.ranking.objective`): the key every option
and priced offer is sorted by, the sure on-demand plan spot is measured against, the line
that says what spot's risk buys, the diversification of the options shown, and the fastest
sensible and cheapest plans named beside the first."""

from __future__ import annotations

from collections.abc import Iterable

from recommender.pricing.costing import Option, per_btok
from recommender.pricing.offers import OWNED_PROVIDER
from recommender.ranking.caveats import Caveat, CaveatKind, Severity
from recommender.ranking.objective import PlanObjective, too_risky
from recommender.ranking.selection import FASTEST_COST_FACTOR

__all__ = [
    "diversify",
    "fastest_and_cheapest",
    "rank",
    "rank_key",
    "spot_risk",
    "sure_cost",
]


#: The fastest sensible plan is named beside the first when it takes at most this share of
#: the first's hours; the cheapest when it costs at most this share of the first's cost
#: (ours: a fifth faster, a tenth cheaper — less is not worth a second line).
_FASTER_SHARE = 0.8
_CHEAPER_SHARE = 0.9


def _score(item: Option, objective: PlanObjective | None) -> float:
    """The objective's score (:meth:`PlanObjective.score`); without an objective, the
    expected cost per billion tokens."""
    if objective is None:
        return per_btok(item.expected_cost_usd, item.tokens)
    return objective.score(
        expected_cost_usd=item.expected_cost_usd,
        worst_cost_usd=item.spot_worst_cost_usd,
        wall_hours=item.finish_hours,
        worst_wall_hours=item.spot_worst_finish_hours,
        tokens=item.tokens,
    )


def rank_key(
    item: Option, objective: PlanObjective | None = None, sure_cost_usd: float | None = None
) -> tuple[float | str | int, ...]:
    """The rank order: plans that keep the memory safety margin before those that do not;
    then offers whose price the catalog's sanity checks do not doubt (an outlier or an
    opt-in zone is shown, after every sound price); then options that meet the deadline
    (spot by its pessimistic hours), the rest by time to finish; the team's own GPUs before
    rented ones; spot plans whose worst case costs far more than the sure on-demand plan
    (``sure_cost_usd``, :func:`~recommender.ranking.objective.too_risky`) after the others; then the
    objective's score (:meth:`PlanObjective.score`: cost, time at its value and spot's
    worst case; per billion tokens when options train different amounts).

    Ties go to the lower total, the lower cluster price, the faster run, more memory
    headroom, then the offer's provider, instance type, region, zone and spot flag.
    """
    late = not item.meets_deadline
    o = item.offer
    risky = o.spot and too_risky(_unit(item.spot_worst_cost_usd, item, objective), sure_cost_usd)
    return (
        int(not item.plan.safe),
        int(item.doubtful),
        int(late),
        item.pessimistic_finish_hours if late else 0.0,
        int(o.provider != OWNED_PROVIDER),
        int(risky),
        _score(item, objective),
        item.expected_cost_usd,
        item.price_usd_per_hour,
        item.finish_hours,
        -item.plan.headroom_frac,
        o.provider,
        o.instance_type,
        o.region,
        o.zone,
        int(o.spot),
    )


def rank(
    options: Iterable[Option],
    objective: PlanObjective | None = None,
    sure_cost_usd: float | None = None,
) -> list[Option]:
    """Options (or priced offers) in rank order (see :func:`rank_key`)."""
    return sorted(options, key=lambda item: rank_key(item, objective, sure_cost_usd))


def _unit(cost_usd: float, item: Option, objective: PlanObjective | None) -> float:
    """A cost in the unit options are compared in: per billion tokens when they train
    different amounts (:attr:`PlanObjective.per_token`), else the total."""
    if objective is None or objective.per_token:
        return per_btok(cost_usd, item.tokens)
    return cost_usd


def sure_cost(items: Iterable[Option], objective: PlanObjective | None = None) -> float | None:
    """The expected cost (in the objective's unit, :func:`_unit`) of the cheapest sure plan:
    on demand, keeping the memory margin, with a sound price, meeting the deadline; ``None``
    when there is none."""
    costs = [
        _unit(i.expected_cost_usd, i, objective)
        for i in items
        if not i.offer.spot and i.plan.safe and not i.doubtful and i.meets_deadline
    ]
    return min(costs) if costs else None


def diversify(ranked: list[Option], top: int) -> list[Option]:
    """Pick ``top`` of the ``ranked``, preferring a new (GPU type, provider) pair over a
    better price: the best of each pair first, in rank order; what is left is filled in rank
    order. Five regions of one instance never crowd out a different GPU or a different cloud.
    """
    pairs: set[tuple[str, str]] = set()
    chosen: list[int] = []
    for i, item in enumerate(ranked):
        pair = (item.offer.gpu_id, item.offer.provider)
        if pair not in pairs:
            pairs.add(pair)
            chosen.append(i)
    chosen = chosen[:top]
    picked = set(chosen)
    for i in range(len(ranked)):
        if len(chosen) >= top:
            break
        if i not in picked:
            chosen.append(i)
    return [ranked[i] for i in sorted(chosen)]


def spot_risk(priced: Option, sure: float | None, objective: PlanObjective) -> tuple[Caveat, ...]:
    """What a spot plan's risk buys, against the sure on-demand plan (its expected cost
    ``sure``, in the objective's unit): one line, high severity when its worst case costs
    far more."""
    if not priced.offer.spot or sure is None or priced.econ.spot is None:
        return ()
    # Against the sure plan's cost for this plan's work.
    sure_usd = sure * priced.tokens / 1e9 if objective.per_token else sure
    saves = sure_usd - priced.expected_cost_usd
    worst = priced.spot_worst_cost_usd - priced.expected_cost_usd
    days = (priced.spot_worst_finish_hours - priced.finish_hours) / 24
    head = f"saves ${saves:,.0f} expected" if saves >= 0 else f"costs ${-saves:,.0f} more"
    text = (
        f"spot against the best on-demand plan: {head}; worst case +${worst:,.0f}, +{days:.1f} days"
    )
    if too_risky(_unit(priced.spot_worst_cost_usd, priced, objective), sure):
        return (
            Caveat(
                CaveatKind.SPOT_RISK,
                Severity.HIGH,
                text + " — its worst case costs far more than the sure plan: ranked below it",
            ),
        )
    return (Caveat(CaveatKind.SPOT_RISK, Severity.INFO, text),)


def fastest_and_cheapest(
    chosen: list[Option],
    scaled: list[Option],
    ranked: list[Option],
    objective: PlanObjective,
    sure: float | None,
) -> tuple[Option | None, Option | None]:
    """The fastest sensible plan (costing at most FASTEST_COST_FACTOR × the first, meeting
    the deadline, sound, with the memory margin, spot only within its worst-case limit) and
    the cheapest, each when it differs enough from the first to be worth a line."""
    if not chosen:
        return None, None
    first = chosen[0]

    def sensible(p: Option) -> bool:
        risky = p.offer.spot and too_risky(_unit(p.spot_worst_cost_usd, p, objective), sure)
        return p.plan.safe and not p.doubtful and p.meets_deadline and not risky

    def unit(cost: float, tokens: float) -> float:
        return per_btok(cost, tokens) if objective.per_token else cost

    first_unit = unit(first.expected_cost_usd, first.tokens)
    quick = [
        p
        for p in scaled
        if sensible(p) and unit(p.expected_cost_usd, p.tokens) <= FASTEST_COST_FACTOR * first_unit
    ]

    def hours(wall: float, tokens: float) -> float:  # per billion tokens when work differs
        return per_btok(wall, tokens) if objective.per_token else wall

    fastest = min(
        quick, key=lambda p: (hours(p.finish_hours, p.tokens), p.expected_cost_usd), default=None
    )
    if fastest is not None and hours(fastest.finish_hours, fastest.tokens) > (
        _FASTER_SHARE * hours(first.finish_hours, first.tokens)
    ):
        fastest = None
    cheap = [p for p in ranked if sensible(p) and p.offer != first.offer]
    cheapest = min(cheap, key=lambda p: unit(p.expected_cost_usd, p.tokens), default=None)
    if cheapest is not None and unit(cheapest.expected_cost_usd, cheapest.tokens) > (
        _CHEAPER_SHARE * first_unit
    ):
        cheapest = None
    return fastest, cheapest
