"""The end-to-end recipes of ``parity.e2e``: each artifact fails on its own, and the
real-data recipes catch what the dummy recipe cannot.

Every plant below changes bits on every machine (a different token weighting, seed or horizon),
not a kernel's reduction order. Each test clears the suite's run cache before and after, so no
patched run leaks into another test of the same worker.
"""

from __future__ import annotations

import pytest

from parity import e2e, golden
from parity.engine import Engine
from parity.suites import REGISTRY


@pytest.fixture
def fresh_runs():
    e2e.recipe_run.cache_clear()
    yield
    e2e.recipe_run.cache_clear()


def _check(case_id: str):
    case = REGISTRY.get(case_id)
    assert case is not None, case_id
    engine = Engine(REGISTRY, golden_root=golden.DEFAULT_ROOT, report_dir=None)
    return engine.check(case, "torch")


def _pair(recipe: str, artifact: str) -> str:
    return f"e2e.trainer_e2e-artifact={artifact}-recipe={recipe}"


def test_recipes_cover_every_artifact_and_have_goldens():
    for recipe in e2e.RECIPES:
        for artifact in e2e.ARTIFACTS:
            assert REGISTRY.get(_pair(recipe, artifact)) is not None
        curve = REGISTRY.get(f"train_curve.hyper_trainer_curve-recipe={recipe}")
        assert curve is not None and curve.share == f"e2e:{recipe}"


def test_a_broken_artifact_errors_only_its_own_case(fresh_runs, monkeypatch):
    """A checkpoint that cannot be read fails the checkpoint case; the curves are still compared."""

    def unreadable(root):
        raise FileNotFoundError(f"{root}/step_5/optimizer_rank0.pt")

    monkeypatch.setattr(e2e, "read_checkpoint", unreadable)
    broken = _check(_pair("preset", "checkpoint"))
    assert not broken.ok and "optimizer_rank0.pt" in broken.message
    for artifact in ("losses", "grad_norms", "lr_curve", "batches", "hf_export"):
        outcome = _check(_pair("preset", artifact))
        assert outcome.ok, f"{artifact}: {outcome.message}"


def test_tokens_counted_on_shifted_labels_are_caught_on_padded_data_only(fresh_runs, monkeypatch):
    """The hazard 'labels shifted inside the legacy model, tokens counted on unshifted labels'.

    On dummy data every row is full, so the shifted count scales every micro-batch alike and the
    weights do not change: only recipes whose micro-batches differ in loss tokens can see it.
    """
    from hyper_parallel.components import loss as loss_module

    def shifted_count(self, labels):
        labels = labels["labels"] if isinstance(labels, dict) else labels
        return int((labels[..., 1:] != self.config.ignore_index).sum())

    monkeypatch.setattr(loss_module.BaseLoss, "count_tokens", shifted_count)
    assert _check(_pair("dummy", "losses")).ok
    for recipe in ("hf_text", "preset"):
        outcome = _check(_pair(recipe, "losses"))
        assert not outcome.ok and "losses[" in outcome.message, recipe


def test_a_seed_not_wired_to_the_sampler_is_caught(fresh_runs, monkeypatch):
    """The new side shuffles with the default seed instead of ``train.seed`` (7 in hf_text)."""
    from hyper_parallel.trainer import legacy_mapping

    real = legacy_mapping.legacy_to_trainer_config

    def default_seed(args):
        config = real(args)
        config.training.seed = 42
        return config

    monkeypatch.setattr(legacy_mapping, "legacy_to_trainer_config", default_seed)
    outcome = _check(_pair("hf_text", "batches"))
    assert not outcome.ok and "batches[0]" in outcome.message


def test_the_dataset_horizon_reaches_the_lr_schedule(fresh_runs, monkeypatch):
    """hf_text shrinks max_steps 50 -> 5: a schedule built on the configured 50 warms up for 20 steps."""
    from hyper_parallel.components.lr_scheduler import LRSchedulersContainer

    real = LRSchedulersContainer.Config.build

    def configured_horizon(self, **kwargs):
        kwargs["training_steps"] = 50
        return real(self, **kwargs)

    monkeypatch.setattr(LRSchedulersContainer.Config, "build", configured_horizon)
    outcome = _check(_pair("hf_text", "lr_curve"))
    assert not outcome.ok and "lr_curve[0]" in outcome.message
