"""recommend() over catalogs of 2k, 20k and 200k offers, beside gpuhunt's Catalog.query.

Run: ``.venv/bin/python bench/recommend.py`` (``--quick`` skips the 200k catalog).

Catalogs are SkyPilot ``vms.csv`` rows generated per cloud (bench/synth.py), parsed with
gpufit's adapter; the real SkyPilot files in ``../shared/data/skypilot-catalog`` are measured
too when present. Each question is timed cold (the first call on a catalog, which builds the
catalog's index) and warm (steady state: the bot keeps its catalog between questions), warm
twice: as a new model setup (its layout search made anew) and with its setup known (the
search shared with an earlier question of the same setup, as a follow-up gets it).
The baseline is gpuhunt's ``Catalog.query`` (offline: ``GPUHUNT_CATALOG_DIR`` pointing at the
same offers written in gpuhunt's CSV format), which reads its catalog files on every query.

gpuhunt is not a gpufit dependency, and its wheel installs a top-level ``tests`` package that
would shadow the project's tests, so keep it out of the venv: install it into a side folder
(``.venv/bin/pip install --target DIR gpuhunt``) and point ``GPUFIT_BENCH_DEPS`` at it; the
default DIR is ``gpufit-bench-deps`` in the system's temporary directory.
"""

from __future__ import annotations

import csv
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import machine, measure, shared_skypilot_texts
from bench.synth import NOW, synthetic_catalog
from bot.catalog import catalog_from_parsed, merge
from recommender import Catalog, Recommendation, Workload, get_gpu, parse_workload, recommend
from recommender.feeds.detect import parse_any
from recommender.feeds.gpuhunt import GPUHUNT_COLUMNS
from recommender.topology import clear_layout_searches

QUESTIONS = (
    "13B full finetune 2 days",
    "7B lora",
    "llama-3-70b qlora on 2B tokens under $3,000",
    "70B pretrain on 1T tokens in 30 days",
    "13b full finetune under $100",
)
TARGET_MS_AT_2K = 2.0
_GPUHUNT_PROVIDER = {"lambda": "lambdalabs"}


def answer(workload: Workload, catalog: Catalog) -> Recommendation:
    """``recommend()`` with everything it computes when read (the options' memory breakdowns
    and notes, the smallest layouts) read, as the JSON answer reads them."""
    rec = recommend(workload, catalog, now=NOW)
    for option in rec.options:
        _ = option.plan.notes, option.plan.memory
    _ = rec.layouts
    return rec


def fresh(workload: Workload, catalog: Catalog) -> Recommendation:
    """:func:`answer` for a question whose model setup no earlier question shared."""
    clear_layout_searches()
    return answer(workload, catalog)


def shared_catalog() -> Catalog | None:
    """The real SkyPilot files beside the repository, parsed as the feeds would."""
    shared = shared_skypilot_texts()
    if shared is None:
        return None
    parts = []
    for cloud, texts in shared.items():
        name = f"skypilot-{cloud}"
        feed = parse_any(texts, source=name, provider=cloud, as_of=NOW)
        parts.append(catalog_from_parsed(name, feed))
    return merge(parts) if parts else None


def write_gpuhunt(catalog: Catalog, folder: Path) -> list[str]:
    """The catalog's offers as gpuhunt ``<provider>.csv`` files; returns the provider names."""
    by_provider: dict[str, list[list[str]]] = {}
    for o in catalog.offers:
        gpu = get_gpu(o.gpu_id)
        provider = _GPUHUNT_PROVIDER.get(o.provider, o.provider)
        by_provider.setdefault(provider, []).append(
            [
                o.instance_type,
                o.zone or o.region,
                f"{o.price_usd_per_hour}",
                f"{int(o.vcpus or 8)}",
                f"{o.ram_gib or 64}",
                f"{o.gpu_count}",
                gpu.name.split()[0].split("-")[0],
                f"{gpu.memory_gb}",
                "True" if o.spot else "False",
                "",
                "nvidia",
                "",
                "x86",
                "",
            ]
        )
    header = list(GPUHUNT_COLUMNS)
    for provider, rows in by_provider.items():
        with (folder / f"{provider}.csv").open("w", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(header)
            writer.writerows(rows)
    return sorted(by_provider)


def _import_gpuhunt() -> object:
    deps = os.environ.get(
        "GPUFIT_BENCH_DEPS", str(Path(tempfile.gettempdir()) / "gpufit-bench-deps")
    )
    if Path(deps).is_dir() and deps not in sys.path:
        sys.path.append(deps)
    import gpuhunt

    return gpuhunt


def gpuhunt_query(
    catalog: Catalog,
) -> tuple[Callable[[], object], tempfile.TemporaryDirectory[str]]:
    gpuhunt: Any = _import_gpuhunt()
    folder = tempfile.TemporaryDirectory(prefix="gpufit-bench-gpuhunt-")
    providers = write_gpuhunt(catalog, Path(folder.name))
    os.environ["GPUHUNT_CATALOG_DIR"] = folder.name
    hunt = gpuhunt.Catalog(balance_resources=False, auto_reload=False)

    def query() -> object:
        # What a 13B full fine-tune needs of the hardware: ≥ 40 GB GPUs, any count.
        return hunt.query(provider=providers, min_gpu_memory=40)

    return query, folder


def main(argv: list[str]) -> int:
    quick = "--quick" in argv
    runs = 50 if quick else 200
    print(f"machine: {machine()}")
    print(f"questions: {', '.join(repr(q) for q in QUESTIONS)}")
    workloads = [parse_workload(q) for q in QUESTIONS]
    catalogs: list[tuple[str, Callable[[], Catalog | None]]] = [
        ("2k", lambda: synthetic_catalog(2_000)),
        ("20k", lambda: synthetic_catalog(20_000)),
    ]
    if not quick:
        catalogs.append(("200k", lambda: synthetic_catalog(200_000)))
    catalogs.append(("shared SkyPilot files", shared_catalog))
    medians: dict[str, float] = {}
    medians_shared: dict[str, float] = {}
    for label, make in catalogs:
        catalog = make()
        if catalog is None:
            print(f"\n{label}: not present, skipped")
            continue
        print(f"\n== {label}: {len(catalog)} offers")
        start = time.perf_counter()
        answer(workloads[0], catalog)
        print(
            f"  cold (first question, builds the catalog index): "
            f"{(time.perf_counter() - start) * 1e3:.1f} ms"
        )
        worst = worst_shared = 0.0
        for text, workload in zip(QUESTIONS, workloads, strict=True):
            # A new model setup: the question searches its layouts anew (no shared search).
            result = measure(lambda w=workload, c=catalog: fresh(w, c), runs=runs)
            # The same setup asked before (another duration, budget…): the shared search.
            shared = measure(lambda w=workload, c=catalog: answer(w, c), runs=runs)
            worst = max(worst, result.p50_s)
            worst_shared = max(worst_shared, shared.p50_s)
            print(f"  recommend  {result.ms()}  {text!r}")
            print(f"    setup known: p50 {shared.p50_s * 1e3:.3f} ms")
        medians[label] = worst
        medians_shared[label] = worst_shared
        try:
            query, folder = gpuhunt_query(catalog)
        except ImportError:
            print("  gpuhunt: not importable (see GPUFIT_BENCH_DEPS above); baseline skipped")
            continue
        with folder:
            found = len(query())  # type: ignore[arg-type]
            base = measure(query, runs=max(5, runs // 10 if len(catalog) > 50_000 else runs // 4))
            print(f"  gpuhunt    {base.ms()}  Catalog.query(min_gpu_memory=40) → {found} rows")
            print(f"  ratio: gpufit's slowest question / gpuhunt query = {worst / base.p50_s:.3f}")
    print("\nsummary (slowest question's p50 per catalog; new model setup, then setup known):")
    for label, value in medians.items():
        print(f"  {label:>22}: {value * 1e3:.3f} ms  ({medians_shared[label] * 1e3:.3f} ms)")
    if "2k" in medians and "20k" in medians:
        print(f"  growth 2k → 20k: ×{medians['20k'] / medians['2k']:.2f} for ×10 offers")
    if "20k" in medians and "200k" in medians:
        print(f"  growth 20k → 200k: ×{medians['200k'] / medians['20k']:.2f} for ×10 offers")
    if "2k" in medians:
        met = medians["2k"] * 1e3 <= TARGET_MS_AT_2K
        print(f"  target ≤ {TARGET_MS_AT_2K} ms at 2k: {'met' if met else 'NOT met'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
