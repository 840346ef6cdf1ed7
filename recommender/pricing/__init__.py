"""Pricing: offers and the catalog, what a plan costs under each provider's billing rules,
spot economics, currencies, and the price views of ``gpufit prices``.

Reading price feeds is I/O and lives in :mod:`recommender.feeds`.
"""
