"""ParallelismConfig: the degree of every parallel dimension and FSDP resharding."""

from __future__ import annotations

from dataclasses import dataclass

from hyper_parallel.config._checks import check_bool, check_int
from hyper_parallel.protocols.configurable import ConfigMixin

__all__ = ["ParallelismConfig"]


@dataclass(kw_only=True, slots=True)
class ParallelismConfig(ConfigMixin):
    """Parallel degrees. Each field's docstring names the legacy ``train.accelerator`` field it maps from.

    Only per-field ranges are checked here. Checks that need the world size or relate degrees
    to each other (the product, ``etp`` under EP, ``ulysses_degree`` dividing ``cp``, PP not yet
    supported) belong to ``ParallelDims``, which already implements them once.
    Legacy fields with no effect (``zero_stage``, ``async_cp``, ``comm_fusion``) have no
    counterpart.
    """

    data_parallel_replicate_degree: int = 1
    """Number of HSDP replica groups (legacy ``dp_replicate``)."""
    data_parallel_shard_degree: int = -1
    """FSDP shard degree (legacy ``dp_shard`` or ``dp``; their default resolves to 1); -1: the rest."""
    tensor_parallel_degree: int = 1
    """Tensor-parallel degree (legacy ``tp``)."""
    context_parallel_degree: int = 1
    """Context-parallel degree (legacy ``cp``)."""
    pipeline_parallel_degree: int = 1
    """Pipeline-parallel degree (legacy ``pp``); only 1 is supported."""
    expert_parallel_degree: int = 1
    """Expert-parallel degree (legacy ``ep``)."""
    expert_tensor_parallel_degree: int = 1
    """Tensor-parallel degree inside the experts (legacy ``etp``); above 1 only with EP."""
    ulysses_degree: int | None = None
    """Ulysses sequence-parallel split inside CP (legacy ``ulysses_degree``); None: not used."""
    reshard_after_forward: bool = True
    """FSDP2 frees the unsharded parameters after forward (legacy ``reshard_after_forward``)."""

    def __post_init__(self) -> None:
        check_int(self, "data_parallel_replicate_degree", minimum=1)
        check_int(self, "data_parallel_shard_degree", minimum=1, allowed=(-1,))
        check_int(self, "tensor_parallel_degree", minimum=1)
        check_int(self, "context_parallel_degree", minimum=1)
        check_int(self, "pipeline_parallel_degree", minimum=1)
        check_int(self, "expert_parallel_degree", minimum=1)
        check_int(self, "expert_tensor_parallel_degree", minimum=1)
        if self.expert_tensor_parallel_degree > 1 and self.expert_parallel_degree == 1:
            raise ValueError(
                f"ParallelismConfig.expert_tensor_parallel_degree={self.expert_tensor_parallel_degree} has "
                "no effect without expert parallelism (expert_parallel_degree > 1); expected 1"
            )
        check_int(self, "ulysses_degree", minimum=1, optional=True)
        ulysses, cp = self.ulysses_degree, self.context_parallel_degree
        if ulysses is not None and ulysses > 1 and cp % ulysses:
            raise ValueError(
                f"ParallelismConfig.ulysses_degree={ulysses} must divide context_parallel_degree={cp} "
                "(the Ulysses split happens inside context parallelism)"
            )
        check_bool(self, "reshard_after_forward")
