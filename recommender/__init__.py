"""gpufit's pure domain: text → Workload → estimate → ranked Recommendation."""
