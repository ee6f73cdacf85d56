"""``parity.tools.localise``: a failed end-to-end pair names the first step, phase, artifact and component.

Every plant changes bits on every machine (a constant factor, a changed token, another eps), on
the new side only, on the cheap ``preset`` recipe (7 steps, 4 micro-batches a step). The run
cache is cleared around every patched run, so no patched result leaks into another test.
"""

from __future__ import annotations

import io
import json
import re

import pytest
import torch
from rich.console import Console

from parity import e2e, golden
from parity.cases import Case, Registry
from parity.cli import main
from parity.engine import Engine
from parity.suites import REGISTRY
from parity.tools.localise import PHASES, localise_recipe

LINE_RE = re.compile(r"^first divergence: step (\d+), (\w+), (\S+) -> component (\S+)$")


@pytest.fixture
def fresh_runs():
    e2e.recipe_run.cache_clear()
    yield
    e2e.recipe_run.cache_clear()


def _where(result) -> tuple[int, str, str, str]:
    match = LINE_RE.match(result.line)
    assert match, result.to_text()
    assert (int(match[1]), match[2], match[3], match[4]) == (
        result.step,
        result.phase,
        result.artifact,
        result.component,
    )
    return result.step, result.phase, result.artifact, result.component


# ----------------------------------------------------------------------------- healthy
def test_a_healthy_recipe_compares_equal_in_every_phase_of_every_step():
    """The lockstep replay itself moves no bit: both trainers agree everywhere, to the last step."""
    result = localise_recipe("preset")
    assert result.status == "equal", result.to_text()
    assert result.line == "first divergence: none in steps 1..7 (every phase equal bit for bit)"
    assert result.steps_compared == 7 and result.max_steps == {"legacy": 7, "new": 7}
    assert len(result.curves["legacy"]["loss"]) == 7 and result.curves["legacy"] == result.curves["new"]


def test_multi_rank_recipes_are_skipped_with_a_reason():
    result = localise_recipe("dp2_padded")
    assert result.status == "skipped" and "2 ranks" in result.message
    assert result.line.startswith("first divergence: not localised (skipped):")


# ----------------------------------------------------------------------------- planted
def test_planted_batch_change_from_step_2_is_localised_to_the_dataloader(fresh_runs, monkeypatch):
    from hyper_parallel.components import dataloader

    original = dataloader.BaseDataLoader.micro_batch_iterator

    def perturbed(self):
        for index, group in enumerate(original(self)):
            if index >= 1:  # step 2 on
                group = [dict(mb) for mb in group]
                ids = group[0]["input_ids"].clone()
                ids[0, 3] = (ids[0, 3] + 1) % 2048
                group[0]["input_ids"] = ids
            yield group

    monkeypatch.setattr(dataloader.BaseDataLoader, "micro_batch_iterator", perturbed)
    result = localise_recipe("preset")
    assert _where(result) == (2, "batch", "batch[0].input_ids", "dataloader")
    text = result.to_text()
    assert "equal before it: steps 1..1 in every phase" in text
    assert "batch[0].input_ids @ (0, 3)" in text
    assert result.steps_compared == 2  # stopped at the divergent step
    assert result.tensor["path"] == "batch[0].input_ids" and result.tensor["differing"] == 1


def test_planted_lr_factor_off_at_scheduler_step_3_is_localised_to_the_lr_scheduler(fresh_runs, monkeypatch):
    """LambdaLR computes the factor of step 3 at the end of optimizer step 3 (for step 4): the
    scheduler state of step 3 is the first place it shows, before any lr is used."""
    from hyper_parallel.components import lr_scheduler

    original = lr_scheduler.lr_factor

    def off_at_3(**kwargs):
        factor = original(**kwargs)
        return lambda step: factor(step) * (0.5 if step == 3 else 1.0)

    monkeypatch.setattr(lr_scheduler, "lr_factor", off_at_3)
    result = localise_recipe("preset")
    assert _where(result) == (3, "scheduler_state", "scheduler_state._last_lr[0]", "lr_scheduler")
    assert "equal before it in step 3: " + ", ".join(PHASES[:8]) in result.to_text()


def test_planted_lr_of_the_first_step_is_localised_to_the_lr_phase(fresh_runs, monkeypatch):
    from hyper_parallel.components import lr_scheduler

    original = lr_scheduler.lr_factor

    def off_at_0(**kwargs):
        factor = original(**kwargs)
        return lambda step: factor(step) + (0.25 if step == 0 else 0.0)

    monkeypatch.setattr(lr_scheduler, "lr_factor", off_at_0)
    assert _where(localise_recipe("preset")) == (1, "lr", "lr[0]", "lr_scheduler")


def test_planted_loss_scale_is_localised_to_the_loss(fresh_runs, monkeypatch):
    from hyper_parallel.components import loss

    original = loss.CrossEntropyLoss.__call__
    monkeypatch.setattr(loss.CrossEntropyLoss, "__call__", lambda self, lg, lb: original(self, lg, lb) * 1.5)
    result = localise_recipe("preset")
    assert _where(result) == (1, "loss", "loss.micro_batch_losses[0]", "loss")
    assert "equal before it in step 1: batch, lr" in result.to_text()
    assert result.tensor is not None and result.tensor["phase"] == "grads_before_clip"


def test_planted_accumulation_scaling_is_localised_to_the_train_step(fresh_runs, monkeypatch):
    """Same losses, a different backward scale: the gradients before clipping are the first to differ."""
    from hyper_parallel.trainer import hyper_trainer

    original = hyper_trainer.mean_global_loss
    monkeypatch.setattr(hyper_trainer, "mean_global_loss", lambda *a: original(*a) * 2)
    step, phase, artifact, component = _where(localise_recipe("preset"))
    assert (step, phase, component) == (1, "grads_before_clip", "loss/train_step")
    assert artifact.startswith('grads_before_clip["')


def test_planted_optimizer_eps_is_localised_to_the_optimizer(fresh_runs, monkeypatch):
    from hyper_parallel.components import optimizer

    original = optimizer._adamw_kwargs

    def other_eps(cfg):
        kwargs = original(cfg)
        kwargs["eps"] = 1e-6
        return kwargs

    monkeypatch.setattr(optimizer, "_adamw_kwargs", other_eps)
    result = localise_recipe("preset")
    assert _where(result) == (1, "optimizer_state", "optimizer_state.param_groups[0].eps", "optimizer")


def test_planted_extra_weight_decay_is_localised_to_the_optimizer_weights(fresh_runs, monkeypatch):
    from hyper_parallel.components import optimizer

    original = optimizer.OptimizersContainer.step

    def step_and_decay(self):
        original(self)
        with torch.no_grad():
            for group in self.param_groups:
                for param in group["params"]:
                    param.mul_(1 - 1e-3)

    monkeypatch.setattr(optimizer.OptimizersContainer, "step", step_and_decay)
    result = localise_recipe("preset")
    step, phase, artifact, component = _where(result)
    assert (step, phase, component) == (1, "weights", "optimizer")
    assert artifact == 'weights["model.embed_tokens.weight"]'  # the model's first parameter
    assert result.tensor["metric"] == "ULP distance" and result.tensor["differing"] > 0


def test_a_side_that_raises_is_reported_and_both_sides_stop(fresh_runs, monkeypatch):
    from hyper_parallel.components import loss

    original, calls = loss.CrossEntropyLoss.__call__, []

    def fails_in_step_2(self, logits, labels):
        calls.append(1)
        if len(calls) > 4:  # four micro-batches a step
            raise RuntimeError("planted failure")
        return original(self, logits, labels)

    monkeypatch.setattr(loss.CrossEntropyLoss, "__call__", fails_in_step_2)
    result = localise_recipe("preset")
    assert result.status == "error" and result.steps_compared == 1
    assert "the new side raised after 1 compared step(s): RuntimeError: planted failure" in result.line
    assert not torch.distributed.is_initialized()  # the sides' 1-rank world is taken down


# ----------------------------------------------------------------------------- engine wiring
def test_a_failing_e2e_case_carries_its_localisation_in_text_and_json(fresh_runs, monkeypatch, tmp_path):
    from hyper_parallel.components import loss

    original = loss.CrossEntropyLoss.__call__
    monkeypatch.setattr(loss.CrossEntropyLoss, "__call__", lambda self, lg, lb: original(self, lg, lb) * 1.5)
    case = REGISTRY.get("e2e.trainer_e2e-artifact=losses-recipe=preset")
    engine = Engine(REGISTRY, golden_root=golden.DEFAULT_ROOT, report_dir=tmp_path)
    outcome = engine.check(case, "torch")
    assert outcome.status == "fail"
    line = "first divergence: step 1, loss, loss.micro_batch_losses[0] -> component loss"
    assert f"  {line}\n" in outcome.message
    data = json.loads(next(tmp_path.rglob("*.json")).read_text())
    loc = data["localisation"]
    assert loc["line"] == line and loc["component"] == "loss" and loc["case_artifact"] == "losses"
    assert loc["curves"]["source"] == "the case's runs, every step"
    assert len(loc["curves"]["legacy"]["loss"]) == 7 and loc["curves"]["legacy"] != loc["curves"]["new"]
    assert data["fingerprint"]["backend"] == "torch" and "seconds" not in data  # reports do not vary by run
    # The other artifacts of the recipe reuse the same replay.
    replays = []
    monkeypatch.setattr(
        "parity.tools.localise.localise_recipe", lambda *a, **k: replays.append(a) or pytest.fail()
    )
    other = engine.check(REGISTRY.get("e2e.trainer_e2e-artifact=grad_norms-recipe=preset"), "torch")
    assert line in other.message and not replays


def _pair_registry(localise) -> Registry:
    registry = Registry(source="test")
    registry.pair("broken", kind="value", legacy=lambda: {"x": 1}, new=lambda: {"x": 2}, localise=localise)
    registry.pair("fine", kind="value", legacy=lambda: {"x": 1}, new=lambda: {"x": 1}, localise=localise)
    return registry


def test_the_engine_calls_a_localiser_only_on_failure(tmp_path):
    calls = []

    def localise():
        calls.append(1)
        return {
            "status": "diverged",
            "line": "first divergence: step 4, lr, lr[0] -> component x",
            "evidence": ["e"],
        }

    registry = _pair_registry(localise)
    engine = Engine(registry, report_dir=tmp_path)
    assert engine.check(registry.get("value.fine"), "torch").status == "pass" and not calls
    outcome = engine.check(registry.get("value.broken"), "torch")
    assert calls == [1] and "  first divergence: step 4, lr, lr[0] -> component x\n    e\n" in outcome.message
    data = json.loads((tmp_path / "torch" / outcome.platform / "value.broken.json").read_text())
    assert data["localisation"]["line"].startswith("first divergence: step 4")


def test_a_localiser_that_raises_leaves_the_failure_reported():
    def broken():
        raise RuntimeError("no trainer here")

    registry = _pair_registry(broken)
    outcome = Engine(registry, report_dir=None).check(registry.get("value.broken"), "torch")
    assert outcome.status == "fail" and "value.x" in outcome.message
    assert outcome.report.localisation["status"] == "error"
    assert (
        "first divergence: not localised (error): the localiser raised RuntimeError: no trainer here"
        in outcome.message
    )


def test_only_tier_a_cases_take_a_localiser():
    with pytest.raises(ValueError, match="only tier A cases take one"):
        Case(
            name="g", kind="value", seed=0, params=(), backends=("torch",), producer=lambda: 1, localise=dict
        )


# ----------------------------------------------------------------------------- bisect
BISECT_REGISTRY = _pair_registry(
    lambda: {
        "status": "diverged",
        "line": "first divergence: step 2, batch, batch[0] -> component dataloader",
        "evidence": ["ok"],
    }
)
BISECT_REGISTRY.pair("plain", kind="value", legacy=lambda: 1, new=lambda: 1)


def _cli(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    code = main(list(argv), console=Console(file=out, width=200, color_system=None))
    return code, out.getvalue()


def test_bisect_prints_the_localisation():
    code, out = _cli("bisect", "value.broken", "--cases", "tests.parity.test_parity_localise:BISECT_REGISTRY")
    # A divergence found is a failure (exit 1), like a failing `parity run`.
    assert code == 1 and "first divergence: step 2, batch, batch[0] -> component dataloader\n  ok" in out


def test_bisect_refuses_unknown_ids_and_cases_without_a_localiser_in_one_line():
    cases = ("--cases", "tests.parity.test_parity_localise:BISECT_REGISTRY")
    code, out = _cli("bisect", "value.nope", *cases)
    assert code == 2 and out.count("\n") == 1 and "unknown case id 'value.nope'" in out
    code, out = _cli("bisect", "value.plain", *cases)
    assert code == 2 and out.count("\n") == 1 and "has no localiser" in out
