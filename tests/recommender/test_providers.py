"""The provider registry: one module per cloud, and every registered cloud honoured.

A new cloud is one module in recommender/providers/ (plus its line in the registry's list):
these tests then check it is registered, complete, named in questions ("<cloud> only"),
accepted by ``--provider``, read from each catalog that lists it, and named when a question
asks for it and no catalog prices it.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from bot.cli import main
from recommender import WorkloadError, parse_workload, providers_named, recommend
from recommender import providers as registry
from recommender.feeds.gpuhunt import provider_from_location
from recommender.feeds.skypilot import cloud_from_location
from recommender.pricing.offers import Fabric
from recommender.providers import GPUHUNT, PROVIDERS, SKYPILOT
from tests.factories import NOW, catalog, offer

PACKAGE = Path(registry.__file__).parent
#: The registry's own modules, not clouds.
NOT_CLOUDS = {"__init__", "base"}
IDS = sorted(PROVIDERS)
#: A question the tests narrow to one cloud; small enough for a single mid-range GPU.
QUESTION = "7B lora on 1B tokens"


def _offer_on(provider_id: str) -> object:
    return offer(
        provider=provider_id,
        instance_type=f"{provider_id}-8xh100",
        fabric=Fabric.NONE,
        fabric_gbps=None,
        price_usd_per_hour=20.0,
    )


class TestRegistry:
    def test_every_module_in_the_package_is_a_registered_cloud(self) -> None:
        """A cloud module left out of the registry's list would be silently ignored."""
        modules = {p.stem for p in PACKAGE.glob("*.py")} - NOT_CLOUDS
        registered = {m.__name__.rsplit(".", 1)[1] for m in registry._MODULES}
        assert modules == registered

    @pytest.mark.parametrize("pid", IDS)
    def test_each_cloud_is_complete(self, pid: str) -> None:
        """Its billing rule is its own and cites a source and a date; it has a name, a
        spelling for questions, and a catalog or a launch target to be useful at all."""
        p = PROVIDERS[pid]
        assert p.billing.provider == pid
        assert p.billing.source
        assert p.billing.as_of.year >= 2025
        assert p.name
        assert p.words
        assert p.catalogs or p.skypilot_cloud
        if p.spot.notice_s is not None:
            assert p.spot.notice_source
        if p.network_tier is not None:
            assert p.network_note.strip()

    def test_a_spelling_names_one_cloud(self) -> None:
        """No spelling of one cloud is taken by another (an alias would filter both)."""
        words = registry.text_words()
        assert all(len(ids) == 1 for ids in words.values()), words

    def test_each_catalog_name_maps_back_to_one_id(self) -> None:
        for catalog_name in (SKYPILOT, GPUHUNT):
            for name in registry.catalog_names(catalog_name):
                pid = registry.from_catalog(catalog_name, name)
                assert pid is not None
                assert name in PROVIDERS[pid].catalogs[catalog_name]

    def test_gpuhunt_digitalocean_is_the_billing_tables_do(self) -> None:
        """gpuhunt says ``digitalocean`` where SkyPilot and the billing rule say ``do``."""
        assert provider_from_location("https://x.example/v3/digitalocean.csv") == "do"
        assert cloud_from_location("catalogs/v7/do/vms.csv") == "do"
        assert registry.rule_for("do") is PROVIDERS["do"].billing
        assert provider_from_location("datacrunch.csv") == "verda"  # renamed in 2025

    def test_an_unknown_cloud_gets_the_conservative_record(self) -> None:
        p = registry.get("some-new-cloud")
        assert p.billing.known is False
        assert p.skypilot_cloud is None
        assert p.fabric("x", 8) == (Fabric.NONE, None)

    def test_fabrics_and_launch_come_from_the_cloud_module(self) -> None:
        assert registry.fabric_for("aws", "p5.48xlarge", 8) == (Fabric.EFA, 3200.0)
        assert registry.fabric_for("nebius", "gpu-h200-sxm_8gpu-128vcpu", 8)[0] is (
            Fabric.INFINIBAND
        )
        assert registry.fabric_for("lambda", "gpu_8x_h100_sxm5", 8) == (Fabric.ETHERNET, None)
        assert registry.skypilot_cloud("do") == "do"
        assert registry.skypilot_cloud("jarvislabs") is None


class TestEveryCloudIsHonoured:
    @pytest.mark.parametrize("pid", IDS)
    def test_each_spelling_only_keeps_that_cloud(self, pid: str) -> None:
        """ "<spelling> only" in a question keeps that cloud's offers and no other's."""
        other = "gcp" if pid == "aws" else "aws"
        offers = catalog(_offer_on(pid), _offer_on(other))  # type: ignore[arg-type]
        for word in PROVIDERS[pid].words:
            w = parse_workload(f"{QUESTION} {word} only", now=NOW)
            assert w.providers == {pid}, word
            assert not w.ignored, word
            rec = recommend(w, offers, now=NOW)
            assert rec.options, word
            assert {o.offer.provider for o in rec.options} == {pid}, word

    @pytest.mark.parametrize("pid", IDS)
    def test_a_cloud_without_a_priced_offer_is_named(self, pid: str) -> None:
        """Asked for, and absent from every catalog: the answer says so and names it."""
        other = "gcp" if pid == "aws" else "aws"
        w = parse_workload(f"{QUESTION} {PROVIDERS[pid].words[0]} only", now=NOW)
        rec = recommend(w, catalog(_offer_on(other)), now=NOW)  # type: ignore[arg-type]
        assert rec.options == ()
        named = PROVIDERS[pid].name if PROVIDERS[pid].name.lower() != pid else pid
        assert any(f"no loaded catalog has prices from {named}" in r for r in rec.empty_reasons)

    @pytest.mark.parametrize("pid", IDS)
    def test_provider_option_takes_every_name(self, pid: str) -> None:
        """``--provider`` takes a cloud's id, its catalog names and its spellings."""
        p = PROVIDERS[pid]
        names = {pid, *p.words, *(n for names in p.catalogs.values() for n in names)}
        for name in names:
            assert providers_named([name]) == {pid}, name

    def test_an_unknown_provider_name_is_refused_with_the_list(self) -> None:
        with pytest.raises(WorkloadError) as err:
            providers_named(["nope-cloud"])
        assert "nope-cloud" in str(err.value)
        assert err.value.hint is not None
        assert err.value.hint.startswith("Clouds gpufit knows: aws, gcp, azure")


def _feed(path: Path, provider_ids: list[str]) -> Path:
    """A native feed with one 8×H100 offer on each of ``provider_ids``."""
    offers = [
        {
            "provider": pid,
            "instance_type": f"{pid}-8xh100",
            "gpu": "H100-SXM-80GB",
            "gpu_count": 8,
            "price_usd_per_hour": 20.0,
            "spot": False,
            "region": "us-east-1",
        }
        for pid in provider_ids
    ]
    doc = {"format": "gpufit-feed", "version": 1, "as_of": "2026-11-20T00:00:00Z"}
    path.write_text(json.dumps({**doc, "offers": offers}), encoding="utf-8")
    return path


class TestProviderOption:
    def test_every_cloud_is_honoured_by_provider(self, tmp_path: Path) -> None:
        """``gpufit ask --provider <cloud> --json`` on a feed listing every cloud: only that
        cloud's offers come back."""
        feed = _feed(tmp_path / "all.json", IDS)
        for pid in IDS:
            out = _ask(QUESTION, "--provider", pid, "--catalog", str(feed))
            providers = {o["provider"] for o in out["options"]}  # type: ignore[attr-defined, index]
            assert providers == {pid}, pid

    @pytest.mark.parametrize("cloud", ["vultr", "digitalocean", "cudo", "jarvislabs"])
    def test_a_named_cloud_without_offers_is_named(self, tmp_path: Path, cloud: str) -> None:
        feed = _feed(tmp_path / "aws.json", ["aws"])
        out = _ask(QUESTION, "--provider", cloud, "--catalog", str(feed))
        assert out["options"] == []
        pid = registry.canonical(cloud)
        assert pid is not None
        name = PROVIDERS[pid].name
        named = name if name.lower() != pid else pid
        assert any(f"prices from {named}" in r for r in out["empty_reasons"]), out

    def test_an_unknown_provider_exits_2_with_the_list(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        feed = _feed(tmp_path / "aws.json", ["aws"])
        code = main(["ask", QUESTION, "--provider", "nope", "--catalog", str(feed)])
        assert code == 2
        assert "Clouds gpufit knows: aws" in capsys.readouterr().err


def _ask(*argv: str) -> dict[str, object]:
    import io

    out = io.StringIO()
    assert main(["ask", *argv, "--json"], out=out) == 0
    doc: dict[str, object] = json.loads(out.getvalue())
    return doc


def test_replace_keeps_the_other_filters() -> None:
    """``--provider`` replaces the clouds only: spot and regions stay as asked."""
    w = parse_workload(f"{QUESTION} aws only no spot in eu", now=NOW)
    narrowed = replace(w, providers=providers_named(["do"]))
    assert narrowed.providers == {"do"}
    assert (narrowed.spot, narrowed.regions) == (w.spot, w.regions)


def test_a_question_that_leaves_one_cloud_out_is_described_by_it() -> None:
    """ "no aws" keeps every other registered cloud: the answer says "all but aws", not 31
    names; a cloud or two named are listed as named."""
    everything = frozenset(registry.PROVIDERS)
    assert registry.described(everything - {"aws"}) == "all but aws"
    assert registry.described(everything - {"aws", "gcp"}) == "all but aws, gcp"
    assert registry.described(everything) == "all"
    assert registry.described({"cudo"}) == "cudo"
    assert registry.described({"lambda", "aws"}) == "aws, lambda"
