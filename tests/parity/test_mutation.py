"""The mutation tool's own pieces: mutant records, the crash classifier, the score, the review list.

The end-to-end run (mutants against the cases) is ``nox -s mutation``; here the parts that decide
what a mutant is, where it sits and how it counts are checked on small inputs.
"""

from __future__ import annotations

import io
import json
import textwrap
from pathlib import Path

import pytest

from parity.tools.mutation import score
from parity.tools.mutation.child import crash_site
from parity.tools.mutation.coverage import CoverageMap, Group, groups_of
from parity.tools.mutation.mutants import area_of, describe, operator_of

SOURCE = textwrap.dedent(
    '''\
    """A module."""


    def scale(x, factor=2):
        """Doc."""
        if x < 0:
            raise ValueError(
                "negative"
            )
        return x * factor


    class Box:
        def size(self, items):
            total = 0
            for item in items:
                total += item
            return total
    '''
)


@pytest.fixture(scope="module")
def mutants():
    from mutmut.mutation.file_mutation import mutate_file_contents

    path = Path("hyper_parallel/components/example.py")
    result = mutate_file_contents(str(path), SOURCE)
    return describe(path, SOURCE, result.code, result.mutant_names), result.code


def test_each_mutant_names_its_source_line_and_change(mutants):
    records, _ = mutants
    lines = SOURCE.splitlines()
    assert records, "mutmut generated no mutant"
    for m in records:
        assert m.path == "hyper_parallel/components/example.py"
        assert m.qualname in ("scale", "Box.size")
        # The recorded line is the source line the change starts on.
        assert lines[m.line - 1].strip() == m.before.split(" ")[0] or m.before.startswith(
            lines[m.line - 1].strip()
        )
    ops = {(m.qualname, m.operator) for m in records}
    assert ("scale", "'<' -> '<='") in ops
    assert ("scale", "'*' -> '/'") in ops
    assert ("Box.size", "'+=' -> '-='") in ops


def test_the_tree_line_is_the_statement_coverage_records(mutants):
    records, code = mutants
    generated = code.splitlines()
    for m in records:
        # The mutated file's line at tree_line starts the statement holding the change, inside
        # the original copy the trampoline calls when no mutant is chosen.
        text = generated[m.tree_line - 1].strip()
        assert text and not text.startswith(("def ", "@")), (m, text)
    message = [m for m in records if m.before.startswith('"negative"')]
    assert message, "the message string was not mutated"
    # The string sits on a continuation line: coverage records the `raise` that holds it.
    assert all(generated[m.tree_line - 1].strip().startswith("raise ValueError(") for m in message)


def test_keys_survive_an_edit_elsewhere_in_the_file(mutants):
    from mutmut.mutation.file_mutation import mutate_file_contents

    records, _ = mutants
    shifted = SOURCE.replace('"""A module."""', '"""A module."""\n\nCONSTANT = 1\n')
    path = Path("hyper_parallel/components/example.py")
    result = mutate_file_contents(str(path), shifted)
    again = describe(path, shifted, result.code, result.mutant_names)
    assert {m.key for m in again} == {m.key for m in records}
    assert {m.line for m in again} == {m.line + 3 for m in records}
    assert len({m.key for m in records}) == len(records)


def test_operator_of_names_the_smallest_change():
    assert operator_of("if a < b:", "if a <= b:") == "'<' -> '<='"
    assert operator_of("f(x, y)", "f(x, )") == "'y' removed"
    assert operator_of("return x", "return None") == "'x' -> 'None'"


def test_area_groups_components_and_trainers():
    assert area_of("hyper_parallel/components/lr_scheduler.py") == "lr_scheduler"
    assert area_of("hyper_parallel/trainer/base.py") == "legacy_trainer"
    assert area_of("hyper_parallel/trainer/hyper_trainer.py") == "hyper_trainer"
    assert area_of("hyper_parallel/checkpointing/run_lock.py") == "checkpointing"


def _raise_in(path: str) -> BaseException:
    code = compile("def boom():\n    raise RuntimeError('x')\nboom()\n", path, "exec")
    try:
        exec(code, {})
    except RuntimeError as exc:
        return exc
    raise AssertionError("no exception")


def test_a_crash_counts_as_a_kill_only_through_product_code(tmp_path):
    root = str(tmp_path / "tree" / "hyper_parallel") + "/"
    product = _raise_in(root + "components/loss.py")
    harness = _raise_in(str(tmp_path / "tree" / "parity" / "engine.py"))
    assert crash_site(product, root) == "hyper_parallel/components/loss.py:2"
    assert crash_site(harness, root) is None
    # A forked rank's failure arrives as the harness's error quoting the rank's traceback.
    quoted = RuntimeError(f'rank 1 failed:\n  File "{root}trainer/base.py", line 40, in train\n')
    assert crash_site(quoted, root) == "hyper_parallel/trainer/base.py:40"


def test_groups_share_one_run_and_the_map_selects_cheapest_green_first():
    class C:
        def __init__(self, id, share=None, backends=("torch",)):
            self.id, self.share, self.backends = id, share, backends

    groups = groups_of([C("a", "s"), C("b"), C("c", "s"), C("d", backends=("mindspore",))])
    assert [g.cases for g in groups] == [["a", "c"], ["b"]]
    cmap = CoverageMap(
        [Group("g0", ["a"], 5.0), Group("g1", ["b"], 1.0), Group("g2", ["c"], 0.5, status="killed")],
        {"hyper_parallel/x.py": {10: ["g0", "g1", "g2"]}},
        {"hyper_parallel/x.py": [3]},
    )
    assert [g.label for g in cmap.groups_for("hyper_parallel/x.py", 10)] == ["g1", "g0"]
    assert cmap.groups_for("hyper_parallel/x.py", 11) == []
    assert cmap.runs_at_import("hyper_parallel/x.py", 3)
    again = CoverageMap.from_dict(cmap.to_dict())
    assert [g.label for g in again.groups_for("hyper_parallel/x.py", 10)] == ["g1", "g0"]


def test_a_map_serves_an_edited_file_by_function_and_refuses_a_new_function():
    from types import SimpleNamespace as M

    cmap = CoverageMap(
        [Group("g0", ["a"], 5.0), Group("g1", ["b"], 1.0), Group("g2", ["c"], 2.0)],
        {"hyper_parallel/x.py": {10: ["g0"], 12: ["g1"], 30: ["g2"]}, "hyper_parallel/y.py": {5: ["g2"]}},
        {"hyper_parallel/x.py": [1]},
    )
    mutants = [
        M(path="hyper_parallel/x.py", function="x.x_f", tree_line=10),
        M(path="hyper_parallel/x.py", function="x.x_f", tree_line=12),
        M(path="hyper_parallel/x.py", function="x.x_g", tree_line=30),
        M(path="hyper_parallel/y.py", function="y.x_h", tree_line=5),
    ]
    cmap.with_functions(mutants)
    assert CoverageMap.from_dict(cmap.to_dict()).functions == cmap.functions
    # x.py edited: its lines moved, so a mutant anywhere in f takes every group that ran f.
    moved = M(path="hyper_parallel/x.py", function="x.x_f", tree_line=99)
    served = cmap.edited(["hyper_parallel/x.py"], [moved])
    assert served is not None
    assert [g.label for g in served.groups_of(moved)] == ["g1", "g0"]
    assert served.runs_at_import("hyper_parallel/x.py", 99)  # unknown after an edit: a fresh interpreter
    assert [g.label for g in served.groups_of(mutants[3])] == ["g2"]  # y.py unchanged: by line
    assert [g.label for g in served.groups_needed([moved, mutants[3]])] == ["g0", "g1", "g2"]
    # A function the map never saw has nothing to fall back on: measure again.
    assert (
        cmap.edited(
            ["hyper_parallel/x.py"], [M(path="hyper_parallel/x.py", function="x.x_new", tree_line=40)]
        )
        is None
    )


def test_wilson_interval():
    lo, hi = score.wilson(900, 1000)
    assert 0.87 < lo < 0.9 < hi < 0.92
    assert score.wilson(0, 0) == (0.0, 1.0)
    assert score.wilson(10, 10)[1] == 1.0


def test_score_counts_timeouts_and_harness_errors_apart():
    fields = {k: "" for k in ("key", "qualname", "operator", "before", "after")}
    rows = [
        {**fields, "line": 1, "status": s, "path": "hyper_parallel/components/loss.py"}
        for s in ["killed"] * 8 + ["survived", "not_covered", "timeout", "harness_error"]
    ]
    result = score.Result(rows, [], population=12, sample=None, seed=0, scope="all", seconds={"mutants": 60})
    total = result.counts()
    assert total["score"] == 0.8  # 8 of the 10 judged
    assert total["strict_score"] == 8 / 12
    assert total["timeout"] == total["harness_error"] == 1
    assert result.to_dict()["mutants_per_minute"] == 12.0


def test_review_list_entries_need_a_verdict_and_a_reason(tmp_path):
    good = tmp_path / "ok.toml"
    good.write_text(
        '[[mutant]]\nkey = "a.py:f:1234abcd"\nverdict = "equivalent"\nreason = "same value"\n'
        '[module."a.py"]\nwhy = "many log strings"\n'
    )
    reviewed = score.Reviewed.load(good)
    assert reviewed.get("a.py:f:1234abcd") == {"verdict": "equivalent", "reason": "same value"}
    assert reviewed.module_notes == {"a.py": "many log strings"}
    bad = tmp_path / "bad.toml"
    bad.write_text('[[mutant]]\nkey = "a.py:f:1"\nverdict = "fine"\n')
    with pytest.raises(SystemExit, match="mutant entry 1: expected key, verdict"):
        score.Reviewed.load(bad)
    broken = tmp_path / "broken.toml"
    broken.write_text("[[mutant]\n")
    with pytest.raises(SystemExit, match="not valid TOML"):
        score.Reviewed.load(broken)


def test_the_reviewed_list_in_the_repository_loads():
    score.Reviewed.load(score.REVIEWED_FILE)


def test_the_html_report_shows_the_last_mutation_run(tmp_path):
    from parity.tools.html_report import mutation_section

    assert mutation_section(tmp_path / "mutation.json") == []
    row = {
        "key": "hyper_parallel/components/loss.py:f:1",
        "qualname": "CrossEntropyLoss.__call__",
        "line": 42,
        "operator": "'<' -> '<='",
        "before": "",
        "after": "",
        "path": "hyper_parallel/components/loss.py",
    }
    rows = [{**row, "status": "killed"}] * 3 + [{**row, "status": "survived"}]
    result = score.Result(rows, [], population=4, sample=None, seed=0, scope="all", seconds={"mutants": 30})
    html = "\n".join(mutation_section(score.write(result, tmp_path)))
    assert "75.0% of judged mutants killed" in html
    assert "hyper_parallel/components/loss.py:CrossEntropyLoss.__call__:42" in html
    assert "&#x27;&lt;&#x27; -&gt; &#x27;&lt;=&#x27;" in html or "'&lt;' -&gt; '&lt;='" in html


def test_a_mutant_meets_its_neighbours_killers_first_then_both_tiers_early():
    from parity.tools.mutation.mutants import Mutant
    from parity.tools.mutation.runner import Killers

    groups = [Group(f"g{i}", [f"c{i}"], seconds=float(i)) for i in range(6)]
    tiers = {"g0": "A", "g1": "A", "g2": "A", "g3": "B", "g4": "B", "g5": "A"}
    cmap = CoverageMap(groups, {})
    killers = Killers(cmap, tiers, recorded={})
    m = Mutant("n", "mod.x_f", "hyper_parallel/a.py", "f", 1, 1, "op", "", "", "k")
    # Cheapest first, alternating tiers: A, B, A, B, A, A.
    assert [g.label for g in killers.order(m, groups)] == ["g0", "g3", "g1", "g4", "g2", "g5"]
    killers.record(m, "c5")
    assert [g.label for g in killers.order(m, groups)][0] == "g5"


def test_a_capped_run_meets_one_group_of_each_family_before_a_second_of_any():
    from parity.tools.mutation.mutants import Mutant
    from parity.tools.mutation.runner import Killers

    cases = ["a.grid-x=1", "a.grid-x=2", "a.grid-x=3", "b.one", "c.grid-y=1", "c.grid-y=2"]
    groups = [Group(f"g{i}", [c], seconds=float(i)) for i, c in enumerate(cases)]
    killers = Killers(CoverageMap(groups, {}), {g.label: "B" for g in groups}, recorded={})
    m = Mutant("n", "mod.x_f", "hyper_parallel/a.py", "f", 1, 1, "op", "", "", "k")
    assert [g.label for g in killers.order(m, groups)] == ["g0", "g3", "g4", "g1", "g5", "g2"]
    # A group that killed more per second in the recorded runs goes first within its round.
    recorded = {"c.grid-y=2": ["k1", "k2"], "a.grid-x=3": ["k3"]}
    killers = Killers(CoverageMap(groups, {}), {g.label: "B" for g in groups}, recorded=recorded)
    assert [g.label for g in killers.order(m, groups)] == ["g2", "g5", "g3", "g0", "g4", "g1"]


def test_a_mutant_tries_the_recorded_killers_of_its_function_after_this_runs_own():
    from parity.tools.mutation.mutants import Mutant
    from parity.tools.mutation.runner import Killers

    groups = [Group(f"g{i}", [f"c{i}"], seconds=float(i)) for i in range(5)]
    recorded = {
        "c4": ["hyper_parallel/a.py:f:00000001", "hyper_parallel/a.py:f:00000002"],
        "c3": ["hyper_parallel/b.py:f:1"],
    }
    killers = Killers(CoverageMap(groups, {}), {g.label: "B" for g in groups}, recorded=recorded)
    m = Mutant(
        "n", "mod.x_f", "hyper_parallel/a.py", "f", 1, 1, "op", "", "", "hyper_parallel/a.py:f:00000009"
    )
    order = [g.label for g in killers.order(m, groups)]
    assert order[0] == "g4" and sorted(order) == [f"g{i}" for i in range(5)]
    killers.record(m, "c2")  # this run's own killer still goes first
    assert [g.label for g in killers.order(m, groups)][:2] == ["g2", "g4"]


def test_a_map_of_some_files_serves_only_them_and_restricts_coverage(tmp_path):
    from parity.tools.mutation.coverage import _rcfile

    part = CoverageMap([Group("g0", ["a"])], {}, files=["hyper_parallel/a.py"])
    assert part.measures(["hyper_parallel/a.py"]) and not part.measures(["hyper_parallel/b.py"])
    assert CoverageMap.from_dict(part.to_dict()).files == ["hyper_parallel/a.py"]
    assert CoverageMap([], {}).measures(["hyper_parallel/b.py"])  # a full map serves every file
    rc = _rcfile(tmp_path, tmp_path / "tree", ["hyper_parallel/a.py"]).read_text()
    assert "source =" not in rc and f"    {tmp_path / 'tree' / 'hyper_parallel/a.py'}\n" in rc
    assert "source = " in _rcfile(tmp_path, tmp_path / "tree").read_text()


def test_past_the_deadline_no_mutant_starts(monkeypatch):
    import time

    from parity.tools.mutation import runner
    from parity.tools.mutation.mutants import Mutant

    ran = []
    monkeypatch.setattr(runner, "_run_one", lambda m, *a: ran.append(m.name) or runner.Verdict(m, "survived"))
    pool = [
        Mutant(f"n{i}", "mod.x_f", "hyper_parallel/a.py", "f", 1, 1, "op", "", "", f"k{i}") for i in range(3)
    ]
    cmap = CoverageMap([], {})
    done = runner.run_mutants(
        pool, cmap, None, jobs=1, on_verdict=lambda v: None, deadline=time.monotonic() - 1
    )
    assert done == [] and ran == []
    done = runner.run_mutants(pool, cmap, None, jobs=1, on_verdict=lambda v: None, deadline=None)
    assert [v.mutant.name for v in done] == ["n0", "n1", "n2"]


def test_where_a_survivor_sits(tmp_path):
    """message: a raise or a log call; error_path: a refusal's condition or body, an except; else behaviour."""
    from parity.tools.mutation.where import where

    (tmp_path / "m.py").write_text(
        textwrap.dedent(
            """\
            import logging
            log = logging.getLogger()
            def f(x):
                if x < 0 or x > 9:
                    bad = f"x={x}"
                    raise ValueError(bad)
                log.info("x is %d", x)
                try:
                    y = x * 2
                except ValueError:
                    y = 0
                return y + 1
            """
        )
    )
    assert [where("m.py", n, tmp_path) for n in (4, 5, 6, 7, 9, 11, 12)] == [
        "error_path", "error_path", "message", "message", "behaviour", "error_path", "behaviour",
    ]  # fmt: skip


def test_score_splits_survivors_by_where(tmp_path, monkeypatch):
    (tmp_path / "p.py").write_text("def f(x):\n    if x:\n        raise ValueError('no')\n    return x + 1\n")
    monkeypatch.chdir(tmp_path)
    rows = [
        {"key": "k1", "path": "p.py", "qualname": "f", "line": 3, "operator": "'no' -> 'XXnoXX'",
         "status": "survived", "before": "", "after": ""},
        {"key": "k2", "path": "p.py", "qualname": "f", "line": 4, "operator": "'+' -> '-'",
         "status": "not_covered", "before": "", "after": ""},
    ]  # fmt: skip
    result = score.Result(
        verdicts=rows, reviewed=[], population=2, sample=None, seed=0, scope="all", seconds={}
    )
    data = result.to_dict()
    assert data["survivors_by_where"] == {"message": 1, "error_path": 0, "behaviour": 1}
    assert [s["where"] for s in data["survivors"]] == ["message", "behaviour"]


def test_the_workspace_reuses_the_full_map_after_a_product_edit_only(tmp_path, monkeypatch):
    import subprocess
    from types import SimpleNamespace as M

    from rich.console import Console

    from parity.tools.mutation import coverage as coverage_mod
    from parity.tools.mutation.workspace import Workspace

    (tmp_path / "hyper_parallel").mkdir()
    (tmp_path / "parity").mkdir()
    (tmp_path / "hyper_parallel" / "a.py").write_text("def f():\n    return 1\n")
    (tmp_path / "parity" / "cases.py").write_text("CASES = 1\n")
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    measured: list[object] = []

    def fake_measure(tree, folder, console, *, jobs, files=None):
        measured.append(files)
        return CoverageMap([Group("g0", ["a"], 1.0)], {"hyper_parallel/a.py": {2: ["g0"]}}, {})

    monkeypatch.setattr(coverage_mod, "measure", fake_measure)
    mutant = M(path="hyper_parallel/a.py", function="hyper_parallel.a.x_f", tree_line=2)
    console = Console(file=io.StringIO())

    def run(files):
        ws = Workspace(tmp_path, Path(".mutation"))
        return ws.coverage_map(console, tmp_path, jobs=1, mutants=[mutant], pool=[mutant], files=files)

    run(None)  # the full map, kept apart with the file hashes
    assert measured == [None]
    (tmp_path / "hyper_parallel" / "a.py").write_text("def f():\n    x = 2\n    return x\n")
    moved = M(path="hyper_parallel/a.py", function="hyper_parallel.a.x_f", tree_line=3)
    ws = Workspace(tmp_path, Path(".mutation"))
    served = ws.coverage_map(console, tmp_path, jobs=1, mutants=[moved], pool=[moved], files={mutant.path})
    assert measured == [None], "a product edit must not measure again"
    assert [g.label for g in served.groups_of(moved)] == ["g0"]
    (tmp_path / "parity" / "cases.py").write_text("CASES = 2\n")  # the cases changed: measure
    run({mutant.path})
    assert measured == [None, [mutant.path]]


def test_function_selects_its_mutants_and_cases_restrict_the_groups(tmp_path):
    """``--function FILE:QUALNAME`` picks one function's mutants (an unknown one is a one-line
    error); ``--cases`` runs only the groups holding a matching case, so their kills are measured."""
    import argparse

    from rich.console import Console

    from parity.tools.mutation import runner
    from parity.tools.mutation.mutants import Mutant

    def mutant(name: str, qualname: str) -> Mutant:
        return Mutant(name, f"mod.x_{qualname}", "hyper_parallel/a.py", qualname, 1, 1, "op", "", "", name)

    pool = [mutant("m0", "f"), mutant("m1", "Box.size"), mutant("m2", "f")]
    args = argparse.Namespace(module=[], changed=None, function=["hyper_parallel/a.py:f"], survivors_of=None)
    console = Console(file=io.StringIO())
    assert [m.name for m in runner.select(pool, args, console, tmp_path)] == ["m0", "m2"]
    args.function = ["hyper_parallel/a.py:g"]
    with pytest.raises(SystemExit, match="--function hyper_parallel/a.py:g: no mutants in that function"):
        runner.select(pool, args, console, tmp_path)

    # --survivors-of: the mutants a report did not kill, those that still exist
    report = tmp_path / "mutation.json"
    report.write_text(json.dumps({"survivors": [{"key": "m1"}, {"key": "gone"}]}))
    args.function, args.survivors_of = [], report
    assert [m.name for m in runner.select(pool, args, console, tmp_path)] == ["m1"]
    report.write_text("{}")
    with pytest.raises(
        SystemExit, match="--survivors-of .*: expected a mutation.json with a 'survivors' list"
    ):
        runner.select(pool, args, console, tmp_path)

    groups = [Group("g0", ["suite.cheap_case"], 1.0), Group("g1", ["suite.new_case-x=1"], 2.0)]
    cmap = CoverageMap(groups, {"hyper_parallel/a.py": {1: ["g0", "g1"]}})
    seen = []

    class Launcher:
        logs = tmp_path
        tree = tmp_path

        def run(self, spec, *, fresh, timeout):
            seen.append(spec["groups"])
            return {"status": "survived"}, False

    killers = runner.Killers(cmap, tiers={})
    runner._run_one(pool[0], cmap, Launcher(), killers, None, ("new_case",))
    runner._run_one(pool[0], cmap, Launcher(), killers, None)
    assert seen == [[["suite.new_case-x=1"]], [["suite.cheap_case"], ["suite.new_case-x=1"]]]


def test_a_stopped_run_leaves_no_mutant_running(tmp_path):
    """close() (run on Ctrl-C or SIGTERM) kills the children in flight and refuses new ones."""
    import subprocess
    import sys

    from parity.tools.mutation.runner import _Launcher

    launcher = _Launcher(tree=tmp_path, env={}, logs=tmp_path)
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
    launcher._track(child)
    launcher.close()
    assert child.poll() is not None
    with pytest.raises(SystemExit):
        launcher._track(child)


def test_a_product_that_fails_at_import_is_a_kill_and_a_harness_failure_is_not(tmp_path, monkeypatch):
    """A mutant that breaks the product's import (a class check run at import) fails every case:
    the first case of the run is its killer. An error raised by the harness alone stays apart."""
    from parity.tools.mutation import child

    tree = tmp_path / "tree"
    (tree / "hyper_parallel").mkdir(parents=True)
    spec = tmp_path / "spec.json"
    for where, expected in (("hyper_parallel/protocols/configurable.py", "killed"), ("parity/cases.py", "harness_error")):  # fmt: skip
        error = _raise_in(str(tree / where))

        def fail(spec: dict, error: BaseException = error) -> dict:
            raise error

        monkeypatch.setattr(child, "run_spec", fail)
        out = tmp_path / f"{expected}.json"
        spec.write_text(json.dumps({"tree": str(tree), "mutant": "m", "groups": [["a.b"]], "out": str(out)}))
        child.main([str(spec)])
        verdict = json.loads(out.read_text())
        assert verdict["status"] == expected
        assert verdict["case"] == ("a.b" if expected == "killed" else None)


def test_a_statement_run_at_import_takes_the_groups_of_its_whole_file():
    groups = [Group(f"g{i}", [f"c{i}"], seconds=float(i)) for i in range(3)]
    cmap = CoverageMap(groups, {"hyper_parallel/a.py": {5: ["g2"], 9: ["g1"]}}, {"hyper_parallel/a.py": [1]})
    assert [g.label for g in cmap.groups_for("hyper_parallel/a.py", 1)] == ["g1", "g2"]
    assert [g.label for g in cmap.groups_for("hyper_parallel/a.py", 5)] == ["g2"]


def test_a_forked_rank_records_its_lines_under_its_group(tmp_path):
    """coverage.py restarts in a forked child without the dynamic context: the child must set it
    again, or a forked rank's lines count as run at import (and no group covers them)."""
    import os
    import subprocess
    import sys

    (tmp_path / "mod.py").write_text("def f(x):\n    return x + 1\n", encoding="utf-8")
    (tmp_path / "rc").write_text(
        f"[run]\nparallel = true\npatch = fork, _exit\ncontext = import\ninclude = {tmp_path / 'mod.py'}\n",
        encoding="utf-8",
    )
    script = textwrap.dedent(
        f"""
        import os, sys, threading, coverage
        sys.path.insert(0, {str(tmp_path)!r})
        cov = coverage.Coverage(data_file={str(tmp_path / ".cov")!r}, config_file={str(tmp_path / "rc")!r})
        cov.start()
        import mod
        from parity.tools.mutation.child import _switch_context
        _switch_context("g7")
        pid = os.fork()
        if pid == 0:
            t = threading.Thread(target=lambda: mod.f(1)); t.start(); t.join()
            os._exit(0)
        os.waitpid(pid, 0)
        cov.stop(); cov.save()
        """
    )
    subprocess.run([sys.executable, "-c", script], check=True, env={**os.environ, "PYTHONWARNINGS": "ignore"})
    import coverage

    contexts: dict[int, set[str]] = {}
    for data_file in tmp_path.glob(".cov.*"):
        data = coverage.CoverageData(str(data_file))
        data.read()
        for measured in data.measured_files():
            for line, names in data.contexts_by_lineno(measured).items():
                contexts.setdefault(line, set()).update(names)
    assert contexts[2] == {"import|g7"}  # the body, run in the forked child's thread
