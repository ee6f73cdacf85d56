"""hyper_parallel: a torchtitan-style training stack with a legacy YAML trainer beside it."""

__version__ = "0.1.0"
