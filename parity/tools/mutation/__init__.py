"""Mutation testing of the product against the parity cases (``python -m parity mutation``).

mutmut 3 generates the mutants; :mod:`parity.tools.mutation.runner` runs each against the case groups
that execute its function and :mod:`parity.tools.mutation.score` counts the verdicts. See CONTRIBUTING,
"Mutation testing".
"""
