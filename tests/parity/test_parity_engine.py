"""Tier A through the engine: reports, JSON output, hypothesis blobs, errors and skips."""

from __future__ import annotations

import json
import os

import pytest
from hypothesis import settings

from parity import numerics
from parity.cases import Registry
from parity.engine import Engine
from parity.env import platform_key
from tests.parity import parity_synthetic as synth

# This run's golden key (cpu-<arch>-<capability> on CPU) and CPU profile.
KEY = platform_key()
PROFILE = numerics.active_profile()

FAST = settings(max_examples=40, derandomize=True, database=None, deadline=None)


@pytest.fixture
def engine(tmp_path):
    return Engine(
        synth.REGISTRY,
        golden_root=tmp_path / "golden",
        report_dir=tmp_path / "reports",
        hypothesis_settings=FAST,
    )


def test_passing_pair(engine):
    assert engine.check(synth.REGISTRY.get("lr_curve.warmup_ceil-steps=10"), "torch").status == "pass"


def test_failing_pair_report_text_and_json(engine, tmp_path):
    case = synth.REGISTRY.get("lr_curve.warmup_floor-steps=10")
    outcome = engine.check(case, "torch")
    assert outcome.status == "fail"
    text = outcome.message
    assert text.splitlines()[0].startswith(
        f"PARITY FAIL  case={case.id}  backend=torch  platform={KEY}  tier=A"
    )
    assert "first difference [bits/value]: lr_curve[1]" in text
    assert f"expected (legacy): {(0.1 / 3).hex()}" in text and f"actual   (new): {(0.1 / 2).hex()}" in text
    reproduce = text.splitlines()[-1]
    assert reproduce == (
        f"  reproduce: PYTHONHASHSEED=0 python -m parity run --cpu-profile {PROFILE} --cases tests.parity.parity_synthetic:REGISTRY "
        f"--golden-dir {tmp_path / 'golden'} --backend torch --id {case.id}"
    )
    data = json.loads((tmp_path / "reports" / "torch" / KEY / f"{case.id}.json").read_text())
    assert data["summary"]["artifact_path"] == "lr_curve[1]"
    assert data["summary"]["mismatch_count"] == 2 and data["summary"]["max_ulp"] > 0
    assert data["summary"]["expected"] == (0.1 / 3).hex()


def test_hypothesis_case_reports_a_replayable_blob(engine):
    case = synth.REGISTRY.get("lr_curve.long_warmup-steps=12")
    outcome = engine.check(case, "torch")
    hyp = outcome.report.hypothesis
    assert outcome.status == "fail" and hyp["blob"]
    assert "warmup_steps=6" in hyp["falsifying_example"]  # shrunk to the smallest diverging input
    assert f"--hypothesis-blob {hyp['blob']}" in outcome.report.reproduce
    replay = engine.check(case, "torch", hypothesis_blob=hyp["blob"])
    assert replay.status == "fail" and replay.report.first.path == outcome.report.first.path


def test_a_producer_error_names_the_case():
    reg = Registry()

    def boom(**_):
        raise RuntimeError("kaboom")

    case = reg.pair("boom", kind="k", legacy=boom, new=boom)
    outcome = Engine(reg, report_dir=None).check(case, "torch")
    assert outcome.status == "error" and "case=k.boom" in outcome.message and "kaboom" in outcome.message


def test_unavailable_backend_is_skipped_with_a_reason():
    reg = Registry()
    case = reg.pair("ms", kind="k", legacy=lambda: [], new=lambda: [], backends=("torch", "mindspore"))
    outcome = Engine(reg, report_dir=None).check(case, "mindspore")
    assert outcome.status == "skip" and "backend 'mindspore' skipped" in outcome.message


def test_sides_are_reseeded_identically():
    import torch

    reg = Registry()
    case = reg.pair("rng", kind="k", seed=5, legacy=lambda: torch.rand(8), new=lambda: torch.rand(8))
    assert Engine(reg, report_dir=None).check(case, "torch").status == "pass"


def test_hypothesis_profiles_are_registered():
    from hypothesis import settings as hsettings

    from parity.hypothesis_profiles import PROFILES, selected_profile

    for name in PROFILES:
        hsettings.get_profile(name)
    assert hsettings.get_profile("ci").derandomize is True  # inherited from hypothesis's built-in ci
    assert selected_profile({"CI": "1"}) == "ci" and selected_profile({}) == "dev"
    assert selected_profile({"HYPOTHESIS_PROFILE": "nightly", "CI": "1"}) == "nightly"


def test_self_check_runs_derandomized_and_never_shrinks(tmp_path):
    """A plant only needs red or green; shrinking a failing resume example re-ran trainings for 5 min."""
    from hypothesis import Phase
    from hypothesis import settings as hsettings

    from parity.hypothesis_profiles import register_profiles
    from parity.tools.selfcheck_runner import _child_env

    register_profiles()
    profile = hsettings.get_profile("selfcheck")
    assert profile.derandomize is True and profile.database is None
    assert Phase.shrink not in profile.phases and Phase.generate in profile.phases
    assert _child_env(tmp_path, tmp_path / "probe.json")["HYPOTHESIS_PROFILE"] in (
        "selfcheck",
        os.environ.get("HYPOTHESIS_PROFILE"),
    )


def test_a_producer_raising_a_base_exception_is_an_error_of_its_case(tmp_path):
    """torch DCP's CheckpointException derives from BaseException: it must not end the run."""

    class NotAnException(BaseException):
        pass

    def raises(**_):
        raise NotAnException("a checkpoint could not be read")

    registry = Registry()
    case = registry.pair("base_exc", kind="losses", legacy=raises, new=raises)
    outcome = Engine(registry, golden_root=tmp_path, report_dir=None).check(case, "torch")
    assert outcome.status == "error" and "a checkpoint could not be read" in outcome.message
