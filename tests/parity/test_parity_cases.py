"""Case registry: ids from params, validation, selection, loading by spec."""

from __future__ import annotations

import pytest
from hypothesis import strategies as st

from parity.cases import Registry, load_registry, make_case_id
from parity.select import keyword_matches


def _f(**_):
    return []


def test_case_id_is_built_from_kind_name_and_sorted_params():
    assert make_case_id("lr_curve", "warmup", {"steps": 10, "lr": 0.001, "mode": "ceil", "tied": True}) == (
        "lr_curve.warmup-lr=0.001-mode=ceil-steps=10-tied=true"
    )


def test_registration_order_and_ids_are_stable():
    def build():
        reg = Registry()
        reg.pair("b", kind="lr_curve", legacy=_f, new=_f, params={"z": 1, "a": 2})
        reg.golden("a", kind="checkpoint", producer=_f, seed=3)
        return [c.id for c in reg]

    assert build() == build() == ["lr_curve.b-a=2-z=1", "checkpoint.a"]


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"params": {"x": [1, 2]}}, "case param 'x' has type list"),
        ({"params": {"x": "a b"}}, "expected a string of"),
        ({"params": {"x": float("nan")}}, "finite float"),
        ({"seed": -1}, "seed must be a non-negative int"),
        ({"backends": ("jax",)}, "backend 'jax' is not one of"),
    ],
)
def test_invalid_cases_are_rejected_with_the_field_named(kwargs, error):
    with pytest.raises((TypeError, ValueError), match=error):
        Registry().golden("c", kind="checkpoint", producer=_f, **kwargs)


def test_duplicate_ids_and_hypothesis_goldens_are_rejected():
    reg = Registry()
    reg.golden("c", kind="checkpoint", producer=_f)
    with pytest.raises(ValueError, match="duplicate parity case id 'checkpoint.c'"):
        reg.golden("c", kind="checkpoint", producer=_f)
    with pytest.raises(ValueError, match="tier A only"):
        from parity.cases import Case

        Case(
            name="g",
            kind="k",
            seed=0,
            params=(),
            backends=("torch",),
            producer=_f,
            strategies=(("x", st.none()),),
        )
    with pytest.raises(ValueError, match="needs both a legacy and a new"):
        reg.pair("p", kind="k", legacy=_f, new=None)


def test_keyword_selection_like_pytest():
    assert keyword_matches("lr_curve and not floor", "lr_curve.warmup_ceil-steps=10")
    assert not keyword_matches("lr_curve and not floor", "lr_curve.warmup_floor-steps=10")
    assert keyword_matches("(checkpoint or groups) and tiny", "checkpoint.tiny-large=true")
    with pytest.raises(ValueError, match="expected"):
        keyword_matches("(a", "a")


def test_select_by_exact_id_and_unknown_ids_fail():
    reg = Registry()
    reg.golden("a", kind="k", producer=_f)
    reg.golden("ab", kind="k", producer=_f)
    assert [c.id for c in reg.select(ids=["k.a"])] == ["k.a"]
    assert [c.id for c in reg.select("ab")] == ["k.ab"]
    with pytest.raises(KeyError, match="unknown case id"):
        reg.select(ids=["k.zzz"])


def test_load_registry_by_module_and_by_file(tmp_path):
    reg = load_registry("tests.parity.parity_synthetic:REGISTRY")
    assert reg.source == "tests.parity.parity_synthetic:REGISTRY" and len(reg) == 5
    cases_file = tmp_path / "my_cases.py"
    cases_file.write_text("from parity.cases import Registry\nCASES = Registry()\n")
    loaded = load_registry(f"{cases_file}:CASES")
    assert loaded.source == f"{cases_file}:CASES"
    with pytest.raises(TypeError, match="expected a parity.cases.Registry"):
        load_registry(f"{cases_file}:Registry")


def test_grid_registers_one_case_per_params_with_the_ids_of_pair_and_golden():
    by_hand, by_grid = Registry(), Registry()
    grid = [{"steps": 3, "lr": 0.1}, {"steps": 5, "lr": 0.2}]
    for params in grid:
        by_hand.pair("warm", kind="lr_curve", tags=("lr_scheduler",), params=params, legacy=_f, new=_f)
    by_hand.golden("a", kind="batches", seed=2, params={"n": 1}, producer=_f, backends=("torch", "mindspore"))
    by_hand.golden("b", kind="batches", seed=2, params={"n": 2}, producer=_f, backends=("torch", "mindspore"))
    cases = by_grid.grid("warm", kind="lr_curve", tags=("lr_scheduler",), params=grid, legacy=_f, new=_f)
    by_grid.grid(
        params=[("a", {"n": 1}), ("b", {"n": 2})],
        kind="batches",
        seed=2,
        producer=_f,
        backends=("torch", "mindspore"),
    )
    assert [c.id for c in cases] == ["lr_curve.warm-lr=0.1-steps=3", "lr_curve.warm-lr=0.2-steps=5"]
    assert [(c.id, c.tags, c.tier, c.backends, c.seed) for c in by_grid] == [
        (c.id, c.tags, c.tier, c.backends, c.seed) for c in by_hand
    ]


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"params": [{"x": 1}], "legacy": _f, "new": _f}, "give name="),
        ({"name": "g", "params": [{"x": 1}], "legacy": _f}, "expected legacy\\+new"),
        ({"name": "g", "params": [{"x": 1}], "legacy": _f, "new": _f, "producer": _f}, "either legacy\\+new"),
    ],
)
def test_grid_refuses_a_grid_without_a_name_or_with_mixed_tiers(kwargs, error):
    with pytest.raises(ValueError, match=error):
        Registry().grid(kind="value", **kwargs)


def test_the_suite_registers_its_grids_in_one_call():
    """No suite module registers a grid in a ``for`` loop around ``REGISTRY.pair``/``golden``: a
    loop stays only where the loop variables feed more than the params and the name (a tag, a
    producer, the backends ...)."""
    import ast
    from pathlib import Path

    import parity.suites

    loops = []
    for path in sorted(Path(parity.suites.__file__).parent.glob("*.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if not isinstance(node, ast.For):
                continue
            targets = {n.id for n in ast.walk(node.target) if isinstance(n, ast.Name)}
            for call in ast.walk(node):
                if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)):
                    continue
                if call.func.attr not in ("pair", "golden"):
                    continue
                others = [k.value for k in call.keywords if k.arg != "params"]
                if not any({n.id for n in ast.walk(v) if isinstance(n, ast.Name)} & targets for v in others):
                    loops.append(f"{path.name}:{node.lineno}")
    assert loops == [], f"registration loops that REGISTRY.grid replaces: {loops}"
