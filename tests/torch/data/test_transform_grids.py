"""The transform-grid cases (parity/suites/components_transforms.py) cover the grid and can fail.

The registered cases run with the dataloader's (``case_params(REGISTRY, tag="dataloader")`` in
``tests/torch/ut/components/test_dataloader.py``). Here: the committed grid files are what the asset
builder writes and hold the edge cells the issue names; a divergence planted in the component's
wiring fails the tier A pairs; a change of the shared transform moves both sides of a pair at once
(tier A passes) and is caught by the tier B golden, at the cells it changes.
"""

from __future__ import annotations

import os

os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import pytest

import hyper_parallel.components.dataloader as dl
import hyper_parallel.data.transforms as transforms
from parity import assets
from parity.assets import build_assets
from parity.engine import Engine
from parity.pytest_plugin import case_params
from parity.suites import REGISTRY
from parity.suites import components_transforms as suite


def _case(name: str, **params):
    matches = [c for c in REGISTRY if c.name == name and dict(c.params) == params]
    assert len(matches) == 1, (name, params)
    return matches[0]


def _check(case):
    return Engine(REGISTRY, report_dir=None).check(case, "torch")


def test_transform_cases_are_tagged_and_run_with_the_dataloader():
    cases = REGISTRY.select(tags=["transforms"])  # a case per grid; params add one per backend
    rows_golden = 1  # transform_rows_golden: the transforms on batches no data file holds
    assert len(cases) == len(suite.TRANSFORM_PAIRS) + len(suite.TRANSFORM_GOLDENS) + rows_golden
    ids = {p.id for p in case_params(REGISTRY, tag="transforms")}
    assert ids <= {p.id for p in case_params(REGISTRY, tag="dataloader")}


@pytest.mark.parametrize("grid", sorted(build_assets.ALPACA_GRIDS))
def test_committed_grid_is_what_the_builder_writes_and_tokenises_to_its_cells(grid, tmp_path):
    written = build_assets.write_alpaca_grid_json(tmp_path / "grid.json", grid)
    assert written.read_bytes() == assets.alpaca_grid_json(grid).read_bytes()
    assert suite.checked_grid_json(grid) == assets.alpaca_grid_json(grid)


def test_short_assets_are_what_the_builder_writes(tmp_path):
    text = build_assets.write_short_text_jsonl(tmp_path / "t.jsonl")
    alpaca = build_assets.write_short_alpaca_json(tmp_path / "a.json")
    assert text.read_bytes() == assets.short_text_jsonl().read_bytes()
    assert alpaca.read_bytes() == assets.short_alpaca_json().read_bytes()


@pytest.mark.parametrize("seq", [8, 16, 22])
def test_grid_holds_the_edge_cells(seq):
    """Empty response, prompt longer than the window, exact fit, and every infer_seqlen branch."""
    out = suite.new_grid(data="alpaca_grid", seq=seq)["rows"]
    cells = [c for c in build_assets.alpaca_grid_cells("full") if c[:2] != (0, 0)]
    assert len(out) == len(cells)
    empty_response = [suite._cell_name(c) for c in cells if c[1] == 0]
    assert all(set(out[name]["labels"]) == {-100} for name in empty_response)  # kept, all masked
    assert any(p > seq for p, _, _ in cells)  # a prompt longer than the window
    exact = [suite._cell_name(c) for c in cells if c[0] + c[1] == seq]
    assert exact and all(len(out[name]["input_ids"]) == seq for name in exact)  # nothing cut
    branches = {
        "short response" if 2 * r < seq else "short prompt" if 2 * p < seq else "ratio" for p, r, _ in cells
    }
    assert branches == {"short response", "short prompt", "ratio"}


def test_planted_cutoff_one_short_fails_the_grid_pairs(monkeypatch):
    original = dl.HuggingFaceTextDataLoader._build_dataset

    def one_short(self, **kwargs):  # planted: the transform gets seq_len - 1 as its cutoff
        self.seq_len -= 1
        try:
            return original(self, **kwargs)
        finally:
            self.seq_len += 1

    monkeypatch.setattr(dl.HuggingFaceTextDataLoader, "_build_dataset", one_short)
    for params in suite.TRANSFORM_PAIRS:
        if params["seq"] < 2:
            continue  # cutoff 0 keeps no row: an error, not a difference
        outcome = _check(_case("transform_grid", **params))
        assert outcome.status == "fail", params
        first = outcome.report.differences[0]
        assert first.path.startswith("token_ids.rows.p"), first.path
        assert first.path in outcome.message


def _multiply_first(source_len: int, target_len: int, cutoff: int) -> tuple[int, int]:
    """Planted: ``int(cutoff * t / (s + t))`` instead of the legacy ratio-first form."""
    if target_len * 2 < cutoff:
        max_target_len = cutoff
    elif source_len * 2 < cutoff:
        max_target_len = cutoff - source_len
    else:
        max_target_len = int(cutoff * target_len / (source_len + target_len))
    new_target_len = min(max_target_len, target_len)
    return min(max(cutoff - new_target_len, 0), source_len), new_target_len


def test_planted_shared_transform_change_passes_tier_a_and_fails_the_golden(monkeypatch):
    monkeypatch.setattr(transforms, "infer_seqlen", _multiply_first)
    # Both paths call the shared transform: the pair cannot see it...
    assert _check(_case("transform_grid", data="alpaca_grid", seq=22)).status == "pass"
    # ...the golden can, at the cells where the two forms differ: prompt 14 (whole or split), response 30.
    outcome = _check(_case("transform_grid_golden", data="alpaca_grid_small", seq=22))
    assert outcome.status == "fail"
    diffs = outcome.report.differences
    assert {d.path.rsplit(".", 1)[0] for d in diffs} == {"token_ids.rows.p14_r30", "token_ids.rows.p14i_r30"}
    # The golden keeps 8 prompt tokens and 14 response tokens, the plant 7 and 15: from index 7 on.
    assert diffs[0].path == "token_ids.rows.p14_r30.input_ids[7]"
    labels = next(d for d in diffs if d.path == "token_ids.rows.p14_r30.labels[7]")
    assert labels.expected == "-100" and labels.actual != "-100"
    assert _check(_case("transform_grid_golden", data="alpaca_grid_small", seq=8)).status == "pass"
