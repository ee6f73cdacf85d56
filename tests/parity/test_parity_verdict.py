"""A run's verdict leads with the causes of its failures, in the terminal, ``parity report`` and HTML.

Unit tests build failures by hand (``parity.verdict.Failure``) and check how they are grouped and
ordered; the subprocess test plants an off-by-one in a tiny registry
(``tests/parity/parity_verdict_cases.py``: three localised pairs, two pairs without a localiser and
a golden, all moved by one change) and reads what a user reads. A green run prints counts per tier
and backend, and its table only with ``--verbose``.
"""

from __future__ import annotations

import io
import subprocess
import sys

import pytest
from rich.console import Console

from parity.cli import main
from parity.verdict import Failure, component_of, counts_lines, group_failures, run_failures, verdict
from tests._subprocess import REPO, child_env
from tests.parity.parity_verdict_cases import LINE

CASES = "tests.parity.parity_verdict_cases:REGISTRY"


def _localised(case_id: str, step: int = 1, component: str = "lr_scheduler", tier: str = "A") -> Failure:
    loc = {
        "status": "diverged",
        "step": step,
        "phase": "lr",
        "artifact": "lr[0]",
        "component": component,
        "line": f"first divergence: step {step}, lr, lr[0] -> component {component}",
    }
    return Failure(case_id, tier, "torch", component="e2e", first_path="e2e.lr_curve[0]", localisation=loc)


# ----------------------------------------------------------------------------- grouping
def test_pairs_localised_to_one_step_and_component_are_one_cause():
    failures = [_localised(f"e2e.lr-recipe={r}") for r in ("a", "b", "c")] + [_localised("e2e.w", step=3)]
    groups = group_failures(failures)
    assert [len(g) for g in groups] == [3, 1]
    assert groups[0].headline() == "3 tier A pairs diverge at step 1 in lr_scheduler (lr[0])"
    assert groups[0].localisation_line == "first divergence: step 1, lr, lr[0] -> component lr_scheduler"
    assert groups[1].headline() == "1 tier A pair diverges at step 3 in lr_scheduler (lr[0])"


def test_pairs_without_a_localiser_group_by_component_and_first_artifact():
    failures = [
        Failure("lr.a", "A", "torch", component="lr_scheduler", first_path="lr_curve[1][0]"),
        Failure("lr.b", "A", "torch", component="lr_scheduler", first_path="lr_curve[0][0]"),
        Failure("lr.c", "A", "torch", component="lr_scheduler", first_path="lr_curve[1][0]"),
        Failure("opt.a", "A", "torch", component="optimizer", first_path="param_groups[0].eps"),
    ]
    groups = group_failures(failures)
    assert [g.case_ids for g in groups] == [["lr.a", "lr.b", "lr.c"], ["opt.a"]]
    assert groups[0].headline() == (
        "3 tier A pairs differ in lr_scheduler, first at lr_curve[1][0], lr_curve[0][0] (no step: no localiser)"
    )


def test_tier_a_comes_first_then_errors_then_goldens_whatever_the_sizes():
    goldens = [Failure(f"g{i}", "B", "torch", component="loss", first_path="losses[0]") for i in range(5)]
    errors = [
        Failure(
            "e1", "B", "torch", status="error", component="loss", error="OSError: /tmp/a/x.bin: no space"
        ),
        Failure(
            "e2", "A", "torch", status="error", component="metrics", error="OSError: /tmp/b/y.bin: no space"
        ),
    ]
    pairs = [Failure("p1", "A", "torch", component="loss", first_path="losses[2]")]
    groups = group_failures([*goldens, *errors, *pairs])
    assert [g.cause.kind for g in groups] == ["differs", "error", "differs"]
    assert [g.cause.tier for g in groups] == ["A", "", "B"]
    # One exception is one cause, whatever the tier, the component or the temp path in its message.
    assert groups[1].headline() == "2 cases raised instead of producing a result: OSError: <path>: no space"


def test_localised_groups_lead_their_tier_and_larger_groups_come_first():
    failures = [
        Failure(f"lr.{i}", "A", "torch", component="lr_scheduler", first_path="lr[1]") for i in range(4)
    ]
    failures += [_localised("e2e.one")]
    failures += [Failure(f"b{i}", "B", "torch", component="x", first_path="x[0]") for i in range(2)]
    failures += [Failure(f"c{i}", "B", "torch", component="y", first_path="y[0]") for i in range(3)]
    groups = group_failures(failures)
    assert [(g.cause.kind, g.cause.component, len(g)) for g in groups] == [
        ("diverged", "lr_scheduler", 1),
        ("differs", "lr_scheduler", 4),
        ("differs", "y", 3),
        ("differs", "x", 2),
    ]


def test_goldens_from_another_environment_and_uncomparable_goldens_are_one_cause_each():
    env = "ENVIRONMENT DIFFERS from golden parity/golden/torch/{}/a.json: cpu_capability"
    failures = [
        Failure("g1", "B", "torch", environment=env.format("k1"), first_path="losses[0]"),
        Failure("g2", "B", "torch", environment=env.format("k2"), first_path="ckpt.w"),
        Failure("g3", "B", "torch", component="loss", error="missing golden parity/golden/torch/k/g3.json"),
        Failure("g4", "B", "torch", component="loss", error="missing golden parity/golden/torch/k/g4.json"),
    ]
    groups = group_failures(failures)
    assert sorted(len(g) for g in groups) == [2, 2]
    assert {g.cause.kind for g in groups} == {"environment", "golden"}


# ----------------------------------------------------------------------------- verdict
def test_the_verdict_calls_a_red_pair_a_real_divergence_and_names_goldens_as_its_consequence():
    failures = [_localised("e2e.a"), _localised("e2e.b")]
    failures += [Failure("g", "B", "torch", component="lr_scheduler", first_path="lr_curve[1]")]
    judged = verdict(failures, total=10)
    assert judged.real_divergence and judged.divergent_pairs == 2 and judged.goldens == 1
    assert judged.line == (
        "verdict: a real divergence: legacy and new disagree in 2 tier A pairs; 1 golden differs "
        "(3 failing of 10 case runs, 2 causes)"
    )
    lines = judged.lines(examples=1)
    assert lines[1] == "  1. 2 tier A pairs diverge at step 1 in lr_scheduler (lr[0])"
    assert lines[2:4] == ["       torch e2e.a", "       ... and 1 more"]
    assert lines[4].endswith("(same component as a tier A divergence above: fix that first)")


def test_a_verdict_without_red_pairs_says_so():
    goldens = [Failure("g", "B", "torch", component="loss", first_path="losses[0]")]
    assert verdict(goldens).line.startswith("verdict: no tier A pair differs; 1 golden differs from what")
    error = Failure("e", "A", "torch", status="error", error="ValueError: bad")
    assert verdict([error, *goldens]).line.startswith(
        "verdict: 1 case raised instead of producing a result; 1 golden"
    )
    assert verdict([], total=4).line == "verdict: pass (4 case runs)"


def test_failures_come_from_reports_and_from_the_rows_of_cases_that_left_none():
    report = {
        "case_id": "a",
        "tier": "A",
        "backend": "torch",
        "kind": "lr_curve",
        "summary": {"artifact_path": "x[1]"},
    }
    rows = [
        {"case_id": "a", "tier": "A", "backend": "torch", "status": "fail"},
        {
            "case_id": "b",
            "tier": "B",
            "backend": "torch",
            "status": "error",
            "message": "PARITY ERROR  case=b  backend=torch: KeyError: 'k'",
        },
        {"case_id": "c", "tier": "B", "backend": "torch", "status": "pass"},
    ]
    failures = run_failures([report], rows)
    assert [(f.case_id, f.status, f.component) for f in failures] == [
        ("a", "fail", "lr_curve"),
        ("b", "error", ""),
    ]
    assert failures[1].error == "KeyError: 'k'"


def test_a_component_is_the_first_tag_that_is_not_a_marker():
    assert component_of(("long", "lr_scheduler"), "lr_curve") == "lr_scheduler"
    assert component_of(("dataloader", "transforms"), "batches") == "dataloader"
    assert component_of((), "lr_curve") == "lr_curve"


def test_counts_per_tier_and_backend():
    rows = [("A", "torch", "pass")] * 3 + [
        ("B", "torch", "pass"),
        ("B", "mindspore", "skip"),
        ("B", "mindspore", "pass"),
    ]
    assert counts_lines(rows) == [
        "  tier A: torch 3 passed",
        "  tier B: mindspore 1 passed, 1 skipped; torch 1 passed",
    ]


# ----------------------------------------------------------------------------- the CLI
def _cli(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    code = main(list(argv), console=Console(file=out, width=250, color_system=None))
    return code, out.getvalue()


def test_a_green_run_prints_counts_and_its_table_only_with_verbose(tmp_path, monkeypatch):
    monkeypatch.delenv("PARITY_TEST_PLANT", raising=False)
    common = ["--cases", CASES, "--golden-dir", str(tmp_path / "golden"), "--report-dir", str(tmp_path / "r")]
    assert _cli("update", *common)[0] == 0
    code, out = _cli("run", *common, "-j", "1")
    assert code == 0, out
    assert "parity run: 7 case run(s), none failing" in out
    assert "  tier A: torch 6 passed\n  tier B: torch 1 passed\n" in out
    assert "lr_curve.grid-steps=5" not in out and "┃" not in out  # no table
    code, out = _cli("run", *common, "-j", "1", "--verbose")
    assert code == 0 and "lr_curve.grid-steps=5" in out and "┃" in out


@pytest.fixture(scope="module")
def red(tmp_path_factory):
    """The registry's goldens made, then a run with the plant: (run output, report dir, run)."""
    root = tmp_path_factory.mktemp("verdict")
    common = ["--cases", CASES, "--golden-dir", str(root / "golden"), "--report-dir", str(root / "r")]

    def parity(*argv: str, plant: bool = False) -> subprocess.CompletedProcess:
        env = child_env(COLUMNS="250")
        env.pop("PARITY_TEST_PLANT", None)
        if plant:
            env["PARITY_TEST_PLANT"] = "1"
        cmd = [sys.executable, "-m", "parity", *argv]
        return subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)

    made = parity("update", *common)
    assert made.returncode == 0, made.stdout + made.stderr
    run = parity("run", *common, "-j", "1", plant=True)
    return run, root / "r", parity


def test_a_red_run_leads_with_the_verdict_and_the_causes_then_the_real_divergence(red):
    run, reports, _ = red
    assert run.returncode == 1, run.stdout + run.stderr
    out = run.stdout
    summary = out[out.index("short summary of failures") :].splitlines()[1:]
    assert summary[0] == (
        "verdict: a real divergence: legacy and new disagree in 5 tier A pairs; 1 golden differs "
        "(6 failing of 7 case runs, 3 causes)"
    )
    assert summary[1] == "  1. 3 tier A pairs diverge at step 1 in lr_scheduler (lr[0])"
    assert (
        "  2. 2 tier A pairs differ in lr_scheduler, first at lr_curve[1] (no step: no localiser)" in summary
    )
    assert (
        "  3. 1 golden differs in lr_scheduler, first at lr_curve[1] "
        "(same component as a tier A divergence above: fix that first)"
    ) in summary
    ways = summary[summary.index("ways out:") + 1 :]
    assert ways[0].startswith("  tier A: a real divergence: legacy and new disagree in 5 pair(s)")
    accept = next(i for i, w in enumerate(ways) if "accept exactly these 1 golden(s)" in w)
    assert accept > 0 and "once the tier A pairs agree" in ways[accept]
    # One report per cause, the others of a cause named in one line.
    assert out.count("PARITY FAIL") == 3
    assert "... and 2 more failure(s) of cause 1" in out and "... and 1 more failure(s) of cause 2" in out


def test_parity_report_opens_with_the_verdict_and_lists_cases_only_with_verbose(red):
    _, reports, parity = red
    shown = parity("report", "--report-dir", str(reports))
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[1].startswith("verdict: a real divergence: legacy and new disagree in 5 tier A pairs")
    assert lines[2] == "  1. 3 tier A pairs diverge at step 1 in lr_scheduler (lr[0])"
    assert "first difference" not in shown.stdout and "reproduce" not in shown.stdout
    assert len(lines) < 20 and "python -m parity report --verbose --report-dir" in lines[-1]
    every = parity("report", "--report-dir", str(reports), "--verbose").stdout
    titles = [line for line in every.splitlines() if "cause " in line and "lr_curve." in line]
    assert [t.split("cause ")[1][0] for t in titles] == ["1", "1", "1", "2", "2", "3"], titles


def test_the_html_page_lists_one_line_per_cause_and_the_shared_localisation_once(red, tmp_path):
    pytest.importorskip("matplotlib")
    _, reports, parity = red
    page = tmp_path / "page.html"
    made = parity("report", "--report-dir", str(reports), "--html", str(page))
    assert made.returncode == 0, made.stdout + made.stderr
    body = page.read_text()
    assert "verdict: a real divergence: legacy and new disagree in 5 tier A pairs" in body
    causes = body[body.index("<h2>Failures by cause</h2>") :]
    assert causes.count("<li><b>") == 3
    # The three localised pairs share one line: shown in the cause list and at the first case.
    assert body.count(LINE.replace(">", "&gt;")) == 2
    assert body.count("first divergence: as cause 1, shown at") == 2
