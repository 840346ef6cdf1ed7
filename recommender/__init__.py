"""gpufit's pure domain: text → Workload → estimate → ranked Recommendation.

Nothing in this package (outside :mod:`recommender.feeds`) does I/O, reads the environment
or the clock; callers pass ``now`` in. ``bot/`` uses only the names exported here.
"""

from recommender.errors import (
    CatalogError,
    GpufitError,
    PriceFeedError,
    StoreError,
    UnknownGpuError,
    WorkloadError,
)
from recommender.estimation.estimate import Estimate, estimate
from recommender.estimation.steptime import TimeBreakdown
from recommender.estimation.throughput import Network, time_breakdown
from recommender.estimation.topology import Plan
from recommender.gpus import GpuSpec, IntraNode, all_gpus, get_gpu, normalize, try_normalize
from recommender.hf_config import architecture_from_config
from recommender.launch.files import LaunchFiles, launch_files
from recommender.launch.readme import launch_command
from recommender.launch.spec import LaunchSpec, launch_spec
from recommender.models import Architecture, lookup_model
from recommender.parsing.parse import parse_workload, reads_calendar
from recommender.pricing.catalog import Catalog
from recommender.pricing.market import GpuPrices, PriceRow, gpu_prices, split_gpus
from recommender.pricing.offers import Fabric, Offer, SourceInfo, offers_for_key
from recommender.providers import described as providers_described
from recommender.providers import named as providers_named
from recommender.ranking.caveats import Caveat, CaveatKind, Severity
from recommender.ranking.objective import ObjectiveKind, PlanObjective
from recommender.ranking.recommend import (
    Alternative,
    BudgetGap,
    HoursBasis,
    Option,
    Recommendation,
    Reference,
    Work,
    recommend,
)
from recommender.units import hours_text
from recommender.workload import (
    HardwareRequest,
    Method,
    Objective,
    Offload,
    Optimizer,
    Phrase,
    Precision,
    Sharding,
    SpotPolicy,
    Workload,
)

__all__ = [
    "Alternative",
    "Architecture",
    "BudgetGap",
    "Catalog",
    "CatalogError",
    "Caveat",
    "CaveatKind",
    "Estimate",
    "Fabric",
    "GpuPrices",
    "GpuSpec",
    "GpufitError",
    "HardwareRequest",
    "HoursBasis",
    "IntraNode",
    "LaunchFiles",
    "LaunchSpec",
    "Method",
    "Network",
    "Objective",
    "ObjectiveKind",
    "Offer",
    "Offload",
    "Optimizer",
    "Option",
    "Phrase",
    "Plan",
    "PlanObjective",
    "Precision",
    "PriceFeedError",
    "PriceRow",
    "Recommendation",
    "Reference",
    "Severity",
    "Sharding",
    "SourceInfo",
    "SpotPolicy",
    "StoreError",
    "TimeBreakdown",
    "UnknownGpuError",
    "Work",
    "Workload",
    "WorkloadError",
    "all_gpus",
    "architecture_from_config",
    "estimate",
    "get_gpu",
    "gpu_prices",
    "hours_text",
    "launch_command",
    "launch_files",
    "launch_spec",
    "lookup_model",
    "normalize",
    "offers_for_key",
    "parse_workload",
    "providers_described",
    "providers_named",
    "reads_calendar",
    "recommend",
    "split_gpus",
    "time_breakdown",
    "try_normalize",
]
