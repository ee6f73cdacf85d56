"""``python -m parity`` in-process: list, run (table, reports, exit codes), update (diffs), report."""

from __future__ import annotations

import io
import json

import pytest
from rich.console import Console

from parity import numerics
from parity.cli import main
from parity.env import platform_key

# This run's golden key (cpu-<arch>-<capability> on CPU) and CPU profile.
KEY = platform_key()
PROFILE = numerics.active_profile()

CASES = "tests.parity.parity_synthetic:REGISTRY"


@pytest.fixture
def cli(tmp_path):
    def run(*argv: str) -> tuple[int, str]:
        out = io.StringIO()
        code = main(list(argv), console=Console(file=out, width=250, color_system=None))
        return code, out.getvalue()

    run.golden = str(tmp_path / "golden")
    run.reports = str(tmp_path / "reports")
    return run


def test_list_shows_cases_and_golden_status(cli):
    code, out = cli("list", "--cases", CASES, "--golden-dir", cli.golden)
    assert code == 0
    words = " ".join(out.split())  # the title wraps at the terminal's width
    assert "lr_curve.long_warmup-steps=12" in out and "A+h" in out
    assert f"goldens for {KEY}" in words and "torch missing" in out


def test_run_passing_selection_exits_zero_with_counts_and_the_table_on_verbose(cli):
    argv = (
        "run",
        "--cases",
        CASES,
        "-k",
        "warmup_ceil",
        "--golden-dir",
        cli.golden,
        "--report-dir",
        cli.reports,
    )
    code, out = cli(*argv)
    assert code == 0, out
    assert "tier A: torch 1 passed" in out and "1 passed, 0 failed" in out
    assert "lr_curve.warmup_ceil-steps=10" not in out  # a green run's table is on request
    code, out = cli(*argv, "--verbose")
    assert code == 0 and "lr_curve.warmup_ceil-steps=10" in out and "pass" in out


def test_run_failure_exits_nonzero_prints_and_writes_the_report(cli, tmp_path):
    code, out = cli(
        "run",
        "--cases",
        CASES,
        "--id",
        "lr_curve.warmup_floor-steps=10",
        "--backend",
        "torch",
        "--golden-dir",
        cli.golden,
        "--report-dir",
        cli.reports,
    )
    assert code == 1
    assert "FAIL" in out and "first difference [bits/value]: lr_curve[1]" in out
    assert (
        f"reproduce: PYTHONHASHSEED=0 python -m parity run --cpu-profile {PROFILE} --cases tests.parity.parity_synthetic:REGISTRY"
        in out
    )
    assert (tmp_path / "reports" / "torch" / KEY / "lr_curve.warmup_floor-steps=10.json").exists()
    code, shown = cli("report", "--report-dir", cli.reports)
    assert code == 0 and "lr_curve[1]" in shown and "lr_curve.warmup_floor-steps=10" in shown


def test_update_prints_diffs_then_run_passes_and_unused_goldens_fail(cli, tmp_path):
    update = (
        "update",
        "--cases",
        CASES,
        "-k",
        "groups",
        "--golden-dir",
        cli.golden,
        "--report-dir",
        cli.reports,
    )
    code, out = cli(*update, "--diff")
    assert code == 0 and "created" in out and "+++ b/" in out and '"__parity__": "float"' in out
    golden = tmp_path / "golden" / "torch" / KEY / "param_groups.groups.json"
    doc = json.loads(golden.read_text())
    doc["artifacts"][0]["eps"]["hex"] = (1e-7).hex()
    golden.write_text(json.dumps(doc, sort_keys=True, indent=2) + "\n")
    code, out = cli(*update)
    # A review, summary first; the unified diff goes to the report dir (the terminal with --diff).
    assert code == 0 and "updated torch param_groups.groups" in out and "[0].eps 1e-07 -> " in out, out
    assert f'-        "hex": "{(1e-7).hex()}",' not in out
    assert f'-        "hex": "{(1e-7).hex()}",' in (tmp_path / "reports" / "update-torch.diff").read_text()
    code, out = cli(*update)
    assert code == 0 and "0 golden(s) written" in out and "1 unchanged" in out
    code, out = cli(
        "run", "--cases", CASES, "-k", "groups", "--golden-dir", cli.golden, "--report-dir", cli.reports
    )
    assert code == 0, out
    (golden.parent / "param_groups.renamed.json").write_text("{}\n")
    code, out = cli(
        "run", "--cases", CASES, "-k", "groups", "--golden-dir", cli.golden, "--report-dir", cli.reports
    )
    assert code == 1 and "unused golden" in out and "param_groups.renamed.json" in out
    code, out = cli("update", "--cases", CASES, "-k", "groups", "--golden-dir", cli.golden, "--prune-unused")
    assert code == 0 and not (golden.parent / "param_groups.renamed.json").exists()


def test_bad_registry_spec_is_a_usage_error(cli):
    code, out = cli("list", "--cases", "no_such_module_xyz")
    assert code == 2 and "no_such_module_xyz" in out


@pytest.mark.parametrize("verb", ["run", "update", "list"])
def test_a_selection_that_matches_nothing_is_an_error(cli, verb):
    code, out = cli(verb, "--cases", CASES, "-k", "typo_xyz", "--golden-dir", cli.golden)
    assert code == 2 and "no case matches -k 'typo_xyz'" in out and "cases registered" in out


def test_a_bad_cpu_profile_variable_is_one_line_error(cli, monkeypatch):
    monkeypatch.setenv(numerics.PROFILE_ENV, "turbo")
    code, out = cli("list", "--cases", CASES)
    assert code == 2 and "PARITY_CPU_PROFILE='turbo' is not a CPU profile" in out
    assert "Traceback" not in out


@pytest.mark.parametrize(
    ("edit", "where"),
    [
        (lambda leaf: leaf.update(hex="0xnot-a-float"), "is not a float.hex() string"),
        (lambda leaf: leaf.pop("hex"), "float leaf is missing ['hex']"),
        (lambda leaf: leaf.update(dtype="float128"), "float leaf has dtype 'float128'"),
    ],
    ids=["bad-hex", "no-hex", "bad-dtype"],
)
def test_a_malformed_golden_leaf_names_the_file_and_json_path(cli, tmp_path, edit, where):
    cli("update", "--cases", CASES, "-k", "groups", "--golden-dir", cli.golden)
    golden = tmp_path / "golden" / "torch" / KEY / "param_groups.groups.json"
    doc = json.loads(golden.read_text())
    edit(doc["artifacts"][0]["eps"])
    golden.write_text(json.dumps(doc, sort_keys=True, indent=2) + "\n")
    code, out = cli(
        "run", "--cases", CASES, "-k", "groups", "--golden-dir", cli.golden, "--report-dir", cli.reports
    )
    assert code == 1 and "Traceback" not in out
    assert f"corrupt golden {golden}" in out and f"{golden}:artifacts[0].eps: " in out and where in out
