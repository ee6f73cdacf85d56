"""Drive the legacy ``_build_*`` steps directly, without a full ``LLMTrainer`` (see ``parity.legacy_driver``).

Component tests compare a new component with the legacy builder that it replaces; the helpers are
the harness's own, so a test and a parity case mean the same thing by "the legacy side".
"""

from __future__ import annotations

from parity.legacy_driver import (  # noqa: F401  (re-exported for the component tests)
    DEBUG_YAML,
    REPO_ROOT,
    bare_trainer,
    debug_model,
    legacy_args,
    llm_steps,
    llm_wrapper,
    simulated_rank,
)
