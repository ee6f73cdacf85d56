"""Protocols shared by the model zoo and the new component path."""

from hyper_parallel.protocols.configurable import (
    ConfigMixin,
    Configurable,
    check_field_types,
    validate_config_class,
)
from hyper_parallel.protocols.mesh import BASE_MESH_AXES, FLATTENED_MESH_AXES, MeshAxisName
from hyper_parallel.protocols.model_spec import ModelSpec
from hyper_parallel.protocols.module import MODULE_PROTOCOL, ModuleRequirement, verify_module_protocol

__all__ = [
    "BASE_MESH_AXES",
    "FLATTENED_MESH_AXES",
    "MODULE_PROTOCOL",
    "ConfigMixin",
    "Configurable",
    "MeshAxisName",
    "ModelSpec",
    "ModuleRequirement",
    "check_field_types",
    "validate_config_class",
    "verify_module_protocol",
]
