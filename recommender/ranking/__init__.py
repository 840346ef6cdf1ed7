"""Ranking: from a workload and a catalog to the ranked plans of a recommendation.

:mod:`recommender.ranking.recommend` is the one pass; ``objective`` reads what the question
optimises, ``selection`` prices the offers, ``order`` ranks them, ``explain`` and ``caveats``
say what the answer rests on.
"""
