"""HyperTrainer: the new trainer, built from ``HyperTrainer.Config`` in the RFC's 11 steps.

It shares the initialisation helpers of ``BaseTrainer`` (distributed setup, post-parallelize,
weight loading) so that both trainers set up processes, meshes, seeds and weights with one piece
of code; everything else comes from the Configurable components. The training step mirrors the
legacy step operation for operation (token-weighted scaling, FSDP2 sync flags, clipping, the
reported loss), with the model returning logits and the loss component computing the loss, so the
parity harness can compare the two trainers bit for bit.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import os
from collections.abc import Callable, Iterator
from typing import Any

import hyper_parallel.platform.logging  # noqa: F401  (installs info_rank0 / warning_rank0)
from hyper_parallel.components.dataloader import data_parallel_rank
from hyper_parallel.config import effective_seed
from hyper_parallel.platform import get_platform
from hyper_parallel.protocols import Configurable, verify_module_protocol
from hyper_parallel.trainer.base import BaseTrainer, TrainerState
from hyper_parallel.trainer.parallel_dims import ParallelDims
from hyper_parallel.trainer.trainer_config import TrainerConfig
from hyper_parallel.trainer.utils.loss import mean_global_loss

__all__ = ["HyperTrainer", "InitStepError", "INIT_STEPS"]

logger = logging.getLogger(__name__)

# The RFC's 11 initialisation steps, in order (``HyperTrainer.init_steps`` records the ones run).
INIT_STEPS = (
    "setup_distributed",
    "tokenizer",
    "dataloader",
    "model_config",
    "build_model",
    "verify_protocol",
    "parallelize",
    "materialize",
    "optimizer",
    "checkpoint",
    "metrics_profiler",
)


class InitStepError(RuntimeError):
    """A failure inside one of the 11 init steps; ``step`` names it and ``__cause__`` holds the error."""

    def __init__(self, index: int, step: str, cause: BaseException) -> None:
        super().__init__(
            f"HyperTrainer init step {index}/{len(INIT_STEPS)} '{step}' failed: {type(cause).__name__}: {cause}"
        )
        self.index = index
        self.step = step


class HyperTrainer(BaseTrainer, Configurable):
    """``HyperTrainer.Config(...).build()`` -> a trainer; ``train()`` runs the loop."""

    Config = TrainerConfig

    def __init__(self, config: TrainerConfig) -> None:  # noqa: D107 - the steps document themselves
        # BaseTrainer.__init__ takes legacy args; this trainer sets its own state instead.
        if config.model_spec is None:
            raise ValueError(
                "HyperTrainer.Config.model_spec is not set; expected a ModelSpec with model, parallelize_fn "
                "and state_dict_adapter (e.g. from hyper_parallel.recipes or legacy_to_trainer_config)"
            )
        self.config = config
        self.spec = config.model_spec
        self.state = TrainerState(max_steps=config.training.steps)
        self.last_step_metrics: dict[str, float] | None = None
        self._last_global_tokens: int | None = None
        self.init_steps: list[str] = []
        for index, step in enumerate(INIT_STEPS, start=1):
            try:
                getattr(self, f"_init_{step}")()
            except Exception as exc:
                raise InitStepError(index, step, exc) from exc
            self.init_steps.append(step)

    # ----------------------------------------------------------------- 1-3
    def _init_setup_distributed(self) -> None:
        cfg = self.config
        par = cfg.parallelism

        def make_parallel_dims(world_size: int) -> ParallelDims:
            return ParallelDims(
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

        self._helper_setup_distributed(
            comm_backend=cfg.comm.backend,
            local_rank=int(os.environ.get("LOCAL_RANK", "0")),
            make_parallel_dims=make_parallel_dims,
            seed=effective_seed(cfg.training, cfg.debug),
            deterministic=cfg.debug.deterministic,
            deterministic_warn_only=cfg.debug.deterministic_warn_only,
        )

    def _init_tokenizer(self) -> None:
        """No tokenizer for dummy data, nor for preset batches without a path (legacy rule, spec 6.1)."""
        cfg = self.config
        data_type = cfg.dataloader.type
        if data_type == "dummy" or (data_type == "preset_pt" and not cfg.tokenizer.path):
            self.tokenizer = None
            return
        self.tokenizer = cfg.tokenizer.build(vocab_size=self.spec.model.vocab_size)

    def _init_dataloader(self) -> None:
        """Sizes and seed are ``training``'s; the data rank is the dataloader module's one rule."""
        cfg = self.config
        training = cfg.training
        self.dataloader = cfg.dataloader.build(
            seq_len=training.seq_len,
            local_batch_size=training.local_batch_size,
            global_batch_size=training.global_batch_size,
            seed=training.seed,
            dp_world_size=self.parallel_dims.dp_size,
            dp_rank=data_parallel_rank(get_platform().get_rank(), self.parallel_dims.non_dp_size),
            tokenizer=self.tokenizer,
            training_steps=training.steps,
            vocab_size=self.spec.model.vocab_size,
        )
        # The dataset may change the horizon (hf/json shrink it, preset_pt resets it); the LR
        # schedule and the loop use the changed value, as the legacy state.max_steps does.
        if self.dataloader.training_steps is not None:
            self.state.max_steps = int(self.dataloader.training_steps)

    # ----------------------------------------------------------------- 4-8
    def _init_model_config(self) -> None:
        self.model_config = self.spec.model
        self.model_config.update_from_config(trainer_config=self.config)

    def _init_build_model(self) -> None:
        training = self.config.training
        context = get_platform().meta_device() if training.init_device == "meta" else contextlib.nullcontext()
        with context:
            model = self.model_config.build()
        self.parallel_dims.validate_against_model(model, seq_len=training.seq_len)
        patterns = training.freeze_modules or []
        for name, param in model.named_parameters():
            if patterns and any(p in name for p in patterns):
                param.requires_grad_(False)
        self.model = model

    def _init_verify_protocol(self) -> None:
        verify_module_protocol(self.model)

    def _init_parallelize(self) -> None:
        cfg = self.config
        if self.spec.parallelize_fn is None:
            raise ValueError(f"model_spec '{self.spec.name}' has no parallelize_fn")
        self.model = self.spec.parallelize_fn(
            self.model,
            self.parallel_dims,
            training=cfg.training,
            parallelism=cfg.parallelism,
            activation_checkpoint=cfg.activation_checkpoint,
            compile=cfg.compile,
            dump_folder=cfg.dump_folder,
            freeze_modules=cfg.training.freeze_modules,
        )

    def _init_materialize(self) -> None:
        training = self.config.training
        device_type = get_platform().device_type()

        def materialize() -> None:
            self.model.to_empty(device=device_type)
            self.model.init_weights(buffer_device=device_type)

        self._helper_post_parallelize(
            init_device=training.init_device,
            weights_path=training.weights_path,
            mixed_precision=training.enable_mixed_precision,
            materialize=materialize,
        )

    # ---------------------------------------------------------------- 9-11
    def _init_optimizer(self) -> None:
        cfg = self.config
        self.optimizer = cfg.optimizer.build(model_parts=[self.model])
        self.lr_scheduler = cfg.lr_scheduler.build(
            optimizers=self.optimizer, training_steps=self.state.max_steps
        )
        self.loss_fn = cfg.loss.build()

    def _init_checkpoint(self) -> None:
        self.checkpointer = self.config.checkpoint.build(
            model_parts=[self.model],
            optimizers=self.optimizer,
            lr_schedulers=self.lr_scheduler,
            dataloader=self.dataloader,
            sd_adapter=self.spec.state_dict_adapter,
        )

    def _init_metrics_profiler(self) -> None:
        cfg = self.config
        self.metrics = cfg.metrics.build(
            trainer=self,
            world_size=self.parallel_dims.world_size,
            rank=get_platform().get_rank(),
            global_batch_size=cfg.training.global_batch_size,
            seq_len=cfg.training.seq_len,
        )
        self.profiler = cfg.profiler.build()
        # The legacy state keeps the records of logged steps; here the processor owns that list.
        self.state.log_history = self.metrics.history

    # ------------------------------------------------------------ train step
    def forward_backward_step(self, micro_batch, mb_tokens: int, global_tokens: int, num_micro: int = 1):
        platform = get_platform()
        micro_batch = platform.move_to_device(micro_batch, self.device)
        logits = self.model.forward_logits(micro_batch["input_ids"])
        loss = platform.full_tensor(self.loss_fn(logits, micro_batch["labels"]))
        raw = loss.detach()
        if self.config.optimizer.loss_aggregation == "rank_average":
            scaled = loss / num_micro if num_micro > 1 else loss
        else:
            scaled = mean_global_loss(loss, mb_tokens, global_tokens, self.parallel_dims.dp_size)
        scaled.backward()
        return raw, mb_tokens

    def train_step(self, it: Iterator[list[dict[str, Any]]]) -> dict[str, float]:
        """One optimizer step; token counting, FSDP2 flags and the reported loss are the shared helpers."""
        platform = get_platform()
        micro_batches = next(it)
        self.state.global_step += 1
        n = len(micro_batches)

        counts = [self.loss_fn.count_tokens(mb) for mb in micro_batches]
        global_tokens = self._helper_global_tokens(counts)

        loss_sum = arith_sum = 0.0
        tok_local = 0
        for i, mb in enumerate(micro_batches):
            self._helper_fsdp_micro_batch_flags(i, n)
            raw, tok = self.forward_backward_step(mb, counts[i], global_tokens, num_micro=n)
            value = raw.item()
            loss_sum += value * tok
            arith_sum += value
            tok_local += tok

        clip: Callable = self.spec.clip_grad_fn or platform.clip_grad_norm
        grad_norm = platform.full_tensor(clip(self.model.parameters(), self.config.training.max_norm)).item()
        if self.config.debug.check_nan_inf and not platform.is_finite(grad_norm):
            logger.error("non-finite grad norm %s at step %d", grad_norm, self.state.global_step)
            raise RuntimeError(
                f"grad norm is {grad_norm} at step {self.state.global_step} (debug.check_nan_inf is on)"
            )

        self.optimizer.step()
        self.lr_scheduler.step()
        self.optimizer.zero_grad()

        loss = self._helper_reported_loss(
            self.config.optimizer.loss_aggregation,
            loss_sum=loss_sum,
            arith_sum=arith_sum,
            num_micro=n,
            tok_local=tok_local,
            global_tokens=global_tokens,
        )
        return {"loss": loss, "grad_norm": grad_norm}

    # ------------------------------------------------------------------ train
    def train(self) -> None:
        cfg = self.config
        state = self.state
        gc_steps = cfg.debug.gc_steps
        if gc_steps > 0:
            gc.disable()
        logger.info_rank0(
            "training for max_steps=%d, num_train_epochs=%d", state.max_steps, cfg.training.num_train_epochs
        )
        try:
            with self.profiler as prof:
                step, epoch = self.checkpointer.load()
                if step > 0:
                    state.global_step, state.epoch = step, epoch
                    logger.info_rank0("Resuming training from step %d", state.global_step)
                for epoch in range(cfg.training.num_train_epochs):
                    if state.global_step >= state.max_steps:
                        break
                    state.epoch = epoch
                    self.dataloader.set_epoch(epoch)
                    it = self.dataloader.micro_batch_iterator()
                    while state.global_step < state.max_steps:
                        self.metrics.start_step()
                        try:
                            out = self.train_step(it)
                        except StopIteration:
                            logger.info_rank0("Epoch %d: dataloader exhausted", epoch)
                            break
                        self.metrics.log(
                            state.global_step,
                            loss=out["loss"],
                            grad_norm=out["grad_norm"],
                            lr=self.lr_scheduler.get_last_lr()[0],
                            global_tokens=self._last_global_tokens,
                        )
                        self.last_step_metrics = out
                        if prof is not None:
                            prof.step()
                        self.checkpointer.maybe_save(state.global_step, state.epoch)
                        if gc_steps > 0 and state.global_step % gc_steps == 0:
                            gc.collect()
                self.checkpointer.save_final(state.global_step, state.epoch)
        finally:
            self.metrics.close()
            if gc_steps > 0:
                gc.enable()
        get_platform().destroy_process_group()
        logger.info_rank0("Training completed")
