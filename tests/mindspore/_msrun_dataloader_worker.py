"""Both sides of ``test_msrun_sharding``: the dataloader component on a 2-rank msrun world, and the
torch legacy trainer's loader for the same ranks, each written to one JSON file per rank.

``python -m``-free entry (msrun runs a script path)::

    msrun --worker_num=2 --local_worker_num=2 ... _msrun_dataloader_worker.py new OUT PAD_TOKENIZER
    HYPER_PARALLEL_PLATFORM=torch python _msrun_dataloader_worker.py legacy OUT PAD_TOKENIZER

``new`` (under msrun, ``HYPER_PARALLEL_PLATFORM=mindspore``): ``init_process_group`` through the
platform, rank and world size from it, the loader built as ``HyperTrainer._init_dataloader`` builds
it (dp rank ``data_parallel_rank(get_rank(), non_dp_size)``, tokenizer as ``_init_tokenizer``), the
first ``groups`` groups of ``micro_batch_iterator()``, and one ``all_reduce`` of the label-token
count per case. Writes ``OUT/new_rank<r>.json``.

``legacy`` (plain python, torch platform): the legacy steps 4-8 on a bare trainer for rank 0 and
rank 1 (``parity.legacy_driver``: ``bare_trainer``, ``llm_steps``, ``simulated_rank``), the same
groups of ``_make_micro_batch_iterator()``, plus the sampler's permutation. Writes
``OUT/legacy_rank<r>.json``.

``PAD_TOKENIZER`` is a tokenizer folder whose pad id (2) differs from eos (0); the test writes it
(:func:`write_pad_tokenizer`) so both sides read the same files.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from itertools import islice
from pathlib import Path
from typing import Any

# The repository root, so ``parity`` and ``hyper_parallel`` import when msrun runs this file by path.
_ROOT = Path(__file__).resolve().parents[2]
if str(_ROOT) not in sys.path:
    sys.path.insert(0, str(_ROOT))

WORLD = 2
LABEL_PAD = -100

# name -> one configuration both sides build. ``tokenizer``: None (dummy), "asset" (pad = eos = 0)
# or "pad" (pad id 2). ``groups``: how many micro-batch groups (optimizer steps) to read.
CASES: dict[str, dict[str, Any]] = {
    # 3 steps * 8 = 24 samples, 12 per rank, 6 micro batches, grad_accum 2: 3 groups.
    "dummy": dict(
        type="dummy",
        data=None,
        tokenizer=None,
        seq=16,
        mbs=2,
        gbs=8,
        seed=5,
        shuffle=True,
        steps=3,
        vocab=97,
        groups=3,
    ),
    # 39 short rows (35 kept), 17 per rank (drop_last), 8 micro batches padded to the longest
    # row with pad id 2, grad_accum 2: the whole epoch is 4 groups.
    "hf_text_pad": dict(
        type="hf_datasets",
        data="short_text",
        tokenizer="pad",
        seq=16,
        mbs=2,
        gbs=8,
        seed=3,
        shuffle=True,
        steps=100,
        vocab=512,
        groups=4,
    ),
    # 31 alpaca rows (prompt masked), 15 per rank, 7 micro batches, grad_accum 3: 2 groups and a
    # trailing partial group of 1.
    "json_alpaca": dict(
        type="json_file",
        data="short_alpaca",
        tokenizer="asset",
        seq=16,
        mbs=2,
        gbs=12,
        seed=4,
        shuffle=True,
        steps=100,
        vocab=512,
        groups=3,
    ),
}


def write_pad_tokenizer(out: Path) -> Path:
    """The shipped asset tokenizer with ``pad_token`` ``<|im_end|>`` (id 2), in ``out``."""
    from parity import assets

    src = assets.tokenizer_dir()
    out.mkdir(parents=True, exist_ok=True)
    config = json.loads((src / "tokenizer_config.json").read_text(encoding="utf-8"))
    config["pad_token"] = "<|im_end|>"
    shutil.copyfile(src / "tokenizer.json", out / "tokenizer.json")
    (out / "tokenizer_config.json").write_text(json.dumps(config, indent=1), encoding="utf-8")
    return out


def _train_path(case: dict[str, Any]) -> str | None:
    from parity import assets

    if case["data"] is None:
        return None
    return str(
        {"short_text": assets.short_text_jsonl, "short_alpaca": assets.short_alpaca_json}[case["data"]]()
    )


def _tokenizer_dir(case: dict[str, Any], pad_dir: str) -> str | None:
    from parity import assets

    return {None: None, "asset": str(assets.tokenizer_dir()), "pad": pad_dir}[case["tokenizer"]]


def _ints(tensor: Any) -> list[list[int]]:
    """A 2-D int tensor of either framework as nested Python ints (exact)."""
    array = tensor.asnumpy() if hasattr(tensor, "asnumpy") else tensor.numpy()
    return [[int(v) for v in row] for row in array]


def _record(groups: list[list[dict[str, Any]]], sampler: Any, grad_accum: int, steps: Any, n: int) -> dict:
    batches = [b for g in groups for b in g]
    return {
        "group_sizes": [len(g) for g in groups],
        "input_ids": [_ints(b["input_ids"]) for b in batches],
        "labels": [_ints(b["labels"]) for b in batches],
        "tensor_types": sorted({type(b["input_ids"]).__module__.split(".")[0] for b in batches}),
        "indices": [int(i) for i in sampler],
        "dataset_len": len(sampler.dataset),
        "grad_accum": int(grad_accum),
        "training_steps": None if steps is None else int(steps),
        "local_tokens": sum(int(v != LABEL_PAD) for b in batches for row in _ints(b["labels"]) for v in row),
        "groups_read": len(groups),
        "groups_asked": n,
    }


# ----------------------------------------------------------------------------- new side (msrun)


def run_new(out: Path, pad_dir: str) -> None:
    from hyper_parallel.components.dataloader import data_parallel_rank
    from hyper_parallel.components.tokenizer import HuggingFaceTokenizer
    from hyper_parallel.platform import get_platform
    from hyper_parallel.trainer.legacy_mapping import dataloader_config
    from hyper_parallel.trainer.parallel_dims import ParallelDims

    platform = get_platform()
    platform.init_process_group()  # under msrun: mindspore.communication.init()
    rank, world = platform.get_rank(), platform.get_world_size()
    if world != WORLD or not platform.is_distributed():
        raise SystemExit(f"expected a {WORLD}-rank msrun world, got rank {rank} of {world}")
    # HyperTrainer's ParallelDims for a pure data-parallel world (dp_shard=-1 takes every rank).
    dims = ParallelDims(dp_replicate=1, dp_shard=-1, cp=1, tp=1, pp=1, ep=1, world_size=world)
    result: dict[str, Any] = {
        "platform": type(platform).__name__,
        "rank": rank,
        "world_size": world,
        "dp_size": dims.dp_size,
        "cases": {},
    }
    for name, case in CASES.items():
        folder = _tokenizer_dir(case, pad_dir)
        # HyperTrainer._init_tokenizer: no tokenizer for dummy data.
        tokenizer = (
            None
            if folder is None
            else HuggingFaceTokenizer.Config(path=folder).build(vocab_size=case["vocab"])
        )
        config = dataloader_config(case["type"], train_path=_train_path(case), shuffle=case["shuffle"])
        # HyperTrainer._init_dataloader, with training.* = the case's sizes.
        loader = config.build(
            seq_len=case["seq"],
            local_batch_size=case["mbs"],
            global_batch_size=case["gbs"],
            seed=case["seed"],
            dp_world_size=dims.dp_size,
            dp_rank=data_parallel_rank(platform.get_rank(), dims.non_dp_size),
            tokenizer=tokenizer,
            training_steps=case["steps"],
            vocab_size=case["vocab"],
        )
        groups = list(islice(loader.micro_batch_iterator(), case["groups"]))
        record = _record(groups, loader.sampler, loader.grad_accum, loader.training_steps, case["groups"])
        record["dp_rank"] = loader.dp_rank
        # One real collective: the sum of both ranks' label-token counts.
        count = platform.as_int64([record["local_tokens"]])
        reduced, _work = platform.all_reduce(count, None)
        record["all_reduced_tokens"] = int(reduced.asnumpy().reshape(-1)[0])
        result["cases"][name] = record
    platform.barrier()
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"new_rank{rank}.json"
    path.with_suffix(".tmp").write_text(json.dumps(result), encoding="utf-8")
    path.with_suffix(".tmp").replace(path)
    print(f"rank {rank}/{world}: wrote {path}", flush=True)
    platform.destroy_process_group()


# ----------------------------------------------------------------------------- legacy side (torch)


def _legacy_trainer(case: dict[str, Any], pad_dir: str, rank: int) -> Any:
    from types import SimpleNamespace

    from parity.legacy_driver import bare_trainer, legacy_args, llm_steps, simulated_rank

    argv = [
        f"--data.type={case['type']}",
        f"--data.max_seq_len={case['seq']}",
        f"--data.shuffle={str(case['shuffle']).lower()}",
        f"--train.micro_batch_size={case['mbs']}",
        f"--train.global_batch_size={case['gbs']}",
        f"--train.seed={case['seed']}",
        f"--train.max_steps={case['steps']}",
        "--train.accelerator.dp_shard=-1",
    ]
    path = _train_path(case)
    if path is not None:
        argv.append(f"--data.train_path={path}")
    folder = _tokenizer_dir(case, pad_dir)
    if folder is not None:
        argv.append(f"--model.tokenizer_path={folder}")
    args = legacy_args(*argv, config=None)
    model = SimpleNamespace(config=SimpleNamespace(vocab_size=case["vocab"]))
    trainer = bare_trainer(args, model=model, world_size=WORLD)
    llm_steps(trainer)
    with simulated_rank(rank):  # the legacy loader reads the global rank; there is no process group
        trainer._build_dataloader()
    return trainer


def run_legacy(out: Path, pad_dir: str) -> None:
    import torch

    os.environ.setdefault("HYPER_PARALLEL_PLATFORM", "torch")
    from hyper_parallel.platform import get_platform

    for rank in range(WORLD):
        result: dict[str, Any] = {"platform": type(get_platform()).__name__, "rank": rank, "cases": {}}
        for name, case in CASES.items():
            trainer = _legacy_trainer(case, pad_dir, rank)
            groups = list(islice(trainer._make_micro_batch_iterator(), case["groups"]))
            record = _record(
                groups, trainer.sampler, trainer._grad_accum, trainer.state.max_steps, case["groups"]
            )
            # The sampler's own rule, for the test's complement check: epoch 0's permutation.
            n = len(trainer.sampler.dataset)
            if case["shuffle"]:
                g = torch.Generator()
                g.manual_seed(case["seed"] + trainer.sampler.epoch)
                record["permutation"] = torch.randperm(n, generator=g).tolist()
            else:
                record["permutation"] = list(range(n))
            record["total_size"] = int(trainer.sampler.total_size)
            result["cases"][name] = record
        out.mkdir(parents=True, exist_ok=True)
        (out / f"legacy_rank{rank}.json").write_text(json.dumps(result), encoding="utf-8")
    print(f"legacy: wrote {out}", flush=True)


def main(argv: list[str]) -> int:
    if len(argv) != 3 or argv[0] not in ("new", "legacy"):
        print(__doc__, file=sys.stderr)
        return 2
    side, out, pad_dir = argv[0], Path(argv[1]), argv[2]
    (run_new if side == "new" else run_legacy)(out, pad_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
