"""Initial weights in every state a file can arrive in: the legacy loader against ``CheckpointManager``.

``model.weights_path`` takes an HF folder (one ``model.safetensors`` or an index and its shards), a
DCP folder or a single file, and ``allow_partial_weights`` decides what happens when the file does
not fit the model. The e2e recipes load one file that fits. Here a reference HF folder of the debug
model (``parity.e2e.initial_weights``) is reshaped into each state (a tensor missing, many missing,
one unknown, one of another shape or dtype class, the tied head absent (with its embedding or not),
sharded with an index, an index with a broken map or a missing shard, a ``config.json`` without a
field or with each dtype key (the cast the load applies), a single ``.safetensors`` file, a ``.pt``
file, one holding an object other than tensors, one holding a list, a truncated and an empty
``.pt`` file, a missing path, an empty folder), and each state is loaded by both sides with
``allow_partial_weights`` off and on. A row holds the outcome (``ok`` or the error line), every
warning, which parameters now hold the file's values (the rest kept their random init), and a hash
of every value after the load.

The pair compares the rows legacy against new (the field names made equal: ``train.checkpoint.`` /
``checkpoint.``); the golden holds the new side's rows.
"""

from __future__ import annotations

import functools
import hashlib
import json
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from parity.case_log import warnings_of
from parity.cases import REGISTRY
from parity.legacy_driver import bare_trainer, debug_model, legacy_args

SUITE = REGISTRY.suite(tags=("checkpoint",), seed=0)
_FILE_SEED = 17  # the weights in the file
_MODEL_SEED = 3  # the model they are loaded into (its random init)


def _tensors(folder: Path) -> dict[str, Any]:
    from safetensors.torch import load_file

    return load_file(str(folder / "model.safetensors"))


def _rewrite(folder: Path, change: Callable[[dict[str, Any]], dict[str, Any]]) -> Path:
    from safetensors.torch import save_file

    tensors = change(_tensors(folder))
    save_file({k: v.contiguous() for k, v in tensors.items()}, str(folder / "model.safetensors"))
    return folder


def _without(*names: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    return lambda t: {k: v for k, v in t.items() if k not in names}


def _first_keys(folder: Path, n: int) -> list[str]:
    """The first ``n`` layer tensors of the file (the tied embedding and head are rows of their own)."""
    return sorted(k for k in _tensors(folder) if ".layers." in k)[:n]


def _sharded(folder: Path, *, weight_map: Any = None, drop_shard: bool = False) -> Path:
    from safetensors.torch import save_file

    tensors = _tensors(folder)
    (folder / "model.safetensors").unlink()
    names = sorted(tensors)
    halves = {"model-00001-of-00002.safetensors": names[::2], "model-00002-of-00002.safetensors": names[1::2]}
    for shard, keys in halves.items():
        save_file({k: tensors[k].contiguous() for k in keys}, str(folder / shard))
    index = {shard: keys for shard, keys in halves.items()}
    mapping = {k: shard for shard, keys in index.items() for k in keys} if weight_map is None else weight_map
    (folder / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": mapping}))
    if drop_shard:
        (folder / "model-00002-of-00002.safetensors").unlink()
    return folder


def _single(folder: Path, suffix: str) -> Path:
    """The folder's safetensors file, or the same model's state dict saved as a ``.pt`` file."""
    import torch

    if suffix == ".safetensors":
        return folder / "model.safetensors"
    path = folder.parent / f"weights{suffix}"
    torch.save(debug_model(_FILE_SEED).state_dict(), path)
    return path


def _make_states() -> dict[str, Callable[[Path], Path]]:
    import torch

    def reshaped(t: dict[str, Any]) -> dict[str, Any]:
        name = sorted(k for k in t if k.endswith("norm.weight"))[0]
        return {**t, name: torch.zeros(t[name].shape[0] + 1)}

    def integer(t: dict[str, Any]) -> dict[str, Any]:
        name = sorted(k for k in t if k.endswith("norm.weight"))[0]
        return {**t, name: torch.zeros(t[name].shape, dtype=torch.int32)}

    def emptied(folder: Path) -> Path:
        shutil.rmtree(folder)
        folder.mkdir()
        return folder

    def pickled_object(folder: Path) -> Path:
        """A state dict with a non-tensor object in it: ``weights_only`` refuses it, nothing runs."""
        import argparse

        path = folder.parent / "weights.pt"
        torch.save({**debug_model(_FILE_SEED).state_dict(), "args": argparse.Namespace(lr=1.0)}, path)
        return path

    def listed(folder: Path) -> Path:
        path = folder.parent / "weights.pt"
        torch.save(list(debug_model(_FILE_SEED).state_dict().values()), path)
        return path

    def cut(path: Path, keep: float) -> Path:
        data = path.read_bytes()
        path.write_bytes(data[: int(len(data) * keep)])
        return path

    def config_without_vocab(folder: Path) -> Path:
        config = json.loads((folder / "config.json").read_text())
        config.pop("vocab_size", None)
        (folder / "config.json").write_text(json.dumps(config))
        return folder

    def config_dtype(**fields: str | None) -> Callable[[Path], Path]:
        """config.json's dtype keys set (None: removed): the cast a loader applies to the file."""

        def edit(folder: Path) -> Path:
            config = json.loads((folder / "config.json").read_text())
            for key, value in fields.items():
                config.pop(key, None)
                if value is not None:
                    config[key] = value
            (folder / "config.json").write_text(json.dumps(config))
            return folder

        return edit

    def dcp(folder: Path, *, manifest: bool = False, damage: str | None = None) -> Path:
        """The file's weights as a DCP folder (``step_<N>/`` with its manifest, or bare), then damaged."""
        import torch.distributed.checkpoint as torch_dcp

        from hyper_parallel.checkpointing import write_manifest

        path = folder.parent / ("step_3" if manifest else "dcp")
        torch_dcp.save(debug_model(_FILE_SEED).state_dict(), checkpoint_id=str(path))
        if manifest:
            write_manifest(str(path), 3)
        if damage == ".metadata not in the manifest":
            listed = json.loads((path / "manifest.json").read_text())
            del listed["files"][".metadata"]
            (path / "manifest.json").write_text(json.dumps(listed, indent=2) + "\n")
        if damage == "flipped metadata":
            meta = path / ".metadata"
            data = bytearray(meta.read_bytes())
            data[len(data) // 2] ^= 0xFF
            meta.write_bytes(bytes(data))
        elif damage == "shard missing":
            next(path.glob("*.distcp")).unlink()
        return path

    def index_lists_a_key_its_shard_lacks(folder: Path) -> Path:
        _sharded(folder)
        index = json.loads((folder / "model.safetensors.index.json").read_text())
        index["weight_map"]["model.layers.0.not_in_the_shard.weight"] = "model-00001-of-00002.safetensors"
        (folder / "model.safetensors.index.json").write_text(json.dumps(index))
        return folder

    def export_in_step_folder(folder: Path) -> Path:
        """The HF export of a saved ``step_<N>/`` (``hf_ckpt/``), vouched for by its manifest."""
        from hyper_parallel.checkpointing import write_manifest

        step = folder.parent / "step_5"
        step.mkdir()
        shutil.move(str(folder), str(step / "hf_ckpt"))
        write_manifest(str(step), 5)
        return step / "hf_ckpt"

    return {
        "fits": lambda f: f,
        "one layer tensor missing": lambda f: _rewrite(f, _without(_first_keys(f, 1)[0])),
        "five layer tensors missing": lambda f: _rewrite(f, _without(*_first_keys(f, 5))),
        "an unknown tensor": lambda f: _rewrite(f, lambda t: {**t, "model.extra.weight": torch.ones(2)}),
        "a tensor of another shape": lambda f: _rewrite(f, reshaped),
        "an integer tensor": lambda f: _rewrite(f, integer),
        "tied head absent": lambda f: _rewrite(f, _without("lm_head.weight")),
        "tied head and embedding absent": lambda f: _rewrite(
            f, _without("lm_head.weight", *(k for k in _tensors(f) if k.endswith("embed_tokens.weight")))
        ),
        "sharded with an index": lambda f: _sharded(f),
        "index map is a list": lambda f: _sharded(f, weight_map=["model-00001-of-00002.safetensors"]),
        "index names a missing shard": lambda f: _sharded(f, drop_shard=True),
        "config.json without vocab_size": config_without_vocab,
        "config.json says dtype bfloat16": config_dtype(dtype="bfloat16"),
        "config.json says dtype float16": config_dtype(dtype="float16"),
        "config.json says torch_dtype bfloat16 (older writers)": config_dtype(
            dtype=None, torch_dtype="bfloat16"
        ),
        "config.json says dtype int8 (not a training dtype)": config_dtype(dtype="int8"),
        "config.json without a dtype": config_dtype(dtype=None),
        "a .safetensors file": lambda f: _single(f, ".safetensors"),
        "a .pt file": lambda f: _single(f, ".pt"),
        "a path that does not exist": lambda f: f / "nothing_here",
        "an empty folder": emptied,
        "a .pt file holding an object": pickled_object,
        "a truncated .pt file": lambda f: cut(_single(f, ".pt"), 0.5),
        "an empty .pt file": lambda f: cut(_single(f, ".pt"), 0.0),
        "a .pt file holding a list of tensors": listed,
        "a DCP folder": lambda f: dcp(f),
        "a DCP step folder with its manifest": lambda f: dcp(f, manifest=True),
        "a DCP step folder, .metadata flipped": lambda f: dcp(f, manifest=True, damage="flipped metadata"),
        "a DCP step folder, a shard missing": lambda f: dcp(f, manifest=True, damage="shard missing"),
        "an index naming a key its shard lacks": index_lists_a_key_its_shard_lacks,
        "the HF export inside a saved step folder": export_in_step_folder,
        # The file's own head is loaded, not a copy of its embedding (they differ here).
        "a head that differs from the embedding": lambda f: _rewrite(
            f, lambda t: {**t, "lm_head.weight": t["lm_head.weight"] * 2}
        ),
        "a DCP step folder whose manifest leaves out .metadata": lambda f: dcp(
            f, manifest=True, damage=".metadata not in the manifest"
        ),
        "a DCP folder, a shard missing": lambda f: dcp(f, damage="shard missing"),
    }


STATES = _make_states()


def _loader(side: str, allow_partial: bool, model: Any, out: str) -> Callable[[str], None]:
    """``side``'s weights loader over ``model`` (built outside the row's try: a harness slip raises)."""
    if side == "legacy":
        args = legacy_args(f"--train.checkpoint.allow_partial_weights={str(allow_partial).lower()}")
        return bare_trainer(args, model=model)._load_weights
    from hyper_parallel.components.checkpoint import CheckpointManager
    from hyper_parallel.models.spec import get_spec

    config = CheckpointManager.Config(output_dir=out, save_steps=0, allow_partial_weights=allow_partial)
    manager = config.build(
        model_parts=[model],
        optimizers=None,
        lr_schedulers=None,
        dataloader=None,
        sd_adapter=get_spec("qwen3_5").state_dict_adapter,
    )
    return manager.load_weights


def _digest(model: Any) -> str:
    """The model's values after the load, bit for bit, as one hash (a cast shows in it)."""
    from parity.canonical import tensor_leaf

    leaves = "".join(f"{k}:{tensor_leaf(v).sha256}" for k, v in sorted(model.state_dict().items()))
    return hashlib.sha256(leaves.encode()).hexdigest()[:16]


def _loaded(model: Any, before: dict[str, Any]) -> list[str]:
    """The parameters whose values changed from the random init (the ones the file set)."""
    import torch

    return sorted(k for k, v in model.state_dict().items() if not torch.equal(v, before[k]))


def _sweep(side: str) -> dict[str, Any]:
    from parity.e2e import initial_weights

    rows: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="parity-weights-") as tmp:
        for n, (name, make) in enumerate(STATES.items()):
            for allow_partial in (False, True):
                folder = initial_weights(Path(tmp, f"{n}-{allow_partial}", "weights"), seed=_FILE_SEED)
                path = str(make(folder))
                model = debug_model(_MODEL_SEED)
                before = {k: v.clone() for k, v in model.state_dict().items()}
                load = _loader(side, allow_partial, model, str(Path(tmp, f"{n}-{allow_partial}", "out")))
                with warnings_of() as warned:
                    try:
                        load(path)
                        outcome = "ok"
                    except Exception as exc:  # a refusal is the row's outcome
                        outcome = f"{type(exc).__name__}: {exc}"

                def clean(text: str, _tmp: str = tmp) -> str:
                    text = " ".join(text.replace(_tmp, "<tmp>").split())
                    return text.replace("train.checkpoint.", "checkpoint.")

                rows[f"{name}, allow_partial_weights={allow_partial}"] = {
                    "outcome": clean(outcome),
                    "warnings": [clean(w) for w in warned],
                    "loaded": _loaded(model, before),
                    "values": _digest(model),
                }
    return rows


def legacy_weights_states() -> dict[str, Any]:
    return _sweep("legacy")


@functools.cache
def manager_weights_states() -> dict[str, Any]:
    """The new side's rows, swept once per process: the pair and the golden read the same rows."""
    return _sweep("new")


SUITE.pair(
    "component_weights_states",
    kind="checkpoint",
    legacy=legacy_weights_states,
    new=manager_weights_states,
    share="weights_states",
)
SUITE.golden(
    "component_weights_states_rows",
    kind="checkpoint",
    producer=manager_weights_states,
    share="weights_states",
)
