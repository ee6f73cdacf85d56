"""The MindSpore Qwen3.5 debug model against the torch one: names, logits, grads, init, meta build, dispatch.

MindSpore reports kernel errors late and re-raises them in later, unrelated ops of the same
process, so every MindSpore check runs in a fresh child
interpreter (``tests/_subprocess.child_env``) that prints one ``RESULT:`` JSON line; the parent
asserts on it. The torch/MindSpore comparison runs once per module (one child computes names,
logits, loss and gradients for both configs) to keep the 2-core budget. The bounds asserted here
and the values they were set from are in ``model_mindspore.MEASURED_DIFFS``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from types import SimpleNamespace

import pytest

pytest.importorskip("mindspore")

from hyper_parallel.models.qwen3_5.parallelize_mindspore import (
    parallelize_qwen3_5_mindspore_from_configs,
)
from tests._subprocess import REPO, child_env

# Written bounds (max abs diff, torch 2.13 CPU vs MindSpore 2.10 CPU, identical fp32 weights).
LOGITS_BOUND = 2e-5  # measured 1.32e-5 at peak |logit| 6.5; MindSpore's exp/softmax differ by ULPs
LOSS_BOUND = 1e-5  # measured 1.9e-6
GRAD_BOUND = 5e-6  # measured 8.6e-7 (embedding, peak |g| 0.49)

VARIANTS = {
    "debug": {},
    "untied_bias": {"tie_word_embeddings": False, "attention_bias": True},
}


def _run_child(code: str, timeout: float = 600, **env: str) -> dict:
    """Run ``code`` in a fresh interpreter; return the JSON after its ``RESULT:`` line."""
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=REPO,
        env=child_env(**env),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT:")]
    if proc.returncode != 0 or not lines:
        raise AssertionError(
            f"child failed (rc={proc.returncode})\nstdout:\n{proc.stdout[-3000:]}\nstderr:\n{proc.stderr[-6000:]}"
        )
    return json.loads(lines[-1].removeprefix("RESULT:"))


# ----------------------------------------------------------------------------- torch vs MindSpore
_PARITY_CHILD = """
import json, os, tempfile
import numpy as np
import torch
import mindspore as ms
from safetensors.torch import save_file
from types import SimpleNamespace

from hyper_parallel.models.qwen3_5 import model as tm
from hyper_parallel.models.qwen3_5 import model_mindspore as mm
from hyper_parallel.models.qwen3_5.config import FLAVORS, Qwen3_5Config
from hyper_parallel.models.qwen3_5.parallelize_mindspore import parallelize_qwen3_5_mindspore_from_configs

VARIANTS = %(variants)r
out = {}
tmp = tempfile.mkdtemp()
for variant, overrides in VARIANTS.items():
    cfg = Qwen3_5Config(**{**FLAVORS["debug"], **overrides})
    torch.manual_seed(0)
    t = tm.build_from_config(cfg)
    t.init_weights()  # the new path's init: kaiming matrices (small logits), zero vectors
    with torch.no_grad():  # non-zero norm weights and biases, so 1 + w and + b are exercised
        for _n, p in t.named_parameters():
            if p.dim() == 1:
                p.normal_(0.0, 0.1)
    m = mm.build_from_config(cfg)
    rec = {
        "torch_names": [(n, list(p.shape), str(p.dtype).removeprefix("torch.")) for n, p in t.named_parameters()],
        "ms_names": [(n, list(p.shape), str(p.dtype).lower()) for n, p in m.named_parameters()],
        "ms_param_names": [p.name for _n, p in m.named_parameters()],
        "ms_parameters_len": len(list(m.parameters())),
        "torch_state_keys": list(t.state_dict().keys()),
        "ms_state_keys": list(m.state_dict().keys()),
        "tied": m.lm_head.weight is m.model.embed_tokens.weight,
    }
    # Weights travel through a safetensors file written by torch and read by MindSpore, by name.
    path = os.path.join(tmp, variant + ".safetensors")
    save_file({n: p.detach().contiguous() for n, p in t.named_parameters()}, path)
    loaded = ms.load_checkpoint(path, format="safetensors")
    params = dict(m.named_parameters())
    for name, value in loaded.items():
        params[name].set_data(ms.Tensor(value.asnumpy()))
    rec["loaded"] = sorted(loaded) == sorted(params)

    g = torch.Generator().manual_seed(1)
    ids = torch.randint(0, cfg.vocab_size, (2, 16), generator=g)
    labels = torch.randint(0, cfg.vocab_size, (2, 16), generator=g)
    res = t(ids, labels=labels)
    res["loss"].backward()
    t_logits = res["logits"].detach().numpy()
    t_grads = {n: p.grad.numpy() for n, p in t.named_parameters()}

    ms_ids, ms_labels = ms.Tensor(ids.numpy()), ms.Tensor(labels.numpy())
    logits = m.forward_logits(ms_ids)
    rec["logits_dtype"] = str(logits.dtype)
    rec["logits_shape"] = list(logits.shape)
    rec["logits_diff"] = float(np.abs(logits.asnumpy() - t_logits).max())
    rec["logits_peak"] = float(np.abs(t_logits).max())
    rec["torch_input_same"] = bool(np.array_equal(m.forward_logits(ids).asnumpy(), logits.asnumpy()))
    rec["numpy_input_same"] = bool(np.array_equal(m.forward_logits(ids.numpy()).asnumpy(), logits.asnumpy()))
    rec["inv_freq_equal"] = bool(np.array_equal(m.rotary_emb.inv_freq.asnumpy(), t.rotary_emb.inv_freq.numpy()))

    names = [n for n, _p in m.named_parameters()]
    plist = list(m.parameters())

    def loss_fn():
        r = m(ms_ids, labels=ms_labels)
        return r["loss"], r["logits"]

    (loss, _), grads = ms.value_and_grad(loss_fn, None, plist, has_aux=True)()
    rec["loss_diff"] = abs(float(loss.asnumpy()) - res["loss"].item())
    diffs = {n: float(np.abs(gr.asnumpy() - t_grads[n]).max()) for n, gr in zip(names, grads)}
    rec["grad_diff"] = max(diffs.values())
    rec["grad_worst"] = max(diffs, key=diffs.get)
    rec["grad_peak"] = max(float(np.abs(v).max()) for v in t_grads.values())

    # Activation checkpointing (Cell.recompute per layer) must not change a gradient bit.
    parallelize_qwen3_5_mindspore_from_configs(
        m,
        SimpleNamespace(world_size=1),
        training=SimpleNamespace(enable_mixed_precision=False),
        parallelism=SimpleNamespace(tensor_parallel_degree=1, context_parallel_degree=1,
                                    pipeline_parallel_degree=1, expert_parallel_degree=1),
        activation_checkpoint=SimpleNamespace(mode="full"),
    )
    (_, _), grads_ac = ms.value_and_grad(loss_fn, None, plist, has_aux=True)()
    rec["recompute_grads_equal"] = all(np.array_equal(a.asnumpy(), b.asnumpy()) for a, b in zip(grads, grads_ac))
    out[variant] = rec
print("RESULT:" + json.dumps(out))
"""


@pytest.fixture(scope="module")
def parity() -> dict:
    return _run_child(_PARITY_CHILD % {"variants": VARIANTS})


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_named_parameters_match_torch(parity, variant):
    rec = parity[variant]
    assert rec["ms_names"] == rec["torch_names"]  # names, shapes, dtypes (float32), order
    assert rec["ms_param_names"] == [n for n, _s, _d in rec["torch_names"]]  # Parameter.name == FQN
    assert rec["ms_parameters_len"] == len(rec["torch_names"])
    assert rec["ms_state_keys"] == rec["torch_state_keys"]  # the tied head appears in both state dicts
    assert rec["tied"] is (variant == "debug")


def test_untied_bias_variant_has_biases_and_a_head(parity):
    names = [n for n, _s, _d in parity["untied_bias"]["ms_names"]]
    assert "model.layers.0.self_attn.q_proj.bias" in names and names[-1] == "lm_head.weight"


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_logits_match_torch(parity, variant):
    rec = parity[variant]
    print(f"{variant}: logits max abs diff {rec['logits_diff']:.3g} (peak |logit| {rec['logits_peak']:.3g})")
    assert rec["loaded"] and rec["inv_freq_equal"]
    assert rec["logits_dtype"] == "Float32" and rec["logits_shape"] == [2, 16, 2048]
    assert rec["logits_diff"] < LOGITS_BOUND
    assert rec["torch_input_same"] and rec["numpy_input_same"]


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_loss_and_grads_match_torch(parity, variant):
    rec = parity[variant]
    print(
        f"{variant}: loss diff {rec['loss_diff']:.3g}, grad max abs diff {rec['grad_diff']:.3g} "
        f"({rec['grad_worst']}, peak |g| {rec['grad_peak']:.3g})"
    )
    assert rec["loss_diff"] < LOSS_BOUND
    assert rec["grad_diff"] < GRAD_BOUND


def test_recompute_keeps_gradients_bitwise(parity):
    assert all(rec["recompute_grads_equal"] for rec in parity.values())


# ----------------------------------------------------------------------------- init_weights
_INIT_CHILD = """
import hashlib, json, math
import numpy as np
import mindspore as ms
from hyper_parallel.models.qwen3_5 import model_mindspore as mm
from hyper_parallel.models.qwen3_5.config import FLAVORS, Qwen3_5Config

def digest(model):
    h = hashlib.sha256()
    for name, p in model.named_parameters():
        h.update(name.encode()); h.update(p.asnumpy().tobytes())
    return h.hexdigest()

m = mm.build_from_config(Qwen3_5Config(**FLAVORS["debug"]))
ms.set_seed(%(seed)d); m.init_weights()
first = digest(m)
stats = {}
for name, p in m.named_parameters():
    a = p.asnumpy()
    if a.ndim >= 2:
        bound = math.sqrt(6.0 / a.shape[1])  # kaiming_uniform_(a=0) on [out, in], the torch model's rule
        stats[name] = [float(np.abs(a).max()), bound, float(a.mean()), float(a.std()), bound / math.sqrt(3.0)]
    else:
        stats[name] = [float(np.abs(a).max())]
ms.set_seed(%(seed)d); m.init_weights()
again = digest(m)
ms.set_seed(%(seed)d + 1); m.init_weights()
other = digest(m)
print("RESULT:" + json.dumps({"first": first, "again": again, "other": other, "stats": stats,
                              "tied": m.lm_head.weight is m.model.embed_tokens.weight}))
"""


def test_init_weights_is_deterministic_and_kaiming_uniform():
    a = _run_child(_INIT_CHILD % {"seed": 7})
    b = _run_child(_INIT_CHILD % {"seed": 7})
    assert a["first"] == a["again"] == b["first"]  # same seed: same bits, in-process and across processes
    assert a["other"] != a["first"]
    assert a["tied"]
    for name, s in a["stats"].items():
        if len(s) == 1:
            assert s[0] == 0.0, f"{name}: vectors start at zero"
            continue
        peak, bound, mean, std, expected_std = s
        assert peak <= bound and peak > 0.99 * bound, f"{name}: peak {peak} vs bound {bound}"
        assert abs(mean) < 0.05 * bound and abs(std - expected_std) < 0.05 * expected_std, name


# ----------------------------------------------------------------------------- meta build
_META_CHILD = """
import hashlib, json
import numpy as np
import mindspore as ms
from mindspore.nn.utils import no_init_parameters
from hyper_parallel.models.qwen3_5 import model_mindspore as mm
from hyper_parallel.models.qwen3_5.config import FLAVORS, Qwen3_5Config
from hyper_parallel.protocols import verify_module_protocol

cfg = Qwen3_5Config(**FLAVORS["debug"])

def digest(model):
    h = hashlib.sha256()
    for name, p in model.named_parameters():
        h.update(name.encode()); h.update(p.asnumpy().tobytes())
    return h.hexdigest()

eager = mm.build_from_config(cfg)
ms.set_seed(3); eager.init_weights()
reference = digest(eager)
names = [n for n, _p in eager.named_parameters()]
ids = ms.Tensor(np.arange(32, dtype=np.int64).reshape(2, 16))
ref_logits = eager.forward_logits(ids).asnumpy()
out = {}
for label, context in (("no_init_parameters", no_init_parameters), ("meta_device", lambda: ms.DeviceCtx("meta"))):
    with context():
        m = mm.build_from_config(cfg)
    deferred = [bool(p.has_init) or str(getattr(p, "device", "")).lower() == "meta" for _n, p in m.named_parameters()]
    verify_module_protocol(m)
    for name, p in m.named_parameters():  # what HyperTrainer does for training.freeze_modules
        if "mlp" in name:
            p.requires_grad = False
    m.to_empty(device="cpu")
    materialised = not any(bool(p.has_init) for _n, p in m.named_parameters())
    ms.set_seed(3); m.init_weights(buffer_device="cpu")
    m.train(); m.eval()
    out[label] = {
        "deferred": all(deferred),
        "materialised": materialised,
        "same_bits_as_eager": digest(m) == reference,
        "names": [n for n, _p in m.named_parameters()] == names,
        "tied": m.lm_head.weight is m.model.embed_tokens.weight,
        "frozen": sorted(n for n, p in m.named_parameters() if not p.requires_grad) ==
                  sorted(n for n in names if "mlp" in n),
        "logits_equal": bool(np.array_equal(m.forward_logits(ids).asnumpy(), ref_logits)),
    }
print("RESULT:" + json.dumps(out))
"""


def test_meta_build_then_to_empty_and_init_weights():
    out = _run_child(_META_CHILD)
    for label, rec in out.items():
        assert all(rec.values()), f"{label}: {rec}"


# ----------------------------------------------------------------------------- dispatch
_DISPATCH_CHILD = """
import json, os
import numpy as np
import mindspore as ms
from mindspore import ops
import hyper_parallel.platform as hp

try:
    hp.get_platform()
    mode = "platform"
except ImportError:
    # The MindSpore platform is still a placeholder: stand in for it with the few members the
    # dispatch and the state-dict adapter use, so the dispatch itself is what is tested.
    class _Stub:
        name = "mindspore"
        def detached_copy(self, t):
            return ops.deepcopy(ops.stop_gradient(t))
        def load_safetensors(self, path):
            return {k: ms.Tensor(v.asnumpy()) for k, v in ms.load_checkpoint(str(path), format="safetensors").items()}
    hp._cached = _Stub()
    mode = "stub"

from hyper_parallel.models.qwen3_5 import model_mindspore as mm
from hyper_parallel.models.qwen3_5.config import FLAVORS, Qwen3_5Config
from hyper_parallel.models.qwen3_5.parallelize_mindspore import parallelize_qwen3_5_mindspore_from_configs
from hyper_parallel.models.qwen3_5.state_dict import Qwen3_5StateDictAdapter
from hyper_parallel.recipes.qwen3_5 import debug, model_spec

cfg = Qwen3_5Config(**FLAVORS["debug"])
model = cfg.build()
spec = model_spec("debug")
rec = {
    "mode": mode,
    "build_is_ms": type(model) is mm.Qwen3_5ForCausalLM,
    "spec_parallelize_is_ms": spec.parallelize_fn is parallelize_qwen3_5_mindspore_from_configs,
    "recipe_parallelize_is_ms": debug().model_spec.parallelize_fn is parallelize_qwen3_5_mindspore_from_configs,
}

# HF export of a MindSpore state dict, then an HF folder read back as MindSpore tensors.
adapter = Qwen3_5StateDictAdapter()
state = model.state_dict()
hf = adapter.save_hf_state_dict(state, cfg)
rec["hf_keys"] = sorted(hf) == sorted(
    ("model.language_model." + k[len("model."):]) if k.startswith("model.") else k for k in state)
rec["hf_tied_copied"] = hf["lm_head.weight"] is not hf["model.language_model.embed_tokens.weight"]
rec["hf_tied_equal"] = bool(np.array_equal(hf["lm_head.weight"].asnumpy(), state["lm_head.weight"].asnumpy()))

import tempfile
from safetensors.numpy import save_file
folder = tempfile.mkdtemp()
arrays = {k: v.asnumpy() for k, v in hf.items() if k != "lm_head.weight"}  # a tied HF checkpoint
arrays["model.visual.patch.weight"] = np.zeros((2, 2), np.float32)  # dropped on load
save_file(arrays, os.path.join(folder, "model.safetensors"))
loaded = adapter.load_hf_state_dict(folder, cfg, dtype=ms.float32)
rec["load_keys"] = sorted(loaded) == sorted(state)
rec["load_is_ms"] = all(isinstance(v, ms.Tensor) for v in loaded.values())
rec["load_values"] = all(np.array_equal(loaded[k].asnumpy(), state[k].asnumpy()) for k in state)
rec["load_head_copied"] = loaded["lm_head.weight"] is not loaded["model.embed_tokens.weight"]
print("RESULT:" + json.dumps(rec))
"""


def test_platform_mindspore_dispatches_build_plan_and_adapter():
    rec = _run_child(_DISPATCH_CHILD, HYPER_PARALLEL_PLATFORM="mindspore")
    print(f"dispatch checked against the {rec.pop('mode')} MindSpore platform")
    assert all(rec.values()), rec


# ----------------------------------------------------------------------------- parallelize refusals
def _configs(**changes):
    cfg = {
        "parallel_dims": SimpleNamespace(world_size=1),
        "training": SimpleNamespace(enable_mixed_precision=False),
        "parallelism": SimpleNamespace(
            tensor_parallel_degree=1,
            context_parallel_degree=1,
            pipeline_parallel_degree=1,
            expert_parallel_degree=1,
        ),
        "activation_checkpoint": SimpleNamespace(mode="none"),
        "compile": SimpleNamespace(enable=False),
    }
    for key, value in changes.items():
        head, _, attr = key.partition(".")
        if attr:
            setattr(cfg[head], attr, value)
        else:
            cfg[head] = value
    return cfg


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"parallel_dims.world_size": 2}, "world_size=2"),
        ({"parallelism.tensor_parallel_degree": 2}, "parallelism.tensor_parallel_degree=2"),
        ({"parallelism.context_parallel_degree": 2}, "parallelism.context_parallel_degree=2"),
        ({"parallelism.pipeline_parallel_degree": 2}, "parallelism.pipeline_parallel_degree=2"),
        ({"training.enable_mixed_precision": True}, "training.enable_mixed_precision=True"),
        ({"compile.enable": True}, "compile.enable=True"),
    ],
)
def test_parallelize_refuses_what_mindspore_cannot_honour(change, field):
    cfg = _configs(**change)
    model = SimpleNamespace(layers=[])
    with pytest.raises(ValueError, match=field.replace(".", r"\.")) as info:
        parallelize_qwen3_5_mindspore_from_configs(model, cfg.pop("parallel_dims"), **cfg)
    assert "\n" not in str(info.value)


def test_parallelize_applies_nothing_by_default_and_recompute_for_ac():
    calls = []
    layer = SimpleNamespace(recompute=lambda: calls.append("recompute"))
    model = SimpleNamespace(layers=[layer, layer])
    cfg = _configs()
    assert parallelize_qwen3_5_mindspore_from_configs(model, cfg.pop("parallel_dims"), **cfg) is model
    assert calls == []
    cfg = _configs(**{"activation_checkpoint.mode": "full"})
    parallelize_qwen3_5_mindspore_from_configs(model, cfg.pop("parallel_dims"), **cfg)
    assert calls == ["recompute", "recompute"]
