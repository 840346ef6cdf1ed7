"""Feed ingest (parse + normalise into offers) of SkyPilot-format files vs pandas.read_csv.

Run: ``.venv/bin/python bench/ingest.py``. pandas is only the baseline (not a gpufit
dependency): ``.venv/bin/pip install pandas``. Measures the synthetic 2k/20k-row documents of
bench/synth.py and the real files in ``../shared/data/skypilot-catalog`` when present. The
Redis write of the cache layer is not included here (see docs/benchmarks.md).
"""

from __future__ import annotations

import io
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import SHARED_DATA, machine, measure
from bench.synth import AS_OF, synthetic_documents
from bot.catalog import catalog_from_parsed
from recommender.feeds.detect import parse_any

TARGET_RATIO = 3.0


def _ours(docs: dict[str, list[str]]) -> int:
    n = 0
    for cloud, texts in docs.items():
        feed = parse_any(texts, source=f"skypilot-{cloud}", provider=cloud, as_of=AS_OF)
        n += len(catalog_from_parsed(f"skypilot-{cloud}", feed))
    return n


def _pandas(docs: dict[str, list[str]]) -> int:
    import pandas

    return sum(len(pandas.read_csv(io.StringIO(t))) for texts in docs.values() for t in texts)


def main() -> int:
    print(f"machine: {machine()}")
    sets: list[tuple[str, dict[str, list[str]]]] = [
        (f"synthetic {rows} rows", {c: [t] for c, t in synthetic_documents(rows).items()})
        for rows in (2_000, 20_000)
    ]
    folder = SHARED_DATA / "skypilot-catalog"
    if folder.is_dir():
        files = {
            "aws": ["aws_gpu_vms.csv"],
            "gcp": ["gcp_gpu_host_vms.csv", "gcp_gpu_vms.csv"],
            "lambda": ["lambda_gpu_vms.csv"],
            "nebius": ["nebius_gpu_vms.csv"],
            "runpod": ["runpod_gpu_vms.sample.csv"],
        }
        sets.append(
            (
                "shared SkyPilot files",
                {c: [(folder / n).read_text() for n in names] for c, names in files.items()},
            )
        )
    try:
        import pandas  # noqa: F401
    except ImportError:
        print("pandas not installed (.venv/bin/pip install pandas): baseline skipped")
        return 0
    for label, docs in sets:
        rows = sum(t.count("\n") for ts in docs.values() for t in ts)
        ours = measure(lambda d=docs: _ours(d), runs=5, warmup=1)
        base = measure(lambda d=docs: _pandas(d), runs=5, warmup=1)
        ratio = ours.p50_s / base.p50_s
        print(f"\n== {label}: ~{rows} rows, {_ours(docs)} offers")
        print(f"  gpufit parse+normalise {ours.ms()}  ({ours.p50_s / rows * 1e6:.1f} µs/row)")
        print(f"  pandas.read_csv        {base.ms()}")
        verdict = "met" if ratio <= TARGET_RATIO else "NOT met"
        print(f"  ratio ×{ratio:.2f} (target ≤ ×{TARGET_RATIO}: {verdict})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
