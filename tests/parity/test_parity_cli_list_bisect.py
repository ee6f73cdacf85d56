"""``parity list`` at 100 columns with a count per tier, ``parity bisect``'s exit codes, and the
one line that names the extra to install when an optional module is missing."""

from __future__ import annotations

import io
import sys

import pytest
from rich.console import Console

from parity.cases import Registry
from parity.cli import main, missing_extra

CASES = "tests.parity.parity_synthetic:REGISTRY"


def _cli(*argv: str, width: int = 250) -> tuple[int, str]:
    out = io.StringIO()
    code = main(list(argv), console=Console(file=out, width=width, color_system=None))
    return code, out.getvalue()


def test_list_fits_100_columns_and_ends_with_a_count_per_tier(monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    code, out = _cli("list", "--cases", CASES)
    assert code == 0
    lines = out.rstrip("\n").splitlines()
    assert max(len(line) for line in lines) <= 100, "\n".join(line for line in lines if len(line) > 100)
    from parity.cases import load_registry

    cases = list(load_registry(CASES))
    tier_a = [c for c in cases if c.tier == "A"]
    drawn = sum(bool(c.strategies) for c in tier_a)
    assert lines[-1] == (
        f"{len(cases)} case(s): {len(tier_a)} tier A ({drawn} with hypothesis), {len(cases) - len(tier_a)} tier B"
    )
    assert drawn and "A+h" in out
    # Each id is whole once its wrapped lines are joined (a long id breaks after a '-').
    first_column = "".join(line[1:62].rstrip() for line in lines if line.startswith(" "))
    for case in cases:
        assert case.id in first_column


# A registry whose localiser reports a divergence for one case, equality for another and raises
# for a third.
BISECT = Registry(source="test")
for _name, _status in (("broken", "diverged"), ("fine", "equal")):
    BISECT.pair(
        _name,
        kind="value",
        legacy=lambda: 1,
        new=lambda: 1,
        localise=lambda _s=_status: {"status": _s, "line": f"first divergence: {_s}", "evidence": []},
    )


def _raises() -> dict:
    raise RuntimeError("no trainer here")


BISECT.pair("crashing", kind="value", legacy=lambda: 1, new=lambda: 1, localise=_raises)


@pytest.mark.parametrize(
    ("case_id", "code"),
    [("value.broken", 1), ("value.fine", 0), ("value.crashing", 3), ("value.nope", 2)],
)
def test_bisect_exits_1_on_a_divergence_0_without_2_on_bad_input(case_id, code):
    got, out = _cli("bisect", case_id, "--cases", "tests.parity.test_parity_cli_list_bisect:BISECT")
    assert got == code, out


def test_a_missing_dev_module_is_one_line_naming_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "hypothesis", None)  # import hypothesis now raises ImportError
    monkeypatch.delitem(sys.modules, "tests.parity.parity_synthetic", raising=False)
    code, out = _cli("list", "--cases", CASES)
    assert code == 2, out
    assert (
        out == "error: hypothesis is not installed; it comes with the `dev` extra: pip install -e '.[dev]'\n"
    )


def test_missing_extra_names_only_modules_of_an_extra():
    assert "`report` extra" in missing_extra(
        ModuleNotFoundError("No module named 'matplotlib'", name="matplotlib")
    )
    assert missing_extra(ModuleNotFoundError("No module named 'numpyy'", name="numpyy")) is None
    assert missing_extra(ValueError("x")) is None
