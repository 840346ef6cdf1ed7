"""gpufit's pure domain: text → Workload → estimate → ranked Recommendation.

Nothing in this package (outside :mod:`recommender.feeds`) does I/O, reads the environment
or the clock; callers pass ``now`` in. ``bot/`` uses only the names exported here.
"""

from recommender.catalog import Catalog
from recommender.caveats import Caveat, CaveatKind, Severity
from recommender.errors import (
    CatalogError,
    GpufitError,
    NoFeasibleOptionError,
    PriceFeedError,
    StoreError,
    UnknownGpuError,
    WorkloadError,
)
from recommender.estimate import Estimate, estimate
from recommender.gpus import GpuSpec, IntraNode, all_gpus, get_gpu, normalize, try_normalize
from recommender.launch import LaunchSpec, launch_spec
from recommender.launch_readme import launch_command
from recommender.launch_text import LaunchFiles, launch_files
from recommender.market import GpuPrices, PriceRow, gpu_prices, split_gpus
from recommender.models import Architecture, lookup_model
from recommender.objective import ObjectiveKind, PlanObjective
from recommender.offers import Fabric, Offer, SourceInfo, offers_for_key
from recommender.parse import parse_workload, reads_calendar
from recommender.ranking import (
    Alternative,
    BudgetGap,
    HoursBasis,
    Option,
    Recommendation,
    Reference,
    Work,
    recommend,
)
from recommender.steptime import TimeBreakdown
from recommender.throughput import Network, time_breakdown
from recommender.topology import Plan
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
    "NoFeasibleOptionError",
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
    "reads_calendar",
    "recommend",
    "split_gpus",
    "time_breakdown",
    "try_normalize",
]
