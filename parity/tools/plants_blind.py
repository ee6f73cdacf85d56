"""Blind plants: single-edit divergences written from the product code alone (issue 20, item 7).

They were written without opening the suites, the exploration, the claims table or the existing
plants' ``needs``, to measure how the harness generalises to slips nobody described; the
measurement (one self-check run per plant) is in ``parity/reports/blind_plants.md``. ``needs``
is filled, after that run, only for the plants that survived.
"""

from __future__ import annotations

from parity.tools.plants import Plant

__all__ = ["BLIND_PLANTS"]

HT = "hyper_parallel/trainer/hyper_trainer.py"
OPT = "hyper_parallel/components/optimizer.py"
LRS = "hyper_parallel/components/lr_scheduler.py"
LOSS = "hyper_parallel/components/loss.py"
DL = "hyper_parallel/components/dataloader.py"
CKPT = "hyper_parallel/components/checkpoint.py"
MET = "hyper_parallel/components/metrics.py"
PLAT = "hyper_parallel/platform/torch_platform.py"
MODEL = "hyper_parallel/models/qwen3_5/model.py"
SD = "hyper_parallel/models/qwen3_5/state_dict.py"
MAP = "hyper_parallel/trainer/legacy_mapping.py"
RECIPE = "hyper_parallel/recipes/qwen3_5.py"
CFGMGR = "hyper_parallel/config/manager.py"
XFORM = "hyper_parallel/data/transforms.py"


def _blind(
    name: str,
    category: str,
    side: str,
    file: str,
    old: str,
    new: str,
    models: str,
    *,
    function: str,
    expected: str = "caught",
    needs: str = "",
) -> Plant:
    return Plant(name, category, side, file, old, new, models, expected, needs, function)


_NEW: tuple[Plant, ...] = (
    # ------------------------------------------------------------ HyperTrainer
    _blind(
        "blind_ht_rank_average_micro_threshold",
        "train-step",
        "new",
        HT,
        "loss / num_micro if num_micro > 1 else loss",
        "loss / num_micro if num_micro > 2 else loss",
        "rank_average scales each micro-batch loss only from 3 micro-batches on (off by one)",
        function="HyperTrainer.forward_backward_step",
    ),
    _blind(
        "blind_ht_on_log_cadence_offset",
        "train-step",
        "new",
        HT,
        "if callbacks and state.global_step % log_steps == 0:",
        "if callbacks and (state.global_step - 1) % log_steps == 0:",
        "user callbacks get on_log one step early on the log_steps cadence",
        function="HyperTrainer.train",
    ),
    _blind(
        "blind_ht_epoch_break_strict",
        "train-step",
        "new",
        HT,
        "if state.global_step >= state.max_steps:",
        "if state.global_step > state.max_steps:",
        "a finished run still enters the next epoch (set_epoch, on_epoch_begin/end events)",
        function="HyperTrainer.train",
    ),
    _blind(
        "blind_ht_run_settings_yaml_max_steps",
        "trainer-init",
        "new",
        HT,
        '"max_steps": self.state.max_steps,',
        '"max_steps": self.config.training.steps,',
        "the checkpoint records the configured max_steps, not the one the dataset changed",
        function="HyperTrainer._init_checkpoint",
    ),
    _blind(
        "blind_ht_preset_tokenizer_never_built",
        "trainer-init",
        "new",
        HT,
        "isinstance(loader, PresetPtDataLoader.Config) and not cfg.tokenizer.path",
        "isinstance(loader, PresetPtDataLoader.Config)",
        "preset_pt never builds its tokenizer, even with a path (pad id falls back to 0)",
        function="HyperTrainer._init_tokenizer",
    ),
    # ------------------------------------------------------------ components and platform
    _blind(
        "blind_optim_in_backward_no_decay_decays",
        "optimizer",
        "new",
        OPT,
        "weight_decays = (config.weight_decay, 0.0)",
        "weight_decays = (config.weight_decay, config.weight_decay)",
        "optimizer-in-backward applies weight decay to the no-decay group too",
        function="OptimizersInBackwardContainer.__init__",
    ),
    _blind(
        "blind_optim_in_backward_index_per_group",
        "optimizer",
        "new",
        OPT,
        "            indices = []\n",
        "            indices = []\n            index = 0\n",
        "optimizer-in-backward state_dict restarts parameter indices per group (state entries collide)",
        function="OptimizersInBackwardContainer.state_dict",
    ),
    _blind(
        "blind_lrsched_cosine_span_ignores_warmup",
        "lr_scheduler",
        "new",
        LRS,
        "progress = (step - warmup) / max(1, total - warmup)",
        "progress = (step - warmup) / max(1, total)",
        "cosine progress divides by the whole horizon, not the steps after warmup",
        function="lr_factor",
    ),
    _blind(
        "blind_lrsched_warmup_ratio_rounded",
        "lr_scheduler",
        "new",
        LRS,
        "self.warmup_steps = math.ceil(training_steps * config.lr_warmup_ratio)",
        "self.warmup_steps = round(training_steps * config.lr_warmup_ratio)",
        "warmup steps from the ratio rounded to nearest instead of up",
        function="LRSchedulersContainer.__init__",
    ),
    _blind(
        "blind_loss_count_tokens_default_ignore",
        "loss",
        "new",
        LOSS,
        "return count_loss_tokens(labels, self.config.ignore_index)",
        "return count_loss_tokens(labels)",
        "token weighting counts with -100 whatever the loss's ignore_index",
        function="BaseLoss.count_tokens",
    ),
    _blind(
        "blind_dl_hf_steps_ceil",
        "dataloader",
        "new",
        DL,
        "full_batches = len(dataset) // self.global_batch_size",
        "full_batches = -(-len(dataset) // self.global_batch_size)",
        "hf/json horizon counts the trailing partial global batch as a step",
        function="HuggingFaceTextDataLoader._build_dataset",
    ),
    _blind(
        "blind_ckpt_final_export_when_saving_off",
        "checkpoint",
        "new",
        CKPT,
        "self.config.save_hf_weights and self.config.save_steps > 0 and step != self.last_exported_step",
        "self.config.save_hf_weights and step != self.last_exported_step",
        "train end exports HF weights even when saving is off (save_steps <= 0)",
        function="CheckpointManager.save_final",
    ),
    _blind(
        "blind_ckpt_resume_export_step_not_set",
        "checkpoint",
        "new",
        CKPT,
        "self.last_saved_step = step\n        self.last_exported_step = step\n",
        "self.last_saved_step = step\n",
        "after a resume the loaded step counts as not exported (train end may export it again)",
        function="CheckpointManager.load",
    ),
    _blind(
        "blind_platform_collate_int32",
        "dataloader",
        "new",
        PLAT,
        "return torch.as_tensor(data, dtype=torch.int64)",
        "return torch.as_tensor(data, dtype=torch.int32)",
        "the new collate builds int32 ids and labels",
        function="TorchPlatform.as_int64",
    ),
    _blind(
        "blind_model_init_tied_drawn_twice",
        "trainer-init",
        "new",
        MODEL,
        "for _name, param in self.named_parameters():",
        "for _name, param in self.named_parameters(remove_duplicate=False):",
        "init_weights draws the tied embedding/head weight twice (RNG stream shifts)",
        function="Qwen3_5ForCausalLM.init_weights",
    ),
)

_MAPPING: tuple[Plant, ...] = (
    # ------------------------------------------------------------ mapping, recipes, ConfigManager
    _blind(
        "blind_map_lr_min_to_lr_max",
        "mapping",
        "new",
        MAP,
        '_rule("train.optimizer.lr_min", "lr_scheduler.lr_min"),',
        '_rule("train.optimizer.lr_min", "lr_scheduler.lr_max"),',
        "legacy lr_min is sent to lr_scheduler.lr_max",
        function="FIELD_MAP",
    ),
    _blind(
        "blind_map_log_steps_to_tensorboard",
        "mapping",
        "new",
        MAP,
        '_rule("train.logging.log_steps", "metrics.log_steps"),',
        '_rule("train.logging.log_steps", "metrics.tensorboard.log_steps"),',
        "legacy logging.log_steps is sent to the TensorBoard cadence (metrics.log_steps stays 10)",
        function="FIELD_MAP",
    ),
    _blind(
        "blind_map_tokenizer_prefers_weights_path",
        "mapping",
        "new",
        MAP,
        "args.model.tokenizer_path or args.model.weights_path",
        "args.model.weights_path or args.model.tokenizer_path",
        "the tokenizer is read from weights_path when both paths are set",
        function="legacy_to_trainer_config",
    ),
    _blind(
        "blind_map_dp_prefers_legacy_dp",
        "mapping",
        "new",
        MAP,
        "dp_shard = acc.dp_shard if acc.dp_shard is not None else acc.dp",
        "dp_shard = acc.dp if acc.dp is not None else acc.dp_shard",
        "the legacy dp wins over dp_shard when both are set",
        function="legacy_to_trainer_config",
    ),
    _blind(
        "blind_recipe_debug_warmup_ratio",
        "mapping",
        "new",
        RECIPE,
        "lr_warmup_ratio=0.1,",
        "lr_warmup_ratio=0.15,",
        "the debug recipe's warmup ratio drifts from examples/debug/train.yaml",
        function="debug",
    ),
    _blind(
        "blind_cfgmgr_bool_case_sensitive",
        "mapping",
        "new",
        CFGMGR,
        "lowered = raw.strip().lower()",
        "lowered = raw.strip()",
        "the CLI bool parser no longer accepts True/False spelled with capitals",
        function="_parse_bool",
    ),
)

_SHARED: tuple[Plant, ...] = (
    _blind(
        "blind_shared_infer_seqlen_half_inclusive",
        "shared",
        "shared",
        XFORM,
        "if target_len * 2 < cutoff:",
        "if target_len * 2 <= cutoff:",
        "masked alpaca: a response of exactly half the cutoff keeps the whole cutoff (off by one)",
        function="infer_seqlen",
    ),
    _blind(
        "blind_shared_alpaca_newline_without_input",
        "shared",
        "shared",
        XFORM,
        'prompt = inst + ("\\n" + inp if inp else "")',
        'prompt = inst + "\\n" + (inp or "")',
        "masked alpaca prompt ends with a newline when the record has no input",
        function="build_text_transform",
    ),
    _blind(
        "blind_shared_gqa_key_tiled",
        "shared",
        "shared",
        MODEL,
        "key = key.repeat_interleave(groups, dim=1)",
        "key = key.repeat(1, groups, 1, 1)",
        "GQA keys are tiled instead of interleaved (query heads meet the wrong key head)",
        function="Qwen3_5Attention.forward",
    ),
    _blind(
        "blind_shared_hf_load_extra_layer",
        "shared",
        "shared",
        SD,
        "if layer is not None and int(layer.group(1)) >= num_layers:",
        "if layer is not None and int(layer.group(1)) > num_layers:",
        "truncating HF weights keeps one layer too many",
        function="Qwen3_5StateDictAdapter.load_hf_state_dict",
    ),
)

_INERT: tuple[Plant, ...] = (
    # edits that change nothing
    _blind(
        "blind_inert_ht_zero_grad_before_scheduler",
        "train-step",
        "new",
        HT,
        "self.lr_scheduler.step()\n        self.optimizer.zero_grad()",
        "self.optimizer.zero_grad()\n        self.lr_scheduler.step()",
        "zero_grad and the scheduler step swapped (independent)",
        function="HyperTrainer.train_step",
        expected="inert",
    ),
    _blind(
        "blind_inert_chunked_ce_floor_chunk_size",
        "loss",
        "new",
        LOSS,
        "size = max(1, -(-rows // cfg.chunks))",
        "size = max(1, rows // cfg.chunks)",
        "chunk size rounded down (more chunks): row chunking changes no bit",
        function="ChunkedCELoss.__call__",
        expected="inert",
    ),
    _blind(
        "blind_inert_rope_arange_float",
        "shared",
        "shared",
        MODEL,
        'torch.arange(0, r, 2, dtype=torch.int64, device="cpu").float() / r',
        'torch.arange(0, r, 2, dtype=torch.float32, device="cpu") / r',
        "RoPE exponents from a float arange (small integers are exact in float32)",
        function="Qwen3_5RotaryEmbedding._compute_inv_freq",
        expected="inert",
    ),
    _blind(
        "blind_inert_metrics_sink_rank_check",
        "metrics",
        "new",
        MET,
        "return sink.enabled and self.rank == 0 and step % sink.log_steps == 0",
        "return sink.enabled and step % sink.log_steps == 0",
        "sink cadence without the rank test (sinks exist on rank 0 only)",
        function="MetricsProcessor._sink_due",
        expected="inert",
    ),
    _blind(
        "blind_inert_decay_keyword_find",
        "optimizer",
        "new",
        OPT,
        "any(k in lname for k in decay_keywords)",
        "any(lname.find(k) >= 0 for k in decay_keywords)",
        "decay keyword test written with str.find",
        function="split_decay_groups",
        expected="inert",
    ),
)


def _interleave(*groups: tuple[Plant, ...]) -> tuple[Plant, ...]:
    """Round-robin over the groups, so that a run cut short has sampled every group."""
    out: list[Plant] = []
    for i in range(max(len(g) for g in groups)):
        out.extend(g[i] for g in groups if i < len(g))
    return tuple(out)


BLIND_PLANTS: tuple[Plant, ...] = _interleave(_NEW, _MAPPING, _SHARED, _INERT)
