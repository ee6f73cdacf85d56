"""The plants each registered case must catch (``python -m parity selfcheck --quick``).

Keys are a case name (every case of that name: a grid) or a full case id (one case, overriding
its name's entry); values are plants of ``parity.tools.plants`` that must turn the case red. Each
case keeps at least one, so each case proves in CI that it can still fail. The entries were
measured: each plant was applied and the listed cases went red under it.

``UNMEASURED`` is the debt: cases (names or ids) for which no plant of the catalogue has been
measured to turn them red yet. ``selfcheck --quick`` reports their count; an entry must go once
a claim exists (the quick check fails on a case that is in both). It is empty, and
``tests/parity/test_parity_claims.py`` keeps it so: a new case comes with a measured claim (where no
plant fits, a new single-edit plant in the claims section at the end of ``parity/tools/plants.py``).
"""

from __future__ import annotations

CLAIMS: dict[str, tuple[str, ...]] = {
    "adamw_tiny": ("platform_adamw_is_adam",),
    "batches.dataloader_dummy-data_type=dummy-max_steps=3-n=6-rank=0-seed=0-shuffle=true-tp=1-world_size=1": (
        "dl_dummy_samples_local_batch",
    ),
    "batches.dataloader_dummy-data_type=dummy-max_steps=3-n=6-rank=3-seed=7-shuffle=true-tp=2-world_size=4": (
        "dl_seed_per_rank",
    ),
    "batches.dataloader_dummy_golden-data_type=dummy-max_steps=2-n=4-rank=0-seed=0-shuffle=true-tp=1-world_size=1": (
        "shared_dummy_ids_from_one",
    ),
    "batches.dataloader_dummy_golden-data_type=dummy-max_steps=2-n=4-rank=1-seed=5-shuffle=true-tp=1-world_size=2": (
        "shared_dummy_ids_from_one",
    ),
    "batches.dataloader_dummy_golden-data_type=dummy-max_steps=2-n=4-rank=2-seed=1-shuffle=false-tp=2-world_size=4": (
        "dl_shuffle_forced",
    ),
    "batches.dataloader_error-data=short_alpaca-gbs=64-mbs=4-rank=0-seed=0-seq=16-shuffle=true-steps=100-tok=asset-tp=1-world=1": (
        "blind_dl_hf_steps_ceil",
    ),
    "batches.dataloader_error-data=short_text-gbs=8-mbs=2-rank=0-seed=0-seq=16-shuffle=true-steps=100-tok=asset-tp=1-world=3": (
        "dl_batch_multiple_ignores_dp",
    ),
    "batches.dataloader_error-data=short_text-gbs=8-mbs=4-rank=0-seed=0-seq=16-shuffle=true-steps=100-text_key=body-tok=asset-tp=1-world=1": (
        "dl_text_key_default",
    ),
    "batches.dataloader_error-data=short_text-gbs=8-mbs=4-rank=0-seed=0-seq=16-shuffle=true-steps=100-tok=asset-tp=1-vocab=300-world=1": (
        "tok_vocab_check_dropped",
    ),
    "batches.dataloader_error-data=short_text-gbs=8-mbs=4-rank=0-seed=0-seq=16-shuffle=true-steps=100-tok=none-tp=1-world=1": (
        "tok_empty_path_is_none_check",
    ),
    "batches.dataloader_fields-data=configs_text-gbs=4-mbs=2-n=4-rank=0-seed=2-seq=16-shuffle=true-steps=100-subset=second-tok=pad-tp=1-world=1": (
        "dl_cutoff_off_by_one",
    ),
    "batches.dataloader_fields-data=short_text-gbs=4-mbs=2-n=4-prefetch_factor=2-rank=0-seed=0-seq=16-shuffle=false-steps=100-tok=pad-tp=1-world=1": (
        "dl_shuffle_forced",
    ),
    "batches.dataloader_fields-data=short_text-gbs=4-mbs=2-n=4-rank=0-seed=0-seq=16-shuffle=true-steps=100-tok=pad-tp=1-train_size=13-world=1": (
        "legacy_collate_labels_pad_id",
    ),
    "batches.dataloader_pad-data=ragged_preset-gbs=3-mbs=3-rank=0-seed=0-seq=16-shuffle=false-steps=4-tok=eos1-tp=1-world=1": (
        "dl_shuffle_forced",
    ),
    "batches.dataloader_pad-data=ragged_preset-gbs=3-mbs=3-rank=0-seed=0-seq=16-shuffle=false-steps=4-tok=none-tp=1-world=1": (
        "dl_shuffle_forced",
    ),
    "batches.dataloader_pad-data=ragged_preset-gbs=3-mbs=3-rank=0-seed=0-seq=16-shuffle=false-steps=4-tok=pad-tp=1-world=1": (
        "dl_shuffle_forced",
    ),
    "batches.dataloader_pad-data=ragged_preset-gbs=3-mbs=3-rank=0-seed=5-seq=16-shuffle=true-steps=4-tok=no_eos-tp=1-world=1": (
        "legacy_collate_labels_pad_id",
    ),
    "batches.dataloader_pad-data=short_alpaca-gbs=6-mbs=3-rank=0-seed=3-seq=8-shuffle=true-steps=100-tok=pad-tp=1-world=1": (
        "dl_cutoff_off_by_one",
    ),
    "batches.dataloader_pad-data=short_alpaca-gbs=8-mbs=4-rank=0-seed=0-seq=16-shuffle=true-steps=100-tok=asset-tp=1-world=1": (
        "dl_cutoff_off_by_one",
    ),
    "batches.dataloader_pad-data=short_alpaca-gbs=8-mbs=4-rank=0-seed=0-seq=16-shuffle=true-steps=100-tok=eos1-tp=1-world=1": (
        "dl_cutoff_off_by_one",
    ),
    "batches.dataloader_pad-data=short_alpaca-gbs=8-mbs=4-rank=0-seed=0-seq=16-shuffle=true-steps=100-tok=no_eos-tp=1-world=1": (
        "dl_cutoff_off_by_one",
    ),
    "batches.dataloader_pad-data=short_alpaca-gbs=8-mbs=4-rank=0-seed=0-seq=16-shuffle=true-steps=100-tok=pad-tp=1-world=1": (
        "dl_cutoff_off_by_one",
    ),
    "batches.dataloader_pad-data=short_text-gbs=8-mbs=4-rank=0-seed=0-seq=16-shuffle=true-steps=100-tok=asset-tp=1-world=1": (
        "dl_cutoff_off_by_one",
    ),
    "batches.dataloader_pad-data=short_text-gbs=8-mbs=4-rank=0-seed=0-seq=16-shuffle=true-steps=100-tok=eos1-tp=1-world=1": (
        "dl_cutoff_off_by_one",
    ),
    "batches.dataloader_pad-data=short_text-gbs=8-mbs=4-rank=0-seed=0-seq=16-shuffle=true-steps=100-tok=no_eos-tp=1-world=1": (
        "dl_cutoff_off_by_one",
    ),
    "batches.dataloader_pad-data=short_text-gbs=8-mbs=4-rank=0-seed=0-seq=16-shuffle=true-steps=100-tok=pad-tp=1-world=1": (
        "dl_cutoff_off_by_one",
    ),
    "batches.dataloader_pad_golden-data=ragged_preset-gbs=3-mbs=3-n=4-rank=0-seed=0-seq=16-shuffle=false-steps=4-tok=pad-tp=1-world=1": (
        "dl_shuffle_forced",
    ),
    "batches.dataloader_pad_golden-data=short_alpaca-gbs=8-mbs=4-n=4-rank=0-seed=0-seq=16-shuffle=true-steps=100-tok=pad-tp=1-world=1": (
        "dl_cutoff_off_by_one",
    ),
    "batches.dataloader_pad_golden-data=short_text-gbs=6-mbs=2-n=4-rank=2-seed=5-seq=16-shuffle=true-steps=100-tok=pad-tp=1-world=3": (
        "dl_seed_per_rank",
    ),
    "batches.dataloader_pad_golden-data=short_text-gbs=8-mbs=4-n=4-rank=0-seed=0-seq=16-shuffle=true-steps=100-tok=pad-tp=1-world=1": (
        "dl_cutoff_off_by_one",
    ),
    "batches.dataloader_resume-data=ragged_preset-gbs=4-k=1-mbs=2-rank=0-seed=0-seq=16-shuffle=false-steps=100-tok=none-tp=1-world=2": (
        "dl_shuffle_forced",
    ),
    "batches.dataloader_resume-data=short_alpaca-gbs=4-k=3-mbs=2-rank=1-seed=0-seq=16-shuffle=true-steps=100-tok=pad-tp=1-world=2": (
        "dl_cutoff_off_by_one",
    ),
    "batches.dataloader_resume-data=short_text-gbs=6-k=2-mbs=2-rank=1-seed=0-seq=16-shuffle=true-steps=100-tok=pad-tp=1-world=3": (
        "dl_cutoff_off_by_one",
    ),
    "batches.dataloader_resume-data=short_text-gbs=8-k=5-mbs=4-rank=0-seed=0-seq=16-shuffle=true-steps=100-tok=eos1-tp=1-world=1": (
        "dl_cutoff_off_by_one",
    ),
    "batches.dataloader_split-data=ragged_preset-gbs=4-mbs=2-rank=0-seed=5-seq=16-shuffle=false-steps=100-tok=none-tp=1-world=2": (
        "dl_shuffle_forced",
    ),
    "batches.dataloader_split-data=ragged_preset-gbs=4-mbs=2-rank=1-seed=5-seq=16-shuffle=false-steps=100-tok=none-tp=1-world=2": (
        "dl_shuffle_forced",
    ),
    "batches.dataloader_split-data=ragged_preset-gbs=6-mbs=2-rank=0-seed=5-seq=16-shuffle=false-steps=100-tok=none-tp=1-world=3": (
        "dl_shuffle_forced",
    ),
    "batches.dataloader_split-data=ragged_preset-gbs=6-mbs=2-rank=1-seed=5-seq=16-shuffle=false-steps=100-tok=none-tp=1-world=3": (
        "dl_shuffle_forced",
    ),
    "batches.dataloader_split-data=ragged_preset-gbs=6-mbs=2-rank=2-seed=5-seq=16-shuffle=false-steps=100-tok=none-tp=1-world=3": (
        "dl_shuffle_forced",
    ),
    "batches.dataloader_split-data=short_alpaca-gbs=4-mbs=2-rank=0-seed=5-seq=16-shuffle=false-steps=100-tok=eos1-tp=1-world=2": (
        "dl_cutoff_off_by_one",
    ),
    "batches.dataloader_split-data=short_alpaca-gbs=4-mbs=2-rank=1-seed=5-seq=16-shuffle=false-steps=100-tok=eos1-tp=1-world=2": (
        "dl_cutoff_off_by_one",
    ),
    "batches.dataloader_split-data=short_alpaca-gbs=6-mbs=2-rank=0-seed=5-seq=16-shuffle=false-steps=100-tok=eos1-tp=1-world=3": (
        "dl_cutoff_off_by_one",
    ),
    "batches.dataloader_split-data=short_alpaca-gbs=6-mbs=2-rank=1-seed=5-seq=16-shuffle=false-steps=100-tok=eos1-tp=1-world=3": (
        "dl_cutoff_off_by_one",
    ),
    "batches.dataloader_split-data=short_alpaca-gbs=6-mbs=2-rank=2-seed=5-seq=16-shuffle=false-steps=100-tok=eos1-tp=1-world=3": (
        "dl_cutoff_off_by_one",
    ),
    "batches.dataloader_split-data=short_text-gbs=4-mbs=2-rank=0-seed=5-seq=16-shuffle=true-steps=100-tok=pad-tp=1-world=2": (
        "dl_cutoff_off_by_one",
    ),
    "batches.dataloader_split-data=short_text-gbs=4-mbs=2-rank=1-seed=5-seq=16-shuffle=true-steps=100-tok=pad-tp=1-world=2": (
        "dl_cutoff_off_by_one",
    ),
    "batches.dataloader_split-data=short_text-gbs=6-mbs=2-rank=0-seed=5-seq=16-shuffle=true-steps=100-tok=pad-tp=1-world=3": (
        "dl_cutoff_off_by_one",
    ),
    "batches.dataloader_split-data=short_text-gbs=6-mbs=2-rank=1-seed=0-seq=16-shuffle=true-steps=100-tok=asset-tp=2-world=6": (
        "dl_cutoff_off_by_one",
    ),
    "batches.dataloader_split-data=short_text-gbs=6-mbs=2-rank=1-seed=5-seq=16-shuffle=true-steps=100-tok=pad-tp=1-world=3": (
        "dl_cutoff_off_by_one",
    ),
    "batches.dataloader_split-data=short_text-gbs=6-mbs=2-rank=2-seed=0-seq=16-shuffle=true-steps=100-tok=asset-tp=2-world=6": (
        "dl_cutoff_off_by_one",
    ),
    "batches.dataloader_split-data=short_text-gbs=6-mbs=2-rank=2-seed=5-seq=16-shuffle=true-steps=100-tok=pad-tp=1-world=3": (
        "dl_cutoff_off_by_one",
    ),
    "batches.dataloader_split-data=short_text-gbs=6-mbs=2-rank=5-seed=0-seq=16-shuffle=true-steps=100-tok=asset-tp=2-world=6": (
        "dl_cutoff_off_by_one",
    ),
    "component_checkpoint_async": ("ckpt_async_on_forced_save",),
    "component_checkpoint_changed_settings": ("ckpt_config_load_path_ignored", "legacy_resume_step_not_read"),
    "component_checkpoint_changed_settings_rows": ("ckpt_config_load_path_ignored",),
    "component_checkpoint_damaged": ("ckpt_rng_not_restored", "legacy_resume_step_not_read"),
    "component_checkpoint_damaged_rows": ("ckpt_epoch_not_resumed",),
    "component_checkpoint_layout": ("ckpt_rng_state_not_saved",),
    "component_checkpoint_manager": ("ckpt_step_dir_zero_padded",),
    "component_checkpoint_resume": ("ckpt_rng_not_restored",),
    "component_loss": ("loss_shift_pads_last_with_zero",),
    "component_loss_drawn_vs_legacy": ("loss_shift_pads_last_with_zero",),
    "component_loss_reduction_vs_legacy": ("loss_shift_pads_last_with_zero",),
    "component_loss_vs_legacy": ("loss_shift_pads_last_with_zero",),
    "component_tokenizer": ("tok_encode_strips_text",),
    "component_tokenizer_drawn_vs_legacy": ("tok_encode_strips_text",),
    "component_tokenizer_trust_remote_code_vs_legacy": ("tok_trust_remote_code_forced",),
    "component_tokenizer_vs_legacy": ("tok_encode_strips_text",),
    "dataloader_fields_error": ("dl_train_size_zero_unset",),
    "dataloader_hf_text": ("dl_cutoff_off_by_one",),
    "dataloader_hf_text_golden": ("dl_cutoff_off_by_one",),
    "dataloader_json_alpaca": ("dl_cutoff_off_by_one",),
    "dataloader_micro_batch_groups": ("dl_cutoff_off_by_one",),
    "dataloader_preset": ("dl_shuffle_forced",),
    "dataloader_preset_golden": ("dl_shuffle_forced",),
    "dataloader_resume_golden": ("dl_cutoff_off_by_one",),
    "dataloader_set_epoch_groups": ("dl_set_epoch_ignored",),
    "e2e.trainer_e2e-artifact=batches-recipe=alpaca": ("dl_shuffle_forced",),
    "e2e.trainer_e2e-artifact=batches-recipe=dp2_padded": ("dl_seed_per_rank",),
    "e2e.trainer_e2e-artifact=batches-recipe=dummy": ("dl_dummy_samples_local_batch",),
    "e2e.trainer_e2e-artifact=batches-recipe=hf_text": ("dl_cutoff_off_by_one",),
    "e2e.trainer_e2e-artifact=batches-recipe=preset": ("dl_preset_shrinks_to_data",),
    "e2e.trainer_e2e-artifact=checkpoint-recipe=alpaca": ("step_clip_decay_group_only",),
    "e2e.trainer_e2e-artifact=checkpoint-recipe=dp2_padded": ("step_clip_decay_group_only",),
    "e2e.trainer_e2e-artifact=checkpoint-recipe=dummy": ("step_clip_decay_group_only",),
    "e2e.trainer_e2e-artifact=checkpoint-recipe=hf_text": ("blind_ckpt_final_export_when_saving_off",),
    "e2e.trainer_e2e-artifact=checkpoint-recipe=preset": ("step_clip_decay_group_only",),
    "e2e.trainer_e2e-artifact=grad_norms-recipe=alpaca": ("step_clip_decay_group_only",),
    "e2e.trainer_e2e-artifact=grad_norms-recipe=dp2_padded": ("step_clip_decay_group_only",),
    "e2e.trainer_e2e-artifact=grad_norms-recipe=dummy": ("step_clip_decay_group_only",),
    "e2e.trainer_e2e-artifact=grad_norms-recipe=hf_text": ("step_clip_decay_group_only",),
    "e2e.trainer_e2e-artifact=grad_norms-recipe=preset": ("step_clip_decay_group_only",),
    "e2e.trainer_e2e-artifact=hf_export-recipe=alpaca": ("step_clip_decay_group_only",),
    "e2e.trainer_e2e-artifact=hf_export-recipe=dp2_padded": ("step_clip_decay_group_only",),
    "e2e.trainer_e2e-artifact=hf_export-recipe=dummy": ("step_clip_decay_group_only",),
    "e2e.trainer_e2e-artifact=hf_export-recipe=hf_text": ("blind_ckpt_final_export_when_saving_off",),
    "e2e.trainer_e2e-artifact=hf_export-recipe=preset": ("step_clip_decay_group_only",),
    "e2e.trainer_e2e-artifact=layout-recipe=alpaca": ("ckpt_periodic_export_skipped",),
    "e2e.trainer_e2e-artifact=layout-recipe=dp2_padded": ("ckpt_periodic_export_skipped",),
    "e2e.trainer_e2e-artifact=layout-recipe=dummy": ("ckpt_periodic_export_skipped",),
    "e2e.trainer_e2e-artifact=layout-recipe=hf_text": ("blind_ckpt_final_export_when_saving_off",),
    "e2e.trainer_e2e-artifact=layout-recipe=preset": ("ckpt_periodic_export_skipped",),
    "e2e.trainer_e2e-artifact=losses-recipe=alpaca": ("step_clip_decay_group_only",),
    "e2e.trainer_e2e-artifact=losses-recipe=dp2_padded": ("step_clip_decay_group_only",),
    "e2e.trainer_e2e-artifact=losses-recipe=dummy": ("step_clip_decay_group_only",),
    "e2e.trainer_e2e-artifact=losses-recipe=hf_text": ("step_clip_decay_group_only",),
    "e2e.trainer_e2e-artifact=losses-recipe=preset": ("step_clip_decay_group_only",),
    "e2e.trainer_e2e-artifact=lr_curve-recipe=alpaca": ("map_decay_style_dropped",),
    "e2e.trainer_e2e-artifact=lr_curve-recipe=dp2_padded": ("init_scheduler_primed",),
    "e2e.trainer_e2e-artifact=lr_curve-recipe=dummy": ("init_scheduler_primed",),
    "e2e.trainer_e2e-artifact=lr_curve-recipe=hf_text": ("init_scheduler_primed",),
    "e2e.trainer_e2e-artifact=lr_curve-recipe=preset": ("init_scheduler_primed",),
    "e2e.trainer_e2e-artifact=metrics-recipe=alpaca": ("step_clip_decay_group_only",),
    "e2e.trainer_e2e-artifact=metrics-recipe=dp2_padded": ("step_clip_decay_group_only",),
    "e2e.trainer_e2e-artifact=metrics-recipe=dummy": ("step_clip_decay_group_only",),
    "e2e.trainer_e2e-artifact=metrics-recipe=hf_text": ("step_clip_decay_group_only",),
    "e2e.trainer_e2e-artifact=metrics-recipe=preset": ("step_clip_decay_group_only",),
    "e2e.trainer_e2e-artifact=param_groups-recipe=alpaca": ("init_scheduler_primed",),
    "e2e.trainer_e2e-artifact=param_groups-recipe=dp2_padded": ("init_scheduler_primed",),
    "e2e.trainer_e2e-artifact=param_groups-recipe=dummy": ("init_scheduler_primed",),
    "e2e.trainer_e2e-artifact=param_groups-recipe=hf_text": ("init_scheduler_primed",),
    "e2e.trainer_e2e-artifact=param_groups-recipe=preset": ("init_scheduler_primed",),
    # The covering points (parity/explore/covering.json, seed 9, 40 points), measured 14:54 UTC
    # 2026-12-02 with `selfcheck --plant <8 plants> -- --tag explore` (init_scheduler_primed: 39 of
    # 40 red, step_clip_decay_group_only 31) and the two plants of the model and mp_dtypes features
    # on the points that use them; each plant other than the two generic ones is claimed at its two
    # cheapest points (fewest ranks and steps), every other point claims one plant that caught it.
    "e2e_explore.explore_cover-point=0": ("init_scheduler_primed",),
    "e2e_explore.explore_cover-point=1": ("blind_cfgmgr_bool_case_sensitive",),
    "e2e_explore.explore_cover-point=10": ("blind_ht_run_settings_yaml_max_steps",),
    "e2e_explore.explore_cover-point=11": ("init_scheduler_primed",),
    "e2e_explore.explore_cover-point=12": ("blind_ht_run_settings_yaml_max_steps",),
    "e2e_explore.explore_cover-point=13": ("init_scheduler_primed",),
    "e2e_explore.explore_cover-point=14": ("init_scheduler_primed",),
    "e2e_explore.explore_cover-point=15": ("blind_cfgmgr_bool_case_sensitive",),
    "e2e_explore.explore_cover-point=16": ("init_scheduler_primed",),
    "e2e_explore.explore_cover-point=17": ("init_scheduler_primed",),
    "e2e_explore.explore_cover-point=18": ("init_scheduler_primed",),
    "e2e_explore.explore_cover-point=19": ("init_scheduler_primed",),
    "e2e_explore.explore_cover-point=2": ("legacy_model_flavor_only",),
    "e2e_explore.explore_cover-point=20": ("init_scheduler_primed",),
    "e2e_explore.explore_cover-point=21": ("blind_ht_preset_tokenizer_never_built",),
    "e2e_explore.explore_cover-point=22": ("init_scheduler_primed",),
    "e2e_explore.explore_cover-point=23": ("legacy_model_flavor_only",),
    "e2e_explore.explore_cover-point=24": ("init_scheduler_primed",),
    "e2e_explore.explore_cover-point=25": ("blind_map_dp_prefers_legacy_dp",),
    "e2e_explore.explore_cover-point=26": ("init_scheduler_primed",),
    "e2e_explore.explore_cover-point=27": ("init_scheduler_primed",),
    "e2e_explore.explore_cover-point=28": ("init_scheduler_primed",),
    "e2e_explore.explore_cover-point=29": ("init_scheduler_primed",),
    "e2e_explore.explore_cover-point=3": ("init_scheduler_primed",),
    "e2e_explore.explore_cover-point=30": ("blind_map_dp_prefers_legacy_dp",),
    "e2e_explore.explore_cover-point=31": ("init_scheduler_primed",),
    "e2e_explore.explore_cover-point=32": ("init_scheduler_primed",),
    "e2e_explore.explore_cover-point=33": ("init_scheduler_primed",),
    "e2e_explore.explore_cover-point=34": ("init_scheduler_primed",),
    "e2e_explore.explore_cover-point=35": ("init_scheduler_primed",),
    "e2e_explore.explore_cover-point=36": ("init_scheduler_primed",),
    "e2e_explore.explore_cover-point=37": ("init_scheduler_primed",),
    "e2e_explore.explore_cover-point=38": ("map_reduce_dtype_dropped",),
    "e2e_explore.explore_cover-point=39": ("init_scheduler_primed",),
    "e2e_explore.explore_cover-point=4": ("init_scheduler_primed",),
    "e2e_explore.explore_cover-point=5": ("init_scheduler_primed",),
    "e2e_explore.explore_cover-point=6": ("init_scheduler_primed",),
    "e2e_explore.explore_cover-point=7": ("map_reduce_dtype_dropped",),
    "e2e_explore.explore_cover-point=8": ("init_scheduler_primed",),
    "e2e_explore.explore_cover-point=9": ("init_scheduler_primed",),
    "explore_drawn": ("step_clip_decay_group_only",),
    "explore_resume": ("init_scheduler_primed",),
    "explore_resume_fixed": ("init_scheduler_primed",),
    "hyper_trainer_curve": ("step_clip_decay_group_only",),
    "lambda_warmup_cosine": ("platform_lambda_lr_multiplicative",),
    "legacy_after_5_steps": ("shared_dummy_ids_from_one",),
    "legacy_debug_model_loss": ("shared_dummy_ids_from_one",),
    "legacy_debug_param_groups": ("hazard_legacy_foreach_pinned",),
    "legacy_debug_recipe_curve": ("shared_dummy_ids_from_one",),
    "legacy_debug_recipe_metric_keys": ("shared_dummy_ids_from_one",),
    "legacy_dummy_batches": ("shared_dummy_ids_from_one",),
    "legacy_multilingual": ("legacy_tok_pad_from_unk",),
    "log.trainer_log-recipe=dp2_padded": ("step_clip_decay_group_only",),
    "long_curve": ("step_clip_decay_group_only",),
    "long_lr": ("lrsched_lr_min_as_ratio",),
    "losses.component_loss_ignore_index_vs_legacy-batch=2-chunks=0-data_seed=7-ignore=random-ignore_index=-1-seq=16": (
        "loss_shift_pads_last_with_zero",
    ),
    "losses.component_loss_ignore_index_vs_legacy-batch=2-chunks=0-data_seed=7-ignore=random-ignore_index=0-seq=16": (
        "loss_shift_default_ignore_index",
    ),
    "losses.component_loss_ignore_index_vs_legacy-batch=2-chunks=3-data_seed=7-ignore=random-ignore_index=0-seq=16": (
        "loss_chunked_ignore0_column",
    ),
    "losses.component_loss_ignore_index_vs_legacy-batch=2-chunks=4-data_seed=7-ignore=random-ignore_index=5-seq=16": (
        "loss_shift_pads_last_with_zero",
    ),
    "lr_curve.legacy_lr-decay_style=constant-lr_min=0.0-steps=100-warmup_ratio=0.0": (
        "legacy_warmup_inclusive",
    ),
    "lr_curve.legacy_lr-decay_style=constant-lr_min=0.0001-steps=50-warmup_ratio=0.33": (
        "legacy_warmup_floor",
    ),
    "lr_curve.legacy_lr-decay_style=cosine-lr_min=0.0-steps=1-warmup_ratio=0.0": ("legacy_cosine_clamped",),
    "lr_curve.legacy_lr-decay_style=cosine-lr_min=0.0-steps=20-warmup_ratio=0.15": ("legacy_cosine_clamped",),
    "lr_curve.legacy_lr-decay_style=cosine-lr_min=0.0001-steps=20-warmup_ratio=0.1": (
        "legacy_cosine_clamped",
    ),
    "lr_curve.legacy_lr-decay_style=cosine-lr_min=0.0001-steps=7-warmup_ratio=0.5": (
        "legacy_cosine_clamped",
    ),
    "lr_curve.legacy_lr-decay_style=cosine-lr_min=1e-05-steps=100-warmup_ratio=0.05": (
        "legacy_cosine_clamped",
    ),
    "lr_curve.legacy_lr-decay_style=linear-lr_min=0.0001-steps=20-warmup_ratio=0.1": (
        "legacy_cosine_clamped",
    ),
    "lr_curve.lrsched_grid-decay_style=constant-lr_min=0.0001-steps=7-warmup_ratio=0.5": (
        "lrsched_warmup_floor",
    ),
    "lr_curve.lrsched_grid-decay_style=cosine-lr_min=0.0-steps=1-warmup_ratio=0.0": (
        "legacy_cosine_clamped",
    ),
    "lr_curve.lrsched_grid-decay_style=cosine-lr_min=0.0-steps=100-warmup_ratio=0.07": (
        "legacy_cosine_clamped",
    ),
    "lr_curve.lrsched_grid-decay_style=cosine-lr_min=0.0-steps=20-warmup_ratio=0.15": (
        "legacy_cosine_clamped",
    ),
    "lr_curve.lrsched_grid-decay_style=cosine-lr_min=0.0-steps=3-warmup_ratio=1.5": (
        "legacy_cosine_clamped",
    ),
    "lr_curve.lrsched_grid-decay_style=cosine-lr_min=0.0001-steps=20-warmup_ratio=0.1": (
        "legacy_cosine_clamped",
    ),
    "lr_curve.lrsched_grid-decay_style=cosine-lr_min=1e-05-steps=0-warmup_ratio=0.1": (
        "legacy_cosine_clamped",
    ),
    "lr_curve.lrsched_grid-decay_style=cosine-lr_min=1e-05-steps=100-warmup_ratio=0.1": (
        "legacy_cosine_clamped",
    ),
    "lr_curve.lrsched_grid-decay_style=linear-lr_min=0.0001-steps=50-warmup_ratio=0.33": (
        "legacy_cosine_clamped",
    ),
    "lr_curve.lrsched_new_curve-decay_style=constant-lr_min=0.0001-steps=7-warmup_ratio=0.5": (
        "lrsched_warmup_floor",
    ),
    "lr_curve.lrsched_new_curve-decay_style=cosine-lr_min=0.0001-steps=20-warmup_ratio=0.1": (
        "lrsched_lr_min_as_ratio",
    ),
    "lrsched_dataset_shrunk": ("legacy_cosine_clamped",),
    "lrsched_hypothesis": ("legacy_cosine_clamped",),
    "lrsched_lr_max": ("legacy_cosine_clamped",),
    "lrsched_preset_pt_reset": ("legacy_cosine_clamped",),
    "lrsched_warmup_steps": ("legacy_cosine_clamped",),
    "metrics_processor": ("metrics_min_step_time",),
    "metrics_processor_vs_callbacks": ("metrics_min_step_time",),
    "metrics_wandb_init": ("metrics_min_step_time",),
    "metrics_wandb_mapped": ("metrics_wandb_run_name",),
    "optim_in_backward_groups": ("optim_keyword_norm_dropped",),
    "optim_in_backward_state": ("optim_keyword_norm_dropped",),
    "optim_new_groups": ("optim_no_decay_group_decays",),
    "optim_new_state": ("optim_no_decay_group_decays",),
    "optim_state": ("optim_no_decay_group_decays",),
    "optim_toy_groups": ("optim_no_decay_group_decays",),
    "optim_toy_hypothesis": ("optim_no_decay_group_decays",),
    "optim_toy_in_backward_groups": ("optim_keyword_norm_dropped",),
    "optim_toy_in_backward_step": ("optim_keyword_norm_dropped",),
    "optim_toy_new_groups": ("optim_no_decay_group_decays",),
    "optim_toy_new_step": ("optim_no_decay_group_decays",),
    "optim_toy_step": ("optim_no_decay_group_decays",),
    "param_groups.optim_groups-beta1=0.0-beta2=0.5-eps=0.0-frozen=embed-lr=0.0-seed=2-weight_decay=0.0": (
        "optim_keyword_norm_dropped",
    ),
    "param_groups.optim_groups-beta1=0.8-beta2=0.95-eps=1e-06-frozen=layers.1-lr=0.0003-seed=1-weight_decay=0.1": (
        "optim_no_decay_group_decays",
    ),
    "param_groups.optim_groups-beta1=0.9-beta2=0.999-eps=1e-08-frozen=none-lr=0.001-seed=0-weight_decay=0.01": (
        "optim_no_decay_group_decays",
    ),
    "profiler.profiler_run-active=0-enabled=false-steps=3-wait=-1-warmup=0": (
        "legacy_profiler_ignores_enabled",
    ),
    "profiler.profiler_run-active=1-enabled=true-steps=2-wait=0-warmup=3": ("prof_active_off_by_one",),
    "profiler.profiler_run-active=1-enabled=true-steps=4-wait=0-warmup=0": ("prof_active_off_by_one",),
    "profiler.profiler_run-active=2-device=cuda-enabled=true-steps=4-wait=0-warmup=1": (
        "prof_active_off_by_one",
    ),
    "profiler.profiler_run-active=2-enabled=false-steps=5-wait=2-warmup=2": (
        "legacy_profiler_ignores_enabled",
    ),
    "profiler.profiler_run-active=2-enabled=true-output_dir=my_traces-rank=3-steps=5-wait=1-warmup=1": (
        "prof_active_off_by_one",
    ),
    "profiler.profiler_run-active=2-enabled=true-steps=8-wait=2-warmup=1": ("prof_active_off_by_one",),
    "profiler.profiler_run-active=3-enabled=true-steps=7-wait=1-warmup=1": ("prof_active_off_by_one",),
    "profiler.profiler_run-active=5-enabled=true-steps=12-wait=4-warmup=0": ("prof_active_off_by_one",),
    "profiler.profiler_run-enabled=true-steps=7": ("prof_active_off_by_one",),
    "profiler.profiler_run-steps=5": ("legacy_profiler_ignores_enabled",),
    "profiler_defaults": ("prof_enabled_default_on",),
    "profiler_new_run": ("prof_active_off_by_one",),
    "profiler_run_hypothesis": ("prof_active_off_by_one",),
    "reseed": ("platform_generator_unseeded",),
    "token_ids.component_tokenizer_config_pad_vs_legacy-pad=endoftext-variant=pad": (
        "tok_config_pad_only_when_missing",
    ),
    "token_ids.component_tokenizer_config_pad_vs_legacy-pad=im_end-variant=asset": (
        "legacy_tok_pad_always_eos",
    ),
    "token_ids.component_tokenizer_transform_vs_legacy-cutoff=64-rows=24-variant=asset": (
        "tok_call_drops_kwargs",
    ),
    "token_ids.component_tokenizer_transform_vs_legacy-cutoff=64-rows=24-variant=no_eos": (
        "tok_call_drops_kwargs",
    ),
    "token_ids.component_tokenizer_transform_vs_legacy-cutoff=64-rows=24-variant=pad": (
        "legacy_tok_pad_always_eos",
    ),
    "token_ids.transform_grid-data=alpaca_grid-seq=1": ("dl_cutoff_off_by_one",),
    "token_ids.transform_grid-data=alpaca_grid-seq=16": ("dl_cutoff_off_by_one",),
    "token_ids.transform_grid-data=alpaca_grid-seq=16-template=alpaca": ("dl_cutoff_off_by_one",),
    "token_ids.transform_grid-data=alpaca_grid-seq=2": ("dl_cutoff_off_by_one",),
    "token_ids.transform_grid-data=alpaca_grid-seq=22": ("dl_cutoff_off_by_one",),
    "token_ids.transform_grid-data=alpaca_grid-seq=31": ("dl_cutoff_off_by_one",),
    "token_ids.transform_grid-data=alpaca_grid-seq=8": ("dl_cutoff_off_by_one",),
    "token_ids.transform_grid-data=alpaca_grid_as_text-seq=8-text_key=output": ("dl_cutoff_off_by_one",),
    "trainer_debug_seed": ("init_seed_ignores_debug_seed",),
    "trainer_dp_rank": ("dl_seed_per_rank",),
    "trainer_throughput": ("step_clip_decay_group_only",),
    "trainer_tokenizer_vocab_refusal_vs_legacy": ("tok_vocab_check_dropped",),
    "transform_grid_golden": ("dl_cutoff_off_by_one",),
    "user_callbacks": ("step_clip_decay_group_only",),
}

# No plant measured to turn these red yet (the debt; see the module doc).
UNMEASURED: frozenset[str] = frozenset()
