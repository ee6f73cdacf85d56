"""Names of device-mesh axes, so that code never spells a mesh dimension as a bare string."""

from __future__ import annotations

from enum import StrEnum

__all__ = ["BASE_MESH_AXES", "FLATTENED_MESH_AXES", "MeshAxisName"]


class MeshAxisName(StrEnum):
    """A device-mesh dimension name; a ``str``, so it indexes a DeviceMesh directly."""

    # Base axes, each one dimension of the mesh.
    DP_REPLICATE = "dp_replicate"
    DP_SHARD = "dp_shard"
    EP = "ep"
    CP = "cp"
    TP = "tp"
    PP = "pp"
    # Flattened aliases registered on the root mesh.
    FSDP = "fsdp"  # dp_shard
    DP = "dp"  # dp_replicate x dp_shard
    LOSS = "loss"  # the ranks a loss is reduced over (dp, plus cp when cp is on)


# Base axes in mesh order (outermost first), as ParallelDims lays them out.
BASE_MESH_AXES: tuple[MeshAxisName, ...] = (
    MeshAxisName.DP_REPLICATE,
    MeshAxisName.DP_SHARD,
    MeshAxisName.EP,
    MeshAxisName.CP,
    MeshAxisName.TP,
    MeshAxisName.PP,
)

FLATTENED_MESH_AXES: tuple[MeshAxisName, ...] = (MeshAxisName.FSDP, MeshAxisName.DP, MeshAxisName.LOSS)
