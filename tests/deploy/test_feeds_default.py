"""Live by default: compose, the k8s ConfigMap and .env.example set GPUFIT_FEEDS to SkyPilot's
public catalogs, one ``<cloud>=…/catalogs/v8/<cloud>/vms.csv`` per cloud gpufit reads, and
each of those clouds has real-row fixtures the adapters are tested on."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bot.settings import Settings
from recommender.feeds.skypilot import CLOUDS, cloud_from_location
from recommender.feeds.sources import FeedSource

yaml = pytest.importorskip("yaml", reason="pyyaml (test extra) parses the deploy files")

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
CATALOG_URL = re.compile(
    r"https://raw\.githubusercontent\.com/skypilot-org/skypilot-catalog/master/catalogs/v8/"
    r"(?P<cloud>[a-z]+)/vms\.csv"
)


def _compose_default() -> str:
    env = yaml.safe_load((DEPLOY / "docker-compose.yml").read_text())["x-gpufit"]["environment"]
    match = re.fullmatch(r"\$\{GPUFIT_FEEDS-(.*)\}", env["GPUFIT_FEEDS"])
    assert match, "compose gives a default only when GPUFIT_FEEDS is unset"
    return match.group(1)


def _env_example() -> str:
    for line in (DEPLOY / ".env.example").read_text().splitlines():
        if line.startswith("GPUFIT_FEEDS="):
            return line.partition("=")[2]
    raise AssertionError("no GPUFIT_FEEDS in .env.example")


def _configmap() -> str:
    for doc in yaml.safe_load_all((DEPLOY / "k8s" / "configmap.yaml").read_text()):
        if doc and doc.get("kind") == "ConfigMap":
            return str(doc["data"]["GPUFIT_FEEDS"])
    raise AssertionError("no ConfigMap")


@pytest.mark.parametrize("read", [_compose_default, _env_example, _configmap])
def test_feeds_are_the_public_skypilot_catalogs(read: object) -> None:
    assert callable(read)
    feeds = Settings.from_env({"GPUFIT_FEEDS": read()}).feeds
    sources = [FeedSource.parse(spec) for spec in feeds]
    names = [s.name for s in sources]
    assert len(names) == len(set(names))
    fixtures = {p.parent.name for p in (ROOT / "tests/feeds/data/catalogs/v8").glob("*/vms.csv")}
    for source in sources:
        (url,) = source.locations
        match = CATALOG_URL.fullmatch(url)
        assert match, url
        assert source.name == match["cloud"] == source.provider == cloud_from_location(url)
        assert source.name in CLOUDS
        assert source.name in fixtures, f"{source.name}: no real-row fixture"
    assert set(names) == fixtures, "every cloud tested on real rows is fetched live"


def test_all_three_agree() -> None:
    values = {_compose_default(), _env_example(), _configmap().replace(", ", ",")}
    assert len(values) == 1
