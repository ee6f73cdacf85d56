"""Qwen3.5-style decoder-only LM (full gated attention layers only).

The forward reproduces transformers' ``Qwen3_5ForCausalLM`` op for op on full-attention layers, so
logits can be compared with HF bit for bit. Parameter registration order is normative: it fixes the
RNG order when the trainer materialises meta parameters.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

import torch
import torch.nn.functional as F
from torch import nn

from hyper_parallel.models.qwen3_5.constants import LINEAR_ATTENTION_NOT_IMPLEMENTED

if TYPE_CHECKING:  # the config imports this module to build; at run time this module needs only its fields
    from hyper_parallel.models.qwen3_5.config import Qwen3_5Config

__all__ = [
    "IGNORE_INDEX",
    "Qwen3_5Attention",
    "Qwen3_5DecoderLayer",
    "Qwen3_5ForCausalLM",
    "Qwen3_5MLP",
    "Qwen3_5RMSNorm",
    "Qwen3_5RotaryEmbedding",
    "Qwen3_5TextModel",
]

IGNORE_INDEX = -100


class Qwen3_5RMSNorm(nn.Module):
    """Zero-centred RMSNorm: the weight starts at 0 and scales by ``1 + w``, computed in float32."""

    def __init__(self, dim: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.zeros(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        xf = x.float()
        y = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)
        return (y * (1.0 + self.weight.float())).type_as(x)

    def extra_repr(self) -> str:
        return f"{tuple(self.weight.shape)}, eps={self.eps}"


class Qwen3_5RotaryEmbedding(nn.Module):
    """Partial RoPE over the first R channels of each head.

    For text the three mRoPE axes carry the same position, so mRoPE reduces to 1-D RoPE here.
    ``inv_freq`` is non-persistent; :meth:`reset_inv_freq` rebuilds it after meta materialisation.
    """

    inv_freq: torch.Tensor  # a registered buffer (declared for the type checker)

    def __init__(self, config: Qwen3_5Config) -> None:
        super().__init__()
        self.rotary_dim = config.rotary_dim
        self.rope_theta = config.rope_theta
        self.register_buffer("inv_freq", self._compute_inv_freq(torch.get_default_device()), persistent=False)

    def _compute_inv_freq(self, device: torch.device) -> torch.Tensor:
        # Always computed on CPU, then moved: the values do not depend on the accelerator's pow kernel.
        r = self.rotary_dim
        inv_freq = 1.0 / (
            self.rope_theta ** (torch.arange(0, r, 2, dtype=torch.int64, device="cpu").float() / r)
        )
        return inv_freq.to(device)

    def reset_inv_freq(self) -> None:
        """Recompute ``inv_freq`` on the buffer's current device (after ``to_empty``)."""
        self.inv_freq = self._compute_inv_freq(self.inv_freq.device)

    def forward(self, x: torch.Tensor, position_ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``cos, sin`` of shape ``[B, S, R]`` in ``x``'s dtype (computed in float32)."""
        freqs = position_ids.float()[..., None] * self.inv_freq.float().to(x.device)
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos().to(x.dtype), emb.sin().to(x.dtype)


def rotate_half(u: torch.Tensor) -> torch.Tensor:
    half = u.shape[-1] // 2
    return torch.cat((-u[..., half:], u[..., :half]), dim=-1)


def apply_rotary(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate the first R channels of ``x [B, H, S, D]``; ``cos``/``sin`` are ``[B, S, R]``."""
    cos = cos.unsqueeze(1)
    sin = sin.unsqueeze(1)
    r = cos.shape[-1]
    x_rot, x_pass = x[..., :r], x[..., r:]
    x_rot = (x_rot * cos) + (rotate_half(x_rot) * sin)
    return torch.cat([x_rot, x_pass], dim=-1)


class Qwen3_5Attention(nn.Module):
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
        self.q_proj = nn.Linear(h, heads * d * (2 if self.gated else 1), bias=bias)
        self.k_proj = nn.Linear(h, kv_heads * d, bias=bias)
        self.v_proj = nn.Linear(h, kv_heads * d, bias=bias)
        self.o_proj = nn.Linear(heads * d, h, bias=bias)
        self.q_norm = Qwen3_5RMSNorm(d, eps=config.rms_norm_eps)
        self.k_norm = Qwen3_5RMSNorm(d, eps=config.rms_norm_eps)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        b, s, _ = x.shape
        d = self.head_dim
        if self.gated:
            qg = self.q_proj(x).view(b, s, self.num_heads, 2 * d)
            query, gate = qg[..., :d], qg[..., d:].reshape(b, s, self.num_heads * d)
        else:
            query, gate = self.q_proj(x).view(b, s, self.num_heads, d), None

        query = self.q_norm(query).transpose(1, 2)
        key = self.k_norm(self.k_proj(x).view(b, s, self.num_kv_heads, d)).transpose(1, 2)
        value = self.v_proj(x).view(b, s, self.num_kv_heads, d).transpose(1, 2)

        query = apply_rotary(query, cos, sin)
        key = apply_rotary(key, cos, sin)

        groups = self.num_heads // self.num_kv_heads
        if groups > 1:
            key = key.repeat_interleave(groups, dim=1)
            value = value.repeat_interleave(groups, dim=1)

        out = F.scaled_dot_product_attention(
            query, key, value, dropout_p=0.0, is_causal=True, scale=self.scale
        )
        out = out.transpose(1, 2).reshape(b, s, self.num_heads * d)
        if gate is not None:
            out = out * torch.sigmoid(gate)
        return self.o_proj(out)


class Qwen3_5MLP(nn.Module):
    """SwiGLU feed-forward."""

    def __init__(self, config: Qwen3_5Config) -> None:
        super().__init__()
        if config.hidden_act != "silu":
            raise NotImplementedError(f"hidden_act={config.hidden_act!r} is not supported; expected 'silu'")
        self.gate_proj = nn.Linear(config.hidden_size, config.intermediate_size, bias=False)
        self.up_proj = nn.Linear(config.hidden_size, config.intermediate_size, bias=False)
        self.down_proj = nn.Linear(config.intermediate_size, config.hidden_size, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class Qwen3_5DecoderLayer(nn.Module):
    """Pre-norm block: ``h + attn(norm(h))`` then ``h + mlp(norm(h))``."""

    def __init__(self, config: Qwen3_5Config, layer_idx: int) -> None:
        super().__init__()
        if cast(list[str], config.layer_types)[layer_idx] != "full_attention":
            raise NotImplementedError(f"layer_types[{layer_idx}]: {LINEAR_ATTENTION_NOT_IMPLEMENTED}")
        self.self_attn = Qwen3_5Attention(config)
        self.mlp = Qwen3_5MLP(config)
        self.input_layernorm = Qwen3_5RMSNorm(config.hidden_size, eps=config.rms_norm_eps)
        self.post_attention_layernorm = Qwen3_5RMSNorm(config.hidden_size, eps=config.rms_norm_eps)

    def forward(self, hidden: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        hidden = hidden + self.self_attn(self.input_layernorm(hidden), cos, sin)
        return hidden + self.mlp(self.post_attention_layernorm(hidden))


class Qwen3_5TextModel(nn.Module):
    """Embedding, decoder stack and final norm (registration order: embed, rope, layers, norm)."""

    def __init__(self, config: Qwen3_5Config) -> None:
        super().__init__()
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size)
        self.rotary_emb = Qwen3_5RotaryEmbedding(config)
        self.layers = nn.ModuleList([Qwen3_5DecoderLayer(config, i) for i in range(config.num_hidden_layers)])
        self.norm = Qwen3_5RMSNorm(config.hidden_size, eps=config.rms_norm_eps)

    def forward(self, input_ids: torch.Tensor, position_ids: torch.Tensor | None = None) -> torch.Tensor:
        hidden = self.embed_tokens(input_ids)
        cos, sin = self.rotary_emb(hidden, _positions(input_ids, position_ids))
        for layer in self.layers:
            hidden = layer(hidden, cos, sin)
        return self.norm(hidden)


def _positions(input_ids: torch.Tensor, position_ids: torch.Tensor | None) -> torch.Tensor:
    """``[B, S]`` positions: default ``arange(S)``, a 1-D tensor is broadcast, 3-D (mRoPE) is refused."""
    b, s = input_ids.shape
    if position_ids is None:
        return torch.arange(s, device=input_ids.device).unsqueeze(0).expand(b, s)
    if position_ids.dim() == 1:
        return position_ids.unsqueeze(0).expand(b, -1)
    if position_ids.dim() == 2:
        return position_ids
    raise NotImplementedError(
        f"position_ids with {position_ids.dim()} dims (mRoPE) are not supported; expected [S] or [B, S]"
    )


class Qwen3_5ForCausalLM(nn.Module):
    """Causal LM head over :class:`Qwen3_5TextModel`; the legacy forward also computes the loss."""

    def __init__(self, config: Qwen3_5Config) -> None:
        super().__init__()
        self.config = config
        self.model = Qwen3_5TextModel(config)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        self.tie_weights()

    # Forwarding properties: ``model.layers[i] = wrapper(...)`` edits the inner ModuleList.
    @property
    def layers(self) -> nn.ModuleList:
        return self.model.layers

    @property
    def embed_tokens(self) -> nn.Embedding:
        return self.model.embed_tokens

    @property
    def norm(self) -> Qwen3_5RMSNorm:
        return self.model.norm

    @property
    def rotary_emb(self) -> Qwen3_5RotaryEmbedding:
        return self.model.rotary_emb

    def tie_weights(self) -> None:
        """Share ``embed_tokens.weight`` with ``lm_head`` when ``tie_word_embeddings``."""
        if self.config.tie_word_embeddings and self.lm_head.weight is not self.model.embed_tokens.weight:
            self.lm_head.weight = self.model.embed_tokens.weight

    def init_weights(self, buffer_device: torch.device | str | None = None) -> None:
        """Initialise a materialised (``to_empty``) model in place, shard by shard (new path, step 8).

        Each rank draws from its default generator for its **local shard**, in registration order
        (the tied weight once): ``kaiming_uniform_`` for matrices, zeros for vectors; every buffer
        is zeroed, then the RoPE buffers are rebuilt and the head re-tied. This is the model's own
        statement of the legacy materialisation; the parity harness compares the two.
        """
        with torch.no_grad():
            for _name, param in self.named_parameters():
                local = param.to_local() if hasattr(param, "to_local") else param
                if local.is_meta:
                    continue
                if local.dim() >= 2:
                    nn.init.kaiming_uniform_(local)
                else:
                    nn.init.zeros_(local)
            for buffer in self.buffers():
                (buffer.to_local() if hasattr(buffer, "to_local") else buffer).zero_()
        for module in self.modules():
            if isinstance(module, Qwen3_5RotaryEmbedding):
                module.reset_inv_freq()
        self.tie_weights()

    def _logits(self, input_ids: torch.Tensor, position_ids: torch.Tensor | None) -> torch.Tensor:
        # The one body shared by forward and forward_logits.
        return self.lm_head(self.model(input_ids, position_ids))

    def forward_logits(
        self, input_ids: torch.Tensor, position_ids: torch.Tensor | None = None, **kwargs: Any
    ) -> torch.Tensor:
        """Logits ``[B, S, V]`` only, for the component path where a loss component owns the loss.

        Under FSDP2 this method is registered with ``register_fsdp_forward_method`` by
        ``parallelize_qwen3_5`` so that the root parameters are gathered when it is called directly.
        """
        return self._logits(input_ids, position_ids)

    def forward(
        self,
        input_ids: torch.Tensor,
        labels: torch.Tensor | None = None,
        position_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        **kwargs: Any,
    ) -> dict[str, torch.Tensor | None]:
        """``{"loss", "logits"}``; ``attention_mask`` and extra kwargs are ignored (purely causal)."""
        logits = self._logits(input_ids, position_ids)
        loss = None
        if labels is not None:
            # Right-pad then shift the labels; the logits are never sliced.
            shift = F.pad(labels, (0, 1), value=IGNORE_INDEX)[..., 1:]
            loss = F.cross_entropy(
                logits.float().view(-1, logits.shape[-1]),
                shift.reshape(-1),
                ignore_index=IGNORE_INDEX,
                reduction="mean",
            )
        return {"loss": loss, "logits": logits}


def build_from_config(config: Qwen3_5Config) -> Qwen3_5ForCausalLM:
    """Build the model from a ready ``Qwen3_5Config`` (both paths end here)."""
    if "linear_attention" in cast(list[str], config.layer_types):
        raise NotImplementedError(LINEAR_ATTENTION_NOT_IMPLEMENTED)
    return Qwen3_5ForCausalLM(config)
