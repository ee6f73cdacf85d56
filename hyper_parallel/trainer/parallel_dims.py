"""ParallelDims: the parallel degrees of a run, validated against the world size and the model."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from hyper_parallel.platform import get_platform

logger = logging.getLogger(__name__)

# Base mesh dimensions, outermost first: DP axes are outermost so that dp_rank = rank // non_dp.
MESH_DIM_ORDER = ("dp_replicate", "dp_shard", "ep", "cp", "tp", "pp")


@dataclass
class ParallelDims:
    """Degrees of data/context/tensor/pipeline/expert parallelism for one run."""

    dp_replicate: int = 1
    dp_shard: int = 1
    cp: int = 1
    tp: int = 1
    pp: int = 1
    ep: int = 1
    etp: int = 1
    ulysses_degree: int | None = None
    world_size: int = 1
    _mesh: Any = field(default=None, init=False, repr=False, compare=False)

    @classmethod
    def from_config(cls, acc, world_size: int) -> ParallelDims:
        """Build from a legacy ``train.accelerator`` section (``dp`` is the legacy name of ``dp_shard``)."""
        dp_shard = getattr(acc, "dp_shard", None)
        if dp_shard is None:
            dp_shard = getattr(acc, "dp", None)
        if dp_shard is None:
            dp_shard = 1
        tp = getattr(acc, "tp", 1)
        return cls(
            dp_replicate=getattr(acc, "dp_replicate", 1),
            dp_shard=dp_shard,
            cp=getattr(acc, "cp", 1),
            tp=tp,
            pp=getattr(acc, "pp", 1),
            ep=getattr(acc, "ep", 1),
            etp=getattr(acc, "etp", tp),
            ulysses_degree=getattr(acc, "ulysses_degree", None),
            world_size=world_size,
        )

    @classmethod
    def from_parallelism(cls, par: Any, world_size: int) -> ParallelDims:
        """Build from the new path's ``ParallelismConfig`` (its ``*_degree`` fields)."""
        return cls(
            dp_replicate=par.data_parallel_replicate_degree,
            dp_shard=par.data_parallel_shard_degree,
            cp=par.context_parallel_degree,
            tp=par.tensor_parallel_degree,
            pp=par.pipeline_parallel_degree,
            ep=par.expert_parallel_degree,
            etp=par.expert_tensor_parallel_degree,
            ulysses_degree=par.ulysses_degree,
            world_size=world_size,
        )

    def __post_init__(self) -> None:
        for name in ("dp_replicate", "cp", "tp", "pp", "ep", "etp"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"train.accelerator.{name} must be an integer >= 1, got {value!r}")
        if not isinstance(self.dp_shard, int) or (self.dp_shard != -1 and self.dp_shard < 1):
            raise ValueError(
                f"train.accelerator.dp_shard must be -1 (auto) or an integer >= 1, got {self.dp_shard!r}"
            )
        if self.dp_shard == -1:
            non_dp = self.dp_replicate * self.cp * self.tp * self.pp * self.ep
            if self.world_size % non_dp != 0:
                raise ValueError(
                    f"cannot infer dp_shard: world size {self.world_size} is not divisible by "
                    f"dp_replicate*cp*tp*pp*ep = {non_dp}"
                )
            self.dp_shard = self.world_size // non_dp
            logger.info("dp_shard=-1 inferred as %d", self.dp_shard)
        product = self.dp_replicate * self.dp_shard * self.cp * self.tp * self.pp * self.ep
        if product != self.world_size:
            raise ValueError(
                f"parallel degrees dp_replicate({self.dp_replicate}) * dp_shard({self.dp_shard}) * "
                f"cp({self.cp}) * tp({self.tp}) * pp({self.pp}) * ep({self.ep}) = {product} != world size "
                f"{self.world_size}. Set train.accelerator.dp_shard=-1 to auto-infer."
            )
        if self.ep > 1 and self.etp not in (self.tp, 1):
            raise ValueError(
                f"train.accelerator.etp must equal tp ({self.tp}) or 1 when ep > 1, got {self.etp}"
            )
        if self.pp > 1:
            raise NotImplementedError("pipeline parallelism (train.accelerator.pp > 1) is not implemented")
        if self.cp > 1 and self.ulysses_degree is not None:
            if self.ulysses_degree > self.cp or self.cp % self.ulysses_degree != 0:
                raise ValueError(
                    f"train.accelerator.ulysses_degree ({self.ulysses_degree}) must divide cp ({self.cp})"
                )

    # ------------------------------------------------------------ properties
    @property
    def dp_size(self) -> int:
        return self.dp_replicate * self.dp_shard

    @property
    def non_dp_size(self) -> int:
        return self.tp * self.cp * self.pp * self.ep

    @property
    def seq_divisor(self) -> int:
        return self.cp * self.tp

    @property
    def tp_enabled(self) -> bool:
        return self.tp > 1

    @property
    def cp_enabled(self) -> bool:
        return self.cp > 1

    @property
    def ep_enabled(self) -> bool:
        return self.ep > 1

    @property
    def pp_enabled(self) -> bool:
        return self.pp > 1

    @property
    def fsdp_enabled(self) -> bool:
        return self.dp_shard > 1 or self.dp_replicate > 1

    @property
    def mesh(self):
        return self._mesh

    def summary(self) -> str:
        return (
            f"dp_replicate={self.dp_replicate} dp_shard={self.dp_shard} cp={self.cp} tp={self.tp} "
            f"pp={self.pp} ep={self.ep} etp={self.etp} | dp={self.dp_size} world={self.world_size}"
        )

    # ------------------------------------------------------------ validation
    def validate_against_model(self, model, seq_len: int) -> None:
        """Check that the model's head counts and the sequence length divide by the degrees."""
        config = getattr(model, "config", None)
        if config is None:
            return
        if self.tp > 1:
            for name in ("num_attention_heads", "num_key_value_heads"):
                value = getattr(config, name)
                if value % self.tp != 0:
                    raise ValueError(f"model.{name}={value} is not divisible by tp={self.tp}")
        if self.ep > 1 and hasattr(config, "num_experts"):
            if config.num_experts % self.ep != 0:
                raise ValueError(f"model.num_experts={config.num_experts} is not divisible by ep={self.ep}")
        if self.cp * self.tp > 1 and seq_len % (self.cp * self.tp) != 0:
            raise ValueError(f"data.max_seq_len={seq_len} is not divisible by cp*tp={self.cp * self.tp}")

    # ------------------------------------------------------------------ mesh
    def build_mesh(self, device_type: str):
        """Create the device mesh (dims of size > 1, else 1-D ``dp_shard``) and its flattened aliases."""
        if self._mesh is not None:
            return self._mesh
        sizes = {
            "dp_replicate": self.dp_replicate,
            "dp_shard": self.dp_shard,
            "ep": self.ep,
            "cp": self.cp,
            "tp": self.tp,
            "pp": self.pp,
        }
        names = [n for n in MESH_DIM_ORDER if sizes[n] > 1]
        shape = [sizes[n] for n in names]
        if not names:
            names, shape = ["dp_shard"], [self.world_size]
        mesh = get_platform().init_device_mesh(device_type, shape, names)
        self._register_aliases(mesh, names)
        self._mesh = mesh
        return mesh

    @staticmethod
    def _flatten(mesh, dims: tuple[str, ...], alias: str, existing: set[str]) -> None:
        if alias in existing:
            return
        mesh[dims]._flatten(alias)
        existing.add(alias)

    def _register_aliases(self, mesh, names: list[str]) -> None:
        existing = set(_flattened_names(mesh))
        present = set(names)
        if "dp_shard" in present:
            self._flatten(mesh, ("dp_shard",), "fsdp", existing)
        dp_members = tuple(n for n in ("dp_replicate", "dp_shard") if n in present)
        if dp_members:
            self._flatten(mesh, dp_members, "dp", existing)
        if "cp" in present:
            loss_members = tuple(n for n in ("dp_replicate", "dp_shard", "cp") if n in present)
            self._flatten(mesh, loss_members, "loss", existing)
        elif dp_members:
            self._flatten(mesh, ("dp",), "loss", existing)


def _flattened_names(mesh) -> list[str]:
    """Names already resolvable on the mesh (base dims plus flattened aliases)."""
    names = list(mesh.mesh_dim_names or ())
    root = getattr(mesh, "_get_root_mesh", lambda: mesh)()
    for attr in ("_flatten_mapping", "_flatten_name_to_root_dims"):
        mapping = getattr(root, attr, None)
        if isinstance(mapping, dict):
            names.extend(mapping.keys())
    return names
