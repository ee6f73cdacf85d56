"""HuggingFaceTokenizer against the legacy ``LLMTrainer._build_model_assets``.

Legacy vs new runs through the parity harness (registered cases of
``parity/suites/components_loss_tokenizer.py``); the direct tests pin token ids on drawn text,
the pad rule, the errors, and planted divergences that the comparator must catch.
"""

from __future__ import annotations

import functools
import logging
import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hyper_parallel.components.tokenizer import BaseTokenizer, HuggingFaceTokenizer
from parity import assets, canonical
from parity.cases import REGISTRY
from parity.compare import VALUES, compare
from parity.pytest_plugin import case_params, run_case
from parity.suites import components_loss_tokenizer as suite
from tests.torch.ut.components._legacy import bare_trainer, legacy_args, llm_wrapper


@pytest.mark.parametrize(("case", "backend"), case_params(REGISTRY, tag="tokenizer"))
def test_parity_case(case, backend, request):
    """Legacy tokenizer vs component (tier A) and the component's goldens (tier B)."""
    run_case(request, REGISTRY, case, backend)


def test_registered_cases_cover_the_issue_table():
    cases = REGISTRY.select(tags=("tokenizer",))
    assert {c.tier for c in cases} == {"A", "B"}
    assert any(c.strategies for c in cases)  # hypothesis-drawn text
    for variant in suite.TOKENIZER_VARIANTS:
        assert any(f"variant={variant}" in c.id for c in cases)


# ----------------------------------------------------------------------------- token ids


@functools.cache
def _legacy(variant: str):
    """The legacy step 4 itself, driven through the shared component-test helpers."""
    path = suite.tokenizer_variant(variant)
    trainer = bare_trainer(legacy_args("--data.type=hf_datasets", f"--model.tokenizer_path={path}"))
    llm_wrapper(trainer)._build_model_assets()
    return trainer.tokenizer


@functools.cache
def _new(variant: str) -> HuggingFaceTokenizer:
    return HuggingFaceTokenizer.Config(path=str(suite.tokenizer_variant(variant))).build()


@given(text=st.text(), special=st.booleans(), variant=st.sampled_from(["asset", "bos_eos"]))
def test_drawn_text_ids_equal_legacy(text, special, variant):
    legacy, new = _legacy(variant), _new(variant)
    want = legacy(text, add_special_tokens=special)["input_ids"]
    got = new.encode(text, add_special_tokens=special)
    assert got == want
    assert new(text, add_special_tokens=special)["input_ids"] == want  # passthrough
    assert new.decode(got) == legacy.decode(want)


@pytest.mark.parametrize("text", ["", "héllo wörld", "你好，世界 🚀", "<|endoftext|>"])
def test_special_tokens_on_and_off(text):
    on, off = _new("bos_eos").encode(text), _new("bos_eos").encode(text, add_special_tokens=False)
    assert on == [1, *off, 0]  # <|im_start|> ... <|endoftext|>
    assert on == _legacy("bos_eos")(text)["input_ids"]
    assert _new("asset").encode(text) == _new("asset").encode(text, add_special_tokens=False)


def test_multilingual_texts_equal_legacy():
    for variant in ("asset", "bos_eos"):
        for text in suite.TEXTS:
            assert _new(variant).encode(text) == _legacy(variant)(text)["input_ids"], text


def test_len_and_special_ids_equal_legacy():
    for variant in suite.TOKENIZER_VARIANTS:
        legacy, new = _legacy(variant), _new(variant)
        assert (len(new), new.pad_token_id, new.eos_token_id) == (
            len(legacy),
            legacy.pad_token_id,
            legacy.eos_token_id,
        )


# ----------------------------------------------------------------------------- pad rule


def test_no_pad_token_falls_back_to_eos():
    tok = _new("asset")
    assert tok.pad_token_id == tok.eos_token_id == 0
    assert tok.pad_token == "<|endoftext|>"  # read through to the HF tokenizer


def test_tokenizer_own_pad_token_is_kept():
    assert _new("pad").pad_token_id == 2 == _legacy("pad").pad_token_id


def test_config_pad_token_wins():
    for variant in ("asset", "pad"):
        tok = HuggingFaceTokenizer.Config(
            path=str(suite.tokenizer_variant(variant)), pad_token="<|im_start|>"
        ).build()
        assert tok.pad_token_id == 1
        assert tok.eos_token_id == 0


def test_no_pad_and_no_eos_gives_none_and_warns(caplog):
    with caplog.at_level(logging.WARNING, logger="hyper_parallel.components.tokenizer"):
        tok = HuggingFaceTokenizer.Config(path=str(suite.tokenizer_variant("no_eos"))).build()
    assert tok.pad_token_id is None and tok.eos_token_id is None
    assert "neither pad nor eos" in caplog.text and "pads with 0" in caplog.text
    from hyper_parallel.data.collate import make_pad_collate

    batch = make_pad_collate(tok.pad_token_id)(
        [{"input_ids": [5, 6], "labels": [5, 6]}, {"input_ids": [7], "labels": [7]}]
    )
    assert batch["input_ids"].tolist() == [[5, 6], [7, 0]]


def test_unknown_config_pad_token_is_an_error():
    with pytest.raises(ValueError, match=r"tokenizer\.pad_token '<pad>' is not a token"):
        HuggingFaceTokenizer.Config(path=str(assets.tokenizer_dir()), pad_token="<pad>").build()


# ----------------------------------------------------------------------------- errors and protocol


@pytest.mark.parametrize("path", [None, ""])
def test_empty_path_names_the_field(path):
    with pytest.raises(
        ValueError, match=r"tokenizer\.path is not set.*tokenizer\.json and tokenizer_config\.json"
    ):
        HuggingFaceTokenizer.Config(path=path).build()


def test_missing_or_file_path_names_the_field_and_expected_files(tmp_path):
    for path in (tmp_path / "absent", assets.tokenizer_dir() / "tokenizer.json"):
        with pytest.raises(FileNotFoundError, match=r"tokenizer\.path .* not an existing directory") as info:
            HuggingFaceTokenizer.Config(path=str(path)).build()
        assert "tokenizer.json and tokenizer_config.json" in str(info.value)


def test_vocab_size_check_names_model_vocab_size():
    path = str(assets.tokenizer_dir())
    with pytest.raises(ValueError, match=r"512 tokens but model\.vocab_size is 100"):
        HuggingFaceTokenizer.Config(path=path).build(vocab_size=100)
    tok = HuggingFaceTokenizer.Config(path=path).build(vocab_size=512)
    tok.check_vocab(None)
    with pytest.raises(ValueError, match=r"model\.vocab_size is 511"):
        tok.check_vocab(511)
    # The legacy step raises for the same sizes.
    with pytest.raises(ValueError, match=r"model\.vocab_size"):
        suite.legacy_tokenizer(path, vocab_size=100)


def test_path_is_a_config_field_not_a_build_kwarg():
    """Documented deviation from the RFC's build(path=...): the protocol forbids a repeated field."""
    with pytest.raises(ValueError, match="kwargs repeat config field"):
        HuggingFaceTokenizer.Config().build(path=str(assets.tokenizer_dir()))


def test_base_tokenizer_is_abstract():
    with pytest.raises(TypeError, match="BaseTokenizer is abstract"):
        BaseTokenizer.Config(path=str(assets.tokenizer_dir())).build()


def test_loads_local_only_with_trust_remote_code_from_config(monkeypatch):
    import transformers

    seen = []
    original = transformers.AutoTokenizer.from_pretrained.__func__

    def spy(cls, path, **kwargs):
        seen.append(kwargs)
        return original(cls, path, **kwargs)

    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", classmethod(spy))
    for trust in (False, True):
        HuggingFaceTokenizer.Config(path=str(assets.tokenizer_dir()), trust_remote_code=trust).build()
    assert seen == [
        {"trust_remote_code": False, "local_files_only": True},
        {"trust_remote_code": True, "local_files_only": True},
    ]


def test_config_fields_and_pickle():
    assert HuggingFaceTokenizer.Config().to_dict() == {
        "path": None,
        "trust_remote_code": False,
        "pad_token": None,
    }
    tok = pickle.loads(pickle.dumps(_new("asset")))  # datasets fingerprints transforms by pickling
    assert tok.encode("hello") == _new("asset").encode("hello") and tok.pad_token_id == 0


# ----------------------------------------------------------------------------- planted divergences


def test_planted_different_pad_id_is_caught_at_the_first_pad_position():
    """A new side built with pad_token=<|im_end|> (id 2) instead of eos (id 0): batches differ."""
    legacy = canonical.canonicalise(suite.legacy_transform(variant="asset", cutoff=64, rows=24), "token_ids")
    tok = HuggingFaceTokenizer.Config(path=str(assets.tokenizer_dir()), pad_token="<|im_end|>").build()
    planted = canonical.canonicalise(
        suite._transform_and_collate(tok, tok.pad_token_id, cutoff=64, rows=24), "token_ids"
    )
    diffs = compare(legacy, planted, "token_ids")
    assert diffs, "the planted divergence was not detected"
    first = diffs[0]
    # Labels never change (they pad with -100); the first padded input position does.
    labels = legacy["batches"][0]["labels"].source.reshape(-1)
    first_pad = int((labels == -100).nonzero()[0])
    assert (first.path, first.kind, first.phase, first.index) == (
        "token_ids.batches[0].input_ids",
        "bits",
        VALUES,
        first_pad,
    )
    assert first.expected.startswith("0") and first.actual.startswith("2")
    assert all(d.path.endswith(".input_ids") for d in diffs)


def test_planted_special_tokens_flag_is_caught():
    """A new side that drops the BOS/EOS post-processing: every text is two ids short."""
    legacy = canonical.canonicalise(suite.legacy_token_ids(variant="bos_eos", special=True), "token_ids")
    planted = canonical.canonicalise(suite.new_token_ids(variant="bos_eos", special=False), "token_ids")
    diffs = compare(legacy, planted, "token_ids")
    assert diffs, "the planted divergence was not detected"
    n = len(_new("bos_eos").encode(suite.TEXTS[0], add_special_tokens=False))
    first = diffs[0]
    assert (first.path, first.kind, first.index, first.count) == (
        f"token_ids.ids[0][{n}:{n + 2}]",
        "missing",
        n,
        2,
    )
