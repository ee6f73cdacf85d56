"""Tier B goldens of the legacy trainer (issue: "first cases, on the legacy trainer").

They pin what ``LLMTrainer(args)`` and its ``_build_*`` steps produce today, so a change that
moves the legacy path (or a helper both paths share) fails here even when a tier A pair would
still agree. Every producer is explicitly seeded and writes only into a temporary folder.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import tempfile
import warnings
from pathlib import Path
from typing import Any
from unittest import mock

from parity import assets, canonical
from parity.builders import legacy_lr_curve
from parity.cases import REGISTRY
from parity.e2e import StepRecorder, legacy_debug_run, read_checkpoint
from parity.legacy_driver import bare_trainer, debug_model, legacy_args, llm_steps, simulated_rank
from parity.legacy_settings import builder_rows, callback_rows
from parity.run_log import normalise

# A fixed multilingual text set for the tokenizer case (scripts, emoji, whitespace, empty).
TOKENIZER_TEXTS = (
    "Hello, world!",
    "Parity means bit for bit.",
    "Grüße aus Köln — naïve café.",
    "Привет, мир",
    "你好，世界",
    "こんにちは世界",
    "مرحبا بالعالم",
    "emoji 🚀✨ and tabs\tand\nnewlines",
    "",
    "   leading and trailing spaces   ",
)


def run_recipe(*overrides: str) -> dict[str, Any]:
    """Train the debug recipe with ``overrides`` in a temporary folder; return curves and records."""
    from hyper_parallel.trainer import LLMTrainer

    with tempfile.TemporaryDirectory(prefix="parity-legacy-") as tmp:
        args = legacy_args(f"--train.checkpoint.output_dir={tmp}/ckpt", *overrides)
        trainer = LLMTrainer(args)
        recorder = StepRecorder()
        trainer.add_callback(recorder)
        trainer.train()
        return {
            "losses": recorder.losses,
            "grad_norms": recorder.grad_norms,
            "log_history": list(trainer.state.log_history),
            "checkpoint": read_checkpoint(Path(tmp) / "ckpt") if Path(tmp, "ckpt").exists() else None,
        }


# ----------------------------------------------------------------------------- producers


def recipe_curve() -> dict[str, Any]:
    run = legacy_debug_run()
    # Grad norms are read with .item() from a float32 tensor: their ULPs count in float32 (the
    # logged loss is a float64 token mean of per-micro-batch sums).
    return {
        "losses": canonical.losses(run["losses"]),
        "grad_norms": canonical.losses(run["grad_norms"], dtype="float32"),
    }


def recipe_metric_keys() -> dict[str, Any]:
    return canonical.metrics(
        legacy_debug_run()["log_history"],
        deterministic=("step", "loss", "grad_norm", "lr"),
        float_dtypes={"grad_norm": "float32"},
    )


def param_groups(*, seed: int) -> list[dict]:
    model = debug_model(seed)
    trainer = bare_trainer(legacy_args(), model=model)
    trainer._build_optimizer()
    return canonical.param_groups(trainer.optimizer.param_groups, model.named_parameters())


def model_loss(*, seed: int, batch: int, seq: int) -> dict[str, Any]:
    return model_loss_of(debug_model(seed), batch=batch, seq=seq)


def model_loss_of(model: Any, *, batch: int, seq: int) -> dict[str, Any]:
    import torch

    from hyper_parallel.data.dummy import DummyDataset

    data = DummyDataset(batch, seq, model.config.vocab_size)
    input_ids = torch.stack([data[i]["input_ids"] for i in range(batch)])
    labels = input_ids.clone()
    labels[0, : seq // 4] = -100  # a masked prompt
    out = model(input_ids=input_ids, labels=labels)
    return {"loss": out["loss"].detach(), "logits": out["logits"].detach()}


# The model variants no recipe trains: config overrides the debug flavour leaves at their defaults,
# the public ``forward_logits`` with explicit positions, ``init_weights`` on an unsharded model.
MODEL_VARIANTS = {
    "no_gate": {"attn_output_gate": "False"},
    "eps": {"rms_norm_eps": "0.01"},
    "positions": {},
    "init_weights": {},
}


def model_variant(*, variant: str, seed: int, batch: int, seq: int) -> dict[str, Any]:
    """``model_loss`` on a variant of the debug model: ``no_gate`` / ``eps`` (``config_overrides``),
    ``positions`` (``forward_logits`` with positions offset by 7), ``init_weights`` (the parameters
    after ``init_weights()`` on the plain, unsharded model: what a library user calls)."""
    import torch

    model = debug_model(seed, **MODEL_VARIANTS[variant])
    if variant == "init_weights":
        torch.manual_seed(seed + 1)
        model.init_weights()
        return {"state": {k: v.detach() for k, v in model.state_dict().items()}}
    if variant == "positions":
        from hyper_parallel.data.dummy import DummyDataset

        data = DummyDataset(batch, seq, model.config.vocab_size)
        input_ids = torch.stack([data[i]["input_ids"] for i in range(batch)])
        positions = (torch.arange(seq) + 7).expand(batch, seq)
        return {"logits": model.forward_logits(input_ids, position_ids=positions).detach()}
    return model_loss_of(model, batch=batch, seq=seq)


def dummy_batches(*, dp_shard: int, rank: int, num: int) -> list[dict]:
    args = legacy_args(f"--train.accelerator.dp_shard={dp_shard}", "--data.max_seq_len=16")
    trainer = bare_trainer(args, model=debug_model(0), world_size=dp_shard)
    llm_steps(trainer)
    with simulated_rank(rank):
        trainer._build_dataloader()
    it = iter(trainer.train_dataloader)
    return canonical.batches([next(it) for _ in range(num)])


def tokenizer_ids() -> dict[str, Any]:
    args = legacy_args("--data.type=hf_datasets", f"--model.tokenizer_path={assets.tokenizer_dir()}")
    trainer = bare_trainer(args, model=debug_model(0))
    from hyper_parallel.trainer.llm_trainer import LLMTrainer

    llm = LLMTrainer.__new__(LLMTrainer)
    llm.args, llm.base = args, trainer
    llm._build_model_assets()
    tok = trainer.tokenizer
    return {
        "ids": canonical.token_ids([tok(t, add_special_tokens=True)["input_ids"] for t in TOKENIZER_TEXTS]),
        "pad_token_id": tok.pad_token_id,
        "eos_token_id": tok.eos_token_id,
        "vocab": len(tok),
    }


def checkpoint_after(*, steps: int) -> dict[str, Any]:
    run = run_recipe(f"--train.max_steps={steps}", f"--train.checkpoint.save_steps={steps}")
    return canonical.checkpoint(run["checkpoint"])


def _stream_segments(text: str, workdir: str) -> list[str]:
    """What the terminal received, one entry per ``\\r`` or ``\\n`` separated piece: a piece of
    spaces (tqdm clearing its bar) reads ``<clear>``; paths and timed fields as ``parity.run_log``."""
    pieces = [piece for line in text.split("\n") for piece in line.split("\r") if piece]
    return [normalise(piece.rstrip(), workdir) if piece.strip() else "<clear>" for piece in pieces]


def progress_bar(*, steps: int, log_steps: int) -> dict[str, Any]:
    """The legacy progress bar as a terminal shows it: ``LLMTrainer`` trains ``steps`` steps with
    ``HYPER_PARALLEL_PROGRESS=1`` and one console handler on the root logger, whose records the bar
    routes through ``tqdm.write`` while it is open. The stream holds, from the bar's first drawing
    on, every drawing (description, percentage, ``n/total``, the loss and gnorm postfix) and the
    log lines between them; tqdm's clock is pinned (elapsed 00:00, rate ``?``) so that it draws only
    on its own events, the width is fixed (``COLUMNS``), and the timed fields of the step line are
    replaced. ``handler_restored``: the root logger's console handler is back once the bar closed."""
    from hyper_parallel.platform.logging import forget_once
    from hyper_parallel.trainer import LLMTrainer

    root, product = logging.getLogger(), logging.getLogger("hyper_parallel")
    saved_root = (list(root.handlers), root.level)
    saved_product = (list(product.handlers), product.level, product.propagate)
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    handler.addFilter(logging.Filter("hyper_parallel"))
    with contextlib.ExitStack() as stack:
        tmp = os.path.realpath(stack.enter_context(tempfile.TemporaryDirectory(prefix="parity-progress-")))
        stack.enter_context(contextlib.redirect_stderr(stream))  # the bar's default file, and the console
        stack.enter_context(mock.patch.dict(os.environ, {"HYPER_PARALLEL_PROGRESS": "1", "COLUMNS": "100"}))
        stack.enter_context(mock.patch("tqdm.std.time", lambda: 0.0))
        stack.enter_context(warnings.catch_warnings())
        warnings.simplefilter("ignore")  # a warning's first occurrence depends on what ran before
        forget_once()
        root.handlers = [handler]
        product.handlers, product.propagate = [], True
        product.setLevel(logging.INFO)
        try:
            args = legacy_args(
                f"--train.checkpoint.output_dir={tmp}/ckpt",
                f"--train.max_steps={steps}",
                "--train.checkpoint.save_steps=0",
                f"--train.logging.log_steps={log_steps}",
            )
            LLMTrainer(args).train()
            restored = root.handlers == [handler]
        finally:
            root.handlers, root.level = saved_root
            product.handlers, product.level, product.propagate = saved_product
        text = stream.getvalue()
    start = text.find("\rTraining")
    return {
        "stream": _stream_segments(text[start:] if start >= 0 else text, tmp),
        "handler_restored": restored,
    }


# ----------------------------------------------------------------------------- registration

SUITE = REGISTRY.suite(tags=("legacy",))
# Both read the e2e dummy recipe's legacy run (``parity.e2e.legacy_debug_run``): they share its worker.
for _name, _kind, _producer in (
    ("legacy_debug_recipe_curve", "train_curve", recipe_curve),
    ("legacy_debug_recipe_metric_keys", "metrics", recipe_metric_keys),
):
    SUITE.golden(_name, kind=_kind, seed=42, producer=_producer, share="e2e:dummy")
SUITE.golden(
    "legacy_debug_param_groups",
    kind="param_groups",
    seed=0,
    params={"seed": 0},
    producer=param_groups,
)

SUITE.grid(
    "legacy_lr",
    params=[
        {"steps": _steps, "warmup_ratio": _ratio, "decay_style": _style, "lr_min": _lr_min}
        for _steps, _ratio, _style, _lr_min in (
            (20, 0.1, "cosine", 1e-4),
            (20, 0.15, "cosine", 0.0),
            (100, 0.05, "cosine", 1e-5),
            (100, 0.0, "constant", 0.0),
            (7, 0.5, "cosine", 1e-4),
            (20, 0.1, "linear", 1e-4),
            (1, 0.0, "cosine", 0.0),
            (50, 0.33, "constant", 1e-4),
        )
    ],
    kind="lr_curve",
    producer=legacy_lr_curve,
)

SUITE.golden(
    "legacy_debug_model_loss",
    kind="losses",
    params={"seed": 0, "batch": 2, "seq": 32},
    producer=model_loss,
)
# Its variants (a grid of its own: the case above keeps its id and golden).
SUITE.grid(
    "legacy_debug_model_variant",
    params=[{"variant": _v, "seed": 0, "batch": 2, "seq": 32} for _v in MODEL_VARIANTS],
    kind="losses",
    producer=model_variant,
)
SUITE.grid(
    "legacy_dummy_batches",
    params=[{"dp_shard": _dp, "rank": _rank, "num": 3} for _dp, _rank in ((1, 0), (2, 0), (2, 1))],
    kind="batches",
    producer=dummy_batches,
)
SUITE.golden("legacy_multilingual", kind="token_ids", producer=tokenizer_ids)
SUITE.golden(
    "legacy_after_5_steps",
    kind="checkpoint",
    params={"steps": 5},
    producer=checkpoint_after,
)
# Each legacy callback's settings from its section: absent, the schema's defaults, each field moved.
SUITE.golden("legacy_callback_settings", kind="callbacks", producer=callback_rows)
SUITE.golden(
    "legacy_progress_bar", kind="log", seed=42, params={"steps": 3, "log_steps": 2}, producer=progress_bar
)
# The builders' code fallbacks (spec 1.6) and settings no recipe combines.
SUITE.golden("legacy_builder_fallbacks", kind="builders", producer=builder_rows)
