"""The debug recipe really trains, deterministically, and resumes bit-exactly."""

from __future__ import annotations

import json
import math

import pytest
import torch

from tests.torch.legacy_trainer._recipes import debug_args, run_curve


@pytest.fixture(scope="module")
def reference_run(tmp_path_factory):
    """One uninterrupted 20-step run (saves at steps 10 and 20)."""
    out = tmp_path_factory.mktemp("reference")
    losses, grad_norms, trainer = run_curve(debug_args(out))
    return out, losses, grad_norms, trainer


def _slope(values: list[float]) -> float:
    n = len(values)
    mean_x, mean_y = (n - 1) / 2, sum(values) / n
    num = sum((i - mean_x) * (v - mean_y) for i, v in enumerate(values))
    return num / sum((i - mean_x) ** 2 for i in range(n))


def test_debug_recipe_loss_falls(reference_run):
    """Dummy tokens are uniform over the vocab, so the recipe can only learn the logit scale:
    its loss starts near ln(V) + 1 and falls towards ln(V); the trend must be downward."""
    _, losses, grad_norms, trainer = reference_run
    values = [float.fromhex(h) for h in losses]
    assert len(values) == 20 == trainer.state.global_step
    assert sum(values[-5:]) / 5 < sum(values[:5]) / 5 - 0.02
    assert _slope(values) < 0
    assert all(math.isfinite(float.fromhex(g)) for g in grad_norms)


def test_debug_recipe_on_text_learns(tmp_path):
    """The same model and optimizer on the local text set: the loss falls by well over a nat."""
    from parity import assets

    args = debug_args(
        tmp_path,
        "--data.type=hf_datasets",
        f"--data.train_path={assets.text_jsonl()}",
        f"--model.tokenizer_path={assets.tokenizer_dir()}",
        "--train.checkpoint.save_steps=0",
    )
    losses, _, trainer = run_curve(args)
    values = [float.fromhex(h) for h in losses]
    assert trainer.state.global_step == 20
    assert sum(values[-3:]) / 3 < sum(values[:3]) / 3 - 1.5, values
    assert not (tmp_path / "ckpt").exists()  # save_steps=0 writes nothing


def test_two_runs_are_bit_identical(reference_run, tmp_path):
    _, losses, grad_norms, _ = reference_run
    losses2, grad_norms2, _ = run_curve(debug_args(tmp_path))
    assert losses2 == losses
    assert grad_norms2 == grad_norms


def test_checkpoint_layout(reference_run):
    out, *_ = reference_run
    step10 = out / "ckpt" / "step_10"
    names = {p.name for p in step10.iterdir()}
    for expected in (
        ".metadata",
        "optimizer_rank0.pt",
        "scheduler.pt",
        "extra_state.json",
        "rng_rank0.pt",
        "dataloader_rank0.pt",
        "hf_ckpt",
    ):
        assert expected in names, f"{expected} missing from {sorted(names)}"
    assert json.loads((step10 / "extra_state.json").read_text()) == {"global_step": 10, "epoch": 0}
    assert (out / "ckpt" / "step_20" / "hf_ckpt" / "model.safetensors").is_file()


def test_resume_from_step_10_is_bit_identical(reference_run, tmp_path):
    out, losses, grad_norms, _ = reference_run
    args = debug_args(tmp_path, f"--train.checkpoint.load_path={out / 'ckpt' / 'step_10'}")
    resumed_losses, resumed_grad_norms, trainer = run_curve(args)
    assert trainer.state.global_step == 20
    assert resumed_losses == losses[10:]
    assert resumed_grad_norms == grad_norms[10:]
    # Everything the checkpoint restores ends in the same state as the uninterrupted run.
    reference = torch.load(out / "ckpt" / "step_20" / "rng_rank0.pt", weights_only=True)
    assert torch.equal(torch.get_rng_state(), reference)
    ref_opt = torch.load(out / "ckpt" / "step_20" / "optimizer_rank0.pt", weights_only=True)
    new_opt = trainer.base.optimizer.state_dict()
    for key, state in ref_opt["state"].items():
        for name, value in state.items():
            mine = new_opt["state"][key][name]
            mine = mine.to_local() if hasattr(mine, "to_local") else mine
            value = value.to_local() if hasattr(value, "to_local") else value
            assert torch.equal(
                mine.view(torch.int32) if mine.is_floating_point() and mine.dim() else mine,
                value.view(torch.int32) if value.is_floating_point() and value.dim() else value,
            )


def test_hf_export_loads_in_transformers(reference_run):
    """The trainer's HF export loads as Qwen3_5ForCausalLM and gives our model's logits."""
    from transformers import Qwen3_5ForCausalLM

    from hyper_parallel.models.qwen3_5 import build_qwen3_5

    out, _, _, trainer = reference_run
    folder = out / "ckpt" / "step_20" / "hf_ckpt"
    hf_model, info = Qwen3_5ForCausalLM.from_pretrained(folder, output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"], info
    hf_model.eval()

    ours = build_qwen3_5(trainer.args)
    from safetensors.torch import load_file

    from hyper_parallel.models.qwen3_5.state_dict import Qwen3_5StateDictAdapter

    sd = Qwen3_5StateDictAdapter().load_hf_state_dict(str(folder), ours.config)
    missing, unexpected = ours.load_state_dict(sd, strict=False)
    assert not unexpected and all("inv_freq" in k for k in missing)
    ours.eval()
    assert load_file(folder / "model.safetensors")  # a real, readable file

    ids = torch.randint(0, ours.config.vocab_size, (2, 16), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        a = ours(input_ids=ids)["logits"]
        b = hf_model(input_ids=ids).logits
    diff = (a - b).abs().max().item()
    print(f"HF export logits max abs diff: {diff:.3e}")
    assert diff <= 1e-5
