"""Case tags: stored on the case, outside its id; selection by tag in the registry, pytest and the CLI."""

from __future__ import annotations

import io
import textwrap

import pytest
from rich.console import Console

from parity.cases import Registry
from parity.cli import main
from parity.pytest_plugin import case_params
from parity.suites import COMPONENT_TAGS, REGISTRY, TAGS


def _f(**_):
    return [1]


def _registry() -> Registry:
    reg = Registry()
    reg.pair("adam", kind="param_groups", legacy=_f, new=_f, params={"lr": 0.1}, tags=("optimizer",))
    reg.golden("warmup", kind="lr_curve", producer=_f, tags=("lr_scheduler", "legacy"))
    reg.golden("untagged", kind="lr_curve", producer=_f)
    return reg


def test_tags_are_kept_out_of_the_id():
    reg = _registry()
    assert [c.id for c in reg] == ["param_groups.adam-lr=0.1", "lr_curve.warmup", "lr_curve.untagged"]
    assert reg.get("lr_curve.warmup").tags == ("lr_scheduler", "legacy")
    assert reg.tags() == ["legacy", "lr_scheduler", "optimizer"]


def test_select_and_case_params_by_tag():
    reg = _registry()
    assert [c.name for c in reg.select(tags=("optimizer",))] == ["adam"]
    assert [c.name for c in reg.select(tags=("optimizer", "legacy"))] == ["adam", "warmup"]  # any of them
    assert [c.name for c in reg.select("adam", tags=("legacy",))] == []  # and -k
    assert [p.id for p in case_params(reg, tag="lr_scheduler")] == ["torch-lr_curve.warmup"]
    assert len(case_params(reg)) == 3
    with pytest.raises(KeyError, match=r"unknown tag\(s\) \['optimiser'\]"):
        case_params(reg, tag="optimiser")


@pytest.mark.parametrize(
    ("tags", "error", "match"),
    [
        ("optimizer", TypeError, "tags must be a tuple"),
        (["optimizer"], TypeError, "tags must be a tuple"),
        (("lr scheduler",), ValueError, "expected an identifier"),
        (("loss", "loss"), ValueError, "repeat a tag"),
    ],
)
def test_bad_tags_are_refused(tags, error, match):
    with pytest.raises(error, match=match):
        Registry().golden("x", kind="lr_curve", producer=_f, tags=tags)


def test_every_suite_case_has_a_known_tag():
    untagged = [c.id for c in REGISTRY if not c.tags]
    assert untagged == []
    unknown = sorted({t for c in REGISTRY for t in c.tags} - set(TAGS))
    assert unknown == [], f"tags outside parity.suites.TAGS: {unknown}"


@pytest.mark.parametrize("tag", TAGS)
def test_every_tag_selects_cases(tag):
    assert case_params(REGISTRY, tag=tag), tag


def test_component_tags_do_not_overlap():
    """A case covers one component: each component test module runs a disjoint set of cases."""
    for case in REGISTRY:
        assert len(set(case.tags) & set(COMPONENT_TAGS)) <= 1, case.id


@pytest.fixture
def cli(tmp_path):
    cases = tmp_path / "tagged_cases.py"
    cases.write_text(
        textwrap.dedent(
            """
            from parity.cases import Registry

            REGISTRY = Registry()


            def lrs(**_):
                return []


            REGISTRY.pair("a", kind="lr_curve", legacy=lrs, new=lrs, tags=("optimizer",))
            REGISTRY.pair("b", kind="lr_curve", legacy=lrs, new=lrs, tags=("loss",))
            REGISTRY.pair("c", kind="lr_curve", legacy=lrs, new=lrs, tags=("loss", "e2e"))
            """
        )
    )

    def run(*argv: str) -> tuple[int, str]:
        out = io.StringIO()
        common = ["--cases", str(cases), "--golden-dir", str(tmp_path / "golden")]
        code = main([*argv, *common], console=Console(file=out, width=250, color_system=None))
        return code, out.getvalue()

    run.reports = str(tmp_path / "reports")
    return run


def test_cli_list_and_run_select_by_tag(cli):
    code, out = cli("list", "--tag", "loss")
    assert code == 0 and "lr_curve.b" in out and "lr_curve.c" in out and "lr_curve.a" not in out
    assert "loss, e2e" in out  # the tags column
    code, out = cli("run", "--tag", "optimizer", "--tag", "e2e", "--report-dir", cli.reports, "--verbose")
    assert code == 0, out
    assert "lr_curve.a" in out and "lr_curve.c" in out and "lr_curve.b" not in out
    assert "2 passed, 0 failed" in out
    code, out = cli("run", "--tag", "loss", "-k", "lr_curve.c", "--report-dir", cli.reports)
    assert code == 0 and "lr_curve.b" not in out and "1 passed, 0 failed" in out


def test_cli_unknown_tag_is_an_error(cli):
    code, out = cli("list", "--tag", "optimiser")
    assert code == 2 and "unknown tag(s) ['optimiser']" in out
