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


def test_a_case_without_a_plant_is_measured_by_a_recorded_mutant_kill(tmp_path):
    """The mutation run vouches for a case no plant claims; a case with neither is named."""
    from parity.cases import Registry
    from parity.tools.mutation import kills

    reg = Registry()
    reg.golden("a", kind="k", producer=lambda: 1)
    reg.golden("b", kind="k", producer=lambda: 1)
    path = tmp_path / "kills.json"
    verdicts = [
        {"status": "killed", "case": "k.a", "key": "hyper_parallel/x.py:f:1"},
        {"status": "survived", "case": None, "key": "hyper_parallel/x.py:f:2"},
    ]
    assert kills.merge(verdicts, path) == {"k.a": ["hyper_parallel/x.py:f:1"]}
    assert kills.merge([{"status": "killed", "case": "k.a", "key": "hyper_parallel/x.py:g:3"}], path)[
        "k.a"
    ] == [
        "hyper_parallel/x.py:f:1",
        "hyper_parallel/x.py:g:3",
    ]  # a later run adds, never forgets
    plan = make_plan(reg, claims={}, unmeasured=(), kills=kills.load(path))
    assert plan.by_mutants == ["k.a"]
    assert len(plan.problems) == 1 and "k.b claims no plant and killed no recorded mutant" in plan.problems[0]


def test_a_damaged_kills_file_is_an_error(tmp_path):
    import pytest

    from parity.tools.mutation import kills

    path = tmp_path / "kills.json"
    path.write_text('{"kills": {"k.a": "not a list"}}')
    with pytest.raises(SystemExit, match="kills.json: expected"):
        kills.load(path)


def test_a_kill_by_one_cell_of_a_grid_vouches_for_the_grid():
    from parity.cases import Registry

    reg = Registry()
    reg.grid("g", params=[{"x": 1}, {"x": 2}], kind="k", producer=lambda x: x)
    reg.golden("other", kind="k", producer=lambda: 1)
    plan = make_plan(reg, claims={}, unmeasured=(), kills={"k.g-x=1": ["hyper_parallel/x.py:f:1"]})
    assert plan.by_mutants == ["k.g-x=1", "k.g-x=2"]
    assert [p.split()[1] for p in plan.problems] == ["k.other"]
