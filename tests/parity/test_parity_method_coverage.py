"""Every method HyperTrainer uses on a component is compared by a case; the shared-load relation fails
on a truncation slip; the loss cases compare ``count_tokens``."""

from __future__ import annotations

import textwrap

import pytest

from parity import canonical
from parity.cases import Registry
from parity.compare import compare
from parity.suites import REGISTRY
from parity.suites._method_coverage import TRAINER_METHODS, TRAINER_SOURCE, problems, trainer_uses


def test_every_method_the_trainer_uses_is_reached_by_a_listed_case():
    assert problems(REGISTRY) == []


def test_the_table_matches_the_trainer_source_exactly():
    used = trainer_uses(TRAINER_SOURCE.read_text(encoding="utf-8"), TRAINER_METHODS)
    listed = {(attr, member) for attr, members in TRAINER_METHODS.items() for member in members}
    assert used == listed
    assert ("loss_fn", "count_tokens") in used and ("loss_fn", "__call__") in used


def test_trainer_uses_reads_calls_attributes_and_with_aliases():
    source = textwrap.dedent(
        """
        class T:
            def run(self):
                x = self.loss_fn(1, 2)
                self.loss_fn.count_tokens(x)
                n = self.dataloader.training_steps
                with self.profiler as prof:
                    prof.step()
                self.other.thing()
        """
    )
    assert trainer_uses(source, ("loss_fn", "dataloader", "profiler")) == {
        ("loss_fn", "__call__"),
        ("loss_fn", "count_tokens"),
        ("dataloader", "training_steps"),
        ("profiler", "__enter__"),
        ("profiler", "step"),
    }


def test_a_new_trainer_call_without_a_case_is_named():
    source = (
        TRAINER_SOURCE.read_text(encoding="utf-8") + "\n\ndef _f(self):\n    self.loss_fn.reduce_tokens(1)\n"
    )
    assert problems(REGISTRY, source=source) == [
        "HyperTrainer uses self.loss_fn.reduce_tokens but no case is listed for it in TRAINER_METHODS"
    ]


def test_a_stale_entry_and_an_unknown_case_are_named():
    table = {"loss_fn": {**TRAINER_METHODS["loss_fn"], "gone": ("component_loss_drawn_vs_legacy",)}}
    source = "def f(self):\n    self.loss_fn(1)\n    self.loss_fn.count_tokens(1)\n"
    assert problems(REGISTRY, table, source) == [
        "TRAINER_METHODS lists self.loss_fn.gone, which HyperTrainer no longer uses",
        "self.loss_fn.gone: case 'component_loss_drawn_vs_legacy' (new side new_loss_drawn) never reaches it",
    ]
    table = {"loss_fn": {"count_tokens": ("no_such_case",)}}
    assert problems(REGISTRY, table, "def f(self):\n    self.loss_fn.count_tokens(1)\n") == [
        "self.loss_fn.count_tokens: case 'no_such_case' is not registered"
    ]


def _loss_only(**_):
    loss = _build()
    return {"loss": loss(1, 2)}


def _build():
    return lambda *a: a


def _loss_and_count(**_):
    loss = _build()
    return {"loss": loss(1, 2), "tokens": loss.count_tokens({"labels": 2})}


def test_a_case_that_only_calls_the_main_entry_point_is_named():
    """The gap the blind measurement found: a loss case that never calls ``count_tokens``."""
    reg = Registry()
    reg.pair("loss_only", kind="losses", legacy=_loss_only, new=_loss_only, tags=("loss",))
    reg.pair("loss_and_count", kind="losses", legacy=_loss_only, new=_loss_and_count, tags=("loss",))
    source = "def f(self):\n    self.loss_fn(1)\n    self.loss_fn.count_tokens(1)\n"
    table = {"loss_fn": {"__call__": ("loss_only",), "count_tokens": ("loss_only",)}}
    assert problems(reg, table, source) == [
        "self.loss_fn.count_tokens: case 'loss_only' (new side _loss_only) never reaches it"
    ]
    table = {"loss_fn": {"__call__": ("loss_only",), "count_tokens": ("loss_and_count",)}}
    assert problems(reg, table, source) == []


_IGNORE_PARAMS = {"ignore_index": 0, "chunks": 0, "batch": 2, "seq": 16, "data_seed": 7, "ignore": "random"}


def test_count_tokens_with_the_default_ignore_index_is_caught_on_tokens(monkeypatch):
    """The blind plant ``blind_loss_count_tokens_default_ignore`` in process: only ``tokens`` differs."""
    from hyper_parallel.components import loss as loss_module
    from parity.suites import components_loss_tokenizer as suite

    legacy = canonical.canonicalise(suite.legacy_loss_ignore_index(**_IGNORE_PARAMS), "losses")
    assert canonical.to_json(legacy) == canonical.to_json(
        canonical.canonicalise(suite.new_loss_ignore_index(**_IGNORE_PARAMS), "losses")
    )
    monkeypatch.setattr(
        loss_module.BaseLoss, "count_tokens", lambda self, labels: loss_module.count_loss_tokens(labels)
    )
    planted = canonical.canonicalise(suite.new_loss_ignore_index(**_IGNORE_PARAMS), "losses")
    diffs = compare(legacy, planted, "losses")
    assert diffs and {d.path.split("[")[0].split("/")[0] for d in diffs} == {"losses.tokens"}, [
        d.path for d in diffs
    ]


@pytest.mark.parametrize("params", [{"extra_layers": 1, "unknown_keys": False, "sharded": False}])
def test_a_load_that_keeps_one_layer_too_many_is_caught(monkeypatch, params):
    """The blind plant ``blind_shared_hf_load_extra_layer`` in process: the larger folder's load
    gains the extra layer's keys in the adapter state, and the model load reports them unexpected."""
    import re

    from hyper_parallel.models.qwen3_5 import state_dict as adapter_module
    from parity.suites import shared_relations

    exact = canonical.canonicalise(shared_relations.exact_folder_load(**params), "checkpoint")
    assert canonical.to_json(exact) == canonical.to_json(
        canonical.canonicalise(shared_relations.larger_folder_load(**params), "checkpoint")
    )
    monkeypatch.setattr(
        adapter_module, "_LAYER_KEY", re.compile(r"^model\.layers\.(\d+)\.(?!)")
    )  # never truncates
    planted = canonical.canonicalise(shared_relations.larger_folder_load(**params), "checkpoint")
    paths = [d.path for d in compare(exact, planted, "checkpoint")]
    assert any(p.startswith("checkpoint.adapter_state") for p in paths), paths
    assert any(p.startswith("checkpoint.unexpected") for p in paths), paths
