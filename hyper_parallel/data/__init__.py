"""Datasets, transforms and collate shared by the legacy trainer and the components.

Layering: ``data -> platform`` only; nothing here imports ``hyper_parallel.trainer``.
"""

from hyper_parallel.data.collate import make_pad_collate, pad_collate
from hyper_parallel.data.dummy import DummyDataset, build_dummy_dataset
from hyper_parallel.data.hf import TokenizedDataset, build_hf_dataset, load_raw_dataset, tokenize_dataset
from hyper_parallel.data.preset_pt import (
    PresetDataset,
    build_preset_dataset,
    flatten_preset_batches,
    load_preset_batches,
    load_preset_samples,
)
from hyper_parallel.data.registry import SUPPORTED_DATA_TYPES, get_dataset_builder, register_dataset
from hyper_parallel.data.transforms import IGNORE_INDEX, build_text_transform, infer_seqlen

__all__ = [
    "IGNORE_INDEX",
    "SUPPORTED_DATA_TYPES",
    "DummyDataset",
    "PresetDataset",
    "TokenizedDataset",
    "build_dummy_dataset",
    "build_hf_dataset",
    "build_preset_dataset",
    "build_text_transform",
    "flatten_preset_batches",
    "get_dataset_builder",
    "infer_seqlen",
    "load_preset_batches",
    "load_preset_samples",
    "load_raw_dataset",
    "make_pad_collate",
    "pad_collate",
    "register_dataset",
    "tokenize_dataset",
]
