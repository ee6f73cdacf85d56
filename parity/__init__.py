"""The parity harness: legacy trainer vs Configurable components, bit for bit.

Public API (see ``parity.cases`` and ``parity.canonical``)::

    from parity import REGISTRY, Registry, canonical

    REGISTRY.pair("warmup", kind="lr_curve", seed=0, params={...}, legacy=f, new=g)   # tier A
    REGISTRY.golden("adamw", kind="checkpoint", seed=7, params={...}, producer=h)     # tier B

    assert_bitwise_equal(legacy_batches, new_batches, "batches", kind="batches")       # in a test
"""

from parity import canonical
from parity.assertions import assert_bitwise_equal
from parity.cases import REGISTRY, SUPPORTED_BACKENDS, Case, Registry, load_registry, make_case_id

__all__ = [
    "REGISTRY",
    "SUPPORTED_BACKENDS",
    "Case",
    "Registry",
    "assert_bitwise_equal",
    "canonical",
    "load_registry",
    "make_case_id",
]
