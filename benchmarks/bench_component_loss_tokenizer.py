"""Loss and tokenizer components vs their legacy counterparts, measured in the same run.

- ``tokenizer``: ``LLMTrainer._build_model_assets()`` (local HF folder, pad rule, vocab check)
  vs ``HuggingFaceTokenizer.Config(path=...).build(vocab_size=...)`` (the Config made once, as a
  parsed YAML is made once);
- ``loss``: the legacy loss has no builder (it lives in the model forward), so the group times
  what replaces it, one forward + backward of the debug model (batch 4, seq 128):
  ``model(input_ids, labels)["loss"]`` vs ``CrossEntropyLoss(model.forward_logits(input_ids),
  labels)``; ``ChunkedCELoss(chunks=8)`` is shown for reference (it recomputes each chunk's
  log-softmax in backward, trading time for memory) and is not held to the target;
- ``loss_build``: ``CrossEntropyLoss.Config().build()`` alone, for reference.

Run: ``python -m pytest benchmarks/bench_component_loss_tokenizer.py -n 0 --benchmark-only -q``.
Target: the component no slower than 1.1x the legacy path.
"""

from __future__ import annotations

import logging
import os

import pytest

os.environ.setdefault("HYPER_PARALLEL_PLATFORM", "torch")

# Both tokenizer builders log one line per build; keep the handlers out of the timing.
logging.getLogger("hyper_parallel").setLevel(logging.WARNING)


@pytest.fixture(scope="module")
def suite():
    from parity.suites import components_loss_tokenizer

    return components_loss_tokenizer


@pytest.fixture(scope="module")
def one_thread():
    """Shared CPUs: one intra-op thread keeps the timings of both sides comparable."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


# ----------------------------------------------------------------------------- tokenizer


@pytest.mark.benchmark(group="tokenizer", min_rounds=50)
def test_tokenizer_legacy(benchmark, suite):
    from types import SimpleNamespace

    from hyper_parallel.trainer.base import BaseTrainer
    from hyper_parallel.trainer.llm_trainer import LLMTrainer
    from parity import assets

    args = suite._legacy_args("--data.type=hf_datasets", f"--model.tokenizer_path={assets.tokenizer_dir()}")
    base = BaseTrainer.__new__(BaseTrainer)
    base.args, base.model = args, SimpleNamespace(config=SimpleNamespace(vocab_size=2048))
    wrapper = LLMTrainer.__new__(LLMTrainer)
    wrapper.args, wrapper.base = args, base
    wrapper._build_model_assets()  # warm-up: lazy transformers imports stay out of the timing
    benchmark(wrapper._build_model_assets)
    assert base.tokenizer.pad_token_id == 0


@pytest.mark.benchmark(group="tokenizer", min_rounds=50)
def test_tokenizer_component(benchmark):
    from hyper_parallel.components.tokenizer import HuggingFaceTokenizer
    from parity import assets

    config = HuggingFaceTokenizer.Config(path=str(assets.tokenizer_dir()))
    config.build(vocab_size=2048)  # warm-up, as for the legacy side
    tok = benchmark(config.build, vocab_size=2048)
    assert tok.pad_token_id == 0


# ----------------------------------------------------------------------------- loss


@pytest.fixture(scope="module")
def model_batch(suite, one_thread):
    model = suite.debug_model(0)
    ids, labels = suite.model_batch(batch=4, seq=128, data_seed=3, ignore="prompt")
    return model, ids, labels


def _warm(fn):
    fn()
    return fn


def _step(model, loss) -> None:
    loss.backward()
    for p in model.parameters():
        p.grad = None


@pytest.mark.benchmark(group="loss", min_rounds=15)
def test_loss_legacy_in_forward(benchmark, model_batch):
    model, ids, labels = model_batch
    benchmark(_warm(lambda: _step(model, model(input_ids=ids, labels=labels)["loss"])))


@pytest.mark.benchmark(group="loss", min_rounds=15)
def test_loss_component_ce(benchmark, model_batch):
    from hyper_parallel.components.loss import CrossEntropyLoss

    model, ids, labels = model_batch
    loss = CrossEntropyLoss.Config().build()
    benchmark(_warm(lambda: _step(model, loss(model.forward_logits(ids), labels))))


@pytest.mark.benchmark(group="loss", min_rounds=15)
def test_loss_component_chunked_reference(benchmark, model_batch):
    from hyper_parallel.components.loss import ChunkedCELoss

    model, ids, labels = model_batch
    loss = ChunkedCELoss.Config(chunks=8).build()
    benchmark(_warm(lambda: _step(model, loss(model.forward_logits(ids), labels))))


@pytest.mark.benchmark(group="loss_build")
def test_loss_build_reference(benchmark):
    from hyper_parallel.components.loss import CrossEntropyLoss

    config = CrossEntropyLoss.Config()
    benchmark(config.build)
