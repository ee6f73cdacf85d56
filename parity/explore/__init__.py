"""Explore the legacy YAML configuration space instead of hand-picking recipes.

- ``space``: the features both trainers support, their values and the pairwise constraints;
  ``render`` turns a point into YAML overrides (and the files it needs).
- ``cli_route``: the same point as the ``--module qwen3_5 --config debug`` command line.
- ``pairwise``: a deterministic greedy covering set (every allowed pair of values at least once).
- ``strategies``: hypothesis strategies that draw valid points (and a resume step).
- ``runner``: runs a point on both trainers (1, 2 or 3 ranks) and the resume-anywhere property.
- ``shrunk``: writes the smallest diverging point as YAML plus a one-line reproduce command.

The cases live in ``parity.suites.e2e_explore`` (tag ``explore``).
"""
