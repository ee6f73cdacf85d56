"""``parity report`` and ``report --html`` show the last run only, and the page opens on the verdict.

Built from hand-written JSON reports (no run): a ``last_run.json`` with one failing tier B case and
three failing e2e pairs of one recipe, next to reports left by an earlier run.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console

from parity.cli import main
from parity.report import load_last_run, report_path, run_summary_path, with_decimal, write_json_atomic

KEY = "cpu-x86_64-avx2"
DOWNSTREAM = "e2e.trainer_e2e-artifact=checkpoint-recipe=preset"
LOCALISED = "e2e.trainer_e2e-artifact=batches-recipe=preset"
GOLDEN = "train_curve.hyper_trainer_curve-recipe=preset"
STALE = "lr_curve.left_from_an_earlier_run"
PASSED_NOW = "lr_curve.failed_before_passes_now"
CURVES = {
    side: {"step": [1, 2], "loss": [1.0, 0.5], "grad_norm": [2.0, 1.0], "lr": [0.1, 0.1]}
    for side in ("legacy", "new")
}


def _report(case_id: str, tier: str, *, artifact: str | None = None) -> dict:
    data = {
        "case_id": case_id,
        "kind": case_id.split(".")[0],
        "tier": tier,
        "backend": "torch",
        "platform": KEY,
        "reproduce": f"python -m parity run --id {case_id}",
        "summary": {"artifact_path": "losses[1]", "expected": "0x1.8p+1", "actual": "0x1.8000000000001p+1"},
        "fingerprint": {"platform": KEY, "cpu_profile": "portable", "torch": "2.13.0", "backend": "torch"},
    }
    if artifact is not None:
        data["localisation"] = {
            "recipe": "preset",
            "status": "diverged",
            "line": "first divergence: step 2, batch, batch[0].input_ids -> component dataloader",
            "step": 2,
            "artifact": "batches",
            "case_artifact": artifact,
            "evidence": ["legacy 5 != new 6"],
            "curves": CURVES,
        }
    return data


@pytest.fixture
def reports(tmp_path) -> Path:
    root = tmp_path / "reports"
    for data in (
        _report(DOWNSTREAM, "A", artifact="checkpoint"),
        _report(GOLDEN, "B"),
        _report(LOCALISED, "A", artifact="batches"),
        _report(STALE, "B"),
        _report(PASSED_NOW, "B"),
    ):
        write_json_atomic(report_path(root, "torch", KEY, data["case_id"]), data)
    cases = [
        {
            "case_id": c,
            "tier": t,
            "kind": "k",
            "backend": "torch",
            "platform": KEY,
            "status": s,
            "seconds": 1.0,
        }
        for c, t, s in (
            (DOWNSTREAM, "A", "fail"),
            (GOLDEN, "B", "fail"),
            (LOCALISED, "A", "fail"),
            (PASSED_NOW, "B", "pass"),
        )
    ]
    summary = {"status": "finished", "finished": "2026-12-02T04:40:00+00:00", "platform": KEY, "cases": cases}
    write_json_atomic(run_summary_path(root), summary)
    return root


def _cli(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    code = main(list(argv), console=Console(file=out, width=250, color_system=None))
    return code, out.getvalue()


def test_report_and_html_show_the_same_run_and_no_earlier_report(reports, tmp_path):
    last = load_last_run(reports)
    assert sorted(d["case_id"] for _, d, _ in last.reports) == sorted([DOWNSTREAM, GOLDEN, LOCALISED])
    assert last.stale == 2
    code, out = _cli("report", "--report-dir", str(reports))
    assert code == 0
    assert out.splitlines()[0] == (
        "last run finished 2026-12-02T04:40:00+00:00 (4 cases); 2 report(s) of earlier runs not shown"
    )
    # The verdict and the causes, then the cases one by one only on request.
    assert out.splitlines()[1].startswith(
        "verdict: a real divergence: legacy and new disagree in 2 tier A pairs"
    )
    assert "2 tier A pairs diverge at step 2 in e2e (batches)" in out and "0x1.8p+1" not in out
    code, out = _cli("report", "--report-dir", str(reports), "--verbose")
    assert code == 0
    assert STALE not in out and PASSED_NOW not in out and LOCALISED in out
    assert "3.0 (0x1.8p+1)" in out  # headline values in decimal and hex
    page = tmp_path / "page.html"
    code, out = _cli("report", "--report-dir", str(reports), "--html", str(page))
    assert code == 0 and "3 failing case(s)" in out
    text = page.read_text()
    assert STALE not in text and "2026-12-02T04:40:00+00:00" in text


def test_the_page_opens_on_the_verdict_most_telling_first_table_last(reports, tmp_path):
    pytest.importorskip("matplotlib")
    from parity.tools.html_report import _anchor, write_html

    page = tmp_path / "page.html"
    written = write_html(reports, page)
    text = page.read_text()
    body = text[text.index("<body>") :]
    # The verdict, then the environment line, before anything else.
    assert body.index("parity: 3 failing of 4") < body.index("environment: platform cpu-x86_64-avx2")
    order = [body.index(f'id="{_anchor(c, "torch")}"') for c in (LOCALISED, DOWNSTREAM, GOLDEN)]
    assert order == sorted(order), "localised e2e failure, then its downstream artifact, then the golden"
    assert body.index("environment:") < order[0]
    # One curve figure for the recipe, not one per failing artifact.
    assert written.images == 1
    # The full table comes last, collapsed.
    assert body.index("<details><summary>All 4 cases") > order[-1]
    assert "3.0 (0x1.8p+1)" in body and "3.0000000000000004 (0x1.8000000000001p+1)" in body


def test_with_decimal_leaves_other_values_alone():
    assert with_decimal("0x10 and 7") == "0x10 and 7"
    assert with_decimal(None) is None
    assert with_decimal("-0x1p-1") == "-0.5 (-0x1p-1)"


def test_without_a_run_summary_every_report_counts(reports):
    run_summary_path(reports).unlink()
    last = load_last_run(reports)
    assert len(last.reports) == 5 and last.stale == 0 and "every report" in last.stamp
    assert json.loads((reports / "torch" / KEY / f"{STALE}.json").read_text())["case_id"] == STALE
