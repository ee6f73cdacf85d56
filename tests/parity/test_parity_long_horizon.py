"""The long-horizon goldens (``parity/suites/long_horizon.py``) catch a change that only shows late.

Each plant moves the learning rate by one part in 2**20, and only past step 20 (the end of every
other curve golden) for the 100-step curve: the long golden goes red and names the artifact.
"""

from __future__ import annotations

import re

import pytest

from parity.engine import Engine
from parity.suites import REGISTRY
from parity.suites import long_horizon as lh

SCALE = 1 + 2**-20
LONG_LR = f"lr_curve.long_lr-decay_style=cosine-lr_min=1e-05-steps={lh.LR_STEPS}-warmup_ratio=0.01"
LONG_CURVE = f"train_curve.long_curve-recipe=dummy-steps={lh.CURVE_STEPS}"


def _check(case_id: str):
    case = REGISTRY.get(case_id)
    assert case is not None, (case_id, [c.id for c in REGISTRY.select(tags=("long",))])
    return Engine(REGISTRY, report_dir=None).check(case, "torch")


def test_the_long_cases_carry_the_long_tag():
    assert sorted(c.id for c in REGISTRY.select(tags=("long",))) == sorted([LONG_CURVE, LONG_LR])


def test_the_digest_covers_every_value_and_keeps_samples():
    values = [1e-3 * (i % 97) / 97 for i in range(10_006)]
    digest = lh.lr_digest(values)
    assert digest["steps"] == 10_006 and len(digest["samples"]) == lh.LR_SAMPLES + 1
    assert "step_10005" in digest["samples"]
    moved = list(values)
    moved[7777] *= SCALE  # not a sampled step
    other = lh.lr_digest(moved)
    assert other["samples"] == digest["samples"] and other["sha256"] != digest["sha256"]


def test_the_long_lr_golden_passes_and_a_planted_lr_fails(monkeypatch):
    assert _check(LONG_LR).status == "pass"
    pinned = lh.pinned_lr_values

    def planted(**fields):
        values = pinned(**fields)
        values[7777] *= SCALE
        return values

    monkeypatch.setattr(lh, "pinned_lr_values", planted)
    outcome = _check(LONG_LR)
    assert outcome.status == "fail"
    assert outcome.report.first.path == "lr_curve.sha256"


@pytest.mark.slow
def test_the_long_curve_golden_fails_on_an_lr_change_after_step_60(monkeypatch):
    import hyper_parallel.components.lr_scheduler as lr_scheduler

    factor_of = lr_scheduler.lr_factor

    def planted(**kwargs):
        factor = factor_of(**kwargs)
        return lambda step: factor(step) * (SCALE if step > 60 else 1.0)

    monkeypatch.setattr(lr_scheduler, "lr_factor", planted)
    outcome = _check(LONG_CURVE)
    assert outcome.status == "fail"
    first = re.fullmatch(r"train_curve\.(grad_norms|losses|lr_curve)\[(\d+)\]", outcome.report.first.path)
    assert first is not None and int(first[2]) >= 60, outcome.report.first.path  # past every 20-step golden
