"""``python -m parity selfcheck --quick``: every case claims a plant, and a claimed case that stays
green under its plant fails with the case and the plant named."""

from __future__ import annotations

import io

from rich.console import Console

from parity.cases import Registry
from parity.suites import REGISTRY
from parity.tools.claims import CLAIMS
from parity.tools.plants import PLANTS
from parity.tools.quick import QuickPlan, QuickResult, claims_of, make_plan, misses, run_quick
from parity.tools.selfcheck_runner import RunResult


def _f(**_):
    return {"x": 1}


def _registry() -> Registry:
    reg = Registry(source="test")
    reg.grid("lr", kind="lr_curve", params=[{"steps": 1}, {"steps": 2}], legacy=_f, new=_f)
    reg.golden("only_ms", kind="batches", producer=_f, backends=("mindspore",))
    reg.golden("lonely", kind="batches", producer=_f)
    return reg


CAUGHT = next(p.name for p in PLANTS if p.expected == "caught")
OTHER = next(p.name for p in PLANTS if p.expected == "caught" and p.name != CAUGHT)
INERT = next(p.name for p in PLANTS if p.expected == "inert")


def test_every_registered_case_claims_a_plant_that_exists_and_can_be_caught():
    plan = make_plan(REGISTRY)
    assert plan.problems == [], "\n".join(plan.problems)
    claimed = {case for cases in plan.cases_of.values() for case in cases}
    vouched = set(
        plan.by_mutants
    )  # no plant claim, a recorded mutant kill (parity/tools/mutation/kills.json)
    assert claimed | set(plan.unmeasured) | vouched == {c.id for c in REGISTRY if "torch" in c.backends}
    assert not claimed & set(plan.unmeasured) and not claimed & vouched


def test_claims_by_name_cover_a_grid_and_an_id_overrides_its_name():
    reg = _registry()
    claims = {"lr": (CAUGHT,), "lr_curve.lr-steps=2": (OTHER,), "lonely": (CAUGHT,)}
    assert [claims_of(c, claims) for c in reg] == [(CAUGHT,), (OTHER,), (), (CAUGHT,)]
    plan = make_plan(reg, claims=claims, unmeasured=(), kills={})
    assert plan.problems == []  # only_ms runs on no CI backend: nothing to claim
    assert plan.cases_of == {
        CAUGHT: ["lr_curve.lr-steps=1", "batches.lonely"],
        OTHER: ["lr_curve.lr-steps=2"],
    }


def test_plan_problems_name_the_case_or_claim():
    claims = {"lr": ("no_such_plant",), "lr_curve.lr-steps=2": (INERT,), "gone_case": (CAUGHT,)}
    problems = make_plan(_registry(), claims=claims, unmeasured=(), kills={}).problems
    assert problems == [
        "claim 'gone_case' names no registered case (id or name)",
        "case lr_curve.lr-steps=1 claims unknown plant 'no_such_plant'",
        f"case lr_curve.lr-steps=2 claims plant {INERT}, which is inert (it must change nothing)",
        "case batches.lonely claims no plant and killed no recorded mutant "
        "(add a claim to parity/tools/claims.py, or a kill with `parity mutation`)",
    ]


def test_unmeasured_cases_are_reported_not_run_and_must_not_also_claim():
    claims = {"lr": (CAUGHT,)}
    plan = make_plan(_registry(), claims=claims, unmeasured={"lonely", "lr_curve.lr-steps=1", "gone"})
    assert plan.unmeasured == ["batches.lonely"]
    assert plan.cases_of == {CAUGHT: ["lr_curve.lr-steps=1", "lr_curve.lr-steps=2"]}
    assert plan.problems == [
        "UNMEASURED entry 'gone' names no registered case (id or name)",
        "case lr_curve.lr-steps=1 claims a plant and is listed UNMEASURED: drop it from UNMEASURED",
    ]


def test_misses_name_each_case_left_green_and_the_plant():
    run = RunResult(rc=1, seconds=1.0, failed=["a.one"])
    assert misses(QuickResult("p", ["a.one", "a.two"], run=run)) == ["case a.two stayed green under plant p"]
    assert misses(QuickResult("p", ["a.one"], run=run)) == []
    broken = QuickResult("p", ["a.one"], error="plant p: its old snippet is not found in f (x.py)")
    assert misses(broken) == [
        "plant p: plant p: its old snippet is not found in f (x.py) (1 claimed case(s) unchecked)"
    ]
    timed_out = QuickResult("p", ["a.one"], run=RunResult(rc=None, seconds=5.0, error="timed out after 5s"))
    assert misses(timed_out) == ["plant p: the run gave no result: timed out after 5s"]


def test_every_claim_names_a_catalogue_plant():
    names = {p.name for p in PLANTS}
    assert {plant for plants in CLAIMS.values() for plant in plants} <= names


def test_a_plant_red_on_its_case_passes_and_a_case_left_green_fails_naming_both():
    """Two real planted runs: the LR warmup plant turns an LR case red; an optimizer plant leaves
    it green, which fails the quick check with one line naming the case and the plant."""
    case = "lr_curve.lrsched_grid-decay_style=constant-lr_min=0.0001-steps=7-warmup_ratio=0.5"
    assert REGISTRY.get(case) is not None
    plan = QuickPlan(cases_of={"lrsched_warmup_floor": [case], "optim_keywords_case_sensitive": [case]})
    out = io.StringIO()
    status = run_quick(plan, console=Console(file=out, width=250, color_system=None), jobs=2)
    text = out.getvalue()
    assert status == 1, text
    assert f"case {case} stayed green under plant optim_keywords_case_sensitive" in text
    assert "under plant lrsched_warmup_floor" not in text


def test_a_plants_claimants_are_cut_into_chunks_that_keep_shared_runs_together():
    from types import SimpleNamespace

    from parity.tools.quick import chunks_of

    cases = {
        **{f"x.p{i}-a": SimpleNamespace(kind="e2e_explore", share=f"p{i}") for i in range(6)},
        **{f"x.p{i}-b": SimpleNamespace(kind="e2e_explore", share=f"p{i}") for i in range(6)},
        **{f"y.c{i}": SimpleNamespace(kind="lr_curve", share=None) for i in range(4)},
    }
    ids = [f"x.p{i}-{s}" for i in range(6) for s in "ab"] + [f"y.c{i}" for i in range(4)]
    chunks = chunks_of("plant", ids, cases, limit=13.0)
    assert [c.cases for c in chunks][0] == ["x.p0-a", "x.p0-b", "x.p1-a", "x.p1-b"]  # 6 + 6 <= 13
    assert sorted(i for c in chunks for i in c.cases) == sorted(ids)  # every claimant runs once
    for chunk in chunks:  # a shared run's cases are in one chunk
        shares = {cases[i].share for i in chunk.cases if cases[i].share}
        assert all(f"x.{s}-a" in chunk.cases and f"x.{s}-b" in chunk.cases for s in shares)
    assert all(c.cost <= 13.0 for c in chunks) and len(chunks) == 4
    assert chunks_of("plant", ["x.p0-a"], cases, limit=1.0)[0].cases == ["x.p0-a"]  # too big: alone
