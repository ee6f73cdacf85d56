"""The dataloader cases that pad, split unevenly, resume and raise can fail (parity/suites/components_dataloader.py).

The registered cases themselves run in ``test_dataloader.py`` (``case_params(REGISTRY,
tag="dataloader")``). Here each group is first shown to exercise what it claims (rows shorter than
the window padded with the variant's pad id, a remainder on every layout, a legacy error for the
named reason), then a divergence is planted in the component (never in the legacy trainer) and the
engine must report a failure at the artifact that moved.
"""

from __future__ import annotations

import os

os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import pytest

import hyper_parallel.components.dataloader as dl
from hyper_parallel.components.tokenizer import HuggingFaceTokenizer
from hyper_parallel.platform.torch_platform import TorchPlatform
from parity.engine import Engine
from parity.suites import REGISTRY
from parity.suites import components_dataloader as suite

# The pad id each tokenizer folder gives: its pad token, else its eos, else 0.
EXPECTED_PAD = {"asset": 0, "pad": 2, "eos1": 1, "no_eos": 0, "none": 0}


def _cases(name: str):
    cases = [c for c in REGISTRY if c.name == name]
    assert cases, name
    return cases


def _check(case):
    return Engine(REGISTRY, report_dir=None).check(case, "torch")


def _failed_at(case, prefix: str):
    """The case fails, its first difference lies under ``prefix`` and the message names it."""
    outcome = _check(case)
    assert outcome.status == "fail", (case.id, outcome.status, outcome.message)
    first = outcome.report.differences[0]
    assert first.path.startswith(prefix), (case.id, first.path)
    assert first.path in outcome.message
    return first


# --------------------------------------------------------------------------- padding


@pytest.mark.parametrize("params", suite.PAD_CASES, ids=lambda p: f"{p['data']}-{p['tok']}-seq{p['seq']}")
def test_pad_cases_pad_with_the_tokenizer_pad_id(params):
    trainer = suite.short_legacy_trainer(**params)
    indices, mbs, pad = list(trainer.sampler), params["mbs"], EXPECTED_PAD[params["tok"]]
    padded = 0
    for j, batch in enumerate(trainer.train_dataloader):
        for row, idx in enumerate(indices[j * mbs : (j + 1) * mbs]):
            length = len(trainer.train_dataset[idx]["input_ids"])
            assert set(batch["input_ids"][row, length:].tolist()) <= {pad}
            assert set(batch["labels"][row, length:].tolist()) <= {-100}
            padded += batch["input_ids"].shape[1] - length
    assert padded > 0, "the case never pads"
    assert trainer.collate_fn.keywords["pad_id"] == pad


def _eos_as_pad(self, tokenizer):
    """Planted: pad with the eos id (the shipped asset cannot tell: its pad falls back to eos)."""
    eos = None if tokenizer is None else tokenizer.eos_token_id
    return 0 if eos is None else int(eos)


def test_planted_pad_with_eos_is_caught_only_by_the_pad_variant(monkeypatch):
    monkeypatch.setattr(dl.BaseDataLoader, "_pad_id", _eos_as_pad)
    for case in _cases("dataloader_pad"):
        if dict(case.params)["tok"] == "pad":
            first = _failed_at(case, "batches.batches[")
            assert first.path.endswith(".input_ids")
            assert (first.expected.split()[0], first.actual.split()[0]) == ("2", "0")
        else:  # pad == eos for these folders: the plant changes no bit, so the pad variant is needed
            assert _check(case).status == "pass", case.id


def test_planted_pad_rule_without_eos_fallback_is_caught_by_the_eos1_variant(monkeypatch):
    def own_pad_only(self, path):  # planted: forgets "pad = eos when missing"
        if self.config.pad_token is not None:
            self.hf.pad_token = self.config.pad_token

    monkeypatch.setattr(HuggingFaceTokenizer, "_apply_pad_rule", own_pad_only)
    eos1 = [c for c in _cases("dataloader_pad") if dict(c.params)["tok"] == "eos1"]
    assert {dict(c.params)["data"] for c in eos1} == {"short_text", "short_alpaca", "ragged_preset"}
    for case in eos1:
        first = _failed_at(case, "batches.batches[")
        assert (first.expected.split()[0], first.actual.split()[0]) == ("1", "0")


def test_planted_label_padding_with_zero_is_caught_everywhere(monkeypatch):
    monkeypatch.setattr(dl, "LABEL_PAD_ID", 0)
    for case in _cases("dataloader_pad"):
        first = _failed_at(case, "batches.batches[")
        assert first.path.endswith(".labels")
        assert (first.expected.split()[0], first.actual.split()[0]) == ("-100", "0")


# --------------------------------------------------------------------------- uneven splits


def test_split_cases_leave_a_remainder_on_every_layout():
    layouts = set()
    for params in suite.SPLIT_CASES:
        trainer = suite.short_legacy_trainer(**params)
        dp = params["world"] // params["tp"]
        assert len(trainer.train_dataset) % dp != 0, params
        layouts.add((params["data"], params["world"], params["tp"], params["rank"]))
    for data in ("short_text", "short_alpaca", "ragged_preset"):  # every rank of 2 and 3
        assert {(w, r) for d, w, tp, r in layouts if d == data and tp == 1} >= {
            (2, 0), (2, 1), (3, 0), (3, 1), (3, 2)
        }  # fmt: skip


def test_planted_kept_remainder_is_caught(monkeypatch):
    original = TorchPlatform.distributed_sampler

    def keep_remainder(self, *args, **kwargs):  # planted: the sampler pads instead of dropping
        kwargs["drop_last"] = False
        return original(self, *args, **kwargs)

    monkeypatch.setattr(TorchPlatform, "distributed_sampler", keep_remainder)
    for case in _cases("dataloader_split"):
        outcome = _check(case)
        assert outcome.status == "fail", case.id
        paths = [d.path for d in outcome.report.differences]
        assert any(p.startswith("batches.indices[") for p in paths), (case.id, paths)
        # One more sample per rank: the rank's indices grow by one.
        extra = next(d for d in outcome.report.differences if d.path.startswith("batches.indices["))
        assert extra.kind == "extra" and int(extra.actual) == int(extra.expected) + 1


def test_planted_shifted_rank_is_caught(monkeypatch):
    original = TorchPlatform.distributed_sampler

    def next_rank(self, dataset, *, num_replicas, rank, **kwargs):  # planted: reads the next dp rank
        return original(self, dataset, num_replicas=num_replicas, rank=(rank + 1) % num_replicas, **kwargs)

    monkeypatch.setattr(TorchPlatform, "distributed_sampler", next_rank)
    for case in _cases("dataloader_split"):
        outcome = _check(case)
        assert outcome.status == "fail", case.id
        paths = [d.path for d in outcome.report.differences]
        assert any(p.startswith("batches.indices[") for p in paths), (case.id, paths)
        assert any(p.startswith("batches.batches[0].") for p in paths), (case.id, paths)


# --------------------------------------------------------------------------- resume


def test_resume_cases_continue_the_uninterrupted_epoch():
    for params in suite.RESUME_CASES:
        kw = {k: v for k, v in params.items() if k != "k"}
        whole = suite.new_epoch(**kw)["batches"]
        resumed = suite.new_resume(**params)
        assert 0 < params["k"] < len(whole)
        assert len(resumed["head"]) + len(resumed["tail"]) == len(whole)


def test_planted_resume_that_ignores_the_state_is_caught(monkeypatch):
    monkeypatch.setattr(dl.BaseDataLoader, "load_state_dict", lambda self, state: None)
    for case in _cases("dataloader_resume"):
        outcome = _check(case)
        assert outcome.status == "fail", case.id
        first = outcome.report.differences[0]
        assert first.path.startswith("batches.tail"), (case.id, first.path)
        assert first.kind == "extra"  # the whole epoch again, not its rest
        assert int(first.actual) == int(first.expected) + dict(case.params)["k"]


# --------------------------------------------------------------------------- errors

# Per error case: what the legacy message and the component message name.
ERROR_REASONS = (
    ("train.global_batch_size", "global_batch_size=8 is not a multiple"),
    ("max_steps would be 0", "training steps would be 0"),
    ("model.vocab_size", "model.vocab_size"),
    ("needs a tokenizer", "tokenizer.path is not set"),
    ("data.text_key", "data.text_key"),
)


@pytest.mark.parametrize(("params", "reasons"), list(zip(suite.ERROR_CASES, ERROR_REASONS)))
def test_error_cases_raise_on_both_sides_for_the_named_reason(params, reasons):
    legacy_reason, new_reason = reasons
    with pytest.raises(ValueError, match=legacy_reason):
        suite.short_legacy_trainer(**params)
    with pytest.raises(ValueError, match=new_reason):
        suite.short_new_loader(**params)


def test_planted_dropped_vocab_check_is_caught(monkeypatch):
    monkeypatch.setattr(HuggingFaceTokenizer, "check_vocab", lambda self, vocab_size: None)
    case = next(c for c in _cases("dataloader_error") if dict(c.params).get("vocab") == 300)
    first = _failed_at(case, "batches.error")
    assert (first.path, first.expected, first.actual) == ("batches.error", "str", "null")  # no error
    others = [c for c in _cases("dataloader_error") if c is not case]
    assert all(_check(c).status == "pass" for c in others)


def test_planted_other_error_type_is_caught(monkeypatch):
    original = dl.HuggingFaceTextDataLoader._build_dataset

    def runtime_error(self, **kwargs):  # planted: the dataset step raises RuntimeError instead
        try:
            return original(self, **kwargs)
        except ValueError as exc:
            raise RuntimeError(str(exc)) from exc

    monkeypatch.setattr(dl.HuggingFaceTextDataLoader, "_build_dataset", runtime_error)
    caught = []
    for case in _cases("dataloader_error"):
        outcome = _check(case)
        if outcome.status == "fail":
            first = outcome.report.differences[0]
            assert (first.path, first.expected, first.actual) == (
                "batches.error",
                "'ValueError'",
                "'RuntimeError'",
            )
            caught.append(case.id)
    # The two errors that the dataset step raises: no full global batch, no text_key column.
    assert (
        len(caught) == 2 and any("gbs=64" in c for c in caught) and any("text_key=body" in c for c in caught)
    )
