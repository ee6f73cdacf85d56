"""The model pieces the new path uses: Config.build, update_from_config, init_weights."""

from __future__ import annotations

from types import SimpleNamespace as NS

import pytest
import torch

from hyper_parallel.models.qwen3_5 import FLAVORS, Qwen3_5Config
from hyper_parallel.protocols import verify_module_protocol
from parity import assert_bitwise_equal, canonical
from parity.compare import compare
from tests.torch.ut.components._legacy import bare_trainer, legacy_args


def _legacy_materialised(seed: int):
    from hyper_parallel.models.qwen3_5 import build_qwen3_5

    args = legacy_args()
    with torch.device("meta"):
        model = build_qwen3_5(args)
    trainer = bare_trainer(args, model=model)
    torch.manual_seed(seed)
    trainer._materialize_and_init_shards()
    return trainer.model


def _new_materialised(seed: int):
    with torch.device("meta"):
        model = Qwen3_5Config(**FLAVORS["debug"]).build()
    model.to_empty(device="cpu")
    torch.manual_seed(seed)
    model.init_weights(buffer_device="cpu")
    return model


def _state(model) -> dict:
    return canonical.checkpoint({**model.state_dict(), "inv_freq": model.rotary_emb.inv_freq})


def test_init_weights_equals_legacy_materialisation():
    assert_bitwise_equal(_state(_legacy_materialised(7)), _state(_new_materialised(7)), "model")


def test_init_weights_divergence_is_caught():
    different = compare(_state(_legacy_materialised(7)), _state(_new_materialised(8)), "model")
    assert different and different[0].path.startswith("model.state")


def test_built_model_satisfies_the_module_protocol():
    with torch.device("meta"):
        model = Qwen3_5Config(**FLAVORS["debug"]).build()
    verify_module_protocol(model)
    assert model.lm_head.weight is model.model.embed_tokens.weight


def test_update_from_config_rejects_indivisible_heads():
    config = Qwen3_5Config(**FLAVORS["debug"])
    config.update_from_config(trainer_config=NS(parallelism=NS(tensor_parallel_degree=1)))
    with pytest.raises(
        ValueError, match="num_attention_heads=4 is not divisible by tensor_parallel_degree=3"
    ):
        config.update_from_config(trainer_config=NS(parallelism=NS(tensor_parallel_degree=3)))
