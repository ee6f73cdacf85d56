"""The eight new-path components run unchanged on MindSpore, and give what they give on torch.

Each check group of ``tests/mindspore/_component_checks.py`` runs once in a fresh MindSpore
process and, where sameness is asserted, once more in a torch process (the same code under
``HYPER_PARALLEL_PLATFORM=torch``); both print one JSON line that the tests here compare. This
process never imports mindspore (``find_spec`` only).

One test per check group, so that its subprocesses run once under ``-n 2``: with pytest 9.2 and
pytest-xdist 3.8, ``xdist_group`` marks are ignored (xdist renames ``item._nodeid``, pytest 9.2
keeps the id in ``item._id``), so ``--dist=loadgroup`` schedules like ``load`` and a shared
module fixture would run once per worker. Each test runs all of its named sub-checks and
reports every failing one.

Measured on the 2-core CPU machine (torch 2.13 vs MindSpore 2.10): param groups, LR curves,
tokenizer ids, every loader's batches and count_tokens identical; CE mean 4.8e-7 apart (sum
7.6e-6 of 101.26, 7.5e-8 relative); transformers logits of the MindSpore HF export vs the
MindSpore model 3.6e-6 (peak |logit| 2.5).
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests._subprocess import REPO, child_env

if importlib.util.find_spec("mindspore") is None:  # never imported here: MindSpore runs in children
    pytest.skip("MindSpore is not installed", allow_module_level=True)

LOSS_MEAN_ABS = 1e-6  # measured 4.8e-7 (CE and chunked CE, mean over 16 tokens)
LOSS_SUM_REL = 1e-6  # measured 7.5e-8 (7.6e-6 absolute on 101.26)
HF_LOGITS_ABS = 1e-4  # measured 3.6e-6, peak |logit| 2.5


def _run(check: str, platform: str, tmp: Path, *args: str) -> dict:
    """``check`` in a fresh ``platform`` process; its JSON report."""
    tmp.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(
        [sys.executable, "-m", "tests.mindspore._component_checks", check, *args],
        cwd=REPO,
        env=child_env(
            HYPER_PARALLEL_PLATFORM=platform,
            TMPDIR=str(tmp),
            HF_DATASETS_CACHE=str(tmp / "hf_datasets"),
            HF_DATASETS_OFFLINE="1",
            HF_HUB_OFFLINE="1",
            TRANSFORMERS_OFFLINE="1",
        ),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, (
        f"{check} on {platform} failed (rc {proc.returncode}):\n{proc.stderr[-5000:]}"
    )
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["platform"] == platform
    return report


def _all(*checks) -> None:
    """Run every ``(check, *args)``; fail once, naming each failed check and its message."""
    failures = []
    for fn, *args in checks:
        try:
            fn(*args)
        except AssertionError as exc:
            failures.append(f"{fn.__name__.removeprefix('_check_')}{list(args[1:]) or ''}: {exc}")
    assert not failures, "\n\n".join(failures)


def _both(check: str, tmp: Path, *args: str) -> tuple[dict, dict]:
    """The same check on MindSpore, then on torch (the reference)."""
    return _run(check, "mindspore", tmp / "ms", *args), _run(check, "torch", tmp / "torch", *args)


# ----------------------------------------------------------------------------- 1-3


def _check_optimizer_groups_equal_torch(optim):
    ms, torch = optim
    assert ms["model_params"] == torch["model_params"]
    assert ms["param_groups"] == torch["param_groups"]  # canonical: FQNs in order + hyperparameters
    decay, no_decay = (g["params"] for g in ms["param_groups"])
    assert decay and no_decay and all("norm" in n for n in no_decay)
    assert sorted(decay + no_decay) == sorted(set(ms["model_params"]))


def _check_lr_curves_bitwise_equal_torch(optim):
    ms, torch = optim
    assert set(ms["lr_curves"]) == {"cosine_warmup", "cosine_ratio", "constant"}
    for name, curve in ms["lr_curves"].items():
        assert len(curve) == 20
        assert curve == torch["lr_curves"][name], name  # float.hex, every step
    assert ms["lr_resumed_equal"] and torch["lr_resumed_equal"]


def _check_losses_close_to_torch_and_token_counts_equal(optim):
    ms, torch = optim
    assert set(ms["losses"]) == {"ce_mean", "ce_sum", "chunked_mean", "chunked_sum"}
    for name, got in ms["losses"].items():
        want = torch["losses"][name]
        assert got["count_tokens"] == want["count_tokens"] == 16, name
        diff = abs(got["value"] - want["value"])
        print(f"{name}: |ms - torch| = {diff:.3g} (torch {want['value']!r})")
        if name.endswith("_mean"):
            assert diff <= LOSS_MEAN_ABS, (name, diff)
        else:
            assert diff <= LOSS_SUM_REL * abs(want["value"]), (name, diff)
    # chunked == unchunked on the same platform (within the framework's own rounding)
    for reduction in ("mean", "sum"):
        ce, chunked = ms["losses"][f"ce_{reduction}"]["value"], ms["losses"][f"chunked_{reduction}"]["value"]
        assert abs(ce - chunked) <= 1e-6 * max(1.0, abs(ce))


# ----------------------------------------------------------------------------- 4-5


def _check_tokenizer_ids_equal_torch(data):
    ms, torch = data
    assert ms["tokenizer"] == torch["tokenizer"]
    assert len(ms["tokenizer"]["ids"]) == 45 and ms["tokenizer"]["len"] == 512


def _check_loader_batches_equal_torch(data, data_type):
    ms, torch = data[0]["loaders"][data_type], data[1]["loaders"][data_type]
    for field in ("type", "len", "grad_accum", "pad_id", "batches", "groups", "dtypes"):
        assert ms[field] == torch[field], field
    assert ms["batches"] and all(set(b) == {"input_ids", "labels"} for b in ms["batches"])
    assert ms["dtypes"] == {"input_ids": "int64", "labels": "int64"}
    assert ms["types"] == ["mindspore"] and torch["types"] == ["torch"]  # converted at the edge
    assert [len(g) for g in ms["groups"]] == [ms["grad_accum"]] * len(ms["groups"])


def _check_loader_state_dict_round_trip_mid_epoch(data, data_type):
    ms, torch = data[0]["loaders"][data_type], data[1]["loaders"][data_type]
    assert ms["resumed"] and ms["resumed_equal"], "a loader loaded with the mid-epoch state does not continue"
    assert ms["resumed"] == ms["batches"][3:] == torch["resumed"]


# ----------------------------------------------------------------------------- 6


def _check_checkpoint_save_and_resume_bitwise(checkpoint):
    """Save after step 1, a fresh set of parts resumes: weights, AdamW state, lr, next step exact."""
    rep, _ = checkpoint
    assert {"__0_0.distcp", ".metadata", "manifest.json", "optimizer_rank0.pt", "scheduler.pt"} <= set(
        rep["files"]
    )
    assert {"rng_rank0.pt", "dataloader_rank0.pt", "extra_state.json", "hf_ckpt"} <= set(rep["files"])
    assert rep["loaded"] == [1, 0]
    assert rep["differs_before_load"] and rep["weights_restored"]
    assert rep["optimizer_state_restored"] and rep["optimizer_state_steps"] == [1.0]
    lr_saved, lr_loaded = rep["lr_after_step1"]
    assert lr_saved == lr_loaded
    assert rep["step2_changed"] and rep["step2_weights_equal"]
    assert rep["resumed_loss2"] == rep["losses"][1]


def _check_hf_export_loads_in_transformers_with_the_same_logits(checkpoint):
    import torch
    import transformers

    rep, out = checkpoint
    folder = Path(rep["saved"]) / "hf_ckpt"
    assert rep["hf_files"] == ["config.json", "model.safetensors"]
    model, info = transformers.AutoModelForCausalLM.from_pretrained(str(folder), output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"] and not info["mismatched_keys"], info
    model.eval()
    ids = np.random.default_rng(0).integers(0, 2048, size=(2, 16), dtype=np.int64)  # LOGIT_IDS
    with torch.no_grad():
        logits = model(torch.from_numpy(ids)).logits.float().numpy()
    ms_logits = np.load(out / "logits.npy")
    assert logits.shape == ms_logits.shape == (2, 16, 2048)
    diff = float(np.abs(logits - ms_logits).max())
    print(f"transformers vs MindSpore logits: max abs diff {diff:.3g} (peak {np.abs(ms_logits).max():.3g})")
    assert diff <= HF_LOGITS_ABS


# ----------------------------------------------------------------------------- 7-8


def _check_profiler_writes_traces_on_cpu(misc):
    ms, torch = misc
    traces = [f for f in ms["trace_files"] if f.endswith("trace_view.json")]
    assert traces and all(f.startswith("rank_0/") for f in ms["trace_files"]), ms["trace_files"]
    assert all(ms["trace_events"][f] > 0 for f in traces), ms["trace_events"]
    assert torch["trace_files"] and all(f.startswith("rank_0/") for f in torch["trace_files"])


def _check_metrics_records_and_sinks_equal_torch(misc):
    ms, torch = misc
    # keys, value types, and the loss / grad_norm / lr values (0-d platform tensors became floats)
    assert ms["records"] == torch["records"]
    assert list(ms["records"][0]) == [
        "step",
        "loss",
        "grad_norm",
        "lr",
        "step_time",
        "tokens_per_sec",
        "aux_loss",
        "tflops",
        "mfu",
    ]
    assert ms["history_len"] == 4
    assert ms["tb_files"] == 1 and ms["tb_scalars"] == torch["tb_scalars"]
    assert {tag for _, tag in ms["tb_scalars"]} >= {"train/loss", "train/grad_norm", "train/lr"}
    assert (
        ms["wandb_calls"]
        == torch["wandb_calls"]
        == [
            ["init", ["config", "dir", "name", "project"], "p", "r"],
            ["finish"],
        ]  # dir: the checked WANDB_DIR
    )
    assert ms["wandb_logged"] == torch["wandb_logged"] and [s for s, _ in ms["wandb_logged"]] == [2, 4]
    assert ms["wandb_values"] == torch["wandb_values"]


# ----------------------------------------------------------------------------- the tests
LOADERS = ("dummy", "hf_datasets", "json_file", "preset_pt")


def test_optimizer_lr_scheduler_loss(tmp_path):
    """1 OptimizersContainer groups, 2 LRSchedulersContainer curves, 3 CrossEntropyLoss / ChunkedCELoss."""
    optim = _both("optim_lr_loss", tmp_path)
    _all(
        (_check_optimizer_groups_equal_torch, optim),
        (_check_lr_curves_bitwise_equal_torch, optim),
        (_check_losses_close_to_torch_and_token_counts_equal, optim),
    )


def test_tokenizer_and_dataloaders(tmp_path):
    """4 HuggingFaceTokenizer ids, 5 the dummy / hf_datasets / json_file / preset_pt loaders."""
    from parity import assets

    data = _both("data", tmp_path, str(assets.preset_pt(tmp_path / "preset.pt")))
    _all(
        (_check_tokenizer_ids_equal_torch, data),
        *((_check_loader_batches_equal_torch, data, t) for t in LOADERS),
        *((_check_loader_state_dict_round_trip_mid_epoch, data, t) for t in LOADERS),
    )


def test_checkpoint_save_resume_and_hf_export(tmp_path):
    """6 CheckpointManager: save / resume bitwise; the HF export loads in transformers."""
    out = tmp_path / "out"
    out.mkdir()
    checkpoint = _run("checkpoint", "mindspore", tmp_path / "ms", str(out)), out
    _all(
        (_check_checkpoint_save_and_resume_bitwise, checkpoint),
        (_check_hf_export_loads_in_transformers_with_the_same_logits, checkpoint),
    )


def test_profiler_and_metrics(tmp_path):
    """7 Profiler traces on CPU, 8 MetricsProcessor records / TensorBoard / W&B (fake module)."""
    outs = {p: tmp_path / f"out_{p}" for p in ("mindspore", "torch")}
    for path in outs.values():
        path.mkdir()
    misc = (
        _run("profiler_metrics", "mindspore", tmp_path / "ms", str(outs["mindspore"])),
        _run("profiler_metrics", "torch", tmp_path / "torch", str(outs["torch"])),
    )
    _all((_check_profiler_writes_traces_on_cpu, misc), (_check_metrics_records_and_sinks_equal_torch, misc))
