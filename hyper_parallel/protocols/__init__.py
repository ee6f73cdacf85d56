"""Protocols shared by the model zoo and the new component path."""

from hyper_parallel.protocols.model_spec import ModelSpec

__all__ = ["ModelSpec"]
