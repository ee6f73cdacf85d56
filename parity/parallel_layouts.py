"""Every parallel layout a run can ask for, as ``ParallelDims`` makes of it, by both trainers' routes.

``ParallelDims`` (``hyper_parallel.trainer.parallel_dims``) is shared: the legacy trainer builds it
with ``ParallelDims.from_config(train.accelerator, world_size)``, the new one from
``ParallelismConfig``. A slip in it moves both trainers at once, and the e2e runs only ever ask for
dp_shard 1 or 2 on 1 or 2 ranks, so the degrees, their product against the world size, the
``dp_shard=-1`` inference, the ``etp`` and ``ulysses_degree`` rules and the checks against the
model's head counts, expert count and sequence length are never reached there. Here they are, with
no process group (the mesh is not built):

- layouts: each degree alone at 2 (and -1 / 1 / 2 for dp_shard, 1 / 2 / 4 for ulysses), each pair
  of degrees at 2, ``etp`` without and with EP, ``ulysses_degree`` inside cp 2 and 4, on worlds of
  1, 2, 4 and 8 ranks;
- routes: ``legacy`` (``from_config`` on a ``LegacyAcceleratorArgs`` with the degrees set),
  ``legacy_bare`` (``from_config`` on a section with only the degrees it names: the fallbacks, the
  ``dp`` alias, ``etp`` following ``tp``) and ``new`` (``from_parallelism`` on a ``ParallelismConfig``,
  as ``HyperTrainer`` builds it);
- a row: the one error line, or the summary, the derived sizes and flags, and for each model shape
  (dense 4/2 heads; 6/3 heads; 4 and 3 experts) and sequence length (16, 15) ``ok`` or the
  ``validate_against_model`` error.

Used by the ``layouts.parallel_layouts`` golden (``parity/suites/shared_relations.py``).
"""

from __future__ import annotations

import itertools
from types import SimpleNamespace
from typing import Any

from parity.canonical import error_line

__all__ = ["LAYOUTS", "MODELS", "WORLDS", "layout_rows"]

WORLDS = (1, 2, 4, 8)
# Legacy ``train.accelerator`` names of the degrees.
_DEGREES = ("dp_replicate", "dp_shard", "tp", "cp", "pp", "ep", "etp")
_PREFIX = "train.accelerator."


def _new_names() -> dict[str, str]:
    """Each legacy degree's ``ParallelismConfig`` field, from the product's own mapping rules."""
    from hyper_parallel.trainer import legacy_mapping

    rules = (*legacy_mapping.FIELD_MAP, *legacy_mapping._DERIVED_RULES)
    return {
        r.source.removeprefix(_PREFIX): r.target.removeprefix("parallelism.")
        for r in rules
        if r.source.startswith(_PREFIX) and r.target.startswith("parallelism.")
    }


def _layouts() -> tuple[dict[str, Any], ...]:
    rows: list[dict[str, Any]] = [{}, {"dp_shard": -1}, {"dp_shard": 1}, {"dp_shard": 2}, {"dp": 2}]
    rows += [{"dp_shard": -1, name: 2} for name in _DEGREES if name != "dp_shard"]
    rows += [{"dp_shard": -1, a: 2, b: 2} for a, b in itertools.combinations(_DEGREES[2:], 2)]
    rows += [{"dp_shard": -1, "dp_replicate": 2, "dp_shard_": 2}]
    rows += [{"dp_shard": -1, "cp": cp, "ulysses_degree": u} for cp in (1, 2, 4) for u in (1, 2, 4)]
    rows += [{"dp_shard": -1, "ep": 2, "tp": 2, "etp": 2}, {"dp_shard": -1, "ep": 4, "etp": 1}]
    # "dp_shard_" spells a second dp_shard value for the HSDP row (dp_replicate 2 x dp_shard 2).
    return tuple({("dp_shard" if k == "dp_shard_" else k): v for k, v in r.items()} for r in rows)


LAYOUTS = _layouts()
# (label, model config attributes): the head counts tp divides, the expert count ep divides.
MODELS: tuple[tuple[str, dict[str, int]], ...] = (
    ("dense_h4_kv2", {"num_attention_heads": 4, "num_key_value_heads": 2}),
    ("dense_h6_kv3", {"num_attention_heads": 6, "num_key_value_heads": 3}),
    ("moe_e4", {"num_attention_heads": 4, "num_key_value_heads": 2, "num_experts": 4}),
    ("moe_e3", {"num_attention_heads": 4, "num_key_value_heads": 2, "num_experts": 3}),
)
SEQ_LENS = (16, 15)


def _built(route: str, layout: dict[str, Any], world: int) -> Any:
    from hyper_parallel.config.parallelism import ParallelismConfig
    from hyper_parallel.trainer.config import LegacyAcceleratorArgs
    from hyper_parallel.trainer.parallel_dims import ParallelDims

    if route == "legacy":
        return ParallelDims.from_config(LegacyAcceleratorArgs(**layout), world)
    if route == "legacy_bare":
        return ParallelDims.from_config(SimpleNamespace(**layout), world)
    new_name = _new_names()
    par = ParallelismConfig(**{new_name[k]: v for k, v in layout.items() if k != "dp"})
    return ParallelDims.from_parallelism(par, world)  # as HyperTrainer._init_setup_distributed builds it


def _row(route: str, layout: dict[str, Any], world: int) -> Any:
    try:
        dims = _built(route, layout, world)
    except Exception as exc:  # the refusal is the compared value
        return error_line(exc)
    checks: dict[str, str] = {}
    for label, attrs in MODELS:
        for seq_len in SEQ_LENS:
            try:
                dims.validate_against_model(SimpleNamespace(config=SimpleNamespace(**attrs)), seq_len)
                checks[f"{label}/seq{seq_len}"] = "ok"
            except Exception as exc:
                checks[f"{label}/seq{seq_len}"] = error_line(exc)
    try:
        dims.validate_against_model(SimpleNamespace(), 15)  # a model without a config: nothing to check
        checks["no_config/seq15"] = "ok"
    except Exception as exc:
        checks["no_config/seq15"] = error_line(exc)
    return {
        "summary": dims.summary(),
        "sizes": {"dp": dims.dp_size, "non_dp": dims.non_dp_size, "seq_divisor": dims.seq_divisor},
        "enabled": [n for n in ("tp", "cp", "ep", "pp", "fsdp") if getattr(dims, f"{n}_enabled")],
        "ulysses_degree": dims.ulysses_degree,
        "model_checks": checks,
    }


def layout_rows() -> dict[str, Any]:
    """``{route: {layout label: {world: row}}}`` (module docstring)."""
    out: dict[str, Any] = {}
    for route in ("legacy", "legacy_bare", "new"):
        rows: dict[str, Any] = {}
        for layout in LAYOUTS:
            if route == "new" and "dp" in layout:
                continue  # the legacy alias has no new field
            label = " ".join(f"{k}={v}" for k, v in layout.items()) or "(no degree set)"
            rows[label] = {f"world={w}": _row(route, layout, w) for w in WORLDS}
        out[route] = rows
    return out
