"""``python -m parity selfcheck``: the plant catalogue applies, and the runner measures what it should.

The catalogue tests read the working tree: a plant whose snippet stopped matching (someone changed
that code) fails here with the plant and the file named, so it is re-anchored in the same change.
The end-to-end test runs two plants through the real runner on the lr_scheduler cases only (a
baseline and two planted copies, a few seconds each).
"""

from __future__ import annotations

import dataclasses
import io
import json
import shutil
from pathlib import Path

import pytest
from rich.console import Console

from parity.cli import main
from parity.tools.plants import CATEGORIES, PLANTS, Plant, PlantError, catalogue_problems, select
from parity.tools.selfcheck_runner import RunResult, SelfCheck, _failed_cases, classify, run_suite

REPO = Path(__file__).resolve().parents[2]


def _console() -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, width=250, color_system=None), out


# ----------------------------------------------------------------------------- the catalogue


def test_catalogue_is_well_formed_and_covers_what_the_issue_asks():
    assert catalogue_problems() == []
    names = [p.name for p in PLANTS]
    assert len(names) == len(set(names))
    assert len(PLANTS) >= 45
    assert sum(p.expected == "inert" for p in PLANTS) >= 4
    assert {p.category for p in PLANTS} == set(CATEGORIES)
    assert {p.side for p in PLANTS} == {"new", "legacy", "shared"}


@pytest.mark.parametrize("plant", PLANTS, ids=lambda p: p.name)
def test_plant_snippet_occurs_once_and_the_patched_file_compiles(plant):
    path = REPO / plant.file
    text = path.read_text(encoding="utf-8")
    patched = plant.apply_text(text)  # PlantError names the plant and the file when it does not apply
    assert patched != text and plant.new in patched
    compile(patched, str(path), "exec")


def test_select_keeps_catalogue_order_and_names_unknown_plants():
    first, second = PLANTS[0].name, PLANTS[1].name
    assert [p.name for p in select([second, first])] == [first, second]
    with pytest.raises(KeyError, match="no_such_plant"):
        select(["no_such_plant"])


# ----------------------------------------------------------------------------- broken patches


def _bogus(**changes) -> Plant:
    plant = Plant(
        name="bogus_plant",
        category="optimizer",
        side="new",
        file="hyper_parallel/components/optimizer.py",
        old="this text is in no file of the project",
        new="x = 1",
        models="nothing",
    )
    return dataclasses.replace(plant, **changes)


@pytest.mark.parametrize("old", ["this text is in no file of the project", "import "])
def test_missing_or_ambiguous_snippet_is_one_line_naming_plant_and_file(old):
    plant = _bogus(old=old)
    with pytest.raises(PlantError) as info:
        plant.apply_text((REPO / plant.file).read_text(encoding="utf-8"))
    message = str(info.value)
    assert "\n" not in message
    assert "plant bogus_plant" in message and plant.file in message and "exactly once" in message


_SOURCE = """\
import os

LIMIT = 3


class Trainer:
    @property
    def steps(self):
        return LIMIT

    def step(self, x):
        def inner(y):
            return y + 1

        return inner(x) * 2


def helper(x):
    return x * 2
"""


def test_every_plant_names_the_function_it_lives_in():
    assert all(p.function for p in PLANTS)
    assert {"HyperTrainer._init_dataloader"} <= {p.function for p in PLANTS}


def test_a_plant_applies_inside_its_function_wherever_the_function_moves():
    plant = _bogus(file="m.py", function="Trainer.step", old="return inner(x) * 2", new="return inner(x) * 3")
    patched = plant.apply_text(_SOURCE)
    assert "return inner(x) * 3" in patched and patched.count("* 2") == 1  # helper's `x * 2` untouched
    # Code moved around the function (the class now last, a new function before it): still applies.
    trainer = _SOURCE[_SOURCE.index("class Trainer") : _SOURCE.index("def helper")]
    moved = _SOURCE.replace(trainer, "") + "\n\ndef added():\n    return inner(x) * 2\n\n\n" + trainer
    assert "return inner(x) * 3" in plant.apply_text(moved)
    # The same snippet in another function does not count; a nested function is part of its parent.
    nested = _bogus(file="m.py", function="Trainer.step", old="return y + 1", new="return y + 2")
    assert "return y + 2" in nested.apply_text(_SOURCE)
    decorated = _bogus(file="m.py", function="Trainer.steps", old="@property\n", new="")
    assert "@property" not in decorated.apply_text(_SOURCE)
    constant = _bogus(file="m.py", function="LIMIT", old="3", new="4")
    assert "LIMIT = 4" in constant.apply_text(_SOURCE)


@pytest.mark.parametrize(
    ("function", "old", "message"),
    [
        ("Trainer.run", "return inner(x) * 2", "function Trainer.run is not found in m.py"),
        ("helper", "return inner(x) * 2", "its old snippet is not found in helper (m.py)"),
        ("Trainer.step", "return", "its old snippet occurs 2 times in Trainer.step (m.py)"),
    ],
)
def test_a_broken_anchor_names_the_plant_the_file_and_the_function(function, old, message):
    plant = _bogus(file="m.py", function=function, old=old, new="pass")
    with pytest.raises(PlantError) as info:
        plant.apply_text(_SOURCE)
    text = str(info.value)
    assert "\n" not in text and text.startswith("plant bogus_plant: ") and message in text


def test_runner_refuses_a_broken_plant_without_running_anything(tmp_path):
    project = tmp_path / "project"
    (project / "hyper_parallel" / "components").mkdir(parents=True)
    shutil.copy(REPO / "hyper_parallel/components/optimizer.py", project / "hyper_parallel/components")
    console, out = _console()
    check = SelfCheck([_bogus()], source=project, jobs=1, console=console)
    assert check.run() == 1
    (result,) = check.results
    assert result.outcome == "broken-patch" and "plant bogus_plant" in result.detail
    assert check.baseline is None  # nothing to run: no baseline either
    assert "error: plant bogus_plant" in out.getvalue()


# ----------------------------------------------------------------------------- the runner's parts


@pytest.mark.parametrize(
    ("expected", "rc", "error", "outcome"),
    [
        ("caught", 1, None, "caught"),
        ("caught", 0, None, "survived"),
        ("inert", 0, None, "inert-ok"),
        ("inert", 1, None, "FALSE ALARM"),
        ("caught", None, "timed out after 5s", "error"),
    ],
)
def test_classify(expected, rc, error, outcome):
    assert classify(_bogus(expected=expected), RunResult(rc=rc, seconds=1.0, error=error)) == outcome


def test_failed_cases_come_from_fail_and_error_lines_the_run_summary_and_reports(tmp_path):
    root = tmp_path / "reports"
    reports = root / "torch" / "cpu"
    reports.mkdir(parents=True)
    (reports / "c.json").write_text(json.dumps({"case_id": "losses.only_in_a_report"}))
    (reports / "a.json").write_text(json.dumps({"case_id": "lr_curve.a-steps=1"}))
    summary = {"cases": [{"case_id": "rng.ok", "status": "pass"}, {"case_id": "rng.red", "status": "fail"}]}
    (root / "last_run.json").write_text(json.dumps(summary))
    # A file directly in the report folder is not a case report.
    (root / "selfcheck.json").write_text(json.dumps({"case_id": "not.a.case.report"}))
    output = (
        "PARITY FAIL  case=lr_curve.a-steps=1  backend=torch  platform=cpu  tier=A (legacy vs new)\n"
        "PARITY ERROR  case=batches.b-n=2  backend=torch: KeyError: 'x'\n"
        "unused golden /g/torch/cpu/old.case.json: no registered case has this id\n"
    )
    assert _failed_cases(tmp_path / "reports", output) == [
        "lr_curve.a-steps=1",
        "batches.b-n=2",
        "rng.red",
        "losses.only_in_a_report",
        "unused golden old.case.json",
    ]


def test_probe_refuses_a_child_that_imports_another_tree(tmp_path):
    """A copy without ``hyper_parallel/``: the child would import the installed tree, never silently."""
    copy = tmp_path / "project"
    shutil.copytree(
        REPO / "parity", copy / "parity", ignore=shutil.ignore_patterns("__pycache__", "reports", "golden")
    )
    result = run_suite(copy, ["--tag", "lr_scheduler"], timeout=120, work=tmp_path)
    assert result.error is not None and result.error.startswith("probe:"), result.tail
    assert not result.green


# ----------------------------------------------------------------------------- end to end


def test_cli_list_and_argument_errors():
    console, out = _console()
    assert main(["selfcheck", "--list"], console=console) == 0
    assert PLANTS[0].name in out.getvalue() and f"planted divergences ({len(PLANTS)})" in out.getvalue()
    console, out = _console()
    assert main(["selfcheck", "--plant", "no_such_plant"], console=console) == 2
    assert "unknown plant(s): no_such_plant" in out.getvalue()
    console, out = _console()
    assert main(["selfcheck", "--", "--report-dir", "x"], console=console) == 2


def test_a_plant_is_caught_and_an_inert_one_stays_green_end_to_end(tmp_path):
    console, out = _console()
    json_path = tmp_path / "selfcheck.json"
    code = main(
        [
            "selfcheck",
            "--plant",
            "lrsched_warmup_floor",
            "inert_warmup_steps_truthiness",
            "--jobs",
            "2",
            "--json",
            str(json_path),
            "--",
            "--tag",
            "lr_scheduler",
        ],
        console=console,
    )
    text = out.getvalue()
    assert code == 0, text
    data = json.loads(json_path.read_text(encoding="utf-8"))
    assert data["baseline"]["green"] and data["run_args"] == ["--tag", "lr_scheduler"]
    by_name = {p["name"]: p for p in data["plants"]}
    caught = by_name["lrsched_warmup_floor"]
    assert caught["outcome"] == "caught"
    # 100 * 0.07 = 7.000000000000001: ceil gives 8 warmup steps, the planted floor 7.
    assert any("lrsched_grid" in case and "warmup_ratio=0.07" in case for case in caught["caught_by"])
    assert by_name["inert_warmup_steps_truthiness"]["outcome"] == "inert-ok"
    assert data["catch_rate"] == {"caught": 1, "expected_caught": 1, "rate": 1.0}
    assert data["survivors"] == [] and data["false_alarms"] == [] and data["ok"] is True
    assert "catch rate: 1/1 (100.0%)" in text and "parity selfcheck" in text


def test_no_plant_is_an_edit_mutmut_writes():
    """A caught plant that a mutmut operator makes is retired (the mutation run generates it in
    every function), unless it is the only claim of some case (``KEPT_FOR_CLAIMS``)."""
    from parity.tools.plants import KEPT_FOR_CLAIMS, mutation_operator

    writable = {
        p.name: mutation_operator(p) for p in PLANTS if p.expected == "caught" and mutation_operator(p)
    }
    assert set(writable) == set(KEPT_FOR_CLAIMS), writable


@pytest.mark.parametrize(
    ("old", "new", "function", "expected"),
    [
        ("ok = step < warmup", "ok = step <= warmup", "f", "swap < -> <="),
        ("x = g(a, b=1)", "x = g(a)", "f", "argument removed"),
        ("n = count + 1", "n = count + 2", "f", "number + 1"),
        ("y = compute(x)", "y = None", "f", "assignment to None"),
        ("g(a, b=compute(x))", "g(a, b=None)", "f", None),  # a keyword value, not an assignment
        (
            'style = "cosine"',
            'style = "linear"',
            "f",
            None,
        ),  # another valid value: mutmut writes "XXcosineXX"
        ("LIMIT = 1", "LIMIT = 2", "LIMIT", None),  # module level: mutmut mutates function bodies only
    ],
)
def test_mutation_operator_names_what_mutmut_writes(tmp_path, old, new, function, expected):
    from parity.tools.plants import mutation_operator

    (tmp_path / "m.py").write_text(f"LIMIT = 1\n\n\ndef f(x, a, count, warmup, step):\n    {old}\n")
    plant = Plant("p", "loss", "new", "m.py", old, new, "why", function=function)
    assert mutation_operator(plant, tmp_path) == expected
