"""What a catalog groups once, when it is made: offers that share a plan and economics, the
cheapest zone of each region, and the regions that list an instance at one price."""

from __future__ import annotations

from recommender.pricing.catalog import Catalog
from tests.factories import offer


def test_offers_of_one_shape_provider_and_kind_form_one_group() -> None:
    od = offer()
    other_region = offer(region="us-west-2", price_usd_per_hour=56.0)
    spot = offer(spot=True, price_usd_per_hour=25.0)
    a100 = offer(instance_type="p4de.24xlarge", gpu_id="A100-SXM-80GB", price_usd_per_hour=40.0)
    groups = Catalog.of([od, spot, other_region, a100]).groups
    assert [g.offers for g in groups] == [(od, other_region), (spot,), (a100,)]


def test_each_region_is_its_cheapest_zone_and_regions_at_one_price_are_gathered() -> None:
    zones = [
        offer(region="us-east-1", zone="b", price_usd_per_hour=30.0, spot=True),
        offer(region="us-east-1", zone="a", price_usd_per_hour=30.0, spot=True),
        offer(region="us-east-1", zone="c", price_usd_per_hour=31.0, spot=True),
        offer(region="eu-west-1", zone="a", price_usd_per_hour=30.0, spot=True),
        offer(region="ap-south-1", zone="a", price_usd_per_hour=29.0, spot=True),
    ]
    (group,) = Catalog.of(zones).groups
    points = [[(o.region, o.zone) for o in p.offers] for p in group.prices]
    # us-east-1 at its cheapest zone (on a tie, the first by name) shares 30.0 with
    # eu-west-1 (regions by name); ap-south-1 lists it at another price, and cheaper.
    assert points == [[("ap-south-1", "a")], [("eu-west-1", "a"), ("us-east-1", "a")]]


def test_groups_hold_only_what_the_sanity_screen_keeps() -> None:
    """A spot price at or above on-demand is dropped by the screen, so no group has it."""
    od = offer(price_usd_per_hour=50.0)
    bad_spot = offer(spot=True, price_usd_per_hour=60.0)
    catalog = Catalog.of([od, bad_spot])
    assert [o for g in catalog.groups for o in g.offers] == [od]
    assert catalog.offers == (od, bad_spot)
