"""Offer: the fast builder for many offers of one instance shape behaves like the constructor."""

from __future__ import annotations

import copy
import pickle
from dataclasses import FrozenInstanceError, asdict, fields, replace

import pytest

from recommender.gpus import IntraNode
from recommender.offers import Offer
from tests.factories import offer


def _shape() -> Offer:
    """An offer with every field set (the factory's, plus the optional ones)."""
    return offer(
        price_usd_per_hour=98.32,
        gpu_memory_gib=80.0,
        vcpus=192.0,
        ram_gib=2048.0,
        intra_node=IntraNode.NVLINK,
        fabric_gbps=3200.0,
        source="aws",
        citation="SkyPilot catalog aws/vms.csv",
    )


class TestPriced:
    def test_equals_replace(self) -> None:
        """priced() gives the offer dataclasses.replace would: equal, same hash, same repr."""
        shape = _shape()
        built = shape.priced(31.5, True, "us-west-2", "usw2-az1")
        expected = replace(
            shape, price_usd_per_hour=31.5, spot=True, region="us-west-2", zone="usw2-az1"
        )
        assert type(built) is Offer
        assert built == expected
        assert hash(built) == hash(expected)
        assert repr(built) == repr(expected)
        assert asdict(built) == asdict(expected)

    def test_result_is_frozen(self) -> None:
        """The built offer cannot be changed, like any Offer."""
        built = _shape().priced(31.5, True, "us-west-2", "usw2-az1")
        with pytest.raises(FrozenInstanceError):
            built.zone = "elsewhere"  # type: ignore[misc]

    def test_copies_and_pickles_as_an_offer(self) -> None:
        """copy and pickle round-trip the built offer to an equal Offer."""
        built = _shape().priced(31.5, False, "eu-west-1", "")
        assert pickle.loads(pickle.dumps(built)) == built
        assert copy.copy(built) == built
        assert type(copy.deepcopy(built)) is Offer

    @pytest.mark.parametrize("price", [0.0, -1.0, 10_000.0, float("nan"), float("inf")])
    def test_checks_the_price_as_the_constructor_does(self, price: float) -> None:
        """An implausible price is refused with the constructor's message."""
        shape = _shape()
        with pytest.raises(ValueError, match="implausible price") as built:
            shape.priced(price, False, "us-east-1", "")
        with pytest.raises(ValueError, match="implausible price") as constructed:
            replace(shape, price_usd_per_hour=price)
        assert str(built.value) == str(constructed.value)

    def test_a_subclass_gets_its_own_type_back(self) -> None:
        """On a subclass of Offer, priced() is dataclasses.replace (its type and checks kept)."""

        class Labelled(Offer):
            __slots__ = ()

        shape = Labelled(**{f.name: getattr(_shape(), f.name) for f in fields(Offer)})
        built = shape.priced(31.5, True, "us-west-2", "usw2-az1")
        assert type(built) is Labelled
        assert built == replace(
            shape, price_usd_per_hour=31.5, spot=True, region="us-west-2", zone="usw2-az1"
        )
