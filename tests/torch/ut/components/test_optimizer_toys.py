"""The toy-module optimizer pairs (parity/suites/components_optim.py) can fail.

Each test plants one plausible mistake in the new side's grouping (``split_decay_groups``, which
both containers call), runs registered suite cases through the engine and asserts a failure at the
artifact path the mistake must move; the unplanted cases pass (they also run, with every other
``optimizer`` case, in test_optimizer.py). The toys are small torch modules with mixed-case names,
several model parts, shared / tied / frozen parameters and custom decay keywords.
"""

from __future__ import annotations

import pytest
from hypothesis import settings

from hyper_parallel.components import optimizer as optimizer_module
from hyper_parallel.trainer import base
from parity.compare import STRUCTURE
from parity.engine import Engine
from parity.suites import REGISTRY
from parity.suites import components_optim as suite

# A planted split that drops de-duplication lists a shared parameter twice (AdamW only warns when
# both copies land in one group).
pytestmark = pytest.mark.filterwarnings("ignore:optimizer contains a parameter group with duplicate")

FAST = settings(max_examples=40, derandomize=True, database=None, deadline=None)


def _case(name: str, **params):
    matches = [c for c in REGISTRY if c.name == name and c.param_dict == params]
    assert len(matches) == 1, (name, params)
    return matches[0]


def _check(case):
    return Engine(REGISTRY, report_dir=None, hypothesis_settings=FAST).check(case, "torch")


def _planted_split(*, lower=True, dedup=True, skip_frozen=True, keywords=None):
    """``split_decay_groups`` with one mistake (the arguments switch each rule off)."""

    def split(model_parts, decay_keywords):
        decay, no_decay, seen = [], [], set()
        for part in model_parts:
            for name, param in part.named_parameters():
                if (skip_frozen and not param.requires_grad) or (dedup and id(param) in seen):
                    continue
                seen.add(id(param))
                lname = name.lower() if lower else name
                words = decay_keywords if keywords is None else keywords
                (no_decay if any(k in lname for k in words) else decay).append((name, param))
        return decay, no_decay

    return split


def _fail(outcome):
    assert outcome.status == "fail", outcome.message
    return outcome.report.differences


def test_unplanted_toy_cases_pass():
    for case in REGISTRY.select(tags=("optimizer",)):
        if case.name.startswith("optim_toy") and case.tier == "A":
            assert _check(case).status == "pass", case.id


def test_the_legacy_keyword_swap_is_undone():
    before = base.NO_DECAY_KEYWORDS
    suite.legacy_toy_groups(toy="mixed_case", keywords="custom")
    assert base.NO_DECAY_KEYWORDS is before == ("bias", "layernorm", "norm", "rmsnorm")


def test_planted_case_sensitive_keywords_are_caught(monkeypatch):
    """``LayerNorm.weight``, ``Dense.BIAS``, ``block.RMSNorm.scale``... leave the no-decay group."""
    monkeypatch.setattr(optimizer_module, "split_decay_groups", _planted_split(lower=False))
    case = _case("optim_toy_groups", toy="mixed_case", keywords="default")
    first = _fail(_check(case))[0]
    # LayerNorm.weight, LayerNorm.Bias, Dense.BIAS, block.RMSNorm.scale and abNormal.w join the
    # decay group (4 names before); block.norm.Weight and Unbiased.weight match in lower case anyway.
    assert (first.phase, first.kind, first.path) == (STRUCTURE, "extra", "param_groups[0].params[4:9]")
    assert "param_groups[0].params" in _check(case).message
    # One optimizer step moves bits too: the case-sensitive split decays the norms.
    step = _fail(_check(_case("optim_toy_step", toy="mixed_case", keywords="default", seed=0)))
    assert any(d.path == 'checkpoint.state.params["LayerNorm.weight"]' for d in step)
    # The drawn toys find it as well, and the report carries the blob that replays the example.
    drawn = _check(_case("optim_toy_hypothesis"))
    assert drawn.status == "fail" and drawn.report.differences[0].path.startswith("param_groups[")
    assert "--hypothesis-blob" in drawn.message


def test_planted_dropped_deduplication_across_parts_is_caught(monkeypatch):
    """Parts 0 and 2 share ``embed.Weight`` (as ``lm_head.weight``): without the seen-set it is
    grouped and stepped twice. (Within one part torch's ``named_parameters`` already dedups.)"""
    monkeypatch.setattr(optimizer_module, "split_decay_groups", _planted_split(dedup=False))
    groups = _fail(_check(_case("optim_toy_in_backward_groups", toy="parts", keywords="default")))
    assert (groups[0].phase, groups[0].kind) == (STRUCTURE, "extra")
    # embed.Weight again (as lm_head.weight) after the 4 decay names; Layer0.attn.Wq again (as
    # Pooler.Norm.shared_w, a no-decay name) at the end of the no-decay group.
    assert groups[0].path == "param_groups[0].params[4:5]"
    assert groups[1].path == "param_groups[1].params[7:8]"
    # The plain container (custom keywords: both copies in one group) steps a parameter twice.
    step = _fail(_check(_case("optim_toy_step", toy="parts", keywords="custom", seed=1)))
    paths = {d.path for d in step}
    assert 'checkpoint.state.params["embed.Weight"]' in paths
    assert (step[0].phase, step[0].kind) == (STRUCTURE, "extra")
    assert step[0].path.startswith('checkpoint.keys["optimizer/param_groups/')
    # The single-part toy has only a tied parameter: torch dedups it, so that case still passes.
    assert _check(_case("optim_toy_groups", toy="mixed_case", keywords="default")).status == "pass"


def test_planted_frozen_parameters_kept_are_caught(monkeypatch):
    monkeypatch.setattr(optimizer_module, "split_decay_groups", _planted_split(skip_frozen=False))
    first = _fail(_check(_case("optim_toy_groups", toy="frozen", keywords="custom")))[0]
    # Norm.weight (frozen) now leads the decay group.
    assert (first.phase, first.kind, first.path) == (STRUCTURE, "extra", "param_groups[0].params[1:4]")


def test_planted_ignored_custom_keywords_are_caught(monkeypatch):
    """A new side that always uses the default keywords fails the custom-keyword pairs only."""
    planted = _planted_split(keywords=optimizer_module.DEFAULT_DECAY_KEYWORDS)
    monkeypatch.setattr(optimizer_module, "split_decay_groups", planted)
    first = _fail(_check(_case("optim_toy_groups", toy="mixed_case", keywords="custom")))[0]
    assert first.phase == STRUCTURE and first.path.startswith("param_groups[0].params")
    assert _check(_case("optim_toy_groups", toy="parts", keywords="minimal")).status == "pass"
