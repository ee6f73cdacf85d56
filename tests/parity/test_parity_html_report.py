"""``python -m parity report --html``: one self-contained page of the last run's reports."""

from __future__ import annotations

import base64
import io
import json
import shutil
from html.parser import HTMLParser

import pytest
from rich.console import Console

from parity import e2e
from parity.cli import main
from parity.tools.html_report import write_html

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
FAILING = "e2e.trainer_e2e-artifact=losses-recipe=preset"
PASSING = "e2e.trainer_e2e-artifact=lr_curve-recipe=preset"


class _Page(HTMLParser):
    """Every tag with its attributes, and the text."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text.append(data)


def _parse(path) -> _Page:
    page = _Page()
    page.feed(path.read_text(encoding="utf-8"))
    page.close()
    return page


def _cli(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    code = main(list(argv), console=Console(file=out, width=250, color_system=None))
    return code, out.getvalue()


@pytest.fixture(scope="module")
def failed_run(tmp_path_factory):
    """A run of two preset cases with the new dataloader changing a token from step 2 on."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        yield _failed_run(tmp_path_factory.mktemp("run"), monkeypatch)


def _failed_run(tmp_path, monkeypatch):
    from hyper_parallel.components import dataloader

    original = dataloader.BaseDataLoader.micro_batch_iterator

    def perturbed(self):
        for index, group in enumerate(original(self)):
            if index >= 1:
                group = [dict(mb) for mb in group]
                ids = group[0]["input_ids"].clone()
                ids[0, 3] = (ids[0, 3] + 1) % 2048
                group[0]["input_ids"] = ids
            yield group

    monkeypatch.setattr(dataloader.BaseDataLoader, "micro_batch_iterator", perturbed)
    e2e.recipe_run.cache_clear()
    reports = tmp_path / "reports"
    code, out = _cli("run", "-j", "1", "--id", FAILING, "--id", PASSING, "--report-dir", str(reports))
    e2e.recipe_run.cache_clear()
    assert code == 1, out
    return reports


def test_the_html_report_is_self_contained_and_shows_the_failing_case(failed_run, tmp_path):
    page_path, pngs = tmp_path / "report.html", tmp_path / "png"
    code, out = _cli(
        "report", "--report-dir", str(failed_run), "--html", str(page_path), "--png-dir", str(pngs)
    )
    assert code == 0 and "1 failing case(s), 2 image(s)" in out
    page = _parse(page_path)
    text = "".join(page.text)
    assert FAILING in text and PASSING in text  # the summary table has every case of the run
    assert "first divergence: step 2, batch, batch[0].input_ids -> component dataloader" in text
    images = [attrs for tag, attrs in page.tags if tag == "img"]
    assert len(images) == 2
    for attrs in images:
        src = attrs["src"] or ""
        assert src.startswith("data:image/png;base64,")
        assert base64.b64decode(src.split(",", 1)[1]).startswith(PNG_MAGIC)
    # Nothing is fetched from elsewhere: no scripts, stylesheets or remote sources.
    assert not [t for t, _ in page.tags if t in ("script", "link", "iframe")]
    assert not [a for _, a in page.tags for k, v in a.items() if k in ("src", "href") and v and "://" in v]
    assert sorted(p.name.split(".")[-2] for p in pngs.iterdir()) == ["curves", "heatmap"]
    assert all(p.read_bytes().startswith(PNG_MAGIC) for p in pngs.iterdir())
    assert "cpu_profile" in text  # the environment fingerprint


def test_the_json_report_stores_what_the_plots_need(failed_run):
    report = json.loads(next(failed_run.glob(f"torch/*/{FAILING}.json")).read_text())
    loc = report["localisation"]
    assert loc["step"] == 2 and loc["phase"] == "batch"
    for side in ("legacy", "new"):
        assert set(loc["curves"][side]) == {"step", "loss", "grad_norm", "lr"}
        assert len(loc["curves"][side]["loss"]) == 7
    tensor = loc["tensor"]
    assert tensor["path"] == "batch[0].input_ids" and tensor["shape"] == [2, 24]
    assert sum(map(sum, tensor["grid"])) == 1  # one token moved by one
    summary = json.loads((failed_run / "last_run.json").read_text())
    assert {c["case_id"]: c["status"] for c in summary["cases"]} == {FAILING: "fail", PASSING: "pass"}


def test_without_a_run_summary_every_report_is_shown(failed_run, tmp_path):
    reports = tmp_path / "reports"
    shutil.copytree(failed_run, reports)
    (reports / "last_run.json").unlink()
    written = write_html(reports, tmp_path / "page.html")
    assert written.failing == 1 and written.images == 2
    assert FAILING in "".join(_parse(tmp_path / "page.html").text)


def test_an_empty_report_folder_gives_a_page_without_failures(tmp_path):
    written = write_html(tmp_path / "none", tmp_path / "page.html")
    assert written.failing == 0 and written.images == 0
    page = _parse(tmp_path / "page.html")
    assert "parity report" in "".join(page.text)
