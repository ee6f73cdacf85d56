"""The blind set: plants written from the product code alone (issue 20, item 7).

They were written without opening the suites, the exploration, the claims table, the tests or
the existing plants' ``needs``, to measure how the harness generalises to slips nobody
described, then run once each against the full suite (``python -m parity selfcheck --jobs 2
--plant <name> ...``, baseline green in 193 s, on 2 shared cores) and added to ``PLANTS`` in
``parity/tools/plants.py`` (names ``blind_*``), where ``needs`` says what caught each one, or
what case a survivor needs. Measured before the deadline cut the run (11 of 30)::

    caught    blind_ht_rank_average_micro_threshold (8: explore_cover x8; 355s)
    caught    blind_map_lr_min_to_lr_max (42: trainer_e2e x20, hyper_trainer_curve x4, +7 more; 398s)
    caught    blind_shared_infer_seqlen_half_inclusive (1: transform_grid_golden; 222s)
    inert-ok  blind_inert_ht_zero_grad_before_scheduler (-; 224s)
    caught    blind_ht_on_log_cadence_offset (1: user_callbacks; 256s)
    caught    blind_map_log_steps_to_tensorboard (29: trainer_e2e x5, user_callbacks, +3 more; 520s)
    caught    blind_shared_alpaca_newline_without_input (4: dataloader_pad_golden, transform_grid_golden x2, +1 more; 496s)
    inert-ok  blind_inert_chunked_ce_floor_chunk_size (-; 496s)
    survived  blind_ht_epoch_break_strict (-; 485s)
    error     blind_map_tokenizer_prefers_weights_path (timed out at 601s)
    caught    blind_shared_gqa_key_tiled (14: component_checkpoint_manager, component_loss x2, +7 more; 392s)
"""

from __future__ import annotations

from parity.tools.plants import PLANTS, Plant

__all__ = ["BLIND_PLANTS"]

BLIND_PLANTS: tuple[Plant, ...] = tuple(p for p in PLANTS if p.name.startswith("blind_"))
