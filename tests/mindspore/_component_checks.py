"""Component checks on MindSpore, each group run in a fresh process by ``test_components_mindspore.py``.

``python -m tests.mindspore._component_checks <name> [args...]`` runs ``check_<name>`` under the
process's platform (``HYPER_PARALLEL_PLATFORM``), and prints one JSON line: the *same* script
serves the MindSpore side and the torch reference (run with ``HYPER_PARALLEL_PLATFORM=torch``), so
the pytest side compares two reports made by identical code. Tensors leave as numpy lists (ids)
or ``float.hex`` strings (values); nothing framework-specific reaches the JSON.

MindSpore reports a failed kernel late and re-raises it from later ops of the same process, so the groups are kept small, and a failed group does not
fail another.
"""

from __future__ import annotations

import json
import os
import sys
from itertools import islice
from pathlib import Path
from typing import Any

import numpy as np

os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from hyper_parallel.platform import get_platform

P = get_platform()


def _report(**values: Any) -> None:
    print(json.dumps({"platform": P.name, **values}))


def _np(t: Any) -> np.ndarray:
    """A tensor of either framework (or a list) as numpy, via the platform's raw bytes."""
    if isinstance(t, np.ndarray):
        return t
    if not P.is_tensor(t):
        return np.asarray(t)
    if P.name == "torch":
        return t.detach().cpu().numpy()
    return t.asnumpy()


def _hex(values: Any) -> list[str]:
    return [float(v).hex() for v in np.asarray(values, dtype=np.float64).ravel()]


def _debug_model(seed: int = 0) -> Any:
    """The ``debug`` flavour built by the platform's model (torch ``model.py`` / ``model_mindspore.py``)."""
    from hyper_parallel.models.qwen3_5.config import FLAVORS, Qwen3_5Config

    P.manual_seed(seed)
    return Qwen3_5Config(**FLAVORS["debug"]).build()


# ----------------------------------------------------------------------------- 1-3: optim, lr, loss
def check_optim_lr_loss() -> None:
    """Param groups on the debug model, the LR curve over 20 steps, and the loss components."""
    from hyper_parallel.components.loss import ChunkedCELoss, CrossEntropyLoss
    from hyper_parallel.components.lr_scheduler import LRSchedulersContainer
    from hyper_parallel.components.optimizer import OptimizersContainer
    from parity import canonical

    out: dict[str, Any] = {}
    model = _debug_model()
    optim = OptimizersContainer.Config(lr=1e-3, betas=(0.9, 0.95), weight_decay=0.1).build(
        model_parts=[model]
    )
    out["param_groups"] = canonical.to_json(
        canonical.param_groups(optim.param_groups, model.named_parameters())
    )
    out["model_params"] = [n for n, _ in model.named_parameters()]

    curves = {}
    for name, fields in {
        "cosine_warmup": {"warmup_steps": 3, "decay_style": "cosine", "lr_min": 1e-4},
        "cosine_ratio": {"lr_warmup_ratio": 0.1, "decay_style": "cosine", "lr_min": 0.0},
        "constant": {"warmup_steps": 2, "decay_style": "constant"},
    }.items():
        opt = OptimizersContainer.Config(lr=3e-4).build(model_parts=[model])
        sched = LRSchedulersContainer.Config(**fields).build(optimizers=opt, training_steps=20)
        lrs = []
        for _ in range(20):
            lrs.append(float(sched.get_last_lr()[0]).hex())
            sched.step()
        curves[name] = lrs
        # state round trip: a fresh scheduler loaded with the state continues on the same curve
        if name == "cosine_warmup":
            state = sched.state_dict()
            fresh = LRSchedulersContainer.Config(**fields).build(
                optimizers=OptimizersContainer.Config(lr=3e-4).build(model_parts=[model]), training_steps=20
            )
            fresh.load_state_dict(state)
            out["lr_resumed_equal"] = (
                float(fresh.get_last_lr()[0]).hex() == float(sched.get_last_lr()[0]).hex()
            )
    out["lr_curves"] = curves

    rng = np.random.default_rng(0)
    logits = (rng.standard_normal((2, 12, 50)) * 3).astype(np.float32)
    labels = rng.integers(0, 50, size=(2, 12)).astype(np.int64)
    labels[0, :3] = -100
    labels[1, 7:] = -100
    logits_t = _tensor(logits)
    labels_t = P.as_int64(labels.tolist())
    batch = {"input_ids": P.as_int64(labels.clip(0).tolist()), "labels": labels_t}
    losses = {}
    for name, cfg in {
        "ce_mean": CrossEntropyLoss.Config(),
        "ce_sum": CrossEntropyLoss.Config(reduction="sum"),
        "chunked_mean": ChunkedCELoss.Config(chunks=3),
        "chunked_sum": ChunkedCELoss.Config(chunks=5, reduction="sum"),
    }.items():
        fn = cfg.build()
        value = fn(logits_t, labels_t)
        losses[name] = {"value": float(_np(value)), "count_tokens": int(fn.count_tokens(batch))}
    out["losses"] = losses
    _report(**out)


def _tensor(array: np.ndarray) -> Any:
    if P.name == "torch":
        import torch

        return torch.from_numpy(np.array(array))
    import mindspore as ms

    return ms.Tensor(np.array(array))


# ----------------------------------------------------------------------------- 4-5: tokenizer, data
TEXTS = [
    "Hello world",
    "  leading spaces and trailing  ",
    "multilingual: naïve café, 日本語, русский, emoji 🙂",
    "",
    "<|endoftext|> special in the middle <|endoftext|>",
]
SIZES = {"seq_len": 16, "local_batch_size": 2, "global_batch_size": 4, "seed": 42}


def _batch(mb: dict[str, Any]) -> dict[str, Any]:
    return {key: _np(value).tolist() for key, value in mb.items()}


def _take(it: Any, n: int) -> list[Any]:
    return [_batch(mb) for mb in islice(it, n)]


def check_data(preset_path: str) -> None:
    """Tokenizer ids, and for every loader type: the first micro-batches, the micro-batch groups and
    a mid-epoch ``state_dict`` round trip (a fresh loader, loaded, continues like the original)."""
    from hyper_parallel.components.dataloader import (
        DummyDataLoader,
        HuggingFaceTextDataLoader,
        PresetPtDataLoader,
    )
    from hyper_parallel.components.tokenizer import HuggingFaceTokenizer
    from parity import assets

    tok = HuggingFaceTokenizer.Config(path=str(assets.tokenizer_dir())).build(vocab_size=512)
    rows = [json.loads(line)["text"] for line in assets.text_jsonl().read_text().splitlines()[:40]]
    out: dict[str, Any] = {
        "tokenizer": {
            "ids": [tok.encode(t) for t in TEXTS + rows],
            "no_special": [tok.encode(t, add_special_tokens=False) for t in TEXTS],
            "decoded": [tok.decode(tok.encode(t)) for t in TEXTS],
            "pad_token_id": tok.pad_token_id,
            "eos_token_id": tok.eos_token_id,
            "len": len(tok),
        }
    }
    configs = {
        "dummy": DummyDataLoader.Config(),
        "hf_datasets": HuggingFaceTextDataLoader.Config(train_path=str(assets.text_jsonl())),
        "json_file": HuggingFaceTextDataLoader.Config(
            format="json_file", train_path=str(assets.alpaca_json())
        ),
        "preset_pt": PresetPtDataLoader.Config(train_path=preset_path, shuffle=False),
    }
    loaders: dict[str, Any] = {}
    for name, cfg in configs.items():

        def build(cfg: Any = cfg) -> Any:
            return cfg.build(**SIZES, tokenizer=tok, training_steps=6, vocab_size=512)

        loader = build()
        it = iter(loader)
        first = _take(it, 3)
        state = loader.state_dict()
        rest = _take(it, 3)
        resumed = build()
        resumed.load_state_dict(state)
        after = _take(iter(resumed), 3)
        groups = [[_batch(mb) for mb in group] for group in islice(build().micro_batch_iterator(), 2)]
        loaders[name] = {
            "type": type(loader).__name__,
            "len": len(loader),
            "grad_accum": loader.grad_accum,
            "pad_id": loader.pad_id,
            "batches": first + rest,
            "resumed": after,
            "resumed_equal": after == rest,
            "groups": groups,
            "types": sorted({type(v).__module__.split(".")[0] for v in next(iter(build())).values()}),
            "dtypes": {k: P.dtype_name(v) for k, v in next(iter(build())).items()},
        }
    out["loaders"] = loaders
    _report(**out)


# ----------------------------------------------------------------------------- 6: checkpoint
LOGIT_IDS = np.random.default_rng(0).integers(0, 2048, size=(2, 16), dtype=np.int64)


def _parts(seed: int) -> dict[str, Any]:
    """Debug model, its optimizer, scheduler, dummy loader and loss, as the trainer builds them."""
    from hyper_parallel.components.dataloader import (
        DummyDataLoader,
    )
    from hyper_parallel.components.loss import CrossEntropyLoss
    from hyper_parallel.components.lr_scheduler import LRSchedulersContainer
    from hyper_parallel.components.optimizer import OptimizersContainer

    model = _debug_model(seed)
    model.init_weights()
    optim = OptimizersContainer.Config(lr=1e-2, betas=(0.9, 0.95), weight_decay=0.1).build(
        model_parts=[model]
    )
    sched = LRSchedulersContainer.Config(warmup_steps=1, lr_min=1e-3).build(
        optimizers=optim, training_steps=4
    )
    loader = DummyDataLoader.Config().build(
        seq_len=16, local_batch_size=2, global_batch_size=2, seed=7, training_steps=4, vocab_size=2048
    )
    return {
        "model": model,
        "optim": optim,
        "sched": sched,
        "loader": loader,
        "loss": CrossEntropyLoss.Config().build(),
    }


def _train_step(parts: dict[str, Any], it: Any) -> str:
    batch = next(it)
    model, loss_fn = parts["model"], parts["loss"]

    def fn():
        loss = loss_fn(model.forward_logits(batch["input_ids"]), batch["labels"])
        return loss, loss

    loss = P.backward(fn, model)
    P.clip_grad_norm(model.parameters(), 1.0)
    parts["optim"].step()
    parts["sched"].step()
    parts["optim"].zero_grad()
    return float(_np(loss)).hex()


def _weights(model: Any) -> dict[str, np.ndarray]:
    return {name: _np(p).copy() for name, p in model.named_parameters()}


def _manager(parts: dict[str, Any], **fields: Any) -> Any:
    from hyper_parallel.components.checkpoint import CheckpointManager
    from hyper_parallel.models.qwen3_5.state_dict import Qwen3_5StateDictAdapter

    return CheckpointManager.Config(**fields).build(
        model_parts=[parts["model"]],
        optimizers=parts["optim"],
        lr_schedulers=parts["sched"],
        dataloader=parts["loader"],
        sd_adapter=Qwen3_5StateDictAdapter,
    )


def check_checkpoint(out_dir: str) -> None:
    """Train 1 step, save ``step_1`` (+ HF export), train step 2; a fresh set of parts resumed from
    ``step_1`` must hold the same weights / optimizer state / lr and give the same step 2 bit for
    bit. Writes the step-1 model's logits on ``LOGIT_IDS`` to ``<out_dir>/logits.npy`` (for the
    transformers comparison on the torch side)."""
    out = Path(out_dir)
    a = _parts(seed=0)
    it = iter(a["loader"])
    loss1 = _train_step(a, it)
    mgr = _manager(a, output_dir=str(out / "ckpt"), save_steps=1, save_hf_weights=True)
    saved = mgr.save(1)
    mgr.wait()
    w1 = _weights(a["model"])
    np.save(out / "logits.npy", _np(a["model"].forward_logits(P.as_int64(LOGIT_IDS.tolist()))))
    opt_state_1 = a["optim"].state_dict()
    lr1 = float(a["sched"].get_last_lr()[0]).hex()
    loss2 = _train_step(a, it)
    w2 = _weights(a["model"])

    b = _parts(seed=1)  # other initial weights: the resume must overwrite all of them
    differs_before = any(not np.array_equal(w1[k], v) for k, v in _weights(b["model"]).items())
    step, epoch = _manager(b, output_dir=str(out / "unused"), save_steps=0, load_path=saved).load()
    w1b = _weights(b["model"])
    opt_state_b = b["optim"].state_dict()
    opt_equal = opt_state_b["param_groups"] == opt_state_1["param_groups"] and all(
        np.array_equal(_np(opt_state_b["state"][i][k]), _np(v))
        for i, entry in opt_state_1["state"].items()
        for k, v in entry.items()
    )
    lr_b = float(b["sched"].get_last_lr()[0]).hex()
    loss2b = _train_step(b, iter(b["loader"]))
    w2b = _weights(b["model"])
    files = sorted(p.name for p in Path(saved).iterdir())
    _report(
        saved=saved,
        files=files,
        hf_files=sorted(p.name for p in (Path(saved) / "hf_ckpt").iterdir()),
        loaded=[step, epoch],
        losses=[loss1, loss2],
        resumed_loss2=loss2b,
        differs_before_load=differs_before,
        weights_restored=all(np.array_equal(w1[k], w1b[k]) for k in w1),
        optimizer_state_restored=opt_equal,
        optimizer_state_steps=sorted({float(_np(e["step"])) for e in opt_state_b["state"].values()}),
        lr_after_step1=[lr1, lr_b],
        step2_weights_equal=all(np.array_equal(w2[k], w2b[k]) for k in w2),
        step2_changed=any(not np.array_equal(w1[k], w2[k]) for k in w1),
        weight_names=sorted(w1),
    )


# ----------------------------------------------------------------------------- 7-8: profiler, metrics
class _FakeWandb:
    """Stands in for ``wandb`` (offline runs need wandb's service: seconds per process); records the calls."""

    def __init__(self) -> None:
        self.calls: list[Any] = []

    def init(self, **kwargs: Any) -> Any:
        self.calls.append(["init", sorted(kwargs), kwargs.get("project"), kwargs.get("name")])
        fake = self

        class Run:
            def log(self, data: dict[str, Any], step: int | None = None) -> None:
                fake.calls.append(["log", step, {k: _jsonable(v) for k, v in data.items()}])

            def finish(self) -> None:
                fake.calls.append(["finish"])

        return Run()


def _jsonable(value: Any) -> Any:
    if isinstance(value, float):
        return value.hex()
    return value if value is None or isinstance(value, (int, str, bool)) else repr(type(value))


def check_profiler_metrics(out_dir: str) -> None:
    """Profiler with wait 1 / warmup 1 / active 2 over 5 steps: the trace files under its folder;
    MetricsProcessor fed platform 0-d tensors: record keys and values, TensorBoard scalars, W&B calls."""
    from hyper_parallel.components.metrics import MetricsProcessor, TensorBoardConfig, WandbConfig
    from hyper_parallel.components.profiler import Profiler

    out = Path(out_dir)
    prof_cfg = Profiler.Config(
        enabled=True, output_dir=str(out / "prof"), wait_steps=1, warmup_steps=1, active_steps=2
    )
    prof = prof_cfg.build(rank=0)
    x = _tensor(np.ones((32, 32), np.float32))
    with prof as p:
        for _ in range(5):
            y = x @ x
            float(_np(y.sum()))
            p.step()
    trace_files = sorted(str(f.relative_to(out / "prof")) for f in (out / "prof").rglob("*") if f.is_file())
    trace_events = {}
    for name in trace_files:
        if name.endswith(".json"):
            data = json.loads((out / "prof" / name).read_text())
            events = data.get("traceEvents", []) if isinstance(data, dict) else data
            trace_events[name] = len(events)

    fake = _FakeWandb()
    sys.modules["wandb"] = fake  # type: ignore[assignment]
    config = MetricsProcessor.Config(
        log_steps=1,
        model_flops_per_token=1000,
        peak_tflops=1.0,
        tensorboard=TensorBoardConfig(enabled=True, output_dir=str(out / "tb"), log_steps=1),
        wandb=WandbConfig(enabled=True, project="p", run_name="r", log_steps=2),
    )
    proc = config.build(world_size=1, rank=0, global_batch_size=4, seq_len=16, run_config={"a": 1})
    records = []
    for step in range(1, 5):
        proc.start_step()
        record = proc.log(
            step,
            loss=_tensor(np.float32(2.5 / step)),
            grad_norm=_tensor(np.float32(0.125 * step)),
            lr=1e-3 / step,
            global_tokens=64,
        )
        records.append(
            {
                k: [type(v).__name__, v if k in ("step", "loss", "grad_norm", "lr") else None]
                for k, v in record.items()
            }
        )
    proc.close()
    from tensorboard.backend.event_processing.event_file_loader import EventFileLoader

    events = sorted((out / "tb").glob("events.out.tfevents.*"))
    scalars = []
    for path in events:
        for event in EventFileLoader(str(path)).Load():
            for value in event.summary.value:
                scalars.append([event.step, value.tag])
    _report(
        trace_files=trace_files,
        trace_events=trace_events,
        records=records,
        history_len=len(proc.history),
        tb_files=len(events),
        tb_scalars=sorted(scalars),
        wandb_calls=[c for c in fake.calls if c[0] != "log"],
        wandb_logged=[[c[1], sorted(c[2])] for c in fake.calls if c[0] == "log"],
        wandb_values=[
            [c[1], {k: v for k, v in c[2].items() if k in ("train/loss", "train/grad_norm", "train/lr")}]
            for c in fake.calls
            if c[0] == "log"
        ],
    )


# ----------------------------------------------------------------------------- resume
def check_train(*argv: str) -> None:
    """``python -m hyper_parallel.train`` with ``argv``, recording each step's loss and grad norm (hex)
    and the lr after it; the resume test runs it twice (uninterrupted, then resumed)."""
    from hyper_parallel.platform.logging import init_logger
    from hyper_parallel.trainer.legacy_mapping import config_manager

    init_logger()
    trainer = config_manager().parse_args(list(argv)).build()
    steps: list[dict[str, Any]] = []
    step_fn = trainer.train_step

    def recording_step(it):
        out = step_fn(it)
        steps.append(
            {
                "step": trainer.state.global_step,
                "loss": float(out["loss"]).hex(),
                "grad_norm": float(out["grad_norm"]).hex(),
                "lr": float(trainer.lr_scheduler.get_last_lr()[0]).hex(),
            }
        )
        return out

    trainer.train_step = recording_step
    trainer.train()
    _report(steps=steps)


if __name__ == "__main__":
    globals()[f"check_{sys.argv[1]}"](*sys.argv[2:])
