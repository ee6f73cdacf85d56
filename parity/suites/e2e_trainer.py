"""End to end: ``LLMTrainer(args)`` vs ``HyperTrainer`` built from the same YAML (tier A), plus goldens.

One pair per recipe of ``parity.e2e.RECIPES`` and artifact of ``ARTIFACTS``, all cases of a
recipe reading one run of each side; one tier B golden per recipe of the new side's curves. The
recipes cover every data type and the settings a refactor tends to break end to end: rows that
pad, prompt masking, uneven token counts per micro-batch under gradient accumulation, a
non-default seed, a dataset that shrinks or resets the step horizon (and so the LR schedule),
``rank_average`` loss aggregation, and a 2-rank run. A second golden per recipe holds the log lines
of both sides (``parity.run_log``): what each trainer tells its user, line by line.

Every pair has a localiser (``LOCALISER``): when one fails, ``parity.tools.localise`` replays the
recipe on both trainers in lockstep and names the first step, phase, artifact and component that
differ.
"""

from __future__ import annotations

from parity.cases import REGISTRY
from parity.e2e import ARTIFACTS, LOCALISER, RECIPES, SEED, both_logs, legacy_side, new_curve, new_side

SUITE = REGISTRY.suite(tags=("e2e",), seed=SEED)
for _recipe in RECIPES:
    for _artifact in ARTIFACTS:
        SUITE.pair(
            "trainer_e2e",
            kind="e2e",
            params={"recipe": _recipe, "artifact": _artifact},
            legacy=legacy_side,
            new=new_side,
            share=f"e2e:{_recipe}",
            localise=LOCALISER,
        )
    SUITE.golden(
        "hyper_trainer_curve",
        kind="train_curve",
        params={"recipe": _recipe},
        producer=new_curve,
        share=f"e2e:{_recipe}",
        # On MindSpore too, but for single-rank recipes only (two ranks need msrun, not fork).
        backends=("torch", "mindspore") if RECIPES[_recipe].nproc == 1 else ("torch",),
    )
    SUITE.golden(
        "trainer_log", kind="log", params={"recipe": _recipe}, producer=both_logs, share=f"e2e:{_recipe}"
    )
