"""HyperTrainer: the new trainer, built from ``HyperTrainer.Config`` in the RFC's 11 steps.

It inherits no legacy class: what it shares with ``BaseTrainer`` (distributed setup,
post-parallelize, the train-step arithmetic, user-callback dispatch) are the functions of
``init_helpers``, which return what they build; everything else comes from the Configurable
components. The training step mirrors the
legacy step operation for operation (token-weighted scaling, FSDP2 sync flags, clipping, the
reported loss), with the model returning logits and the loss component computing the loss, so the
parity harness can compare the two trainers bit for bit.
"""

from __future__ import annotations

import contextlib
import gc
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any, cast

from hyper_parallel.components.checkpoint import CheckpointManager
from hyper_parallel.components.dataloader import (
    BaseDataLoader,
    DummyDataLoader,
    HuggingFaceTextDataLoader,
    PresetPtDataLoader,
    data_parallel_rank,
)
from hyper_parallel.components.loss import BaseLoss, CrossEntropyLoss
from hyper_parallel.components.lr_scheduler import LRSchedulersContainer
from hyper_parallel.components.metrics import MetricsProcessor
from hyper_parallel.components.optimizer import OptimizersContainer
from hyper_parallel.components.profiler import Profiler
from hyper_parallel.components.tokenizer import BaseTokenizer, HuggingFaceTokenizer
from hyper_parallel.config import (
    ActivationCheckpointConfig,
    CommConfig,
    CompileConfig,
    DebugConfig,
    ParallelismConfig,
    TrainingConfig,
    effective_seed,
)
from hyper_parallel.platform import GroupInfo, get_platform
from hyper_parallel.platform.base import Device
from hyper_parallel.platform.logging import get_logger
from hyper_parallel.protocols import Configurable, ModelSpec, check_field_types, verify_module_protocol
from hyper_parallel.trainer import init_helpers
from hyper_parallel.trainer.init_helpers import TrainerState
from hyper_parallel.trainer.parallel_dims import ParallelDims
from hyper_parallel.trainer.utils.loss import mean_global_loss

__all__ = ["HyperTrainer", "TrainerConfig", "InitStepError", "INIT_STEPS"]

logger = get_logger(__name__)

if TYPE_CHECKING:  # the types a checker reads; tyro's Annotated markers only steer the CLI
    ModelSpecField = ModelSpec | None
    DataLoaderConfig = DummyDataLoader.Config | HuggingFaceTextDataLoader.Config | PresetPtDataLoader.Config
else:
    try:  # tyro is only needed by the CLI; the tree itself must import without it.
        import tyro

        _Hidden = tyro.conf.Suppress
    except ImportError:  # pragma: no cover - exercised only where tyro is missing
        tyro = None
        _Hidden = None

    # ModelSpec holds callables and a model dataclass that a CLI cannot parse: hidden from tyro.
    ModelSpecField = Annotated[ModelSpec | None, _Hidden] if _Hidden is not None else ModelSpec | None

    # The loader is chosen by its Config class; on the command line each class is a subcommand
    # (``dataloader:dummy``, ``dataloader:hf_text``, ``dataloader:preset_pt``), dummy by default.
    if tyro is not None:
        DataLoaderConfig = (
            Annotated[DummyDataLoader.Config, tyro.conf.subcommand("dummy")]
            | Annotated[HuggingFaceTextDataLoader.Config, tyro.conf.subcommand("hf_text")]
            | Annotated[PresetPtDataLoader.Config, tyro.conf.subcommand("preset_pt")]
        )
    else:  # pragma: no cover - exercised only where tyro is missing
        DataLoaderConfig = BaseDataLoader.Config

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


class HyperTrainer(Configurable):
    """``HyperTrainer.Config(...).build()`` -> a trainer; ``train()`` runs the loop."""

    @dataclass(kw_only=True, slots=True)
    class Config(Configurable.Config):
        """Everything a HyperTrainer needs (the RFC Part 5 tree); ``HyperTrainer.Config(...).build()``.

        Nested here, next to the class it builds, so it has its owner as soon as it is importable.
        """

        model_spec: ModelSpecField = None
        """The model family (config, builder, parallelize fn); set by a recipe or --module, not a flag."""

        hf_assets_path: str = "outputs/hf_assets"
        """Not used by this trainer yet (the tokenizer comes from ``tokenizer.path``); must stay default."""
        dump_folder: str = "outputs"
        """Not used by this trainer yet (each component has its own output_dir); must stay default."""

        tokenizer: BaseTokenizer.Config = field(default_factory=HuggingFaceTokenizer.Config)
        """Tokenizer (legacy ``model.tokenizer_path``)."""
        dataloader: DataLoaderConfig = field(default_factory=DummyDataLoader.Config)
        """Data source and loader; its Config class picks the loader (legacy ``data``)."""
        optimizer: OptimizersContainer.Config = field(default_factory=OptimizersContainer.Config)
        """AdamW with decay / no-decay groups (legacy ``train.optimizer``)."""
        lr_scheduler: LRSchedulersContainer.Config = field(default_factory=LRSchedulersContainer.Config)
        """Warmup and decay of the learning rate (legacy ``train.optimizer.lr_*``)."""
        loss: BaseLoss.Config = field(default_factory=CrossEntropyLoss.Config)
        """Training loss on the shifted labels."""
        checkpoint: CheckpointManager.Config = field(default_factory=CheckpointManager.Config)
        """Saving, resuming and initial weights (legacy ``train.checkpoint``)."""
        metrics: MetricsProcessor.Config = field(default_factory=MetricsProcessor.Config)
        """Console line, TensorBoard and W&B (legacy ``train.logging``)."""
        profiler: Profiler.Config = field(default_factory=Profiler.Config)
        """Profiler traces (legacy ``train.profile``)."""

        training: TrainingConfig = field(default_factory=TrainingConfig)
        """Loop sizes, seed, clipping, init device and mixed precision."""
        parallelism: ParallelismConfig = field(default_factory=ParallelismConfig)
        """Parallel degrees (legacy ``train.accelerator``)."""
        activation_checkpoint: ActivationCheckpointConfig = field(default_factory=ActivationCheckpointConfig)
        """Activation recomputation in backward."""
        compile: CompileConfig = field(default_factory=CompileConfig)
        """Compilation of the model and/or the loss."""
        comm: CommConfig = field(default_factory=CommConfig)
        """Process-group backend and timeout."""
        debug: DebugConfig = field(default_factory=DebugConfig)
        """Determinism and numerical checks (legacy ``train.debug``)."""

        def __post_init__(self) -> None:
            # RFC fields this trainer does not use yet: a value other than the default is refused
            # rather than silently ignored (outputs go where checkpoint/metrics/profiler say).
            for name, default, instead in (
                (
                    "dump_folder",
                    "outputs",
                    "checkpoint.output_dir, metrics.*.output_dir, profiler.output_dir",
                ),
                ("hf_assets_path", "outputs/hf_assets", "tokenizer.path"),
            ):
                value = getattr(self, name)
                if value != default:
                    raise ValueError(
                        f"HyperTrainer.Config.{name}={value!r} is not used by this trainer yet (use {instead}); "
                        f"leave it at its default {default!r}"
                    )

    # Every attribute, with its type; each init step assigns the ones it builds.
    config: HyperTrainer.Config
    spec: ModelSpec
    state: TrainerState
    init_steps: list[str]
    last_step_metrics: dict[str, float] | None
    user_callbacks: list[Any]  # legacy ``callbacks.base.Callback`` objects given to ``add_callback``
    _last_global_tokens: int | None
    # 1. setup_distributed
    device: Device
    parallel_dims: ParallelDims
    mesh: Any
    dp_group_info: GroupInfo
    # 2-3.
    tokenizer: BaseTokenizer | None
    dataloader: BaseDataLoader
    # 4-8.
    model_config: Any
    model: Any
    # 9-11.
    optimizer: OptimizersContainer
    lr_scheduler: LRSchedulersContainer
    loss_fn: BaseLoss
    checkpointer: CheckpointManager
    metrics: MetricsProcessor
    profiler: Profiler

    @staticmethod
    def check_config(config: HyperTrainer.Config) -> None:
        """What build refuses before any init step: no model spec, or a value of the wrong kind.

        A recipe built in code reaches here without the command line's ``parse_args``, which types
        every value first; the types are checked here (a Config may also have been edited after it
        was made). The command line's cross-field rules (``validate_cross_fields``) are not: a
        config from ``legacy_to_trainer_config`` must run what ``LLMTrainer(args)`` runs, and the
        legacy builders accept, for one, a decay style the scheduler runs as cosine.
        """
        if config.model_spec is None:
            raise ValueError(
                "HyperTrainer.Config.model_spec is not set; expected a ModelSpec with model, parallelize_fn "
                "and state_dict_adapter (e.g. from hyper_parallel.recipes or legacy_to_trainer_config)"
            )
        check_field_types(config)

    def __init__(self, config: HyperTrainer.Config) -> None:
        self.check_config(config)
        self.config = config
        self.spec = cast(ModelSpec, config.model_spec)  # check_config refused None
        self.state = TrainerState(max_steps=config.training.steps)
        self.last_step_metrics = None
        self._last_global_tokens = None
        self.init_steps = []
        self.user_callbacks = []
        # The RFC's 11 steps, top to bottom; each is recorded, and an error names its step.
        with self._init_step("setup_distributed"):  # 1. process group, ParallelDims, seed, determinism
            self._init_setup_distributed()
        with self._init_step("tokenizer"):  # 2.
            self._init_tokenizer()
        with self._init_step("dataloader"):  # 3. may change the step horizon
            self._init_dataloader()
        with self._init_step("model_config"):  # 4.
            self._init_model_config()
        with self._init_step("build_model"):  # 5. on the meta device (or training.init_device)
            self._init_build_model()
        with self._init_step("verify_protocol"):  # 6.
            self._init_verify_protocol()
        with self._init_step("parallelize"):  # 7. FSDP2 / AC / compile
            self._init_parallelize()
        with self._init_step("materialize"):  # 8. allocate and initialise
            self._init_materialize()
        with self._init_step("optimizer"):  # 9. optimizer, LR schedule, loss
            self._init_optimizer()
        with self._init_step("checkpoint"):  # 10. checkpointer, initial weights
            self._init_checkpoint()
        with self._init_step("metrics_profiler"):  # 11.
            self._init_metrics_profiler()

    @contextlib.contextmanager
    def _init_step(self, name: str) -> Iterator[None]:
        """Run one init step: ``InitStepError`` names it on failure, ``init_steps`` records it on success."""
        index = len(self.init_steps) + 1
        if INIT_STEPS[index - 1] != name:  # the list the RFC documents and the code stay one order
            raise RuntimeError(
                f"init step {index} is {name!r}, but INIT_STEPS lists {INIT_STEPS[index - 1]!r}"
            )
        try:
            yield
        except Exception as exc:
            raise InitStepError(index, name, exc) from exc
        self.init_steps.append(name)

    # ----------------------------------------------------------------- 1-3
    def _init_setup_distributed(self) -> None:
        cfg = self.config
        par = cfg.parallelism

        def make_parallel_dims(world_size: int) -> ParallelDims:
            return ParallelDims.from_parallelism(par, world_size)

        dist = init_helpers.setup_distributed(
            comm_backend=cfg.comm.backend,
            local_rank=int(os.environ.get("LOCAL_RANK", "0")),
            make_parallel_dims=make_parallel_dims,
            seed=effective_seed(cfg.training, cfg.debug),
            deterministic=cfg.debug.deterministic,
            deterministic_warn_only=cfg.debug.deterministic_warn_only,
            comm_timeout_seconds=cfg.comm.init_timeout_seconds,
        )
        self.device = dist.device
        self.parallel_dims = dist.parallel_dims
        self.mesh = dist.mesh
        self.dp_group_info = dist.dp_group_info

    def _init_tokenizer(self) -> None:
        """No tokenizer for dummy data, nor for preset batches without a path (the legacy rule)."""
        cfg = self.config
        loader = cfg.dataloader
        if isinstance(loader, DummyDataLoader.Config) or (
            isinstance(loader, PresetPtDataLoader.Config) and not cfg.tokenizer.path
        ):
            self.tokenizer = None
            return
        self.tokenizer = cfg.tokenizer.build(vocab_size=self.spec.model.vocab_size)

    def _init_dataloader(self) -> None:
        """Sizes are ``training``'s, the seed is the run's (``debug.seed`` when set, as for the
        generators in step 1); the data rank is the dataloader module's one rule."""
        cfg = self.config
        training = cfg.training
        self.dataloader = cfg.dataloader.build(
            seq_len=training.seq_len,
            local_batch_size=training.local_batch_size,
            global_batch_size=training.global_batch_size,
            seed=effective_seed(training, cfg.debug),
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
        # On meta, or on a real device with the constructors' RNG draws undone: step 8 initialises
        # the weights either way, to the same bits.
        model = init_helpers.build_model(
            self.model_config.build, init_device=training.init_device, field="training.init_device"
        )
        self.parallel_dims.validate_against_model(model, seq_len=training.seq_len)
        patterns = training.freeze_modules or []
        for name, param in model.named_parameters():
            if patterns and any(p in name for p in patterns):
                param.requires_grad = False
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

        init_helpers.post_parallelize(
            self.model,
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
        """The checkpoint component; it also loads the initial weights (``training.weights_path``).

        Loading after the optimizer is built changes no bit: the optimizer holds the parameters,
        and the weights are copied into them in place (its state is created at the first step).
        """
        self.checkpointer = self.config.checkpoint.build(
            model_parts=[self.model],
            optimizers=self.optimizer,
            lr_schedulers=self.lr_scheduler,
            dataloader=self.dataloader,
            sd_adapter=self.spec.state_dict_adapter,
            # Recorded in each checkpoint and compared on resume (checkpointing.resume_settings).
            run_settings={
                "global_batch_size": self.config.training.global_batch_size,
                "seq_len": self.config.training.seq_len,
                "max_steps": self.state.max_steps,
            },
        )
        if self.config.training.weights_path:
            self.checkpointer.load_weights(self.config.training.weights_path)

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

    # ------------------------------------------------ the legacy callback API (user callbacks)
    # The legacy built-in callbacks are components here (metrics, checkpoint, profiler); what a
    # migrating user still calls is ``add_callback`` with a ``callbacks.base.Callback``. Its hooks
    # get the same events, with the same arguments, at the same points as on ``LLMTrainer``
    # (``parity/suites/e2e_callbacks.py`` records both sequences and compares them).

    def add_callback(self, callback: Any) -> None:
        """Append a user callback; its hooks get the legacy events from the next one on."""
        self.user_callbacks.append(callback)

    def _dispatch(self, hook: str, **kwargs: Any) -> None:
        """``hook(state, **kwargs)`` on each user callback; free when there is none."""
        if self.user_callbacks:
            init_helpers.dispatch_callbacks(self.user_callbacks, hook, self.state, **kwargs)

    def on_init_end(self) -> None:
        self._dispatch("on_init_end")

    def dispatch_log_event(self, metrics: dict[str, Any]) -> None:
        self._dispatch("on_log", metrics=metrics)

    def dispatch_save_event(self, checkpoint_dir: str) -> None:
        self._dispatch("on_save", checkpoint_dir=checkpoint_dir)

    def dispatch_load_event(self, checkpoint_dir: str) -> None:
        self._dispatch("on_load", checkpoint_dir=checkpoint_dir)

    def dispatch_evaluate_event(self, metrics: dict[str, Any] | None = None) -> None:
        self._dispatch("on_evaluate", metrics=metrics)

    def _resolved_load_path(self, step: int) -> str:
        """The folder ``checkpoint.load()`` read: ``load_path`` itself, or its ``step_<N>`` (a run folder)."""
        path = self.checkpointer.config.load_path
        assert path is not None, "called only when checkpoint.load_path is set"
        inner = os.path.join(path, f"step_{step}")
        return inner if os.path.isdir(inner) else path

    # ------------------------------------------------------------ train step
    def forward_backward_step(self, micro_batch, mb_tokens: int, global_tokens: int, num_micro: int = 1):
        platform = get_platform()
        micro_batch = platform.move_to_device(micro_batch, self.device)
        rank_average = self.config.optimizer.loss_aggregation == "rank_average"

        def scaled_and_raw_loss():
            logits = self.model.forward_logits(micro_batch["input_ids"])
            loss = platform.full_tensor(self.loss_fn(logits, micro_batch["labels"]))
            if rank_average:
                scaled = loss / num_micro if num_micro > 1 else loss
            else:
                scaled = mean_global_loss(loss, mb_tokens, global_tokens, self.parallel_dims.dp_size)
            return scaled, loss

        raw = platform.backward(scaled_and_raw_loss, self.model)  # gradients of ``scaled`` accumulate
        return raw, mb_tokens

    def train_step(self, it: Iterator[list[dict[str, Any]]]) -> dict[str, float]:
        """One optimizer step; token counting, FSDP2 flags and the reported loss are the shared helpers."""
        platform = get_platform()
        micro_batches = next(it)
        self.state.global_step += 1
        n = len(micro_batches)

        counts = [self.loss_fn.count_tokens(mb) for mb in micro_batches]
        global_tokens = init_helpers.global_tokens(counts, self.dp_group_info, self.device)
        self._last_global_tokens = global_tokens

        loss_sum = arith_sum = 0.0
        tok_local = 0
        for i, mb in enumerate(micro_batches):
            init_helpers.fsdp_micro_batch_flags(self.model, i, n)
            raw, tok = self.forward_backward_step(mb, counts[i], global_tokens, num_micro=n)
            value = raw.item()
            loss_sum += value * tok
            arith_sum += value
            tok_local += tok
            self._dispatch("on_substep_end")

        clip: Callable = self.spec.clip_grad_fn or platform.clip_grad_norm
        grad_norm = platform.full_tensor(clip(self.model.parameters(), self.config.training.max_norm)).item()
        if self.config.debug.check_nan_inf and not platform.is_finite(grad_norm):
            logger.error("non-finite grad norm %s at step %d", grad_norm, self.state.global_step)
            raise init_helpers.NonFiniteError(
                f"grad norm is {grad_norm} at step {self.state.global_step} (debug.check_nan_inf is on)"
            )
        self._dispatch("on_pre_optimizer_step", grad_norm=grad_norm)

        self.optimizer.step()
        self.lr_scheduler.step()
        self.optimizer.zero_grad()

        loss = init_helpers.reported_loss(
            self.config.optimizer.loss_aggregation,
            loss_sum=loss_sum,
            arith_sum=arith_sum,
            num_micro=n,
            tok_local=tok_local,
            global_tokens=global_tokens,
            dp_group_info=self.dp_group_info,
            device=self.device,
        )
        return {"loss": loss, "grad_norm": grad_norm}

    # ------------------------------------------------------------------ train
    def train(self) -> None:
        """The legacy loop; user callbacks get the legacy events at the legacy points (see ``_dispatch``)."""
        cfg = self.config
        state = self.state
        gc_steps = cfg.debug.gc_steps
        if gc_steps > 0:
            gc.disable()
        logger.info_rank0(
            "training for max_steps=%d, num_train_epochs=%d", state.max_steps, cfg.training.num_train_epochs
        )
        loss_watch = init_helpers.LossWatch(
            check_nan_inf=cfg.debug.check_nan_inf, field="debug.check_nan_inf"
        )
        try:
            with self.profiler as prof:
                step, epoch = self.checkpointer.load()
                if step > 0:
                    state.global_step, state.epoch = step, epoch
                if self.checkpointer.config.load_path:
                    # Legacy: the checkpoint callback resumes inside on_train_begin, before user callbacks.
                    self._dispatch("on_load", checkpoint_dir=self._resolved_load_path(step))
                self._dispatch("on_train_begin")
                if step > 0:
                    logger.info_rank0("Resuming training from step %d", state.global_step)
                log_steps = self.metrics.log_steps
                callbacks = self.user_callbacks  # the list itself: a callback added later is seen
                for epoch in range(cfg.training.num_train_epochs):
                    if state.global_step >= state.max_steps:
                        break
                    state.epoch = epoch
                    self.dataloader.set_epoch(epoch)
                    self._dispatch("on_epoch_begin")
                    it = self.dataloader.micro_batch_iterator()
                    while state.global_step < state.max_steps:
                        self.metrics.start_step()
                        self._dispatch("on_step_begin")
                        try:
                            out = self.train_step(it)
                        except StopIteration:
                            logger.info_rank0("Epoch %d: dataloader exhausted", epoch)
                            break
                        # A non-finite loss stops the run here (check_nan_inf) or is warned about once.
                        loss_watch.check(out["loss"], state.global_step)
                        record = self.metrics.log(
                            state.global_step,
                            loss=out["loss"],
                            grad_norm=out["grad_norm"],
                            lr=self.lr_scheduler.get_last_lr()[0],
                            global_tokens=self._last_global_tokens,
                        )
                        if callbacks and state.global_step % log_steps == 0:
                            self._dispatch("on_log", metrics=dict(record))
                        self.last_step_metrics = out
                        if prof is not None:
                            prof.step()
                        saved = self.checkpointer.maybe_save(state.global_step, state.epoch)
                        if saved is not None:
                            self._dispatch("on_save", checkpoint_dir=saved)
                        if gc_steps > 0 and state.global_step % gc_steps == 0:
                            gc.collect()
                        self._dispatch("on_step_end", loss=out["loss"], grad_norm=out["grad_norm"])
                    self._dispatch("on_epoch_end")
                saved = self.checkpointer.save_final(state.global_step, state.epoch)
                if saved is not None:
                    self._dispatch("on_save", checkpoint_dir=saved)
        finally:
            self.metrics.close()
            if gc_steps > 0:
                gc.enable()
        self._dispatch("on_train_end")
        get_platform().destroy_process_group()
        logger.info_rank0("Training completed")


# The root Config's name in type hints and recipes (``def debug() -> TrainerConfig``).
TrainerConfig = HyperTrainer.Config
