"""Parsing: free text → :class:`~recommender.workload.Workload`.

:mod:`recommender.parsing.parse` runs an ordered table of rules (the ``_rules_*`` modules)
over the tokens of :mod:`recommender.parsing._scan`, from the word tables of ``_lexicon`` and
``_words``; ``_draft`` holds what was read and turns it into a validated workload.
"""
