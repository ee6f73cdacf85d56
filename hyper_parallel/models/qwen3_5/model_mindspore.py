"""Qwen3.5-style decoder-only LM on MindSpore: the torch model (``model.py``) op for op.

The Cell tree mirrors the torch module tree attribute for attribute, so parameter names are the
torch FQNs (``model.layers.0.self_attn.q_proj.weight``, ...), with the same shapes, dtype (float32)
and registration order. That lets one state dict, one HF key mapping and one optimizer grouping
serve both frameworks, and lets the tests load torch weights by name and compare logits.

MindSpore 2.10 on CPU lacks several fused kernels (``mint.nn.Embedding``, ``ops.rms_norm``, SDPA,
measured on MindSpore 2.10), so the embedding, the zero-centred RMSNorm and causal
attention are written out with ``mindspore.ops``. The class also speaks the small torch-shaped
module API that HyperTrainer and the components use: ``config``, ``forward_logits``,
``named_parameters``/``parameters``, ``to_empty``, ``init_weights``, ``train``/``eval``.

Measured against the torch model (``tests/mindspore/models/test_model_mindspore.py``, debug flavour,
batch 2 x 16, identical fp32 weights, torch 2.13 vs MindSpore 2.10 on CPU): see
:data:`MEASURED_DIFFS`. The differences come from MindSpore's exp/softmax/sigmoid kernels (a few
ULPs each) and, less, from torch's blocked CPU SDPA; matmul and rsqrt are bit-identical.
"""

from __future__ import annotations

import decimal
import math
import struct
from typing import TYPE_CHECKING, Any, cast

import mindspore as ms
import numpy as np
from mindspore import Parameter, Tensor, nn, ops
from mindspore.common.initializer import HeUniform, Normal, Uniform, Zero, initializer

from hyper_parallel.models.qwen3_5.constants import LINEAR_ATTENTION_NOT_IMPLEMENTED

if TYPE_CHECKING:  # the config imports this module to build; at run time this module needs only its fields
    from hyper_parallel.models.qwen3_5.config import Qwen3_5Config

__all__ = [
    "IGNORE_INDEX",
    "MEASURED_DIFFS",
    "Qwen3_5Attention",
    "Qwen3_5DecoderLayer",
    "Qwen3_5Embedding",
    "Qwen3_5ForCausalLM",
    "Qwen3_5Linear",
    "Qwen3_5MLP",
    "Qwen3_5RMSNorm",
    "Qwen3_5RotaryEmbedding",
    "Qwen3_5TextModel",
    "build_from_config",
]

IGNORE_INDEX = -100

# Max abs differences vs the torch model, measured by tests/mindspore/models/test_model_mindspore.py
# (2-core x86-64 CPU; debug flavour, weights from the torch model's init_weights(seed 0) with
# N(0, 0.1) vectors, batch 2 x 16). The tests assert the bounds in brackets. The gap grows
# layer by layer from MindSpore's exp/softmax/sigmoid kernels (a few ULPs each; matmul and rsqrt
# are bit-identical): about 2e-6 after one attention block, 1.8e-5 on the hidden state after two.
MEASURED_DIFFS: dict[str, float] = {
    "logits": 1.32e-5,  # peak |logit| 6.5  [bound 2e-5]
    "logits_untied_bias": 9.8e-6,  # tie_word_embeddings=False, attention_bias=True; peak 6.0  [2e-5]
    "loss": 1.9e-6,  # CE mean, worst of the two variants  [bound 1e-5]
    "grads": 8.6e-7,  # max |g_ms - g_torch| over all params (embedding), peak |g| 0.49  [bound 5e-6]
}

# The slope ``nn.Linear``'s constructor passes to ``kaiming_uniform_`` (the layers below mirror it
# when built), and the one the torch model's ``init_weights`` uses (``kaiming_uniform_``'s own
# default, ``a=0``: bound ``sqrt(6 / fan_in)``, sqrt(6) ~ 2.45x wider than the constructor's).
_KAIMING_A_CONSTRUCTOR = math.sqrt(5.0)
_KAIMING_A_INIT_WEIGHTS = 0.0


# ----------------------------------------------------------------------------- leaf cells
def _kaiming_bound(shape: tuple[int, ...], a: float = _KAIMING_A_INIT_WEIGHTS) -> float:
    """``kaiming_uniform_(a=a)``'s bound (fan_in, leaky_relu gain), with torch's exact float steps."""
    fan_in = shape[1] * math.prod(shape[2:]) if len(shape) > 1 else shape[0]
    gain = math.sqrt(2.0 / (1 + a**2))
    std = gain / math.sqrt(fan_in)
    return math.sqrt(3.0) * std


class Qwen3_5Linear(nn.Cell):
    """``y = x @ W^T (+ b)`` with ``weight [out, in]`` (torch ``nn.Linear``'s layout and name).

    Parameters are created from lazy initializers, so ``no_init_parameters()`` can defer them.
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = False) -> None:
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.weight = Parameter(
            initializer(
                HeUniform(negative_slope=_KAIMING_A_CONSTRUCTOR), (out_features, in_features), ms.float32
            )
        )
        if bias:
            bound = 1.0 / math.sqrt(in_features)
            self.bias = Parameter(initializer(Uniform(bound), (out_features,), ms.float32))
        else:
            self.bias = None

    def construct(self, x: Tensor) -> Tensor:
        y = ops.matmul(x, self.weight.T)
        if self.bias is not None:
            y = y + self.bias
        return y


class Qwen3_5Embedding(nn.Cell):
    """Token embedding with a Parameter named ``weight`` (``nn.Embedding`` names it ``embedding_table``)."""

    def __init__(self, num_embeddings: int, embedding_dim: int) -> None:
        super().__init__()
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        self.weight = Parameter(initializer(Normal(sigma=1.0), (num_embeddings, embedding_dim), ms.float32))

    def construct(self, input_ids: Tensor) -> Tensor:
        return ops.gather(self.weight, input_ids, 0)


class Qwen3_5RMSNorm(nn.Cell):
    """Zero-centred RMSNorm: the weight starts at 0 and scales by ``1 + w``, computed in float32."""

    def __init__(self, dim: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.eps = eps
        self.weight = Parameter(initializer(Zero(), (dim,), ms.float32))

    def construct(self, x: Tensor) -> Tensor:
        xf = x.astype(ms.float32)
        y = xf * ops.rsqrt((xf * xf).mean(-1, keep_dims=True) + self.eps)
        return (y * (1.0 + self.weight.astype(ms.float32))).astype(x.dtype)


# ----------------------------------------------------------------------------- RoPE
def _f32(x: float) -> float:
    """``x`` rounded to the nearest float32 (IEEE round-half-even, done by ``struct``)."""
    return struct.unpack("<f", struct.pack("<f", x))[0]


def inv_freq_values(rotary_dim: int, rope_theta: float) -> list[float]:
    """``1 / theta^(arange(0, R, 2) / R)`` as float32 values, the torch model's formula, in exact Python.

    The exponent is the float32 quotient (as ``arange(...).float() / R``); the power is taken in
    60-digit decimal arithmetic and rounded once to float32, then the reciprocal is rounded to
    float32. No numpy or libm float kernel is involved, so the values are the same on every CPU:
    numpy's own float32 ``power`` differs between its AVX-512 and AVX2 code paths (5 of 32 entries
    at R=64), and libm's between its FMA and non-FMA variants. These values equal numpy's AVX2
    path and torch's AVX2 kernels for R up to 128 and theta 1e4, 1e6, 1e7 (one entry of torch's
    differs at R=128, theta=1e6).
    """
    context = decimal.Context(prec=60)
    theta = decimal.Decimal(_f32(float(rope_theta)))
    values = []
    for k in range(0, rotary_dim, 2):
        exponent = decimal.Decimal(_f32(_f32(float(k)) / float(rotary_dim)))
        power = _f32(float(context.power(theta, exponent)))
        values.append(_f32(1.0 / power))
    return values


def _inv_freq(rotary_dim: int, rope_theta: float) -> Tensor:
    """The ``inv_freq`` buffer: :func:`inv_freq_values` as a float32 tensor."""
    return Tensor(np.asarray(inv_freq_values(rotary_dim, rope_theta), dtype=np.float32))


class Qwen3_5RotaryEmbedding(nn.Cell):
    """Partial RoPE over the first R channels of each head (text: mRoPE reduces to 1-D RoPE).

    ``inv_freq`` is a non-persistent buffer, as in torch; :meth:`reset_inv_freq` rebuilds it after
    meta materialisation.
    """

    def __init__(self, config: Qwen3_5Config) -> None:
        super().__init__()
        self.rotary_dim = config.rotary_dim
        self.rope_theta = config.rope_theta
        self.register_buffer("inv_freq", _inv_freq(self.rotary_dim, self.rope_theta), persistent=False)

    def reset_inv_freq(self) -> None:
        """Recompute ``inv_freq`` (after ``to_empty``)."""
        self.register_buffer("inv_freq", _inv_freq(self.rotary_dim, self.rope_theta), persistent=False)

    def construct(self, x: Tensor, position_ids: Tensor) -> tuple[Tensor, Tensor]:
        """``cos, sin`` of shape ``[B, S, R]`` in ``x``'s dtype (computed in float32)."""
        inv_freq = cast(Tensor, self.inv_freq).astype(ms.float32)
        freqs = position_ids.astype(ms.float32)[..., None] * inv_freq
        emb = ops.cat((freqs, freqs), axis=-1)
        return ops.cos(emb).astype(x.dtype), ops.sin(emb).astype(x.dtype)


def rotate_half(u: Tensor) -> Tensor:
    half = u.shape[-1] // 2
    return ops.cat((-u[..., half:], u[..., :half]), axis=-1)


def apply_rotary(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    """Rotate the first R channels of ``x [B, H, S, D]``; ``cos``/``sin`` are ``[B, S, R]``."""
    cos = cos.expand_dims(1)
    sin = sin.expand_dims(1)
    r = cos.shape[-1]
    x_rot, x_pass = x[..., :r], x[..., r:]
    x_rot = (x_rot * cos) + (rotate_half(x_rot) * sin)
    return ops.cat((x_rot, x_pass), axis=-1)


# ----------------------------------------------------------------------------- blocks
def _repeat_kv(x: Tensor, groups: int) -> Tensor:
    """``x.repeat_interleave(groups, dim=1)`` for ``[B, H_kv, S, D]`` (head j -> heads j*g..j*g+g-1)."""
    b, h, s, d = x.shape
    return ops.broadcast_to(x[:, :, None, :, :], (b, h, groups, s, d)).reshape(b, h * groups, s, d)


def causal_attention(query: Tensor, key: Tensor, value: Tensor, scale: float) -> Tensor:
    """``softmax(q k^T * scale + causal) v`` in float32: SDPA(is_causal=True) written out.

    The masked scores are ``-inf``; the diagonal is never masked, so no row is all ``-inf``.
    """
    s_q, s_k = query.shape[-2], key.shape[-2]
    scores = ops.matmul(query.astype(ms.float32), key.astype(ms.float32).swapaxes(-1, -2)) * scale
    mask = Tensor(np.triu(np.ones((s_q, s_k), dtype=np.bool_), k=1))
    scores = ops.masked_fill(scores, mask, float("-inf"))
    probs = ops.softmax(scores, axis=-1)
    return ops.matmul(probs, value.astype(ms.float32)).astype(value.dtype)


class Qwen3_5Attention(nn.Cell):
    """Causal GQA with q/k RMSNorm, partial RoPE and a per-head sigmoid output gate."""

    def __init__(self, config: Qwen3_5Config) -> None:
        super().__init__()
        h, heads, kv_heads, d = (
            config.hidden_size,
            config.num_attention_heads,
            config.num_key_value_heads,
            config.head_dim,
        )
        self.num_heads = heads
        self.num_kv_heads = kv_heads
        self.head_dim = d
        self.gated = config.attn_output_gate
        self.scale = d**-0.5
        bias = config.attention_bias
        # Gated layout is per head: features [2D*j, 2D*j+D) are head j's query, [2D*j+D, 2D*(j+1)) its gate.
        self.q_proj = Qwen3_5Linear(h, heads * d * (2 if self.gated else 1), bias=bias)
        self.k_proj = Qwen3_5Linear(h, kv_heads * d, bias=bias)
        self.v_proj = Qwen3_5Linear(h, kv_heads * d, bias=bias)
        self.o_proj = Qwen3_5Linear(heads * d, h, bias=bias)
        self.q_norm = Qwen3_5RMSNorm(d, eps=config.rms_norm_eps)
        self.k_norm = Qwen3_5RMSNorm(d, eps=config.rms_norm_eps)

    def construct(self, x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
        b, s, _ = x.shape
        d = self.head_dim
        if self.gated:
            qg = self.q_proj(x).reshape(b, s, self.num_heads, 2 * d)
            query, gate = qg[..., :d], qg[..., d:].reshape(b, s, self.num_heads * d)
        else:
            query, gate = self.q_proj(x).reshape(b, s, self.num_heads, d), None

        query = self.q_norm(query).swapaxes(1, 2)
        key = self.k_norm(self.k_proj(x).reshape(b, s, self.num_kv_heads, d)).swapaxes(1, 2)
        value = self.v_proj(x).reshape(b, s, self.num_kv_heads, d).swapaxes(1, 2)

        query = apply_rotary(query, cos, sin)
        key = apply_rotary(key, cos, sin)

        groups = self.num_heads // self.num_kv_heads
        if groups > 1:
            key = _repeat_kv(key, groups)
            value = _repeat_kv(value, groups)

        out = causal_attention(query, key, value, self.scale)
        out = out.swapaxes(1, 2).reshape(b, s, self.num_heads * d)
        if gate is not None:
            out = out * ops.sigmoid(gate)
        return self.o_proj(out)


class Qwen3_5MLP(nn.Cell):
    """SwiGLU feed-forward."""

    def __init__(self, config: Qwen3_5Config) -> None:
        super().__init__()
        if config.hidden_act != "silu":
            raise NotImplementedError(f"hidden_act={config.hidden_act!r} is not supported; expected 'silu'")
        self.gate_proj = Qwen3_5Linear(config.hidden_size, config.intermediate_size)
        self.up_proj = Qwen3_5Linear(config.hidden_size, config.intermediate_size)
        self.down_proj = Qwen3_5Linear(config.intermediate_size, config.hidden_size)

    def construct(self, x: Tensor) -> Tensor:
        return self.down_proj(ops.silu(self.gate_proj(x)) * self.up_proj(x))


class Qwen3_5DecoderLayer(nn.Cell):
    """Pre-norm block: ``h + attn(norm(h))`` then ``h + mlp(norm(h))``."""

    def __init__(self, config: Qwen3_5Config, layer_idx: int) -> None:
        super().__init__()
        if cast(list[str], config.layer_types)[layer_idx] != "full_attention":
            raise NotImplementedError(f"layer_types[{layer_idx}]: {LINEAR_ATTENTION_NOT_IMPLEMENTED}")
        self.self_attn = Qwen3_5Attention(config)
        self.mlp = Qwen3_5MLP(config)
        self.input_layernorm = Qwen3_5RMSNorm(config.hidden_size, eps=config.rms_norm_eps)
        self.post_attention_layernorm = Qwen3_5RMSNorm(config.hidden_size, eps=config.rms_norm_eps)

    def construct(self, hidden: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
        hidden = hidden + self.self_attn(self.input_layernorm(hidden), cos, sin)
        return hidden + self.mlp(self.post_attention_layernorm(hidden))


class Qwen3_5TextModel(nn.Cell):
    """Embedding, decoder stack and final norm (registration order: embed, rope, layers, norm)."""

    def __init__(self, config: Qwen3_5Config) -> None:
        super().__init__()
        self.embed_tokens = Qwen3_5Embedding(config.vocab_size, config.hidden_size)
        self.rotary_emb = Qwen3_5RotaryEmbedding(config)
        self.layers = nn.CellList([Qwen3_5DecoderLayer(config, i) for i in range(config.num_hidden_layers)])
        self.norm = Qwen3_5RMSNorm(config.hidden_size, eps=config.rms_norm_eps)

    def construct(self, input_ids: Tensor, position_ids: Tensor | None = None) -> Tensor:
        hidden = self.embed_tokens(input_ids)
        cos, sin = self.rotary_emb(hidden, _positions(input_ids, position_ids))
        for layer in self.layers:
            hidden = layer(hidden, cos, sin)
        return self.norm(hidden)


def _positions(input_ids: Tensor, position_ids: Tensor | None) -> Tensor:
    """``[B, S]`` positions: default ``arange(S)``, a 1-D tensor is broadcast, 3-D (mRoPE) is refused."""
    b, s = input_ids.shape
    if position_ids is None:
        return Tensor(np.broadcast_to(np.arange(s, dtype=np.int64), (b, s)).copy())
    if position_ids.ndim == 1:
        return ops.broadcast_to(position_ids[None, :], (b, position_ids.shape[0]))
    if position_ids.ndim == 2:
        return position_ids
    raise NotImplementedError(
        f"position_ids with {position_ids.ndim} dims (mRoPE) are not supported; expected [S] or [B, S]"
    )


def _as_mindspore(x: Any) -> Any:
    """A MindSpore tensor for ``x``: MindSpore tensors pass, torch tensors and numpy arrays convert.

    torch is never imported here: a torch tensor is recognised by its ``numpy()`` + module name.
    """
    if x is None or isinstance(x, Tensor):
        return x
    if type(x).__module__.startswith("torch"):
        return Tensor(x.detach().cpu().numpy())
    return Tensor(np.asarray(x))


# ----------------------------------------------------------------------------- the LM
class Qwen3_5ForCausalLM(nn.Cell):
    """Causal LM head over :class:`Qwen3_5TextModel`; ``construct`` also computes the loss."""

    def __init__(self, config: Qwen3_5Config) -> None:
        super().__init__()
        self.config = config
        self.model = Qwen3_5TextModel(config)
        self.lm_head = Qwen3_5Linear(config.hidden_size, config.vocab_size)
        self.tie_weights()

    # Forwarding properties, as on the torch model.
    @property
    def layers(self) -> nn.CellList:
        return self.model.layers

    @property
    def embed_tokens(self) -> Qwen3_5Embedding:
        return self.model.embed_tokens

    @property
    def norm(self) -> Qwen3_5RMSNorm:
        return self.model.norm

    @property
    def rotary_emb(self) -> Qwen3_5RotaryEmbedding:
        return self.model.rotary_emb

    def tie_weights(self) -> None:
        """Share ``embed_tokens.weight`` (the Parameter object itself) with ``lm_head`` when tied."""
        if self.config.tie_word_embeddings and self.lm_head.weight is not self.model.embed_tokens.weight:
            self.lm_head.weight = self.model.embed_tokens.weight

    # ------------------------------------------------------------ torch-shaped module API
    def named_parameters(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True) -> Any:
        """``(fqn, Parameter)`` in registration order, a shared (tied) Parameter once, as torch.

        MindSpore's ``parameters_and_names`` walks the Cell tree in the same pre-order as torch's
        ``named_parameters`` and already de-duplicates by identity. With ``remove_duplicate=False``
        every name is listed, a tied Parameter under each of its names (the checkpoint loader asks
        for that), walking the cells in the same order.
        """
        if remove_duplicate:
            yield from self.parameters_and_names(name_prefix=prefix, expand=recurse)
            return
        cells = self.cells_and_names(name_prefix=prefix) if recurse else [(prefix, self)]
        for cell_name, cell in cells:
            for name, param in cell._params.items():  # MindSpore's own registry of a cell's Parameters
                if param is not None:
                    yield (f"{cell_name}.{name}" if cell_name else name), param

    def parameters(self, recurse: bool = True) -> Any:
        """The Parameters of :meth:`named_parameters`, in the same order."""
        for _name, param in self.named_parameters(recurse=recurse):
            yield param

    def train(self, mode: bool = True) -> Qwen3_5ForCausalLM:
        """torch's ``train()``: MindSpore's ``set_train`` (nothing in this model depends on it)."""
        self.set_train(mode)
        return self

    def eval(self) -> Qwen3_5ForCausalLM:
        return self.train(False)

    def to_empty(self, *, device: Any = None, recurse: bool = True) -> Qwen3_5ForCausalLM:
        """Materialise deferred parameters: meta tensors get storage, lazy ones get zeros.

        Two ways to build without data both end here: under ``ms.DeviceCtx("meta")`` tensors sit on
        the meta device (MindSpore's own ``Cell.to_empty`` allocates them); under
        ``nn.utils.no_init_parameters()`` parameters keep a pending initializer (``has_init``) that
        would fire, drawing from the RNG, on first use. Those are set to zeros here instead, so
        materialising draws nothing and ``init_weights`` alone decides the values (as in torch).
        """
        if any(_on_meta(t) for t in self._tensors()):
            super().to_empty(device=_device_name(device), recurse=recurse)
        for _name, param in self.named_parameters():
            if param.has_init or _on_meta(param):
                param.set_data(ops.zeros(param.shape, param.dtype))
        self.tie_weights()
        return self

    def _tensors(self) -> list[Tensor]:
        return [p for _n, p in self.named_parameters()] + [b for _n, b in self.named_buffers()]

    def init_weights(self, buffer_device: Any = None) -> None:
        """Initialise in place from MindSpore's seeded RNG, in :meth:`named_parameters` order.

        The torch model's rule: ``kaiming_uniform_(a=0)`` (bound ``sqrt(6 / fan_in)``) for every
        matrix (linear weights and the embedding), zeros for vectors (norm weights, biases); then
        the RoPE buffer is rebuilt and the head re-tied. Matrices draw ``u ~ ops.rand`` (seeded by
        ``ms.set_seed``, which the MindSpore platform's ``manual_seed`` calls) and take
        ``-bound + 2 * bound * u``, torch's ``uniform_(-bound, bound)`` formula. The values are
        deterministic for a seed but are not torch's draws: the two RNGs differ.
        """
        for _name, param in self.named_parameters():
            shape = tuple(param.shape)
            if len(shape) >= 2:
                bound = _kaiming_bound(shape)
                u = ops.rand(*shape, dtype=ms.float32)
                value = (u * (2.0 * bound) - bound).astype(param.dtype)
            else:
                value = ops.zeros(shape, param.dtype)
            param.set_data(value)
        self.rotary_emb.reset_inv_freq()
        self.tie_weights()

    # ------------------------------------------------------------ forward
    def _logits(self, input_ids: Tensor, position_ids: Tensor | None) -> Tensor:
        # The one body shared by construct and forward_logits.
        return self.lm_head(self.model(input_ids, position_ids))

    def forward_logits(self, input_ids: Any, position_ids: Any = None, **kwargs: Any) -> Tensor:
        """Float32 logits ``[B, S, V]`` for the component path (a loss component owns the loss).

        ``input_ids`` may be a MindSpore tensor, a torch tensor or a numpy array.
        """
        return self._logits(_as_mindspore(input_ids), _as_mindspore(position_ids))

    def construct(
        self,
        input_ids: Any,
        labels: Any = None,
        position_ids: Any = None,
        attention_mask: Any = None,
        **kwargs: Any,
    ) -> dict[str, Tensor | None]:
        """``{"loss", "logits"}`` as the torch ``forward``; ``attention_mask`` is ignored (causal)."""
        logits = self._logits(_as_mindspore(input_ids), _as_mindspore(position_ids))
        loss = None
        if labels is not None:
            # Right-pad then shift the labels; the logits are never sliced.
            labels = _as_mindspore(labels).astype(ms.int64)
            shift = ops.pad(labels, (0, 1), value=IGNORE_INDEX)[..., 1:]
            loss = ops.cross_entropy(
                logits.astype(ms.float32).reshape(-1, logits.shape[-1]),
                shift.reshape(-1),
                ignore_index=IGNORE_INDEX,
                reduction="mean",
            )
        return {"loss": loss, "logits": logits}


def _on_meta(tensor: Tensor) -> bool:
    return str(getattr(tensor, "device", "")).lower() == "meta"


def _device_name(device: Any) -> str | None:
    """``"cpu"``/``torch.device("cpu")``/None -> a name MindSpore's ``to_empty`` takes."""
    if device is None:
        return None
    name = str(getattr(device, "type", device))
    return name.split(":")[0]


def build_from_config(config: Qwen3_5Config) -> Qwen3_5ForCausalLM:
    """Build the MindSpore model from a ready ``Qwen3_5Config`` (``Qwen3_5Config.build`` on MindSpore)."""
    if "linear_attention" in cast(list[str], config.layer_types):
        raise NotImplementedError(LINEAR_ATTENTION_NOT_IMPLEMENTED)
    return Qwen3_5ForCausalLM(config)
