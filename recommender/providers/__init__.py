"""The provider registry: one module per cloud, each holding all gpufit knows about it.

A cloud's module (``recommender/providers/<cloud>.py``) defines one
:class:`~recommender.providers.base.Provider`: its names in the price catalogs and in
questions, its billing rule with sources, its spot terms, its fabrics and its launch details.
Parsing ("cudo only"), the feeds (catalog names, fabrics), pricing (billing, spot) and launch
(SkyPilot's cloud, its network tier) all read them from here.

Adding a cloud: write its module, add it to :data:`_MODULES`, and add its test
(tests/recommender/test_providers.py checks every module here is registered and honoured).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType

from recommender.errors import WorkloadError
from recommender.pricing.billing_rules import BillingRule
from recommender.pricing.offers import Fabric
from recommender.providers import (
    aws,
    azure,
    cloudrift,
    coreweave,
    crusoe,
    cudo,
    daytona,
    digitalocean,
    fluidstack,
    gcp,
    hotaisle,
    hyperbolic,
    hyperstack,
    ibm,
    jarvislabs,
    lambdalabs,
    lium,
    mithril,
    nebius,
    oci,
    paperspace,
    primeintellect,
    runpod,
    scp,
    seeweb,
    shadeform,
    spheron,
    tensordock,
    vast,
    verda,
    vultr,
    yotta,
)
from recommender.providers.base import GPUHUNT, SKYPILOT, Provider, unknown_provider

__all__ = [
    "GPUHUNT",
    "PROVIDERS",
    "RULES",
    "SKYPILOT",
    "Provider",
    "canonical",
    "catalog_names",
    "described",
    "fabric_for",
    "from_catalog",
    "get",
    "named",
    "rule_for",
    "skypilot_cloud",
    "text_words",
]

#: Every cloud's module, in the order answers list clouds by (the big three first).
_MODULES = (
    aws, gcp, azure, lambdalabs, runpod, nebius, vast, coreweave, oci, digitalocean, ibm,
    jarvislabs, cudo, daytona, spheron, fluidstack, hyperbolic, hyperstack, lium, mithril,
    paperspace, primeintellect, scp, seeweb, shadeform, verda, yotta, cloudrift, crusoe,
    hotaisle, tensordock, vultr,
)  # fmt: skip

#: Provider id → its record.
PROVIDERS: Mapping[str, Provider] = MappingProxyType({m.PROVIDER.id: m.PROVIDER for m in _MODULES})

#: Provider id → its billing rule.
RULES: Mapping[str, BillingRule] = MappingProxyType({p.id: p.billing for p in PROVIDERS.values()})

#: (catalog, the catalog's name for a cloud) → gpufit's id.
_BY_CATALOG_NAME: Mapping[tuple[str, str], str] = MappingProxyType(
    {
        (catalog, name): p.id
        for p in PROVIDERS.values()
        for catalog, names in p.catalogs.items()
        for name in names
    }
)


def get(provider_id: str) -> Provider:
    """The record of a provider id (any case); an unknown id gets the conservative
    unknown record (:func:`~recommender.providers.base.unknown_provider`)."""
    key = provider_id.lower()
    return PROVIDERS.get(key) or unknown_provider(key)


def rule_for(provider_id: str) -> BillingRule:
    """The billing rule of a provider id, or the conservative unknown one."""
    return get(provider_id).billing


def canonical(name: str) -> str | None:
    """gpufit's id for a registered cloud named by its id or by any catalog's name for it
    (``digitalocean`` → ``do``, ``lambdalabs`` → ``lambda``); ``None`` otherwise."""
    key = name.lower()
    if key in PROVIDERS:
        return key
    return next((pid for (_, alias), pid in _BY_CATALOG_NAME.items() if alias == key), None)


def named(names: Iterable[str]) -> frozenset[str]:
    """The ids of the clouds ``names`` name (an id, a catalog's name or a spelling from a
    question: ``do``, ``digitalocean``, ``"lambda labs"``), as ``--provider`` takes them.

    Raises:
        WorkloadError: a name no registered cloud goes by.
    """
    words = text_words()
    ids: set[str] = set()
    for name in names:
        key = " ".join(name.lower().replace("-", " ").split())
        found = canonical(key) or next(iter(words.get(key, ())), None)
        if found is None:
            raise WorkloadError(
                f"gpufit knows no cloud called {name!r}.",
                hint="Clouds gpufit knows: " + ", ".join(PROVIDERS),
            )
        ids.update(words.get(key, (found,)))
    return frozenset(ids)


def from_catalog(catalog: str, name: str) -> str | None:
    """gpufit's id for a catalog's name of a cloud (gpuhunt's ``digitalocean`` → ``do``);
    ``None`` when no registered cloud goes by that name there."""
    return _BY_CATALOG_NAME.get((catalog, name.lower()))


def catalog_names(catalog: str) -> tuple[str, ...]:
    """Every name a catalog lists clouds under, in registry order."""
    return tuple(name for (cat, name) in _BY_CATALOG_NAME if cat == catalog)


def text_words() -> Mapping[str, tuple[str, ...]]:
    """Each spelling that names a cloud in a question → the ids it names."""
    words: dict[str, tuple[str, ...]] = {}
    for p in PROVIDERS.values():
        for word in p.words:
            words[word] = (*words.get(word, ()), p.id)
    return MappingProxyType(words)


def fabric_for(provider_id: str, instance_type: str, gpu_count: int) -> tuple[Fabric, float | None]:
    """The inter-node fabric (and Gbit/s) of an instance type; ``NONE`` when not known."""
    return get(provider_id).fabric(instance_type, gpu_count)


def skypilot_cloud(provider_id: str) -> str | None:
    """SkyPilot's name for a provider, or ``None`` when SkyPilot has no such cloud."""
    return get(provider_id).skypilot_cloud


def described(ids: Iterable[str]) -> str:
    """A set of provider ids in words: listed, or "all but aws" when it leaves out fewer
    clouds than it keeps (a ``no aws`` question keeps every other registered cloud)."""
    kept = frozenset(ids)
    left_out = [p for p in PROVIDERS if p not in kept]
    if len(left_out) < len(kept & PROVIDERS.keys()):
        return "all but " + ", ".join(left_out) if left_out else "all"
    return ", ".join(sorted(kept))
