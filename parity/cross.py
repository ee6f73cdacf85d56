"""Tier C: the torch legacy trainer against the new path on MindSpore, under one limitations table.

Bit-exactness across frameworks is impossible where kernels differ (exp/log, reductions, the
decayed AdamW update, all measured on MindSpore 2.10 CPU), so tier C splits the
mission's artifacts in two:

- **exact**: what is integer or Python-float logic on both sides (param-group FQNs and
  hyperparameters, the LR curve, token ids and batches, metric key sets, checkpoint key sets,
  shapes and dtypes): compared with the bitwise comparator, as tier A does;
- **toleranced**: losses, grad norms, logits and weights after N steps: compared element by element
  under ``TOLERANCES``, the one table of written-down bounds (artifact, dtype, device -> rule,
  bound, reason, the value measured when the bound was set).

Each side runs in its own process with its own platform (the legacy trainer is torch code, and the
platform is chosen once per process): ``python -m parity cross`` builds the shared initial weights
with torch, runs ``--side legacy`` under ``HYPER_PARALLEL_PLATFORM=torch`` and ``--side new`` under
``HYPER_PARALLEL_PLATFORM=mindspore``, then compares what the two wrote. Both sides start from the
same HF safetensors file, train on the same dummy batches with the same seed, and export every
artifact as canonical JSON plus numeric arrays (safetensors, never pickle).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "BOUND_FACTOR",
    "MEASURED",
    "MEASURED_RUNS",
    "MEASURED_SEEDS",
    "largest_by_recipe",
    "bound_from",
    "CROSS_RECIPES",
    "CROSS_STEPS",
    "DEFAULT_SEED",
    "largest_differences",
    "recipe_overrides",
    "EXACT_ARTIFACTS",
    "TOLERANCES",
    "TOLERANCED_ARTIFACTS",
    "Tolerance",
    "CrossResult",
    "compare_sides",
    "produce",
    "run_cross",
    "tolerance_for",
    "tolerance_table_markdown",
]

# Every single-rank recipe of ``parity.e2e.RECIPES`` (two ranks need msrun on the
# MindSpore side), with the step both sides stop and save at: the recipe's own horizon, except
# ``dummy``, cut from 20 to 5 steps.
CROSS_RECIPES: dict[str, int] = {"dummy": 5, "hf_text": 5, "alpaca": 4, "preset": 7}
CROSS_STEPS = CROSS_RECIPES["dummy"]
DEFAULT_SEED = 17  # the initial weights' seed; the recipe keeps its own train.seed

EXACT_ARTIFACTS = ("param_groups", "lr_curve", "batches", "metric_keys", "checkpoint_layout")
TOLERANCED_ARTIFACTS = ("losses", "grad_norms", "logits", "weights")


@dataclass(frozen=True)
class Tolerance:
    """One row of the limitations table: how ``artifact`` in ``dtype`` on ``device`` is compared in
    a run of ``recipe`` (``"*"``: every recipe)."""

    artifact: str
    dtype: str
    device: str
    rule: str  # "exact" | "max_abs" | "max_ulp" | "skip"
    bound: float | None
    reason: str
    measured: str
    recipe: str = "*"

    def __post_init__(self) -> None:
        if self.rule not in ("exact", "max_abs", "max_ulp", "skip"):
            raise ValueError(
                f"tolerance {self.artifact}: rule {self.rule!r} is not exact|max_abs|max_ulp|skip"
            )
        if (self.rule in ("max_abs", "max_ulp")) != (self.bound is not None):
            raise ValueError(
                f"tolerance {self.artifact}: rule {self.rule!r} and bound {self.bound!r} disagree"
            )


BOUND_FACTOR = 3.0


def bound_from(max_abs: float) -> float:
    """A tier C bound from data: :data:`BOUND_FACTOR` times the largest difference measured."""
    return BOUND_FACTOR * max_abs


# Per recipe and toleranced artifact, the largest |legacy - new| over the measured runs and the seed
# it came from: ``python -m parity cross --seed 1 --seed 2 --seed 3 --seed 4 --seed 5`` (each seed
# draws the initial weights and sets train.seed), portable profile, torch 2.13.0, MindSpore 2.10.0,
# numpy 1.26.4, a 2-core x86-64 CPU; the report's ``largest_by_recipe`` holds these values and
# ``python -m parity.tools.cross_measure REPORT`` prints them as this table. A bound is 3x the
# largest difference of its recipe: room for another seed or CPU, never for a changed formula (a
# planted divergence moves these by orders of magnitude, tests/mindspore/parity/test_cross.py).
MEASURED_SEEDS: tuple[int, ...] = (1, 2, 3, 4, 5)
MEASURED_RUNS: tuple[tuple[str, int], ...] = tuple(
    (recipe, seed) for recipe in CROSS_RECIPES for seed in MEASURED_SEEDS
)
MEASURED: dict[str, dict[str, dict[str, Any]]] = {
    "dummy": {
        "losses": {"max_abs": 7.62939453125e-06, "seed": 3},
        "grad_norms": {"max_abs": 9.5367431640625e-07, "seed": 1},
        "logits": {"max_abs": 4.57763671875e-05, "seed": 1},
        "weights": {"max_abs": 3.159046173095703e-06, "seed": 1},
    },
    "hf_text": {
        "losses": {"max_abs": 1.0065285550808767e-05, "seed": 4},
        "grad_norms": {"max_abs": 9.5367431640625e-07, "seed": 1},
        "logits": {"max_abs": 4.57763671875e-05, "seed": 1},
        "weights": {"max_abs": 2.4437904357910156e-06, "seed": 2},
    },
    "alpaca": {
        "losses": {"max_abs": 8.58306884765625e-06, "seed": 4},
        "grad_norms": {"max_abs": 9.5367431640625e-07, "seed": 2},
        "logits": {"max_abs": 4.57763671875e-05, "seed": 1},
        "weights": {"max_abs": 5.304813385009766e-06, "seed": 1},
    },
    "preset": {
        "losses": {"max_abs": 1.117161342278905e-05, "seed": 2},
        "grad_norms": {"max_abs": 1.9073486328125e-06, "seed": 2},
        "logits": {"max_abs": 4.57763671875e-05, "seed": 1},
        "weights": {"max_abs": 2.0526349544525146e-05, "seed": 3},
    },
}

# The goldens the bounds describe, as they were when ``MEASURED`` was taken: per recipe, the torch
# golden of the new trainer's curve on the measuring platform and the sha256 of its artifacts
# (``parity.golden.artifacts_sha256``). When one changes (an eps, a formula, a data change), the
# recipe's bounds describe runs that no longer exist: the golden lint names them until they are
# measured again (``python -m parity cross --seed 1 ... --seed 5``, then
# ``python -m parity.tools.cross_measure``, which prints this table too). Recorded with the bounds
# of 238619f; these goldens had last changed in 6eb6583, before that measurement.
MEASURED_ON = "cpu-x86_64-avx2"
MEASURED_WITH: dict[str, str] = {
    "dummy": "2769713f4be7a62974a80914b13a410239409be2f703db2499ce9ac706596ef3",
    "hf_text": "de3ec704b26503e38ca58a207073932036e4a38ad43865625abfecac5906a593",
    "alpaca": "67b8bd96194564eb9365243117e448d915d745f252187a1e0ac35ca3f4c9d235",
    "preset": "4463ae69ae654425a04627077d0cd9e1ca64263a4578c4f0aee3448fe2c3af24",
}


def bound_golden(recipe: str, key: str = MEASURED_ON) -> str:
    """The golden (relative to the golden root) whose artifacts a recipe's bounds were measured with."""
    return f"torch/{key}/train_curve.hyper_trainer_curve-recipe={recipe}.json"


def measured_with(root: Path) -> dict[str, str]:
    """``MEASURED_WITH`` as the goldens under ``root`` are now (recipes whose golden is readable)."""
    from parity import golden

    out = {}
    for recipe in CROSS_RECIPES:
        try:
            doc = json.loads((Path(root) / bound_golden(recipe)).read_text("utf-8"))
            out[recipe] = golden.artifacts_sha256(doc)
        except (OSError, ValueError, KeyError, TypeError):
            continue  # missing here (another platform's store) or corrupt: its own check says so
    return out


def stale_bounds(root: Path) -> list[str]:
    """One line per recipe whose tier C bounds were measured with goldens that have changed since."""
    now = measured_with(root)
    return [
        f"{Path(root) / bound_golden(recipe)}: changed since the tier C bounds of recipe {recipe} were measured with it "
        f"(parity.cross.MEASURED_WITH): the bounds describe the old runs; measure again with "
        f"`python -m parity cross --keep DIR --seed 1 --seed 2 --seed 3 --seed 4 --seed 5` and "
        f"`python -m parity.tools.cross_measure DIR`, and paste MEASURED and MEASURED_WITH"
        for recipe, digest in MEASURED_WITH.items()
        if recipe in now and now[recipe] != digest
    ]


_REASONS = {
    "losses": (
        "float64",
        "MindSpore's exp/log_softmax/CE kernels differ from torch's in the last bits (the notes: "
        "log_softmax 390 ULP); the difference grows with the steps",
    ),
    "grad_norms": ("float32", "gradients through exp/log and float32 reductions"),
    "logits": (
        "float32",
        "softmax/sigmoid/silu kernels differ by a few ULP per op and compound over the layers "
        "(1.3e-5 before training, tests/mindspore/models/test_model_mindspore.py)",
    ),
    "weights": (
        "float32",
        "MindSpore's AdamW computes its step size and bias corrections in float32 (torch: Python floats)",
    ),
}


def _measured_row(recipe: str, artifact: str) -> Tolerance:
    """The toleranced row of one recipe and artifact: its bound from :data:`MEASURED`."""
    found = MEASURED[recipe][artifact]
    dtype, reason = _REASONS[artifact]
    seeds = ", ".join(map(str, sorted(s for r, s in MEASURED_RUNS if r == recipe)))
    measured = f"{found['max_abs']:.3e} (seed {found['seed']}); seeds {seeds}"
    return Tolerance(
        artifact, dtype, "cpu", "max_abs", bound_from(found["max_abs"]), reason, measured, recipe=recipe
    )


# The one table: exact rows (every recipe), and per recipe the toleranced rows from ``MEASURED``.
TOLERANCES: tuple[Tolerance, ...] = (
    Tolerance("param_groups", "-", "cpu", "exact", None, "FQNs and hyperparameters are Python values", "0"),
    Tolerance("lr_curve", "float64", "cpu", "exact", None,
              "the LR lambda is Python float math on both sides (MindSpore applies it as float32)", "0"),
    Tolerance("batches", "int64", "cpu", "exact", None, "token ids come from the same sampler and collate", "0"),
    Tolerance("metric_keys", "-", "cpu", "exact", None, "the same record layout", "0"),
    Tolerance("checkpoint_layout", "-", "cpu", "exact", None,
              "key sets, shapes and dtypes; the RNG state's length is each framework's own", "0"),
    *(_measured_row(recipe, artifact) for artifact in TOLERANCED_ARTIFACTS for recipe in CROSS_RECIPES),
)  # fmt: skip


def tolerance_for(artifact: str, dtype: str, device: str, *, recipe: str) -> Tolerance:
    """The table row for an artifact of a ``recipe`` run; a missing row is an error (measure it, then
    write it down)."""
    for row in TOLERANCES:
        if (
            row.artifact == artifact
            and row.dtype in (dtype, "-")
            and row.device == device
            and row.recipe in (recipe, "*")
        ):
            return row
    raise KeyError(
        f"no tier C tolerance for artifact {artifact!r} ({dtype}, {device}, recipe {recipe!r}); measure it "
        "and add a row to parity.cross.TOLERANCES"
    )


def tolerance_table_markdown() -> str:
    """The table as Markdown (the README prints it)."""
    lines = [
        "| artifact | recipe | dtype | device | rule | bound | reason | measured |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for t in TOLERANCES:
        bound = "" if t.bound is None else f"{t.bound:.3g}"
        recipe = "all" if t.recipe == "*" else t.recipe
        lines.append(
            f"| {t.artifact} | {recipe} | {t.dtype} | {t.device} | {t.rule} | {bound} | {t.reason} | {t.measured} |"
        )
    return "\n".join(lines)


# ----------------------------------------------------------------------------- one side
def recipe_overrides(recipe: str, scratch: Path, weights: Path, seed: int | None = None) -> tuple[str, ...]:
    """The YAML overrides of one tier C run: the recipe's, then a save at its last step (with the
    HF export), the shared initial weights and, when given, ``train.seed``."""
    from parity.e2e import RECIPES

    if recipe not in CROSS_RECIPES:
        raise ValueError(f"recipe {recipe!r} has no tier C run; expected one of {', '.join(CROSS_RECIPES)}")
    steps = CROSS_RECIPES[recipe]
    scratch.mkdir(parents=True, exist_ok=True)
    own = RECIPES[recipe].overrides(scratch)
    cut = (f"--train.max_steps={steps}",) if recipe == "dummy" else ()
    seeded = (f"--train.seed={seed}",) if seed is not None else ()
    return (
        *own, *cut, f"--train.checkpoint.save_steps={steps}", "--train.checkpoint.save_hf_weights=true",
        f"--model.weights_path={weights}", *seeded,
    )  # fmt: skip


def produce(
    side: str,
    out: Path,
    weights: Path,
    extra: Sequence[str] = (),
    recipe: str = "dummy",
    seed: int | None = None,
) -> None:
    """Train one side of ``recipe`` from ``weights``; write ``artifacts.json`` and ``arrays.safetensors``.

    Runs under this process's platform (torch for the legacy side, MindSpore for the new one).
    """
    from safetensors.numpy import load_file, save_file

    from parity import canonical
    from parity.e2e import run_legacy, run_new

    out.mkdir(parents=True, exist_ok=True)
    run = run_legacy if side == "legacy" else run_new
    overrides = (*recipe_overrides(recipe, out / "scratch", weights, seed), *extra)
    artifacts = run(*overrides, workdir=out / "work")
    exact: dict[str, Any] = {}
    for name in ("param_groups", "lr_curve", "batches"):
        exact[name] = _json_or_error(artifacts[name], canonical.to_json)
    exact["metric_keys"] = _json_or_error(artifacts["metrics"], _metric_keys)
    exact["checkpoint_layout"] = _json_or_error(artifacts["checkpoint"], _layout_only)
    raw = artifacts["raw"]
    export = out / "work" / "ckpt" / f"step_{CROSS_RECIPES[recipe]}" / "hf_ckpt"
    arrays: dict[str, np.ndarray] = {
        "losses": np.asarray([float(v) for v in raw["losses"]], dtype=np.float64),
        "grad_norms": np.asarray([float(v) for v in raw["grad_norms"]], dtype=np.float32),
        "logits": _logits(export, overrides),
    }
    for key, value in load_file(str(export / "model.safetensors")).items():
        arrays[f"weights/{key}"] = value
    save_file({k: np.ascontiguousarray(v) for k, v in arrays.items()}, str(out / "arrays.safetensors"))
    (out / "artifacts.json").write_text(json.dumps(exact, indent=1, sort_keys=True))


def _logits(export: Path, overrides: Sequence[str]) -> np.ndarray:
    """Logits of the trained weights (the side's HF export) on fixed token ids, in this framework."""
    from hyper_parallel.models.qwen3_5.config import config_from_args
    from hyper_parallel.models.qwen3_5.state_dict import Qwen3_5StateDictAdapter
    from hyper_parallel.platform import get_platform
    from parity.legacy_driver import legacy_args

    platform = get_platform()
    config = config_from_args(legacy_args(*overrides))
    model = config.build()
    state = Qwen3_5StateDictAdapter().load_hf_state_dict(str(export), config)
    platform.set_full_model_state_dict(model, state, strict=True)
    ids = np.random.default_rng(0).integers(0, config.vocab_size, size=(2, 16), dtype=np.int64)
    logits = model.forward_logits(platform.as_int64(ids.tolist()))
    flat = np.frombuffer(platform.raw_bytes(platform.detached_copy(logits)), dtype=np.float32)
    return flat.reshape(platform.shape(logits)).copy()


def _json_or_error(value: Any, fn) -> Any:
    if isinstance(value, Exception):
        return {"__error__": str(value)}
    return fn(value)


def _metric_keys(tree: Any) -> Any:
    """The metric key set with each key's type, and each record's step and lr (exact on both sides);
    the loss and grad norm values are the toleranced curves."""
    from parity.canonical import to_json

    exact = [{k: v for k, v in record.items() if k in ("step", "lr")} for record in tree["values"]]
    return {"keys": tree["keys"], "records": to_json(exact)}


def _layout_only(tree: Any) -> Any:
    """A checkpoint tree without its values: every key with its type, dtype and shape."""
    from parity.canonical import FloatLeaf, TensorLeaf

    def strip(node: Any) -> Any:
        if isinstance(node, TensorLeaf):
            return {"dtype": node.dtype, "shape": list(node.shape)}
        if isinstance(node, FloatLeaf):
            return "float"
        if isinstance(node, dict):
            return {k: strip(v) for k, v in node.items()}
        if isinstance(node, list):
            return [strip(v) for v in node]
        return type(node).__name__ if node is not None else None

    if tree is None:
        return None
    state = strip(tree["state"])
    for key in list(state):
        if key.startswith("rng_rank"):
            # Each framework's generator state: its own layout and length, restored by its own side.
            state[key] = "framework RNG state"
    return {"keys": tree["keys"], "state": state}


# ----------------------------------------------------------------------------- comparing
@dataclass
class CrossResult:
    """One artifact's verdict: ``status`` pass | FAIL | skip | error, and what was measured."""

    artifact: str
    rule: str
    bound: float | None
    status: str
    detail: str
    max_abs: float | None = None
    max_ulp: int | None = None
    first_index: int | None = None
    legacy_value: str | None = None
    new_value: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def compare_sides(legacy_dir: Path, new_dir: Path, recipe: str, device: str = "cpu") -> list[CrossResult]:
    """Every tier C artifact of two side folders of a ``recipe`` run, in ``EXACT_ARTIFACTS +
    TOLERANCED_ARTIFACTS`` order (the toleranced rows are the recipe's own)."""
    from safetensors.numpy import load_file

    legacy_json = json.loads((legacy_dir / "artifacts.json").read_text())
    new_json = json.loads((new_dir / "artifacts.json").read_text())
    results = [_compare_exact(name, legacy_json.get(name), new_json.get(name)) for name in EXACT_ARTIFACTS]
    legacy_arrays = load_file(str(legacy_dir / "arrays.safetensors"))
    new_arrays = load_file(str(new_dir / "arrays.safetensors"))
    for name in TOLERANCED_ARTIFACTS:
        results.append(_compare_numeric(name, legacy_arrays, new_arrays, device, recipe))
    return results


def _compare_exact(name: str, legacy: Any, new: Any) -> CrossResult:
    from parity.canonical import from_json
    from parity.compare import compare

    for side, value in (("legacy", legacy), ("new", new)):
        if isinstance(value, dict) and "__error__" in value:
            return CrossResult(name, "exact", None, "error", f"{side}: {value['__error__']}")
    diffs = compare(from_json(legacy), from_json(new), name)
    if not diffs:
        return CrossResult(name, "exact", None, "pass", "identical")
    first = diffs[0]
    return CrossResult(
        name, "exact", None, "FAIL", f"{len(diffs)} difference(s); first: {first.path}: {first.message}",
        first_index=first.index,
    )  # fmt: skip


def _compare_numeric(
    name: str, legacy: Mapping[str, np.ndarray], new: Mapping[str, np.ndarray], device: str, recipe: str
) -> CrossResult:
    keys = sorted(k for k in legacy if k == name or k.startswith(name + "/"))
    new_keys = sorted(k for k in new if k == name or k.startswith(name + "/"))
    dtype = str(legacy[keys[0]].dtype) if keys else "float32"
    row = tolerance_for(name, dtype, device, recipe=recipe)
    if row.rule == "skip":
        return CrossResult(name, "skip", None, "skip", row.reason)
    if keys != new_keys:
        missing = sorted(set(keys) - set(new_keys))[:3]
        extra = sorted(set(new_keys) - set(keys))[:3]
        return CrossResult(
            name, row.rule, row.bound, "FAIL", f"keys differ: missing {missing}, extra {extra}"
        )
    bound = 0.0 if row.bound is None else row.bound  # an "exact" row: no difference at all
    worst: tuple[float, int, str, int] | None = None  # (|diff|, ULP, key, index) of the largest |diff|
    first_bad: tuple[str, int, float, float, float, int] | None = None  # the first element past the bound
    for key in keys:
        a, b = legacy[key].reshape(-1), new[key].reshape(-1)
        if legacy[key].shape != new[key].shape:
            detail = f"{key}: shape {list(legacy[key].shape)} vs {list(new[key].shape)}"
            return CrossResult(name, row.rule, row.bound, "FAIL", detail)
        if a.size == 0:
            continue
        diff = np.abs(a.astype(np.float64) - b.astype(np.float64))
        ulps = _ulps(a, b)
        measure = ulps if row.rule == "max_ulp" else diff
        bad = np.flatnonzero(~(measure <= bound))  # NaN counts as beyond
        if first_bad is None and bad.size:
            i = int(bad[0])
            first_bad = (key, i, float(a[i]), float(b[i]), float(diff[i]), int(ulps[i]))
        i = int(np.nan_to_num(diff, nan=np.inf).argmax())
        if worst is None or not diff[i] <= worst[0]:
            worst = (float(diff[i]), int(ulps[i]), key, i)
    if worst is None:
        return CrossResult(name, row.rule, row.bound, "pass", "no elements")
    max_abs, max_ulp, wkey, widx = worst
    summary = f"max |diff| {max_abs:.3e} ({max_ulp} ULP) at {wkey}[{widx}]"
    if first_bad is None:
        return CrossResult(
            name, row.rule, row.bound, "pass", summary, max_abs=max_abs, max_ulp=max_ulp, first_index=None
        )
    key, i, lv, nv, d, u = first_bad
    detail = (
        f"first beyond the bound at {key}[{i}]: legacy {lv!r}, new {nv!r}, |diff| {d:.3e}, {u} ULP; {summary}"
    )
    return CrossResult(
        name, row.rule, row.bound, "FAIL", detail,
        max_abs=max_abs, max_ulp=max_ulp, first_index=i, legacy_value=repr(lv), new_value=repr(nv),
    )  # fmt: skip


def _ulps(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Element-wise ULP distance of two same-dtype float arrays (ordered integer views)."""
    views: dict[int, type[np.signedinteger[Any]]] = {2: np.int16, 4: np.int32, 8: np.int64}
    view = views[a.dtype.itemsize]

    def ordered(x: np.ndarray) -> np.ndarray:
        i = x.view(view).astype(np.int64)
        return np.where(i >= 0, i, np.iinfo(view).min - i)

    return np.abs(ordered(a) - ordered(b))


# ----------------------------------------------------------------------------- driver
def run_cross(
    console: Any,
    *,
    keep: Path | None = None,
    report_dir: Path | None = None,
    new_overrides: Sequence[str] = (),
    recipes: Sequence[str] | None = None,
    seeds: Sequence[int] | None = None,
) -> int:
    """Both sides of every (recipe, seed) in their own processes, then the comparison; 0 when every
    artifact of every run passes.

    ``recipes`` defaults to every single-rank recipe (:data:`CROSS_RECIPES`). ``seeds`` (the initial
    weights' seed and ``train.seed``) default to one run from :data:`DEFAULT_SEED` with the recipe's
    own ``train.seed``; the bounds of ``TOLERANCES`` were measured with :data:`MEASURED_SEEDS`. The
    report keeps every run's results and, per toleranced artifact, the largest difference with its
    run, overall (``largest``) and per recipe (``largest_by_recipe``: what :data:`MEASURED` holds).
    ``new_overrides`` (YAML overrides for the new side only) plant a divergence: the self-test of
    tier C (``tests/mindspore/parity/test_cross.py``) checks that the right artifact goes red.
    """
    from parity.e2e import initial_weights

    recipes = list(recipes or CROSS_RECIPES)
    for recipe in recipes:
        if recipe not in CROSS_RECIPES:
            console.print(
                f"[red]parity cross: --recipe {recipe!r} is not one of {', '.join(CROSS_RECIPES)}[/]"
            )
            return 2
    runs: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="parity-cross-") as tmp:
        root = Path(keep) if keep is not None else Path(tmp)
        root.mkdir(parents=True, exist_ok=True)
        for seed in list(seeds) if seeds else [None]:
            weights_seed = DEFAULT_SEED if seed is None else seed
            weights = initial_weights(root / f"initial_weights_{weights_seed}", seed=weights_seed)
            for recipe in recipes:
                where = root / recipe / f"seed_{'default' if seed is None else seed}"
                label = f"{recipe}, seed {'default' if seed is None else seed}"
                if not _run_sides(console, where, weights, recipe, seed, new_overrides, label):
                    return 2
                runs.append(
                    {
                        "recipe": recipe,
                        "seed": seed,
                        "results": compare_sides(where / "legacy", where / "new", recipe),
                    }
                )
    for run in runs:
        _print(console, run["results"], f"parity cross (tier C): {run['recipe']}, seed {run['seed']}")
    worst = largest_differences(runs)
    if report_dir is not None:
        report_dir.mkdir(parents=True, exist_ok=True)
        payload = {
            "steps": {r: CROSS_RECIPES[r] for r in recipes},
            "runs": [{**run, "results": [r.to_dict() for r in run["results"]]} for run in runs],
            "largest": worst,
            "largest_by_recipe": largest_by_recipe(runs),
            "tolerances": [asdict(t) for t in TOLERANCES],
        }
        tmp_path = report_dir / "cross.json.tmp"
        tmp_path.write_text(json.dumps(payload, indent=1))
        os.replace(tmp_path, report_dir / "cross.json")
    results = [r for run in runs for r in run["results"]]
    failed = [(run, r) for run in runs for r in run["results"] if r.status in ("FAIL", "error")]
    console.print(
        f"{sum(r.status == 'pass' for r in results)} passed, {len(failed)} failed, "
        f"{sum(r.status == 'skip' for r in results)} skipped "
        f"(tier C: torch legacy vs MindSpore new, {len(runs)} run(s))"
    )
    for name, found in worst.items():
        console.print(
            f"largest {name} difference: {found['max_abs']:.3e} ({found['recipe']}, seed {found['seed']})"
        )
    for run, r in failed:
        seed_flag = "" if run["seed"] is None else f" --seed {run['seed']}"
        console.print(
            f"[red]FAIL[/] cross.{r.artifact} ({run['recipe']}): {r.detail}\n"
            f"  repro: python -m parity cross --recipe {run['recipe']}{seed_flag}"
        )
    return 1 if failed else 0


def largest_by_recipe(runs: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, dict[str, Any]]]:
    """Per recipe and toleranced artifact, the largest ``max_abs`` over that recipe's runs, with its
    seed and the seeds measured: the shape of :data:`MEASURED`."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for recipe in dict.fromkeys(run["recipe"] for run in runs):
        mine = [run for run in runs if run["recipe"] == recipe]
        seeds = sorted(run["seed"] for run in mine if run["seed"] is not None)
        out[recipe] = {
            name: {"max_abs": found["max_abs"], "seed": found["seed"], "seeds": seeds}
            for name, found in largest_differences(mine).items()
        }
    return out


def largest_differences(runs: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per toleranced artifact, the largest ``max_abs`` over the runs, with the recipe and seed."""
    worst: dict[str, dict[str, Any]] = {}
    for run in runs:
        for r in run["results"]:
            if r.max_abs is None or r.artifact not in TOLERANCED_ARTIFACTS:
                continue
            if r.artifact not in worst or r.max_abs > worst[r.artifact]["max_abs"]:
                worst[r.artifact] = {"max_abs": r.max_abs, "recipe": run["recipe"], "seed": run["seed"]}
    return worst


def _run_sides(
    console: Any,
    where: Path,
    weights: Path,
    recipe: str,
    seed: int | None,
    new_overrides: Sequence[str],
    label: str,
) -> bool:
    """The legacy side on torch, then the new side on MindSpore, each in its own process."""
    for side, platform in (("legacy", "torch"), ("new", "mindspore")):
        console.print(
            f"[bold]parity cross[/]: {label}: {side} side on {platform} ({CROSS_RECIPES[recipe]} steps)"
        )
        env = {**os.environ, "HYPER_PARALLEL_PLATFORM": platform, "PYTHONHASHSEED": "0"}
        cmd = [
            sys.executable, "-m", "parity", "cross", "--side", side, "--out", str(where / side),
            "--weights", str(weights), "--recipe", recipe,
        ]  # fmt: skip
        if seed is not None:
            cmd += ["--seed", str(seed)]
        if side == "new":
            cmd += [f"--new-override={o}" for o in new_overrides]
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if proc.returncode != 0:
            tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
            console.print(
                f"[red]parity cross: the {side} side ({platform}, {label}) failed (exit {proc.returncode})[/]\n{tail}"
            )
            return False
    return True


def _print(console: Any, results: Sequence[CrossResult], title: str = "parity cross (tier C)") -> None:
    from rich.table import Table

    table = Table(title=title)
    for column in ("artifact", "rule", "bound", "status", "detail"):
        table.add_column(column)
    for r in results:
        bound = "" if r.bound is None else f"{r.bound:g}"
        style = {"pass": "green", "FAIL": "red", "error": "red"}.get(r.status, "yellow")
        table.add_row(r.artifact, r.rule, bound, f"[{style}]{r.status}[/]", r.detail)
    console.print(table)
