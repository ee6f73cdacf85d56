"""The legacy-trainer goldens (parity/suites/legacy_trainer.py) catch a change of the legacy path.

Each test plants a divergence in the legacy trainer itself (not in the harness), runs the case
against its committed golden, and checks that the report names the right artifact and first index.
"""

from __future__ import annotations

import math

from parity.engine import Engine
from parity.suites import REGISTRY


def _check(case_id: str):
    case = REGISTRY.get(case_id)
    assert case is not None, case_id
    return Engine(REGISTRY, report_dir=None).check(case, "torch")


def test_unchanged_legacy_path_passes():
    assert _check("param_groups.legacy_debug_param_groups-seed=0").status == "pass"


def test_dropped_decay_keyword_fails_the_param_groups_golden(monkeypatch):
    import hyper_parallel.trainer.base as base

    monkeypatch.setattr(base, "NO_DECAY_KEYWORDS", ("bias", "layernorm", "rmsnorm"))  # "norm" dropped
    outcome = _check("param_groups.legacy_debug_param_groups-seed=0")
    assert outcome.status == "fail"
    assert outcome.report.first.path.startswith("param_groups[0].params")


def test_floor_warmup_fails_the_lr_golden(monkeypatch):
    import hyper_parallel.trainer.base as base

    monkeypatch.setattr(base.math, "ceil", math.floor)  # W = floor(7 * 0.5) = 3 instead of 4
    outcome = _check("lr_curve.legacy_lr-decay_style=cosine-lr_min=0.0001-steps=7-warmup_ratio=0.5")
    assert outcome.status == "fail"
    assert outcome.report.first.path == "lr_curve[1][0]"  # 1/3 of lr instead of 1/4 at step 1


def test_other_dummy_seed_fails_the_batches_golden(monkeypatch):
    import hyper_parallel.data.dummy as dummy

    monkeypatch.setattr(dummy, "DUMMY_BASE_SEED", 43)
    outcome = _check("batches.legacy_dummy_batches-dp_shard=1-num=3-rank=0")
    assert outcome.status == "fail"
    assert outcome.report.first.path.startswith("batches[0].")
