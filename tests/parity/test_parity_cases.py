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
