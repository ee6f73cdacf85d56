"""The feature space of the legacy YAML schema that both trainers support, declared once.

A *point* is a plain dict ``{feature: value}`` with one value per entry of ``FEATURES``. Which
points are valid is said by ``CONSTRAINTS``: each rule relates exactly two features, so a point is
valid when every pair of its values is allowed (that is what lets the covering set in
``parity.explore.pairwise`` reason about pairs alone). Everything a value means is in
``render``: it turns a point into the ``--a.b=v`` overrides of ``examples/debug/train.yaml`` that
both trainers read, writing the data, weights and tokenizer files the point asks for into a
scratch folder. Every example is tiny (the debug model, 2-4 steps, 16-32 tokens), so one pair of
runs takes a second or two.

Batch sizes are drawn as factors: ``global_batch_size = micro * world * accum``, so the global
batch always splits into whole micro-batches on every rank (both trainers refuse anything else).
"""

from __future__ import annotations

import json
import math
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "CONSTRAINTS",
    "FEATURES",
    "Rule",
    "default_point",
    "first_epoch_stop",
    "global_batch",
    "pair_allowed",
    "render",
    "valid",
    "violations",
]

TEXT_DATA = ("text_jsonl", "text_disk", "text_key", "alpaca_masked", "alpaca_plain")
# Non-empty rows of the text assets (the loaders drop empty rows; nothing else is filtered): all of
# them, or at least ``train_size`` minus the asset's empty rows. Alpaca rows are left out: a row
# whose prompt fills ``seq_len`` has no loss token, so their count depends on the sequence length.
_TEXT_ROWS = {"text_jsonl": (198, 2), "text_disk": (63, 1), "text_key": (35, 4)}  # (non-empty, empty)

# feature -> its values; the first value is the default (what the debug recipe does, or closest).
FEATURES: dict[str, tuple[Any, ...]] = {
    # data: which source, and its options
    "data": ("dummy", "text_jsonl", "text_disk", "text_key", "alpaca_masked", "alpaca_plain", "preset"),
    "tokenizer": ("none", "eos_pad", "own_pad", "from_weights"),
    # small: 24 rows; short: one row less than max_steps global batches (the data ends the run early)
    "train_size": ("all", "small", "short"),
    "shuffle": (True, False),
    "epochs": (1, 2),
    "seq_len": (16, 32),
    # loop and batches
    "seed": (42, 3),
    "world": (1, 2, 3),
    # train.accelerator: auto (the YAML's dp_shard -1), dp_shard=world, the legacy dp=world alone
    # (dp_shard null), or both with dp=1 (dp_shard wins)
    "dp_shard": ("auto", "explicit", "dp", "both"),
    "micro": (2, 1),
    "accum": (1, 2),
    "steps": (3, 2, 4),
    # LR schedule and optimizer
    "decay": ("cosine", "constant", "linear"),
    "warmup": (0.25, 0.0, 0.5, 0.1),
    "warmup_form": ("ratio", "steps"),
    "lr": (1e-3, 4e-3),
    "lr_min": (1e-4, 0.0),
    "betas": ("default", "b95"),
    "eps": (1e-8, 1e-6),
    "weight_decay": (0.01, 0.0, 0.1),
    "max_grad_norm": (1.0, 0.05),
    "loss_agg": ("token_weighted", "rank_average"),
    # model
    "freeze": ("none", "mlp1", "attn0_norm"),
    "bf16": (False, True),
    # under bf16 on several ranks: gradients reduced in bf16 (train.mixed_precision.reduce_dtype)
    "mp_dtypes": ("default", "reduce_bf16"),
    "ac": (False, True),
    "reshard": (True, False),
    # debug: 2 layers, 4 heads on 2 KV heads; deep_mha: 3 layers, one KV head per head (overrides)
    "model": ("debug", "deep_mha"),
    "weights": ("random", "hf", "dcp"),
    "weights_dtype": ("float32", "bfloat16"),
    # checkpoint
    "save_steps": (0, 1, 2),
    "save_async": (False, True),
    "save_hf": (True, False),
    # metrics and profiler
    "log_steps": (1, 2),
    "tensorboard": (False, True),
    "profiler": (False, True),
    # how HyperTrainer gets its Config: legacy_to_trainer_config, the recipe command line
    # (--module qwen3_5 --config debug + flags), or the command line's YAML path (train.yaml --a.b=v)
    "route": ("mapping", "cli", "yaml"),
    # how the recipe command line spells bools and floats (route cli): true/false and repr(x);
    # True/False and 1.0e-03 forms; 1/0 and 17-digit exponent forms (all parse to the same values)
    "spelling": ("lower", "title", "digit"),
}


def default_point() -> dict[str, Any]:
    return {name: values[0] for name, values in FEATURES.items()}


@dataclass(frozen=True)
class Rule:
    """``allowed(value_a, value_b)`` for features ``a`` and ``b``; ``why`` says what it protects."""

    a: str
    b: str
    allowed: Callable[[Any, Any], bool]
    why: str


CONSTRAINTS: tuple[Rule, ...] = (
    Rule(
        "data",
        "tokenizer",
        lambda d, t: t != "none" or d in ("dummy", "preset"),
        "text data needs a tokenizer; dummy and preset_pt run with or without one",
    ),
    Rule("tokenizer", "weights", lambda t, w: t != "from_weights" or w == "hf", "only an HF folder has one"),
    Rule(
        "data",
        "weights",
        lambda d, w: not (d == "preset" and w == "dcp"),
        "preset_pt loads a tokenizer from weights_path when one is set: a DCP folder has none",
    ),
    Rule(
        "data",
        "micro",
        lambda d, m: d != "preset" or m > 1,
        "preset rows pad to the longest row of their micro-batch: one-row micro-batches never pad, "
        "so the pad id (own_pad, eos_pad) would go unseen",
    ),
    Rule("weights", "weights_dtype", lambda w, t: w != "random" or t == "float32", "random init is float32"),
    Rule(
        "data",
        "train_size",
        lambda d, s: s == "all" or (d in TEXT_DATA and (s == "small" or d in _TEXT_ROWS)),
        "train_size selects rows of an HF/json dataset (short: of one whose empty rows are known)",
    ),
    Rule(
        "data",
        "warmup_form",
        lambda d, f: f == "ratio" or d in ("dummy", "preset"),
        "warmup as steps needs the horizon before the run (dummy, preset_pt: max_steps)",
    ),
    Rule(
        "route", "warmup_form", lambda r, f: f == "ratio" or r == "cli", "the legacy schema has a ratio only"
    ),
    Rule(
        "route",
        "decay",
        lambda r, d: r == "mapping" or d != "linear",
        "the command line refuses a decay style the scheduler does not implement; LLMTrainer runs cosine",
    ),
    Rule("warmup", "warmup_form", lambda w, f: f == "ratio" or w > 0, "warmup 0 is the same in both forms"),
    Rule("world", "dp_shard", lambda w, s: s == "auto" or w > 1, "an explicit degree 1 is the auto case"),
    Rule(
        "route",
        "spelling",
        lambda r, s: r == "cli" or s == "lower",
        "only the recipe command line is respelled",
    ),
    Rule(
        "bf16",
        "weights",
        lambda b, w: not (b and w == "dcp"),
        "a DCP folder of fp32 weights does not load into bf16 FSDP params",
    ),
    Rule(
        "bf16",
        "mp_dtypes",
        lambda b, m: b or m == "default",
        "the reduce dtype applies under bf16 only",
    ),
    Rule("world", "mp_dtypes", lambda w, m: w > 1 or m == "default", "one rank reduces nothing"),
    Rule(
        "model",
        "weights",
        lambda m, w: m == "debug" or w == "random",
        "the weight files hold the debug shape",
    ),
    Rule(
        "route",
        "model",
        lambda r, m: r != "cli" or m == "debug",
        "the recipe command line has no shape flags",
    ),
    Rule("save_steps", "save_async", lambda s, a: s > 0 or not a, "no save: sync or async does not matter"),
    Rule("save_steps", "save_hf", lambda s, h: s > 0 or h, "no save: no export either"),
    Rule("world", "profiler", lambda w, p: not (p and w > 1), "one trace per rank: kept to single-rank runs"),
)

_RULES_BY_PAIR: dict[tuple[str, str], list[Rule]] = {}
for _rule in CONSTRAINTS:
    _RULES_BY_PAIR.setdefault((_rule.a, _rule.b), []).append(_rule)


def pair_allowed(fa: str, va: Any, fb: str, vb: Any) -> bool:
    """Whether ``fa=va`` and ``fb=vb`` may appear in one point."""
    ok = all(r.allowed(va, vb) for r in _RULES_BY_PAIR.get((fa, fb), ()))
    return ok and all(r.allowed(vb, va) for r in _RULES_BY_PAIR.get((fb, fa), ()))


def violations(point: Mapping[str, Any]) -> list[str]:
    """Every broken rule (and unknown feature or value), one line each."""
    out = [f"unknown feature {k!r}" for k in point if k not in FEATURES]
    for name, values in FEATURES.items():
        if name not in point:
            out.append(f"feature {name!r} is missing")
        elif point[name] not in values:
            out.append(f"{name}={point[name]!r}: expected one of {values}")
    if out:
        return out
    return [
        f"{r.a}={point[r.a]!r} with {r.b}={point[r.b]!r}: {r.why}"
        for r in CONSTRAINTS
        if not r.allowed(point[r.a], point[r.b])
    ]


def valid(point: Mapping[str, Any]) -> bool:
    return not violations(point)


def global_batch(point: Mapping[str, Any]) -> int:
    micro = point["micro"]
    return micro * point["world"] * point["accum"]


def horizon(point: Mapping[str, Any]) -> int | None:
    """The LR horizon T when it is known before the run (dummy and preset_pt data: max_steps)."""
    return point["steps"] if point["data"] in ("dummy", "preset") else None


def warmup_steps(point: Mapping[str, Any]) -> int | None:
    """``W = ceil(T * ratio)`` when the horizon is known (the steps form of the same warmup)."""
    total = horizon(point)
    return None if total is None else math.ceil(total * point["warmup"])


_SMALL_TRAIN_SIZE = 24


def train_size(point: Mapping[str, Any]) -> int | None:
    """``data.train_size`` of ``point``. ``short`` asks for ``global_batch * steps - 1`` rows: the
    data then holds fewer than ``steps`` global batches (both trainers lower ``max_steps``), and
    at least one, since the assets' empty rows lie past the first few (none in rows 0-3, one in
    rows 0-13, two in rows 0-23)."""
    if point["train_size"] == "small":
        return _SMALL_TRAIN_SIZE
    if point["train_size"] == "short":
        return global_batch(point) * point["steps"] - 1
    return None


def first_epoch_stop(point: Mapping[str, Any]) -> str | None:
    """Where ``max_steps`` falls in a run of several epochs: ``"inside"`` the first epoch (later
    epochs must not start), ``"at_end"`` of it (the same, with the epoch's data used up), or
    ``"later"``; None for one epoch, or when the epoch's length is not known before the run.

    Dummy data holds ``max_steps`` global batches: one epoch ends exactly at ``max_steps``. The
    preset file holds ``steps - 1`` (see ``_data``). A text point stops inside the first epoch when
    even a lower bound of its rows makes more global batches than ``steps``.
    """
    if point["epochs"] == 1:
        return None
    steps = point["steps"]
    if point["data"] == "dummy":
        return "at_end"
    if point["data"] == "preset":
        per_epoch = max(1, steps - 1)
        return "inside" if steps < per_epoch else "at_end" if steps == per_epoch else "later"
    if point["data"] in _TEXT_ROWS:
        rows, empty = _TEXT_ROWS[point["data"]]
        if point["train_size"] == "short":
            return None  # the data ends the run before max_steps, inside its first epoch
        if point["train_size"] == "small":
            rows = _SMALL_TRAIN_SIZE - empty
        return "inside" if steps < rows // global_batch(point) else None
    return None


# ----------------------------------------------------------------------------- rendering
def render(point: Mapping[str, Any], scratch: Path) -> tuple[str, ...]:
    """The ``--a.b=v`` overrides of ``examples/debug/train.yaml`` that make ``point``; files the
    point needs (datasets, weights, tokenizers) are written under ``scratch``."""
    bad = violations(point)
    if bad:
        raise ValueError("invalid explore point: " + "; ".join(bad))
    scratch.mkdir(parents=True, exist_ok=True)
    p = point
    out = [
        f"--train.max_steps={p['steps']}",
        f"--train.num_train_epochs={p['epochs']}",
        f"--train.seed={p['seed']}",
        f"--train.micro_batch_size={p['micro']}",
        f"--train.global_batch_size={global_batch(p)}",
        f"--data.max_seq_len={p['seq_len']}",
        f"--data.shuffle={str(p['shuffle']).lower()}",
        f"--train.optimizer.lr={p['lr']!r}",
        f"--train.optimizer.lr_min={p['lr_min']!r}",
        f"--train.optimizer.lr_decay_style={p['decay']}",
        f"--train.optimizer.lr_warmup_ratio={p['warmup']!r}",
        f"--train.optimizer.eps={p['eps']!r}",
        f"--train.optimizer.weight_decay={p['weight_decay']!r}",
        f"--train.optimizer.max_grad_norm={p['max_grad_norm']!r}",
        f"--train.optimizer.loss_aggregation={p['loss_agg']}",
        f"--train.logging.log_steps={p['log_steps']}",
        f"--train.checkpoint.save_steps={p['save_steps']}",
    ]
    if p["betas"] == "b95":
        out.append("--train.optimizer.betas=[0.8, 0.95]")
    if p["dp_shard"] in ("explicit", "both"):
        out.append(f"--train.accelerator.dp_shard={p['world']}")
    if p["dp_shard"] == "dp":
        out += ["--train.accelerator.dp_shard=null", f"--train.accelerator.dp={p['world']}"]
    if p["dp_shard"] == "both":
        out.append("--train.accelerator.dp=1")
    if not p["reshard"]:
        out.append("--train.accelerator.reshard_after_forward=false")
    if p["save_steps"]:
        out.append(f"--train.checkpoint.save_async={str(p['save_async']).lower()}")
        out.append(f"--train.checkpoint.save_hf_weights={str(p['save_hf']).lower()}")
    freeze = {"none": None, "mlp1": "[layers.1.mlp]", "attn0_norm": "[layers.0.self_attn, norm]"}[p["freeze"]]
    if freeze:
        out.append(f"--model.freeze_modules={freeze}")
    if p["bf16"]:
        out.append("--train.mixed_precision.enabled=true")
    if p["ac"]:
        out.append("--train.gradient_checkpointing.activation_checkpoint=full")
    if p["mp_dtypes"] == "reduce_bf16":
        out.append("--train.mixed_precision.reduce_dtype=bfloat16")
    if p["model"] == "deep_mha":
        out += ["--model.num_hidden_layers=3", "--model.num_key_value_heads=4"]
    if p["tensorboard"]:
        out += ["--train.tensorboard.enabled=true", f"--train.tensorboard.output_dir={scratch / 'tb'}"]
        out.append(f"--train.tensorboard.log_steps={p['log_steps']}")
    if p["profiler"]:
        out += [
            "--train.profile.enabled=true",
            "--train.profile.wait_steps=1",
            "--train.profile.warmup_steps=0",
            "--train.profile.active_steps=1",
        ]
    out += _weights(p, scratch)
    out += _tokenizer(p, scratch)
    out += _data(p, scratch)
    return tuple(out)


def _weights(p: Mapping[str, Any], scratch: Path) -> list[str]:
    if p["weights"] == "random":
        return []
    folder = scratch / f"weights_{p['weights']}_{p['weights_dtype']}"
    if not folder.exists():
        _write_weights(p["weights"], p["weights_dtype"], folder, seed=17 + p["seed"])
    return [f"--model.weights_path={folder}"]


def _write_weights(kind: str, dtype: str, folder: Path, seed: int) -> None:
    """An HF folder (tensors and ``config.json`` dtype in ``dtype``) or a DCP folder (tensors in
    ``dtype``) of the debug model's initial weights after ``manual_seed(seed)``."""
    import torch

    from parity.e2e import initial_weights

    cast = getattr(torch, dtype)
    if kind == "dcp":
        import torch.distributed.checkpoint as dcp

        from parity.legacy_driver import debug_model

        model = debug_model(seed)
        state = {k: v.to(cast) if v.is_floating_point() else v for k, v in model.state_dict().items()}
        dcp.save(state, checkpoint_id=str(folder), no_dist=True)
        return
    initial_weights(folder, seed)
    if dtype != "float32":
        from safetensors.torch import load_file, save_file

        tensors = load_file(folder / "model.safetensors")
        save_file({k: v.to(cast).contiguous() for k, v in tensors.items()}, str(folder / "model.safetensors"))
        config = json.loads((folder / "config.json").read_text())
        for key in ("torch_dtype", "dtype"):
            if key in config:
                config[key] = dtype
        config.setdefault("torch_dtype", dtype)
        (folder / "config.json").write_text(json.dumps(config, indent=1))


def _tokenizer(p: Mapping[str, Any], scratch: Path) -> list[str]:
    from parity import assets

    kind = p["tokenizer"]
    if kind in ("none", "from_weights"):
        return []  # from_weights: model.weights_path (an HF folder with tokenizer files) serves
    if kind == "eos_pad":
        return [f"--model.tokenizer_path={assets.tokenizer_dir()}"]
    folder = scratch / "tokenizer_pad"
    if not folder.exists():
        shutil.copytree(assets.tokenizer_dir(), folder)
        config = json.loads((folder / "tokenizer_config.json").read_text())
        config["pad_token"] = "<|im_end|>"  # id 2; the eos (id 0) is no longer the pad id
        (folder / "tokenizer_config.json").write_text(json.dumps(config, indent=1))
    return [f"--model.tokenizer_path={folder}"]


def _data(p: Mapping[str, Any], scratch: Path) -> list[str]:
    from parity import assets

    kind = p["data"]
    size_rows = train_size(p)
    size = [] if size_rows is None else [f"--data.train_size={size_rows}"]
    if kind == "dummy":
        return []
    if kind == "text_jsonl":
        return ["--data.type=hf_datasets", f"--data.train_path={assets.text_jsonl()}", *size]
    if kind == "text_disk":
        folder = scratch / "text_disk"  # datasets writes cache files beside a loaded-from-disk set
        if not folder.exists():
            shutil.copytree(assets.text_disk_dir(), folder)
        return ["--data.type=hf_datasets", f"--data.train_path={folder}", *size]
    if kind == "text_key":
        path = scratch / "content.jsonl"
        if not path.exists():
            # The short rows (1-20 words, some empty) pad at 16 and 32 tokens: micro-batches carry
            # pad ids and different token counts.
            lines = assets.short_text_jsonl().read_text().splitlines()
            rows = [json.loads(line) for line in lines if line.strip()]
            path.write_text(
                "".join(json.dumps({"content": r["text"], "id": i}) + "\n" for i, r in enumerate(rows))
            )
        return ["--data.type=json_file", f"--data.train_path={path}", "--data.text_key=content", *size]
    if kind == "alpaca_masked":
        return ["--data.type=json_file", f"--data.train_path={assets.alpaca_json()}", *size]
    if kind == "alpaca_plain":  # the short records: rows pad
        path = assets.short_alpaca_json()
        return ["--data.type=json_file", f"--data.train_path={path}", "--data.template=alpaca", *size]
    if kind == "preset":
        # One epoch holds steps - 1 global batches: with two epochs the last step comes from the
        # second (reshuffled) pass; with one, the data ends a step early.
        per_epoch = max(1, p["steps"] - 1)
        path = _ragged_preset(
            scratch / "preset.pt", steps=per_epoch, rows=global_batch(p), seq_len=p["seq_len"]
        )
        return ["--data.type=preset_pt", f"--data.train_path={path}"]
    raise ValueError(f"data={kind!r}: expected one of {FEATURES['data']}")


def _ragged_preset(path: Path, *, steps: int, rows: int, seq_len: int, vocab: int = 2048) -> Path:
    """A preset_pt file of ``steps`` entries, each a list of one-row dicts of 0 to 5 tokens fewer
    than ``seq_len``: micro-batches pad to their longest row, so the pad id (the tokenizer's, or 0
    without one) is in the batches. Prompts of 0 to ``seq_len - 7`` tokens are masked, as in
    ``parity.e2e.preset_batches``."""
    import torch

    g = torch.Generator().manual_seed(11)
    entries = []
    for _ in range(steps):
        entry = []
        for _ in range(rows):
            length = seq_len - int(torch.randint(0, 6, (1,), generator=g))
            ids = torch.randint(0, vocab, (1, length), generator=g)
            labels = ids.clone()
            labels[0, : max(0, int(torch.randint(0, seq_len, (1,), generator=g)) - 6)] = -100
            entry.append({"input_ids": ids, "labels": labels})
        entries.append(entry)
    torch.save(entries, path)
    return path
