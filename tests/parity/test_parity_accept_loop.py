"""Accepting an intended change: the failing run says how, ``update --failed`` regenerates exactly
what failed and prints a review, the golden lint catches bad files before any case runs, a golden
of another backend says by name when the torch golden moved without it, Ctrl-C ends cleanly."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from rich.console import Console

from parity import canonical, golden, run_state
from parity.cli import main
from parity.compare import compare
from parity.env import platform_key
from parity.golden_lint import lint
from tests.parity import parity_review_cases as product

CASES = "tests.parity.parity_review_cases:REGISTRY"
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def cli(tmp_path, monkeypatch):
    product.STATE.clear()
    product.STATE.update(product.DEFAULTS)
    # The tree fingerprint is the test's own (the shared working tree moves under other edits).
    monkeypatch.setattr(run_state, "tree_fingerprint", lambda root=None: "tree-1")

    def run(*argv: str) -> tuple[int, str]:
        out = io.StringIO()
        code = main(list(argv), console=Console(file=out, width=250, color_system=None))
        return code, out.getvalue()

    common = ("--cases", CASES, "--golden-dir", str(tmp_path / "golden"), "--backend", "torch")
    run.run = lambda *extra: run(
        "run", *common, "-k", "not slow", "-j", "1", "--report-dir", str(tmp_path / "r"), *extra
    )
    run.update = lambda *extra: run("update", *common, "--report-dir", str(tmp_path / "r"), *extra)
    run.golden = tmp_path / "golden" / "torch" / platform_key()
    yield run
    product.STATE.update(product.DEFAULTS)


def test_a_failing_run_ends_with_the_causes_and_one_line_per_way_out_the_divergence_first(cli):
    assert cli.update()[0] == 0
    product.STATE.update(scale=1.5, eps=1e-6, legacy_only=0.5)  # two goldens move, the pair diverges
    code, out = cli.run()
    assert code == 1
    tail = out[out.index("short summary of failures") :]
    assert out.index("short summary of failures") > out.index("parity run")  # after the table
    lines = tail.splitlines()
    assert lines[1].startswith(
        "verdict: a real divergence: legacy and new disagree in 1 tier A pair; 3 goldens"
    )
    assert lines[2:4] == [
        "  1. 1 tier A pair differs in lr_scheduler, first at lr_curve[1] (no step: no localiser)",
        "       torch lr_curve.pair",
    ]
    assert "1 golden differs in loss, first at losses[0]" in tail and "       torch losses.curve" in tail
    assert "1 golden differs in checkpoint" in tail and "       torch checkpoint.ckpt" in tail
    ways = lines[lines.index("ways out:") + 1 :]
    assert ways[0].startswith("  tier A: a real divergence")  # never "accept" first while a pair is red
    assert "accept exactly these 3 golden(s): python -m parity update --failed" in tail
    assert tail.count("regenerating cannot accept it") == 1 and "harness fixture" in tail
    assert "product default" in tail and "recipe YAML" in tail


def test_update_failed_regenerates_exactly_the_failed_goldens_with_a_review(cli, tmp_path):
    assert cli.update()[0] == 0
    before = {p.name: p.read_text() for p in cli.golden.iterdir()}
    product.STATE.update(scale=1.5)
    assert cli.run()[0] == 1
    product.STATE.update(eps=1e-6)  # changed after the run: --failed must not pick it up
    code, out = cli.update("--failed")
    assert code == 0, out
    assert "updated torch losses.curve" in out and "updated torch checkpoint.ckpt" in out
    assert "param_groups.config" not in out
    assert (cli.golden / "param_groups.config.json").read_text() == before["param_groups.config.json"]
    # Floats: old -> new with |diff| and ULP in their dtype; hashed tensors: which moved, by how much.
    assert "1 float(s) changed, max |diff| 1, 2251799813685248 ULP f64: [0] 2.0 -> 3.0" in out
    assert "state.model: 1 large tensor(s) moved, most big: sum 71357.14 -> 71357.86" in out
    assert "2 golden(s) written" in out and (tmp_path / "r" / "update-torch.diff").exists()
    product.STATE.update(eps=1e-8)
    assert cli.run()[0] == 0


def test_update_failed_refuses_a_run_of_another_tree_or_an_interrupted_one(cli, tmp_path, monkeypatch):
    cli.update()
    product.STATE.update(scale=2.0)
    cli.run()
    monkeypatch.setattr(run_state, "tree_fingerprint", lambda root=None: "tree-2")
    code, out = cli.update("--failed")
    assert code == 2 and len(out.strip().splitlines()) == 1 and "another tree" in out
    monkeypatch.setattr(run_state, "tree_fingerprint", lambda root=None: "tree-1")
    run_state.mark_interrupted(tmp_path / "r", [], "tree-1")
    code, out = cli.update("--failed")
    assert code == 2 and len(out.strip().splitlines()) == 1 and "was interrupted" in out


def test_a_run_replaces_the_previous_last_run_before_its_first_case(cli, tmp_path, monkeypatch):
    cli.update()
    cli.run()
    seen: list[str] = []
    monkeypatch.setattr(
        product,
        "ON_PRODUCE",
        [lambda: seen.append(json.loads((tmp_path / "r" / "last_run.json").read_text())["status"])],
    )
    cli.run()
    assert seen == ["running"]
    assert json.loads((tmp_path / "r" / "last_run.json").read_text())["status"] == "finished"


def test_tensor_stats_are_exact_informational_and_never_decide(tmp_path):
    big = torch.arange(1000, dtype=torch.float32) / 7.0
    leaf = canonical.tensor_leaf(big)
    stats = leaf.to_json()["stats"]
    values = big.double().tolist()
    import math

    assert float.fromhex(stats["sum"]) == math.fsum(values) and stats["nonfinite"] == 0
    assert float.fromhex(stats["max"]) == values[-1] and float.fromhex(stats["min"]) == 0.0
    assert "stats" not in canonical.tensor_leaf(torch.ones(3)).to_json()  # small: inline values
    # Tampered stats do not hide a changed hash, and do not fail an equal one.
    doc = leaf.to_json()
    doc["stats"] = {**doc["stats"], "sum": (1.0).hex()}
    assert compare(canonical.from_json(doc), canonical.tensor_leaf(big), "t") == []
    moved = big.clone()
    moved[3] = 5.0
    assert compare(canonical.from_json(doc), canonical.tensor_leaf(moved), "t")


def _write(path: Path, doc: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(golden.dumps(doc))


def test_golden_lint_names_each_bad_file_in_one_line_before_any_case(cli):
    from parity.cases import load_registry

    cli.update()
    registry = load_registry(CASES)
    assert lint(cli.golden.parent.parent, registry) == []
    curve = cli.golden / "losses.curve.json"
    doc = json.loads(curve.read_text())
    doc["artifacts"][1]["repr"] = "1.6"  # a repr that is not the stored value
    _write(curve, doc)
    cfg = cli.golden / "param_groups.config.json"
    doc = json.loads(cfg.read_text())
    del doc["fingerprint"]["cpu_profile"]
    doc["artifacts"][0]["eps"] = 1e-8  # a bare JSON float
    _write(cfg, doc)
    ckpt = cli.golden / "checkpoint.ckpt.json"
    doc = json.loads(ckpt.read_text())
    doc["artifacts"]["state"]["step"] = {"__parity__": "float", "hex": "inf", "repr": "inf"}
    _write(ckpt, doc)
    (cli.golden / "losses.gone.json").write_text(curve.read_text())
    problems = lint(cli.golden.parent.parent, registry)
    text = "\n".join(problems)
    assert len(problems) == 5, text
    assert f"{curve}: artifacts[1]: repr '1.6' does not read back as hex" in text
    assert f"{cfg}: fingerprint lacks cpu_profile" in text
    assert f"{cfg}: artifacts[0].eps: a bare JSON float" in text
    assert f"{ckpt}: artifacts.state.step: inf but the case does not declare non-finite values" in text
    assert f"{cli.golden / 'losses.gone.json'}: unused golden" in text
    code, out = cli.run()
    assert code == 1 and out.index("golden lint:") < out.index("parity run")
    assert "golden lint problem(s)" in out


def test_the_repositorys_golden_store_is_lint_clean():
    """Every golden of the store parses and passes the lint (its time: benchmarks/bench_golden_lint.py)."""
    from parity.cases import load_registry

    assert lint(golden.DEFAULT_ROOT, load_registry("parity.suites:REGISTRY")) == []


def test_a_mindspore_golden_says_by_name_when_its_torch_golden_moved(tmp_path):
    root = tmp_path / "golden"
    torch_path = root / "torch" / "cpu-x" / "losses.curve.json"
    base = {"case": {}, "fingerprint": {}, "schema_version": golden.SCHEMA_VERSION}
    _write(torch_path, {**base, "artifacts": [1]})
    ms_path = root / "mindspore" / "cpu-ms" / "losses.curve.json"
    made = golden.made_with(root, "mindspore", "losses.curve")
    assert made == {"torch/cpu-x/losses.curve.json": golden.artifacts_sha256({"artifacts": [1]})}
    assert golden.made_with(root, "torch", "losses.curve") == {}
    ms_doc = {**base, "artifacts": [2], "made_with": made}
    assert golden.stale_made_with(root, ms_path, ms_doc) is None
    _write(torch_path, {**base, "artifacts": [3]})  # the torch golden regenerated alone
    line = golden.stale_made_with(root, ms_path, ms_doc)
    assert line and "torch golden torch/cpu-x/losses.curve.json changed" in line
    assert 'nox -s "parity_update(mindspore)"' in line


def test_update_lists_the_goldens_of_a_backend_it_cannot_run(cli, tmp_path, monkeypatch):
    cli.update()
    ms = tmp_path / "golden" / "mindspore" / "cpu-ms" / "losses.curve.json"
    ms.parent.mkdir(parents=True)
    ms.write_text("{}")
    from parity import cli as cli_module

    product.STATE.update(scale=3.0)
    changed = [o for o in _updated(cli) if o.status == "updated"]

    def cannot(backend):
        return "not installed" if backend == "mindspore" else None

    lines = cli_module._not_refreshed(tmp_path / "golden", changed, cannot, lambda backend: set())
    assert lines[0].startswith("not refreshed here (mindspore cannot run in this environment): 1 mindspore")
    assert 'nox -s "parity_update(mindspore)"' in lines[0] and lines[1].strip().endswith("losses.curve.json")
    # A golden that backend's own update (or a passing run) refreshed on this tree is not named.
    current = {"mindspore": {"losses.curve"}}
    assert cli_module._not_refreshed(tmp_path / "golden", changed, cannot, current.__getitem__) == []


def test_goldens_current_on_this_tree_are_those_passed_or_refreshed_there(tmp_path):
    from parity import run_state

    reports = tmp_path / "r"
    reports.mkdir()
    assert run_state.current_goldens(reports, "tree-1", "mindspore") == set()  # nothing recorded
    run_id = run_state.mark_started(reports, ["run"], "tree-1", ["mindspore"])
    rows = [
        {"case_id": "a", "tier": "B", "backend": "mindspore", "status": "pass"},
        {"case_id": "b", "tier": "B", "backend": "mindspore", "status": "fail"},
    ]
    run_state.mark_finished(reports, run_id, "tree-1", ["mindspore"], rows)
    assert run_state.current_goldens(reports, "tree-1", "mindspore") == {"a"}
    run_state.record_update(reports, "tree-1", [("b", "mindspore")], ["mindspore"])
    assert run_state.current_goldens(reports, "tree-1", "mindspore") == {"a", "b"}
    assert run_state.current_goldens(reports, "tree-2", "mindspore") == set()  # another tree: unknown


def _updated(cli):
    from parity.cases import load_registry
    from parity.engine import Engine

    registry = load_registry(CASES)
    case = registry.get("losses.curve")
    object.__setattr__(case, "backends", ("torch", "mindspore"))
    engine = Engine(registry, golden_root=cli.golden.parent.parent, report_dir=None)
    return [engine.update(case, "torch")]


def test_ctrl_c_ends_a_parallel_run_with_one_line_exit_130_and_no_temp_folder(tmp_path):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    marker = tmp_path / "marker"
    env = {
        **os.environ,
        "TMPDIR": str(tmp),
        "PARITY_TEST_MARKER": str(marker),
        "PARITY_TEST_SLEEP": "60",
        "PYTHONPATH": str(REPO),
    }
    reports = tmp_path / "r"
    reports.mkdir()
    (reports / "last_run.json").write_text(json.dumps({"status": "finished", "cases": [], "tree": "old"}))
    proc = subprocess.Popen(
        [sys.executable, "-m", "parity", "run", "--cases", CASES, "-k", "slow", "-j", "2"]
        + ["--report-dir", str(reports), "--golden-dir", str(tmp_path / "golden"), "--backend", "torch"],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # its own process group: the terminal's Ctrl-C reaches every process
    )
    deadline = time.monotonic() + 120
    while not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert marker.exists(), "no case started"
    os.killpg(proc.pid, signal.SIGINT)
    out, _ = proc.communicate(timeout=60)
    text = out.decode()
    assert proc.returncode == 130, text
    lines = [line for line in text.splitlines() if line.strip()]
    assert lines[-1].startswith("interrupted: ") and "Traceback" not in text, text
    assert json.loads((reports / "last_run.json").read_text())["status"] == "interrupted"
    assert list(tmp.iterdir()) == []  # the case's temp folder and the run's own are gone


def test_the_format_check_accepts_added_stats_and_catches_a_moved_value():
    from parity.golden_format_check import compare_roots

    leaf = {"__parity__": "tensor", "dtype": "float32", "shape": [100], "sha256": "a" * 64}
    old = {"x.json": json.dumps({"artifacts": [leaf], "fingerprint": {}})}
    stats = {**leaf, "stats": {"sum": "0x1.0p+0"}}
    assert (
        compare_roots(
            old, {"x.json": json.dumps({"artifacts": [stats], "made_with": {"t": "h"}, "fingerprint": {}})}
        )
        == []
    )
    moved = {**stats, "sha256": "b" * 64}
    assert compare_roots(old, {"x.json": json.dumps({"artifacts": [moved], "fingerprint": {}})}) == [
        "x.json: changed beyond the format: artifacts"
    ]


def test_the_combined_review_keeps_only_the_updates_of_this_tree(tmp_path):
    from parity import review

    review.write_update_summary(
        tmp_path / "update-torch.json", "torch", "tree-1", ["updated torch a", "  x: 1"]
    )
    review.write_update_summary(
        tmp_path / "update-mindspore.json", "mindspore", "tree-0", ["updated mindspore a"]
    )
    paths = sorted(tmp_path.glob("update-*.json"))
    assert review.combined_summary(paths, "tree-1") == ["== torch", "updated torch a", "  x: 1"]
