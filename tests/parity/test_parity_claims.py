"""The claims table (``parity/tools/claims.py``): every registered case claims a measured plant."""

from __future__ import annotations

from parity.suites import REGISTRY
from parity.tools.claims import CLAIMS, UNMEASURED
from parity.tools.plants import PLANTS
from parity.tools.quick import make_plan

# The plants written for cases that had none (a section of parity/tools/plants.py of their own).
CLAIMS_SECTION = (
    "prof_enabled_default_on",
    "legacy_profiler_ignores_enabled",
    "tok_call_drops_kwargs",
    "tok_vocab_check_dropped",
    "tok_empty_path_is_none_check",
    "dl_batch_multiple_ignores_dp",
    "legacy_tok_pad_from_unk",
    "legacy_warmup_inclusive",
    "legacy_warmup_floor",
    "platform_generator_unseeded",
    "platform_lambda_lr_multiplicative",
    "platform_adamw_is_adam",
    "map_decay_style_dropped",
)


def test_no_case_is_left_unmeasured():
    # A new case comes with a plant measured to turn it red, not with an UNMEASURED entry.
    assert not UNMEASURED, f"claim a measured plant for: {', '.join(sorted(UNMEASURED))}"
    assert make_plan(REGISTRY).unmeasured == []


def test_each_plant_written_for_a_case_is_claimed_and_moves_one_side():
    by_name = {p.name: p for p in PLANTS}
    claimed = {name for names in CLAIMS.values() for name in names}
    for name in CLAIMS_SECTION:
        plant = by_name[name]
        assert plant.expected == "caught", name
        # A shared edit moves both sides at once: only a golden could see it.
        assert plant.side in ("new", "legacy"), name
        assert name in claimed, f"plant {name} is claimed by no case"
