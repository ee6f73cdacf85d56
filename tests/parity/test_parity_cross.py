"""Tier C machinery (``parity.cross``), checked on torch alone: both sides run HyperTrainer-vs-LLMTrainer on
torch here, so every artifact must come out identical, and planted divergences must be named.

The MindSpore run itself is ``nox -s parity`` (its ``parity(cross)`` session).
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

from parity import cross
from tests._subprocess import REPO, child_env


@pytest.fixture(scope="module")
def sides(tmp_path_factory) -> Path:
    """The legacy side and the new side, both on torch, from one initial-weights folder."""
    from parity.e2e import initial_weights

    root = tmp_path_factory.mktemp("cross")
    weights = initial_weights(root / "initial_weights")
    for side in ("legacy", "new"):
        cmd = [sys.executable, "-m", "parity", "cross", "--side", side, "--out", str(root / side)]
        proc = subprocess.run(
            [*cmd, "--weights", str(weights)],
            cwd=REPO,
            env=child_env(HYPER_PARALLEL_PLATFORM="torch", PYTHONHASHSEED="0"),
            capture_output=True,
            text=True,
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr
    return root


def _copy_new(sides: Path, tmp_path: Path) -> Path:
    new = tmp_path / "new"
    shutil.copytree(sides / "new", new, ignore=shutil.ignore_patterns("work"))
    return new


def test_same_framework_sides_are_identical(sides: Path) -> None:
    results = cross.compare_sides(sides / "legacy", sides / "new", "dummy")
    assert [r.artifact for r in results] == [*cross.EXACT_ARTIFACTS, *cross.TOLERANCED_ARTIFACTS]
    assert {r.status for r in results} == {"pass"}, [r.detail for r in results if r.status != "pass"]
    for r in results:
        if r.rule != "exact":
            assert r.max_abs == 0.0 and r.max_ulp == 0, r


def test_a_scaled_weight_beyond_the_bound_is_named(sides: Path, tmp_path: Path) -> None:
    new = _copy_new(sides, tmp_path)
    arrays = load_file(str(new / "arrays.safetensors"))
    key = "weights/model.language_model.norm.weight"
    assert key in arrays, sorted(arrays)[:5]
    arrays[key] = arrays[key] + np.float32(1e-2)  # every element, far beyond the 1e-4 bound
    save_file(arrays, str(new / "arrays.safetensors"))
    by_name = {r.artifact: r for r in cross.compare_sides(sides / "legacy", new, "dummy")}
    assert by_name["weights"].status == "FAIL"
    assert key in by_name["weights"].detail and by_name["weights"].first_index == 0
    assert by_name["losses"].status == "pass"


def test_a_changed_lr_value_fails_the_exact_artifact(sides: Path, tmp_path: Path) -> None:
    new = _copy_new(sides, tmp_path)
    data = json.loads((new / "artifacts.json").read_text())
    data["lr_curve"][2] = {"__parity__": "float", "hex": float.hex(1e-3), "repr": "0.001"}
    (new / "artifacts.json").write_text(json.dumps(data))
    by_name = {r.artifact: r for r in cross.compare_sides(sides / "legacy", new, "dummy")}
    assert by_name["lr_curve"].status == "FAIL" and "lr_curve[2]" in by_name["lr_curve"].detail
    assert by_name["param_groups"].status == "pass"


def test_a_loss_curve_within_the_bound_passes_and_beyond_fails(sides: Path, tmp_path: Path) -> None:
    bound = cross.tolerance_for("losses", "float64", "cpu", recipe="dummy").bound
    assert bound is not None
    for delta, status in ((bound / 2, "pass"), (bound * 10, "FAIL")):
        new = _copy_new(sides, tmp_path / status)
        arrays = load_file(str(new / "arrays.safetensors"))
        arrays["losses"] = arrays["losses"] + delta
        save_file(arrays, str(new / "arrays.safetensors"))
        by_name = {r.artifact: r for r in cross.compare_sides(sides / "legacy", new, "dummy")}
        assert by_name["losses"].status == status, by_name["losses"]


def test_every_artifact_has_one_row_per_recipe() -> None:
    """An exact row holds for every recipe; a toleranced artifact has a row of its own per recipe."""
    keys = [(t.artifact, t.recipe) for t in cross.TOLERANCES]
    assert len(set(keys)) == len(keys)
    expected = [(name, "*") for name in cross.EXACT_ARTIFACTS]
    expected += [(name, recipe) for name in cross.TOLERANCED_ARTIFACTS for recipe in cross.CROSS_RECIPES]
    assert sorted(keys) == sorted(expected)
    for recipe in cross.CROSS_RECIPES:
        assert cross.tolerance_for("weights", "float32", "cpu", recipe=recipe).recipe == recipe
        assert cross.tolerance_for("batches", "int64", "cpu", recipe=recipe).rule == "exact"
    table = cross.tolerance_table_markdown()
    assert table.count("\n") == len(cross.TOLERANCES) + 1
    with pytest.raises(
        KeyError, match="no tier C tolerance for artifact 'logits' \\(float32, npu, recipe 'dummy'\\)"
    ):
        cross.tolerance_for("logits", "float32", "npu", recipe="dummy")
    with pytest.raises(KeyError, match="recipe 'dp2_padded'"):
        cross.tolerance_for("logits", "float32", "cpu", recipe="dp2_padded")
    with pytest.raises(ValueError, match="rule 'max_abs' and bound None disagree"):
        cross.Tolerance("x", "float32", "cpu", "max_abs", None, "why", "0")


@pytest.mark.skipif(importlib.util.find_spec("mindspore") is not None, reason="MindSpore is installed here")
def test_cross_without_mindspore_says_how_to_get_it() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "parity", "cross"], cwd=REPO, env=child_env(), capture_output=True, text=True
    )
    assert proc.returncode == 2
    assert "MindSpore is not installed" in proc.stdout and ".[dev,mindspore]" in proc.stdout


def test_readme_prints_the_table() -> None:
    assert cross.tolerance_table_markdown() in (REPO / "README.md").read_text()


def test_every_single_rank_recipe_has_a_tier_c_run(tmp_path: Path) -> None:
    from parity.e2e import RECIPES

    assert sorted(cross.CROSS_RECIPES) == sorted(r for r, spec in RECIPES.items() if spec.nproc == 1)
    weights = tmp_path / "w"
    for recipe, steps in cross.CROSS_RECIPES.items():
        overrides = cross.recipe_overrides(recipe, tmp_path / recipe, weights, seed=4)
        assert overrides[-2:] == (f"--model.weights_path={weights}", "--train.seed=4")
        assert f"--train.checkpoint.save_steps={steps}" in overrides
    assert "--train.max_steps=5" in cross.recipe_overrides("dummy", tmp_path / "d", weights)
    with pytest.raises(ValueError, match="recipe 'dp2_padded' has no tier C run"):
        cross.recipe_overrides("dp2_padded", tmp_path, weights)


def test_the_largest_difference_names_its_run() -> None:
    def result(artifact: str, max_abs: float | None) -> cross.CrossResult:
        return cross.CrossResult(artifact, "max_abs", 1.0, "pass", "", max_abs=max_abs)

    runs = [
        {"recipe": "dummy", "seed": 1, "results": [result("losses", 1e-6), result("lr_curve", None)]},
        {"recipe": "alpaca", "seed": 3, "results": [result("losses", 4e-6), result("weights", 2e-7)]},
        {"recipe": "preset", "seed": 2, "results": [result("losses", 3e-6)]},
    ]
    assert cross.largest_differences(runs) == {
        "losses": {"max_abs": 4e-6, "recipe": "alpaca", "seed": 3},
        "weights": {"max_abs": 2e-7, "recipe": "alpaca", "seed": 3},
    }


def test_the_largest_difference_per_recipe_names_its_seed() -> None:
    def result(artifact: str, max_abs: float) -> cross.CrossResult:
        return cross.CrossResult(artifact, "max_abs", 1.0, "pass", "", max_abs=max_abs)

    runs = [
        {"recipe": "dummy", "seed": 1, "results": [result("losses", 1e-6)]},
        {"recipe": "alpaca", "seed": 1, "results": [result("losses", 9e-6)]},
        {"recipe": "dummy", "seed": 2, "results": [result("losses", 2e-6), result("weights", 3e-7)]},
    ]
    assert cross.largest_by_recipe(runs) == {
        "dummy": {
            "losses": {"max_abs": 2e-6, "seed": 2, "seeds": [1, 2]},
            "weights": {"max_abs": 3e-7, "seed": 2, "seeds": [1, 2]},
        },
        "alpaca": {"losses": {"max_abs": 9e-6, "seed": 1, "seeds": [1]}},
    }


def test_every_bound_is_three_times_the_largest_difference_of_its_recipe_over_five_seeds() -> None:
    """Each toleranced row comes from data (``cross.MEASURED``): 3x the largest difference of its
    recipe's measured runs (at least 5 seeds each), and the row names that seed and the seeds."""
    assert set(cross.MEASURED) == set(cross.CROSS_RECIPES)
    for recipe in cross.CROSS_RECIPES:
        seeds = sorted(s for r, s in cross.MEASURED_RUNS if r == recipe)
        assert len(seeds) >= 5, (recipe, seeds)
    for row in cross.TOLERANCES:
        if row.rule == "exact":
            assert row.recipe == "*", row
            continue
        found = cross.MEASURED[row.recipe][row.artifact]
        assert (row.recipe, found["seed"]) in cross.MEASURED_RUNS
        assert row.bound == cross.bound_from(found["max_abs"]) == 3 * found["max_abs"], row
        seeds = ", ".join(str(s) for r, s in cross.MEASURED_RUNS if r == row.recipe)
        assert row.measured == f"{found['max_abs']:.3e} (seed {found['seed']}); seeds {seeds}", row


def test_cross_measure_reads_a_kept_folder_and_names_what_the_table_would_not_pass(
    sides: Path, tmp_path: Path, capsys
) -> None:
    from parity.tools import cross_measure

    for seed in (1, 2):
        for side in ("legacy", "new"):
            where = tmp_path / "keep" / "dummy" / f"seed_{seed}" / side
            shutil.copytree(sides / side, where, ignore=shutil.ignore_patterns("work"))
    arrays = load_file(str(tmp_path / "keep/dummy/seed_2/new/arrays.safetensors"))
    bound = cross.tolerance_for("losses", "float64", "cpu", recipe="dummy").bound
    assert bound is not None
    arrays["losses"] = arrays["losses"] + 2 * bound
    save_file(arrays, str(tmp_path / "keep/dummy/seed_2/new/arrays.safetensors"))
    found = cross_measure.measure_kept(tmp_path / "keep")
    assert found["dummy"]["losses"]["seed"] == 2 and found["dummy"]["weights"]["max_abs"] == 0.0
    assert found["dummy"]["losses"]["seeds"] == [1, 2]
    assert cross_measure.main([str(tmp_path / "keep")]) == 1
    out = capsys.readouterr().out
    assert "# dummy: seeds 1, 2" in out and "beyond the table: dummy/losses:" in out
    assert cross_measure.main([str(tmp_path / "nothing")]) == 2
    assert "neither a cross.json report nor a --keep folder" in capsys.readouterr().err


# --------------------------------------------------------------- the goldens the bounds describe
def test_the_bounds_describe_the_repositorys_goldens():
    """``MEASURED_WITH`` is the repository's goldens now: a change to one (an eps, a formula) makes
    this red until the bounds are measured again (the lint line says how)."""
    from parity import golden

    assert set(cross.MEASURED_WITH) == set(cross.CROSS_RECIPES)
    assert cross.stale_bounds(golden.DEFAULT_ROOT) == []
    assert cross.measured_with(golden.DEFAULT_ROOT) == cross.MEASURED_WITH


def test_a_golden_changed_after_the_bounds_were_measured_is_named_by_the_lint(tmp_path):
    from parity import golden
    from parity.cases import load_registry
    from parity.golden_lint import lint

    root = tmp_path / "golden"
    for recipe in cross.CROSS_RECIPES:
        target = root / cross.bound_golden(recipe)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(golden.DEFAULT_ROOT / cross.bound_golden(recipe), target)
    assert cross.stale_bounds(root) == []
    path = root / cross.bound_golden("dummy")
    doc = json.loads(path.read_text())
    doc["artifacts"] = {"moved": doc["artifacts"]}  # any change to the artifacts: an eps, a formula
    path.write_text(json.dumps(doc))
    (line,) = cross.stale_bounds(root)
    assert line.startswith(f"{path}: changed since the tier C bounds of recipe dummy were measured")
    assert "python -m parity.tools.cross_measure" in line
    registry = load_registry("parity.suites:REGISTRY")
    assert line in lint(root, registry, include_unused=False, stale_backends={"torch", "mindspore"})
    # Where tier C cannot run (no MindSpore), its bounds are not this run's business.
    assert line not in lint(root, registry, include_unused=False, stale_backends={"torch"})
