"""Planted divergences: the catalogue that ``python -m parity selfcheck`` measures the suite with.

A green ``python -m parity run`` should mean "no divergence a refactor could plausibly introduce".
Each :class:`Plant` below is one such divergence, written as a single-edit text patch: in
``file`` (repo-relative), inside ``function`` (the qualified name of the function or method it
lives in, ``HyperTrainer._init_dataloader``, or of a module-level constant), the snippet ``old``
(it must occur exactly once there) becomes ``new``. The function is found with ``ast``, not by
line numbers, so moving code around a plant keeps it applying; a refactor that renames or moves
the function, or duplicates the snippet inside it, breaks it with the plant, file and function
named. The
self-check (``parity.tools.selfcheck_runner``) copies the project, applies one plant, runs the suite
there and records which cases went red.

``expected`` says what a good suite does with it:

- ``caught``: the suite must go red (a real divergence between the two paths, or a change of
  both paths that a tier B golden pins);
- ``inert``: the edit changes no bit of anything the suite compares (a reordering of independent
  statements, an equivalent expression, a check-only step removed); the suite must stay green,
  else it raises false alarms.

``side`` says which path the edit moves: ``new`` (a component, ``HyperTrainer``, the legacy ->
new mapping or the platform the components call: the most valuable plants), ``legacy`` (someone
"fixing" the legacy trainer), ``shared`` (the model, datasets and helpers both paths use: only
tier B goldens can catch those). ``needs`` names the case that catches it (or would, for a plant
that survives today): it is what the report prints next to a survivor.

What the catalogue keeps: the slips mutmut's operators cannot write (``mutation_operator`` names
the operator for a plant that one of them makes; such a plant is retired, the mutation run
generates it in every function). The kinds kept: a value replaced by another valid one (a decay
style, a dtype, a default, an expression such as ``a=5**0.5``); a statement or call added (a clamp,
an extra ``zero_grad``, a reseed); a statement removed outright; statements reordered; an edit in
two or more places at once; module-level constants and class-level defaults (mutmut mutates
function bodies only); ``inert`` plants, which must change nothing.

Adding a plant: append a ``_plant(...)`` to ``PLANTS`` (``function=`` the function it lives in,
``old`` a line or a few, exactly once in that function), then run ``python -m parity selfcheck --plant <name>``;
``tests/parity/test_parity_selfcheck.py`` checks that every snippet still applies.
"""

from __future__ import annotations

import ast
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "CATEGORIES",
    "EXPECTATIONS",
    "PLANTS",
    "SIDES",
    "Plant",
    "PlantError",
    "catalogue_problems",
    "select",
]

# ast.parse is not thread-safe before CPython 3.11.8 ("AST constructor recursion depth mismatch"),
# and the quick self-check applies plants from a thread pool.
_AST_PARSE_LOCK = threading.Lock()

EXPECTATIONS = ("caught", "inert")
SIDES = ("new", "legacy", "shared")
# hazard: a known place where a copy silently diverges (warmup ratio vs steps under a changed
# max_steps, foreach/fused, tied parameters, the first step's lr, label shift vs token count,
# the dataloader's dp rank); a component name: a field of its Config or its
# behaviour; trainer-init / train-step: HyperTrainer; legacy: a legacy builder or callback;
# shared: code both paths run; mapping: the legacy YAML -> HyperTrainer.Config table.
CATEGORIES = (
    "hazard",
    "optimizer",
    "lr_scheduler",
    "loss",
    "tokenizer",
    "dataloader",
    "checkpoint",
    "profiler",
    "metrics",
    "mapping",
    "trainer-init",
    "train-step",
    "legacy",
    "shared",
)


class PlantError(ValueError):
    """A plant that cannot be applied (its snippet is missing or ambiguous); one line."""


def scope_spans(text: str) -> dict[str, list[tuple[int, int]]]:
    """Qualified name -> (start, end) character spans of every function, method and class (whole
    lines, decorators included) and of every module-level ``NAME = ...`` in ``text``; functions
    nested in a function are part of it (they have no stable name of their own)."""
    starts = [0]
    for line in text.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    spans: dict[str, list[tuple[int, int]]] = {}

    def add(name: str, node: ast.stmt) -> None:
        first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
        spans.setdefault(name, []).append((starts[first - 1], starts[node.end_lineno or node.lineno]))

    def walk(body: list[ast.stmt], prefix: str) -> None:
        for node in body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                add(prefix + node.name, node)
            elif isinstance(node, ast.ClassDef):
                add(prefix + node.name, node)
                walk(node.body, f"{prefix}{node.name}.")
            elif not prefix and isinstance(node, ast.Assign | ast.AnnAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    if isinstance(target, ast.Name):
                        add(target.id, node)

    with _AST_PARSE_LOCK:  # CPython < 3.11.8 corrupts ast.parse run from two threads (gh-106905)
        tree = ast.parse(text)
    walk(tree.body, "")
    return spans


@dataclass(frozen=True)
class Plant:
    """One planted divergence: in ``file``, inside ``function``, the only occurrence of ``old``
    becomes ``new``."""

    name: str
    category: str
    side: str
    file: str
    old: str
    new: str
    models: str
    expected: str = "caught"
    needs: str = ""
    function: str = ""

    @property
    def where(self) -> str:
        return f"{self.function} ({self.file})" if self.function else self.file

    def span(self, text: str) -> tuple[int, int]:
        """Where ``function`` lies in ``text`` (the whole text for a plant without one)."""
        if not self.function:
            return 0, len(text)
        try:
            spans = scope_spans(text).get(self.function, [])
        except SyntaxError as exc:
            raise PlantError(
                f"plant {self.name}: {self.file} does not parse ({exc.msg}, line {exc.lineno})"
            ) from None
        if len(spans) != 1:
            found = "is not found" if not spans else f"is defined {len(spans)} times"
            raise PlantError(
                f"plant {self.name}: function {self.function} {found} in {self.file}; "
                "re-anchor the plant (its file= and function=) on the current code"
            )
        return spans[0]

    def apply_text(self, text: str) -> str:
        """``text`` with the plant applied; ``PlantError`` unless ``old`` occurs exactly once in
        ``function``."""
        start, end = self.span(text)
        segment = text[start:end]
        count = segment.count(self.old)
        if count != 1:
            found = "is not found" if count == 0 else f"occurs {count} times"
            raise PlantError(
                f"plant {self.name}: its old snippet {found} in {self.where} (expected exactly once); "
                "re-anchor it on the current code"
            )
        return text[:start] + segment.replace(self.old, self.new, 1) + text[end:]

    def apply(self, root: str | Path) -> Path:
        """Patch ``root / file`` in place; returns the patched path."""
        path = Path(root) / self.file
        if not path.is_file():
            raise PlantError(f"plant {self.name}: {self.file} does not exist under {root}")
        path.write_text(self.apply_text(path.read_text(encoding="utf-8")), encoding="utf-8")
        return path


def _plant(
    name: str,
    category: str,
    side: str,
    file: str,
    old: str,
    new: str,
    models: str,
    *,
    expected: str = "caught",
    needs: str = "",
    function: str = "",
) -> Plant:
    return Plant(name, category, side, file, old, new, models, expected, needs, function)


OPT = "hyper_parallel/components/optimizer.py"
LRS = "hyper_parallel/components/lr_scheduler.py"
LOSS = "hyper_parallel/components/loss.py"
TOK = "hyper_parallel/components/tokenizer.py"
DL = "hyper_parallel/components/dataloader.py"
CKPT = "hyper_parallel/components/checkpoint.py"
PROF = "hyper_parallel/components/profiler.py"
MET = "hyper_parallel/components/metrics.py"
HT = "hyper_parallel/trainer/hyper_trainer.py"
MAP = "hyper_parallel/trainer/legacy_mapping.py"
BASE = "hyper_parallel/trainer/base.py"
LLM = "hyper_parallel/trainer/llm_trainer.py"
MODEL = "hyper_parallel/models/qwen3_5/model.py"

PLANTS: tuple[Plant, ...] = (
    # ------------------------------------------------------------------ hazards
    _plant(
        "hazard_warmup_horizon_from_yaml",
        "hazard",
        "new",
        HT,
        "optimizers=self.optimizer, training_steps=self.state.max_steps",
        "optimizers=self.optimizer, training_steps=self.config.training.steps",
        "LR warmup and cosine horizon from the YAML max_steps, not the one the dataset changed",
        needs="an e2e pair on hf/json or preset_pt data, where the dataset changes max_steps",
        function="HyperTrainer._init_optimizer",
    ),
    _plant(
        "hazard_max_steps_not_from_dataset",
        "hazard",
        "new",
        HT,
        "self.state.max_steps = int(self.dataloader.training_steps)",
        "self.state.max_steps = int(training.steps)",
        "the trainer ignores the dataloader's changed training_steps (hf shrink, preset_pt reset)",
        needs="an e2e pair on hf/json data whose rows give fewer steps than train.max_steps",
        function="HyperTrainer._init_dataloader",
    ),
    _plant(
        "hazard_hf_shrink_dropped",
        "hazard",
        "new",
        DL,
        "        self.training_steps = steps\n",
        "        self.training_steps = training_steps\n",
        "the HF dataloader does not shrink max_steps to the full global batches the data holds",
        needs="dataloader_hf_text (training_steps 100 -> 24)",
        function="HuggingFaceTextDataLoader._build_dataset",
    ),
    _plant(
        "hazard_legacy_warmup_from_yaml",
        "hazard",
        "legacy",
        BASE,
        "        total = self.state.max_steps\n",
        "        total = self.args.train.max_steps\n",
        "legacy 'fix': the LR horizon read from the YAML instead of the dataset-changed state",
        needs="lrsched_dataset_shrunk (preset_pt resets state.max_steps to the YAML value anyway)",
        function="BaseTrainer._build_lr_scheduler",
    ),
    _plant(
        "hazard_foreach_default_on",
        "hazard",
        "new",
        OPT,
        '"foreach": cfg.foreach,',
        '"foreach": True if cfg.foreach is None else cfg.foreach,',
        "foreach defaulted on in the component (absent from the legacy schema, which passes None)",
        needs="optim_groups (the foreach hyperparameter of each group)",
        function="_adamw_kwargs",
    ),
    _plant(
        "hazard_legacy_foreach_pinned",
        "hazard",
        "legacy",
        BASE,
        "foreach=None",
        "foreach=False",
        "legacy 'fix': foreach pinned to the for-loop implementation",
        needs="optim_groups, trainer_e2e param_groups",
        function="BaseTrainer._build_optimizer",
    ),
    _plant(
        "hazard_tied_counted_twice",
        "hazard",
        "new",
        OPT,
        "for name, param in part.named_parameters():\n            if not param.requires_grad or id(param) in seen:",
        "for name, param in part.named_parameters(remove_duplicate=False):\n            if not param.requires_grad:",
        "a tied parameter (lm_head = embed_tokens) grouped twice, once per name",
        needs="optim_groups on the tied debug model",
        function="split_decay_groups",
    ),
    _plant(
        "hazard_shared_param_counted_twice",
        "hazard",
        "new",
        OPT,
        "if not param.requires_grad or id(param) in seen:",
        "if not param.requires_grad:",
        "the seen-set dropped: a parameter shared between model parts is grouped once per part",
        needs="an optimizer-grouping pair over several model parts sharing a parameter",
        function="split_decay_groups",
    ),
    _plant(
        "hazard_legacy_tied_counted_twice",
        "hazard",
        "legacy",
        BASE,
        "for name, param in self.model.named_parameters():\n            if not param.requires_grad or id(param) in seen:",
        "for name, param in self.model.named_parameters(remove_duplicate=False):\n"
        "            if not param.requires_grad:",
        "legacy grouping lists the tied parameter under both of its names",
        needs="optim_groups, legacy_debug_param_groups",
        function="BaseTrainer._build_optimizer",
    ),
    _plant(
        "hazard_first_step_nonzero_lr",
        "hazard",
        "new",
        LRS,
        "return step / max(1, warmup)",
        "return (step + 1) / max(1, warmup)",
        "warmup off by one: the first step runs at lr/W instead of lr 0",
        needs="lrsched_grid",
        function="lr_factor",
    ),
    _plant(
        "hazard_tokens_counted_shifted",
        "hazard",
        "new",
        LOSS,
        "return int((labels != ignore_index).sum())",
        "return int((shift_labels(labels, ignore_index) != ignore_index).sum())",
        "loss tokens counted on the shifted labels (the model shifts, the legacy count does not)",
        needs="an e2e pair on data with ignored or padded labels (dummy data gives every micro-batch the same count)",
        function="count_loss_tokens",
    ),
    _plant(
        "hazard_legacy_tokens_counted_shifted",
        "hazard",
        "legacy",
        "hyper_parallel/trainer/utils/loss.py",
        "return int((labels != IGNORE_INDEX).sum())",
        "return int((labels[..., 1:] != IGNORE_INDEX).sum())",
        "legacy 'fix': tokens counted on the labels the model actually scores (shifted)",
        needs="an e2e pair on data with ignored or padded labels (dummy data gives every micro-batch the same count)",
        function="count_loss_token",
    ),
    _plant(
        "hazard_dp_rank_modulo",
        "hazard",
        "new",
        DL,
        "return global_rank // non_dp_size",
        "return global_rank % non_dp_size",
        "dp rank taken as the rank inside the tp*cp*pp*ep group instead of rank // (tp*cp*pp*ep)",
        needs="dataloader_dummy_golden (world 4, tp 2, rank 2), dataloader_hf_text (world 2, rank 1)",
        function="data_parallel_rank",
    ),
    _plant(
        "hazard_dp_rank_global_rank",
        "hazard",
        "new",
        HT,
        "dp_rank=data_parallel_rank(get_platform().get_rank(), self.parallel_dims.non_dp_size),",
        "dp_rank=get_platform().get_rank(),",
        "the trainer gives the dataloader the global rank as dp rank",
        needs="trainer_dp_rank (HyperTrainer init steps 1-3 on every rank of a faked world, tp 2 / tp 2 cp 2)",
        function="HyperTrainer._init_dataloader",
    ),
    _plant(
        "hazard_legacy_dp_rank_by_dp_size",
        "hazard",
        "legacy",
        BASE,
        "dp_rank = rank // non_dp if non_dp > 1 else rank",
        "dp_rank = rank // dp_size if dp_size > 1 else rank",
        "legacy dp rank divided by the dp size instead of the non-dp size",
        needs="legacy_dummy_batches (dp 2, rank 1)",
        function="BaseTrainer._build_dataloader",
    ),
    # ------------------------------------------------------------------ optimizer
    _plant(
        "optim_lr_zero_replaced",
        "optimizer",
        "new",
        OPT,
        '"lr": cfg.lr,',
        '"lr": cfg.lr if cfg.lr > 0 else 1e-4,',
        "lr=0 replaced by the default (a falsy-default trap)",
        needs="optim_groups (lr 0.0)",
        function="_adamw_kwargs",
    ),
    _plant(
        "optim_beta2_hardcoded",
        "optimizer",
        "new",
        OPT,
        '"betas": tuple(float(b) for b in cfg.betas),',
        '"betas": (float(cfg.betas[0]), 0.999),',
        "beta2 left at AdamW's default",
        needs="optim_groups (beta2 0.95 / 0.5)",
        function="_adamw_kwargs",
    ),
    _plant(
        "optim_eps_zero_replaced",
        "optimizer",
        "new",
        OPT,
        '"eps": cfg.eps,',
        '"eps": cfg.eps or 1e-8,',
        "eps=0 replaced by the default",
        needs="optim_groups (eps 0.0)",
        function="_adamw_kwargs",
    ),
    _plant(
        "optim_no_decay_group_decays",
        "optimizer",
        "new",
        OPT,
        '{"params": [p for _, p in no_decay], "weight_decay": 0.0},',
        '{"params": [p for _, p in no_decay], "weight_decay": config.weight_decay},',
        "weight decay applied to the no-decay group too",
        needs="optim_groups",
        function="OptimizersContainer.__init__",
    ),
    _plant(
        "optim_keywords_case_sensitive",
        "optimizer",
        "new",
        OPT,
        "(no_decay if any(k in lname for k in decay_keywords) else decay)",
        "(no_decay if any(k in name for k in decay_keywords) else decay)",
        "decay keywords matched against the name as written, not lower-cased",
        needs="an optimizer-grouping pair with mixed-case parameter names",
        function="split_decay_groups",
    ),
    _plant(
        "optim_keyword_norm_dropped",
        "optimizer",
        "new",
        OPT,
        'DEFAULT_DECAY_KEYWORDS: tuple[str, ...] = ("bias", "layernorm", "norm", "rmsnorm")',
        'DEFAULT_DECAY_KEYWORDS: tuple[str, ...] = ("bias", "layernorm", "rmsnorm")',
        "'norm' dropped from the default no-decay keywords (model.norm, q_norm, k_norm decay)",
        needs="optim_groups",
        function="DEFAULT_DECAY_KEYWORDS",
    ),
    _plant(
        "optim_in_backward_grad_kept",
        "optimizer",
        "new",
        OPT,
        "        optimizer.step()\n        optimizer.zero_grad(set_to_none=True)\n",
        "        optimizer.step()\n",
        "the in-backward hook steps but does not free the gradient (it accumulates across steps)",
        needs="optim_in_backward_state",
        function="_step_hook",
    ),
    _plant(
        "inert_fused_none_passed",
        "optimizer",
        "new",
        OPT,
        '    if cfg.fused is not None:\n        kwargs["fused"] = cfg.fused\n',
        '    kwargs["fused"] = cfg.fused\n',
        "fused passed even when None (AdamW's own default: the same param groups and steps)",
        expected="inert",
        function="_adamw_kwargs",
    ),
    # ------------------------------------------------------------------ LR scheduler
    _plant(
        "lrsched_warmup_floor",
        "lr_scheduler",
        "new",
        LRS,
        "self.warmup_steps = math.ceil(training_steps * config.lr_warmup_ratio)",
        "self.warmup_steps = int(training_steps * config.lr_warmup_ratio)",
        "warmup steps floored instead of ceiled (100 * 0.07 = 7.000000000000001)",
        needs="lrsched_grid",
        function="LRSchedulersContainer.__init__",
    ),
    _plant(
        "lrsched_unknown_style_constant",
        "lr_scheduler",
        "new",
        LRS,
        'constant = decay_style == "constant"',
        'constant = decay_style != "cosine"',
        "an unknown decay style ('linear') treated as constant instead of cosine",
        needs="lrsched_grid (decay_style=linear)",
        function="lr_factor",
    ),
    _plant(
        "lrsched_lr_min_as_ratio",
        "lr_scheduler",
        "new",
        LRS,
        "min_ratio = config.lr_min / lr if lr > 0 else 0.0",
        "min_ratio = config.lr_min",
        "lr_min used as a ratio of the peak instead of an absolute floor",
        needs="lrsched_grid",
        function="LRSchedulersContainer.__init__",
    ),
    _plant(
        "lrsched_cosine_clamped",
        "lr_scheduler",
        "new",
        LRS,
        "progress = (step - warmup) / max(1, total - warmup)",
        "progress = min(1.0, (step - warmup) / max(1, total - warmup))",
        "cosine clamped past T (the legacy one rises again)",
        needs="lrsched_grid (steps past T)",
        function="lr_factor",
    ),
    _plant(
        "lrsched_lr_max_zero_ignored",
        "lr_scheduler",
        "new",
        LRS,
        "lr = config.lr_max if config.lr_max is not None else _configured_lr(",
        "lr = config.lr_max or _configured_lr(",
        "lr_max=0.0 treated as unset (falls back to the optimizer's lr)",
        needs="an LR pair with lr_max set (0.0 and another value)",
        function="LRSchedulersContainer.__init__",
    ),
    _plant(
        "lrsched_warmup_steps_clamped",
        "lr_scheduler",
        "new",
        LRS,
        "            self.warmup_steps = config.warmup_steps\n",
        "            self.warmup_steps = min(config.warmup_steps, training_steps)\n",
        "explicit warmup_steps clamped to the horizon (the ratio path is not)",
        needs="an LR pair with warmup_steps > training_steps",
        function="LRSchedulersContainer.__init__",
    ),
    _plant(
        "inert_warmup_steps_truthiness",
        "lr_scheduler",
        "new",
        LRS,
        "        if config.warmup_steps is not None:\n            self.warmup_steps",
        "        if config.warmup_steps:\n            self.warmup_steps",
        "warmup_steps=0 falls to the ratio path, whose ratio must then be 0 too (ceil(T * 0) = 0)",
        expected="inert",
        function="LRSchedulersContainer.__init__",
    ),
    _plant(
        "inert_configured_lr_from_defaults",
        "lr_scheduler",
        "new",
        LRS,
        'return first.defaults["lr"] if lr is None else lr',
        'return first.defaults["lr"]',
        "min ratio relative to AdamW's defaults lr (the container builds AdamW with Config.lr)",
        expected="inert",
        function="_configured_lr",
    ),
    # ------------------------------------------------------------------ loss
    _plant(
        "loss_no_float32_upcast",
        "loss",
        "new",
        LOSS,
        "logits.float().view(-1, logits.shape[-1]),",
        "logits.view(-1, logits.shape[-1]),",
        "cross entropy in the logits' dtype (no float32 upcast)",
        needs="component_loss_vs_legacy (bfloat16)",
        function="CrossEntropyLoss.__call__",
    ),
    _plant(
        "loss_chunked_no_upcast",
        "loss",
        "new",
        LOSS,
        "get_platform().log_softmax(chunk.float(), dim=-1)",
        "get_platform().log_softmax(chunk, dim=-1)",
        "chunked loss: log-softmax in the logits' dtype",
        needs="component_loss_vs_legacy (chunks=5, bfloat16)",
        function="_picked_log_probs",
    ),
    _plant(
        "loss_shift_default_ignore_index",
        "loss",
        "new",
        LOSS,
        "shift = shift_labels(labels, cfg.ignore_index)\n",
        "shift = shift_labels(labels)\n",
        "labels shifted with the default -100 padding whatever ignore_index says",
        needs="a loss pair with ignore_index != -100",
        function="CrossEntropyLoss.__call__",
    ),
    _plant(
        "loss_reduction_hardcoded",
        "loss",
        "new",
        LOSS,
        "reduction=cfg.reduction,\n",
        'reduction="mean",\n',
        "CrossEntropyLoss.Config.reduction ignored",
        needs="a loss pair with reduction=sum (against a legacy-equivalent sum)",
        function="CrossEntropyLoss.__call__",
    ),
    _plant(
        "loss_chunked_ignore0_column",
        "loss",
        "new",
        LOSS,
        "column = 1 if ignore == 0 else 0",
        "column = 0",
        "chunked loss with ignore_index=0: the picked column collides with the ignore index",
        needs="a chunked loss pair with ignore_index=0",
        function="ChunkedCELoss.__call__",
    ),
    _plant(
        "inert_loss_view_before_upcast",
        "loss",
        "new",
        LOSS,
        "logits.float().view(-1, logits.shape[-1]),",
        "logits.view(-1, logits.shape[-1]).float(),",
        "view then upcast instead of upcast then view (the same values and gradient)",
        expected="inert",
        function="CrossEntropyLoss.__call__",
    ),
    _plant(
        "inert_chunk_size_floor",
        "loss",
        "new",
        LOSS,
        "size = max(1, -(-rows // cfg.chunks))",
        "size = max(1, rows // cfg.chunks)",
        "chunk size rounded down (more, smaller chunks; chunking is exact by construction)",
        expected="inert",
        function="ChunkedCELoss.__call__",
    ),
    # ------------------------------------------------------------------ tokenizer
    _plant(
        "tok_own_pad_overwritten",
        "tokenizer",
        "new",
        TOK,
        "        elif hf.pad_token is None:\n",
        "        else:\n",
        "the tokenizer's own pad token replaced by eos",
        needs="component_tokenizer_vs_legacy (variant=pad)",
        function="HuggingFaceTokenizer._apply_pad_rule",
    ),
    _plant(
        "tok_config_pad_only_when_missing",
        "tokenizer",
        "new",
        TOK,
        "        if wanted is not None:\n",
        "        if wanted is not None and hf.pad_token is None:\n",
        "Config.pad_token only applied when the tokenizer has no pad token of its own",
        needs="a tokenizer pair with pad_token set on a tokenizer that has a pad token",
        function="HuggingFaceTokenizer._apply_pad_rule",
    ),
    _plant(
        "tok_trust_remote_code_forced",
        "tokenizer",
        "new",
        TOK,
        "path, trust_remote_code=bool(config.trust_remote_code), local_files_only=True",
        "path, trust_remote_code=True, local_files_only=True",
        "trust_remote_code forced on",
        needs="a tokenizer case that records the trust_remote_code AutoTokenizer receives",
        function="HuggingFaceTokenizer.__init__",
    ),
    _plant(
        "legacy_tok_pad_always_eos",
        "legacy",
        "legacy",
        LLM,
        "        if tokenizer.pad_token is None:\n",
        "        if True:\n",
        "legacy 'fix': pad always set to eos",
        needs="component_tokenizer_vs_legacy (variant=pad)",
        function="LLMTrainer._build_model_assets",
    ),
    # ------------------------------------------------------------------ dataloader
    _plant(
        "dl_shuffle_forced",
        "dataloader",
        "new",
        DL,
        "shuffle=config.shuffle,",
        "shuffle=True,",
        "Config.shuffle ignored (always shuffled)",
        needs="dataloader_preset (shuffle=False)",
        function="BaseDataLoader.__init__",
    ),
    _plant(
        "dl_seed_per_rank",
        "dataloader",
        "new",
        DL,
        "seed=self.seed,",
        "seed=self.seed + self.dp_rank,",
        "sampler seeded per dp rank (the legacy sampler shares one seed)",
        needs="dataloader_dummy (world 4, dp rank 1)",
        function="BaseDataLoader.__init__",
    ),
    _plant(
        "dl_cutoff_off_by_one",
        "dataloader",
        "new",
        DL,
        "encoder, cutoff=self.seq_len, text_key=cfg.text_key",
        "encoder, cutoff=self.seq_len + 1, text_key=cfg.text_key",
        "text truncated at seq_len + 1 (a label-shift allowance)",
        needs="dataloader_hf_text",
        function="HuggingFaceTextDataLoader._build_dataset",
    ),
    _plant(
        "dl_text_key_default",
        "dataloader",
        "new",
        DL,
        "text_key=cfg.text_key, data_type=cfg.format",
        'text_key="text", data_type=cfg.format',
        "Config.text_key ignored",
        needs="a dataloader pair on a dataset whose text column is not 'text'",
        function="HuggingFaceTextDataLoader._build_dataset",
    ),
    _plant(
        "dl_template_dropped",
        "dataloader",
        "new",
        DL,
        "data_type=cfg.format, template=cfg.template",
        "data_type=cfg.format",
        "Config.template ignored (always 'empty': masked alpaca)",
        needs="a json_file dataloader pair with template != empty",
        function="HuggingFaceTextDataLoader._build_dataset",
    ),
    _plant(
        "dl_train_size_zero_unset",
        "dataloader",
        "new",
        DL,
        "if cfg.train_size is not None and cfg.train_size < len(raw):",
        "if cfg.train_size and cfg.train_size < len(raw):",
        "train_size=0 treated as unset",
        needs="a dataloader pair with train_size set (0 and a small value)",
        function="HuggingFaceTextDataLoader._build_dataset",
    ),
    _plant(
        "dl_subset_dropped",
        "dataloader",
        "new",
        DL,
        "load_raw_dataset(cfg.format, cfg.train_path, cfg.subset, streaming=cfg.streaming)",
        "load_raw_dataset(cfg.format, cfg.train_path, None, streaming=cfg.streaming)",
        "Config.subset ignored",
        needs="a dataloader pair on a dataset folder with configurations",
        function="HuggingFaceTextDataLoader._build_dataset",
    ),
    _plant(
        "dl_grad_accum_ignores_dp",
        "dataloader",
        "new",
        DL,
        "self.grad_accum = max(self.global_batch_size // (self.local_batch_size * self.dp_world_size), 1)",
        "self.grad_accum = max(self.global_batch_size // self.local_batch_size, 1)",
        "grad accumulation ignores the dp world size",
        needs="dataloader_hf_text (world 2)",
        function="BaseDataLoader.__init__",
    ),
    _plant(
        "dl_labels_padded_with_pad_id",
        "dataloader",
        "new",
        DL,
        'padded(item["labels"], LABEL_PAD_ID)',
        'padded(item["labels"], pad_id)',
        "labels right-padded with the pad id instead of -100",
        needs="a dataloader pair whose micro-batches need padding",
        function="_pad_collate",
    ),
    _plant(
        "dl_trailing_partial_dropped",
        "dataloader",
        "new",
        DL,
        "    if group:\n        yield group\n",
        "    del group  # the trailing partial group is dropped\n",
        "the trailing partial group of micro-batches is dropped",
        needs="an e2e or micro-batch pair whose epoch is not a whole number of global batches",
        function="_grouped",
    ),
    _plant(
        "dl_dummy_samples_local_batch",
        "dataloader",
        "new",
        DL,
        "num_samples = int(training_steps) * self.global_batch_size",
        "num_samples = int(training_steps) * self.local_batch_size",
        "dummy dataset sized by the micro batch instead of the global batch",
        needs="dataloader_dummy",
        function="DummyDataLoader._build_dataset",
    ),
    _plant(
        "dl_dummy_seed_from_train_seed",
        "dataloader",
        "new",
        DL,
        "return DummyDataset(num_samples, self.seq_len, vocab, base_seed=_DUMMY_BASE_SEED)",
        "return DummyDataset(num_samples, self.seq_len, vocab, base_seed=self.seed)",
        "dummy samples follow train.seed (the legacy data is fixed at base seed 42)",
        needs="dataloader_dummy",
        function="DummyDataLoader._build_dataset",
    ),
    _plant(
        "dl_preset_shrinks_to_data",
        "dataloader",
        "new",
        DL,
        "        if training_steps:\n            self.training_steps = int(training_steps)\n",
        "        self.training_steps = len(dataset) // self.global_batch_size\n",
        "preset_pt shrinks max_steps to the data like the HF path (the legacy resets it)",
        needs="dataloader_preset (training_steps)",
        function="PresetPtDataLoader._build_dataset",
    ),
    _plant(
        "dl_rng_not_restored",
        "dataloader",
        "new",
        DL,
        "        batches = iter(self.loader)\n        platform.set_rng_state(saved)\n",
        "        batches = iter(self.loader)\n",
        "creating the loader iterator consumes a draw of the global RNG (not put back)",
        needs="trainer_e2e checkpoint (rng state)",
        function="BaseDataLoader.micro_batch_iterator",
    ),
    _plant(
        "dl_prefetch_without_workers",
        "dataloader",
        "new",
        DL,
        "if config.num_workers > 0 and config.prefetch_factor is not None:",
        "if config.prefetch_factor is not None:",
        "prefetch_factor passed without workers (the loader refuses it)",
        needs="a dataloader pair with prefetch_factor set and num_workers=0",
        function="BaseDataLoader.__init__",
    ),
    _plant(
        "inert_pin_memory_on_cpu",
        "dataloader",
        "new",
        DL,
        'pin_memory=bool(config.pin_memory) and platform.device_type() != "cpu",',
        "pin_memory=bool(config.pin_memory),",
        "pin_memory passed through on CPU (the loader warns and pins nothing; no value changes)",
        expected="inert",
        function="BaseDataLoader.__init__",
    ),
    # ------------------------------------------------------------------ checkpoint
    _plant(
        "ckpt_epoch_not_resumed",
        "checkpoint",
        "new",
        CKPT,
        "step, epoch = resumed.step, resumed.epoch",
        "step, epoch = resumed.step, 0",
        "resume restores the step but not the epoch",
        needs="component_checkpoint_resume (epoch 1)",
        function="CheckpointManager.load",
    ),
    _plant(
        "ckpt_rng_not_restored",
        "checkpoint",
        "new",
        CKPT,
        "        run_files = [StateFile(rng_file(rank), platform.set_rng_state)]\n",
        "        run_files: list[StateFile] = []\n",
        "resume does not restore the RNG state",
        needs="component_checkpoint_resume",
        function="CheckpointManager.load",
    ),
    _plant(
        "ckpt_step_dir_zero_padded",
        "checkpoint",
        "shared",
        "hyper_parallel/checkpointing/layout.py",
        'return os.path.join(output_dir, f"step_{step}")',
        'return os.path.join(output_dir, f"step_{step:04d}")',
        "checkpoint folders named step_0010 (both trainers name them through checkpointing.layout)",
        needs="legacy_after_5_steps, component_checkpoint_manager (the folder name each golden records)",
        function="step_dir",
    ),
    _plant(
        "ckpt_optimizer_file_name",
        "checkpoint",
        "shared",
        "hyper_parallel/checkpointing/layout.py",
        'return f"optimizer_rank{rank}.pt"',
        'return f"optimizer_{rank}.pt"',
        "optimizer state written under another file name (both trainers name it through checkpointing.layout)",
        needs="legacy_after_5_steps, component_checkpoint_manager (the harness reads optimizer_rank<r>.pt)",
        function="optimizer_file",
    ),
    _plant(
        "ckpt_periodic_export_skipped",
        "checkpoint",
        "new",
        CKPT,
        "export = self.config.save_hf_weights and (force or self._due(step, self.last_exported_step))",
        "export = self.config.save_hf_weights and force",
        "save_hf_weights only honoured by forced saves (no HF export on the save_steps cadence)",
        needs="a checkpoint case comparing an intermediate step_<N>/hf_ckpt or the manifest's file list (train end exports into the newest folder after its commit)",
        function="CheckpointManager.save",
    ),
    _plant(
        "ckpt_final_save_ignores_save_steps",
        "checkpoint",
        "new",
        CKPT,
        "if self.config.save_steps > 0 and step != self.last_saved_step:",
        "if step != self.last_saved_step:",
        "save_steps <= 0 still writes a final checkpoint at train end",
        needs="an e2e pair with save_steps=0 that compares the output folder",
        function="CheckpointManager.save_final",
    ),
    _plant(
        "ckpt_rng_state_not_saved",
        "checkpoint",
        "new",
        CKPT,
        "        _save_object(platform.get_rng_state(), os.path.join(ckpt_dir, rng_file(rank)))\n",
        "",
        "the manager's checkpoint lacks rng_rank<r>.pt (a statement removed: no mutmut operator does that)",
        needs="component_checkpoint_layout",
        function="CheckpointManager._write_states",
    ),
    _plant(
        "ckpt_async_on_forced_save",
        "checkpoint",
        "new",
        CKPT,
        "async_save = self.config.save_async and not force",
        "async_save = self.config.save_async",
        "a forced save goes async when save_async is on",
        needs="a checkpoint pair with save_async=True",
        function="CheckpointManager.save",
    ),
    _plant(
        "ckpt_config_load_path_ignored",
        "checkpoint",
        "new",
        CKPT,
        "path = load_path if load_path is not None else self.config.load_path",
        "path = load_path",
        "Config.load_path ignored by load()",
        needs="component_checkpoint_resume, user_callbacks (resumed run)",
        function="CheckpointManager.load",
    ),
    _plant(
        "inert_ckpt_rng_restored_first",
        "checkpoint",
        "new",
        CKPT,
        "        optimizer_files = []\n"
        "        if self.optimizers is not None:\n"
        "            optimizer_files.append(StateFile(optimizer_file(rank), self.optimizers.load_state_dict))\n"
        "        if self.lr_schedulers is not None:\n"
        "            optimizer_files.append(StateFile(SCHEDULER_FILE, self.lr_schedulers.load_state_dict))\n"
        "        run_files = [StateFile(rng_file(rank), platform.set_rng_state)]\n",
        "        optimizer_files = [StateFile(rng_file(rank), platform.set_rng_state)]\n"
        "        if self.optimizers is not None:\n"
        "            optimizer_files.append(StateFile(optimizer_file(rank), self.optimizers.load_state_dict))\n"
        "        if self.lr_schedulers is not None:\n"
        "            optimizer_files.append(StateFile(SCHEDULER_FILE, self.lr_schedulers.load_state_dict))\n"
        "        run_files: list[StateFile] = []\n",
        "RNG restored before the optimizer and scheduler (independent restores reordered)",
        expected="inert",
        function="CheckpointManager.load",
    ),
    # ------------------------------------------------------------------ profiler
    _plant(
        "prof_wait_warmup_swapped",
        "profiler",
        "new",
        PROF,
        "wait=cfg.wait_steps,\n                warmup=cfg.warmup_steps,",
        "wait=cfg.warmup_steps,\n                warmup=cfg.wait_steps,",
        "profiler wait_steps and warmup_steps swapped",
        needs="a profiler pair (legacy ProfilerCallback vs Profiler: traced steps)",
        function="Profiler.__enter__",
    ),
    _plant(
        "prof_active_off_by_one",
        "profiler",
        "new",
        PROF,
        "active=cfg.active_steps,",
        "active=cfg.active_steps + 1,",
        "one active step too many",
        needs="a profiler pair (traced steps)",
        function="Profiler.__enter__",
    ),
    _plant(
        "prof_never_stepped",
        "profiler",
        "new",
        HT,
        "                        if prof is not None:\n                            prof.step()\n",
        "",
        "the train loop never steps the profiler (enabled, but nothing is recorded)",
        needs="an e2e pair with train.profile.enabled",
        function="HyperTrainer.train",
    ),
    # ------------------------------------------------------------------ metrics
    _plant(
        "metrics_log_steps_offset",
        "metrics",
        "new",
        MET,
        "if step % self.log_steps == 0:",
        "if (step - 1) % self.log_steps == 0:",
        "console/history cadence counted from step 1",
        needs="metrics_processor_vs_callbacks (history)",
        function="MetricsProcessor.log",
    ),
    _plant(
        "metrics_throughput_always",
        "metrics",
        "new",
        MET,
        "if cfg.report_throughput:",
        "if cfg.report_throughput is not None:",
        "report_throughput=False still reports throughput",
        needs="metrics_processor_vs_callbacks (throughput off)",
        function="MetricsProcessor.build_record",
    ),
    _plant(
        "metrics_mfu_per_device",
        "metrics",
        "new",
        MET,
        "mfu = tflops / (cfg.peak_tflops * self.world_size)",
        "mfu = tflops / cfg.peak_tflops",
        "MFU against one device's peak_tflops instead of the world's",
        needs="metrics_processor_vs_callbacks (world 2)",
        function="MetricsProcessor.build_record",
    ),
    _plant(
        "metrics_tb_on_wandb_cadence",
        "metrics",
        "new",
        MET,
        "if self._writer is not None and self._sink_due(step, self.config.tensorboard):",
        "if self._writer is not None and self._sink_due(step, self.config.wandb):",
        "TensorBoard written on the W&B log_steps (copy-paste)",
        needs="metrics_processor_vs_callbacks (TensorBoard scalars)",
        function="MetricsProcessor.log",
    ),
    _plant(
        "metrics_tb_step_zero_based",
        "metrics",
        "new",
        MET,
        "self._writer.add_scalar(tag, value, step)",
        "self._writer.add_scalar(tag, value, step - 1)",
        "TensorBoard scalars at 0-based steps",
        needs="metrics_processor_vs_callbacks (TensorBoard scalars)",
        function="MetricsProcessor.log",
    ),
    _plant(
        "metrics_wandb_run_name",
        "metrics",
        "new",
        MET,
        "name=wb.run_name,",
        "name=wb.project,",
        "W&B run named after the project",
        needs="a metrics pair on W&B offline run files",
        function="MetricsProcessor._open_wandb",
    ),
    _plant(
        "metrics_lr_format",
        "metrics",
        "new",
        MET,
        '("lr", format(record["lr"], ".2e")),',
        '("lr", format(record["lr"], ".3e")),',
        "console line prints lr with three decimals",
        needs="metrics_processor_vs_callbacks (console lines)",
        function="format_log_line",
    ),
    _plant(
        "metrics_min_step_time",
        "metrics",
        "new",
        MET,
        "_MIN_STEP_TIME = 1e-9",
        "_MIN_STEP_TIME = 1e-6",
        "another floor for a zero step time",
        needs="metrics_processor_vs_callbacks (a step of zero time)",
        function="_MIN_STEP_TIME",
    ),
    # ------------------------------------------------------------------ legacy -> new mapping
    _plant(
        "map_report_to_listified",
        "mapping",
        "new",
        MAP,
        '_rule("train.logging.report_to", "metrics.report_to"),',
        '_rule("train.logging.report_to", "metrics.report_to", transform=lambda v: [v]),',
        "report_to mapped to a list (TrainingArguments style) instead of the legacy string",
        needs="a metrics pair that compares the W&B run config (report_to)",
        function="FIELD_MAP",
    ),
    _plant(
        "map_tokenizer_weights_fallback_lost",
        "mapping",
        "new",
        MAP,
        '_put(tree, "tokenizer.path", args.model.tokenizer_path or args.model.weights_path)',
        '_put(tree, "tokenizer.path", args.model.tokenizer_path)',
        "tokenizer path no longer falls back to model.weights_path",
        needs="an e2e pair on hf data with the tokenizer given by model.weights_path",
        function="legacy_to_trainer_config",
    ),
    # ------------------------------------------------------------------ HyperTrainer init steps
    _plant(
        "init_seed_ignores_debug_seed",
        "trainer-init",
        "new",
        HT,
        "seed=effective_seed(cfg.training, cfg.debug),",
        "seed=cfg.training.seed,",
        "step 1 (setup_distributed): debug.seed no longer overrides training.seed",
        needs="trainer_debug_seed (native debug recipe with debug.seed 13 vs legacy train.seed 13: initial weights)",
        function="HyperTrainer._init_setup_distributed",
    ),
    _plant(
        "init_dataloader_seed_ignores_debug_seed",
        "trainer-init",
        "new",
        HT,
        "seed=effective_seed(training, cfg.debug),",
        "seed=training.seed,",
        "step 3 (dataloader): the data seed is training.seed while debug.seed seeds the generators",
        needs="trainer_debug_seed (the first step's micro-batches: the dummy data and the sampler follow the seed)",
        function="HyperTrainer._init_dataloader",
    ),
    _plant(
        "init_tokenizer_vocab_unchecked",
        "trainer-init",
        "new",
        HT,
        "self.tokenizer = cfg.tokenizer.build(vocab_size=self.spec.model.vocab_size)",
        "self.tokenizer = cfg.tokenizer.build()",
        "step 2 (tokenizer): the tokenizer-vs-vocab size check is skipped",
        needs="a trainer case with a tokenizer larger than model.vocab_size (both refuse)",
        function="HyperTrainer._init_tokenizer",
    ),
    _plant(
        "inert_model_config_unchecked",
        "trainer-init",
        "new",
        HT,
        "        self.model_config.update_from_config(trainer_config=self.config)\n",
        "",
        "step 4 (model_config): the divisibility check skipped (it changes no field)",
        expected="inert",
        function="HyperTrainer._init_model_config",
    ),
    _plant(
        "init_freeze_by_prefix",
        "trainer-init",
        "new",
        HT,
        "if patterns and any(p in name for p in patterns):",
        "if patterns and any(name.startswith(p) for p in patterns):",
        "step 5 (build_model): freeze_modules matched as prefixes, not substrings",
        needs="an e2e pair with model.freeze_modules",
        function="HyperTrainer._init_build_model",
    ),
    _plant(
        "inert_protocol_unchecked",
        "trainer-init",
        "new",
        HT,
        "    def _init_verify_protocol(self) -> None:\n        verify_module_protocol(self.model)\n",
        "    def _init_verify_protocol(self) -> None:\n        pass\n",
        "step 6 (verify_protocol): the module-protocol check skipped (a check only)",
        expected="inert",
        function="HyperTrainer._init_verify_protocol",
    ),
    _plant(
        "init_parallelize_no_freeze",
        "trainer-init",
        "new",
        HT,
        "freeze_modules=cfg.training.freeze_modules,",
        "freeze_modules=None,",
        "step 7 (parallelize): frozen modules not passed to parallelize_fn (FSDP2 groups and dtypes)",
        needs="a multi-rank e2e pair with freeze_modules and mixed precision",
        function="HyperTrainer._init_parallelize",
    ),
    _plant(
        "init_materialize_linear_default",
        "trainer-init",
        "new",
        MODEL,
        "nn.init.kaiming_uniform_(local)",
        "nn.init.kaiming_uniform_(local, a=5**0.5)",
        "step 8 (materialize): model.init_weights uses nn.Linear's a=sqrt(5) (the legacy uses a=0)",
        needs="trainer_e2e losses",
        function="Qwen3_5ForCausalLM.init_weights",
    ),
    _plant(
        "init_scheduler_primed",
        "trainer-init",
        "new",
        HT,
        "        self.loss_fn = cfg.loss.build()\n",
        "        self.loss_fn = cfg.loss.build()\n        self.lr_scheduler.step()\n",
        "step 9 (optimizer): the scheduler stepped once at build (the first step is not at lr 0)",
        needs="trainer_e2e lr_curve",
        function="HyperTrainer._init_optimizer",
    ),
    _plant(
        "init_weights_not_loaded",
        "trainer-init",
        "new",
        HT,
        "            self.checkpointer.load_weights(self.config.training.weights_path)\n",
        "            pass  # initial weights not loaded\n",
        "step 10 (checkpoint): training.weights_path is not loaded",
        needs="a suite case training from initial weights (model.weights_path); the pair in tests/ is not in the suite",
        function="HyperTrainer._init_checkpoint",
    ),
    _plant(
        "init_log_history_detached",
        "trainer-init",
        "new",
        HT,
        "        self.state.log_history = self.metrics.history\n",
        "",
        "step 11 (metrics_profiler): state.log_history no longer receives the logged records",
        needs="trainer_e2e metrics",
        function="HyperTrainer._init_metrics_profiler",
    ),
    # ------------------------------------------------------------------ HyperTrainer train step
    _plant(
        "step_plain_mean_over_micro_batches",
        "train-step",
        "new",
        HT,
        "scaled = mean_global_loss(loss, mb_tokens, global_tokens, self.parallel_dims.dp_size)",
        "scaled = loss / num_micro",
        "gradient accumulation averages micro-batch means instead of weighting them by tokens",
        needs="an e2e pair on data with unequal token counts per micro-batch (padding, masked prompts)",
        function="HyperTrainer.forward_backward_step",
    ),
    _plant(
        "step_report_unweighted",
        "train-step",
        "new",
        HT,
        "loss_sum += value * tok",
        "loss_sum += value",
        "reported loss sums micro-batch means without token weights",
        needs="trainer_e2e losses",
        function="HyperTrainer.train_step",
    ),
    _plant(
        "step_first_micro_batch_count",
        "train-step",
        "new",
        HT,
        "self.forward_backward_step(mb, counts[i], global_tokens, num_micro=n)",
        "self.forward_backward_step(mb, counts[0], global_tokens, num_micro=n)",
        "every micro-batch weighted by the first one's token count",
        needs="an e2e pair on data with unequal token counts per micro-batch",
        function="HyperTrainer.train_step",
    ),
    _plant(
        "step_clip_decay_group_only",
        "train-step",
        "new",
        HT,
        "clip(self.model.parameters(), self.config.training.max_norm)",
        'clip(self.optimizer.param_groups[0]["params"], self.config.training.max_norm)',
        "gradient clipping (and the grad norm) over the decay group only",
        needs="trainer_e2e grad_norms",
        function="HyperTrainer.train_step",
    ),
    _plant(
        "step_scheduler_before_optimizer",
        "train-step",
        "new",
        HT,
        "        self.optimizer.step()\n        self.lr_scheduler.step()\n",
        "        self.lr_scheduler.step()\n        self.optimizer.step()\n",
        "scheduler stepped before the optimizer",
        needs="trainer_e2e losses",
        function="HyperTrainer.train_step",
    ),
    _plant(
        "step_zero_grad_dropped",
        "train-step",
        "new",
        HT,
        "        self.lr_scheduler.step()\n        self.optimizer.zero_grad()\n",
        "        self.lr_scheduler.step()\n",
        "gradients never zeroed (they accumulate across steps)",
        needs="trainer_e2e losses",
        function="HyperTrainer.train_step",
    ),
    _plant(
        "step_report_rank_average",
        "train-step",
        "new",
        HT,
        "            self.config.optimizer.loss_aggregation,\n            loss_sum=loss_sum,",
        '            "rank_average",\n            loss_sum=loss_sum,',
        "reported loss always rank-averaged, whatever loss_aggregation says",
        needs="an e2e pair with unequal token counts per micro-batch (with equal counts both reports are the same bits)",
        function="HyperTrainer.train_step",
    ),
    _plant(
        "step_metrics_zero_based_step",
        "train-step",
        "new",
        HT,
        '                            state.global_step,\n                            loss=out["loss"],',
        '                            state.global_step - 1,\n                            loss=out["loss"],',
        "metric records logged at 0-based steps",
        needs="trainer_e2e metrics",
        function="HyperTrainer.train",
    ),
    _plant(
        "step_no_set_epoch",
        "train-step",
        "new",
        HT,
        "                    self.dataloader.set_epoch(epoch)\n",
        "",
        "the sampler is not reseeded per epoch (every epoch reads the epoch-0 order)",
        needs="an e2e pair over more than one epoch with shuffle on (the preset recipe's two epochs do not shuffle)",
        function="HyperTrainer.train",
    ),
    _plant(
        "step_throughput_from_config",
        "train-step",
        "new",
        HT,
        "global_tokens=self._last_global_tokens,",
        "global_tokens=None,",
        "throughput from global_batch_size * seq_len instead of the counted tokens",
        needs="trainer_throughput (padded rows, ticking step clock: tokens_per_sec, tflops, mfu values)",
        function="HyperTrainer.train",
    ),
    _plant(
        "inert_lr_from_last_group",
        "train-step",
        "new",
        HT,
        "lr=self.lr_scheduler.get_last_lr()[0],",
        "lr=self.lr_scheduler.get_last_lr()[-1],",
        "logged lr read from the no-decay group (both groups follow one schedule from one lr)",
        expected="inert",
        function="HyperTrainer.train",
    ),
    _plant(
        "inert_on_log_without_callbacks",
        "train-step",
        "new",
        HT,
        "if callbacks and state.global_step % log_steps == 0:",
        "if state.global_step % log_steps == 0:",
        "on_log dispatched without user callbacks (the dispatch is then a no-op)",
        expected="inert",
        function="HyperTrainer.train",
    ),
    _plant(
        "inert_aggregation_condition",
        "train-step",
        "new",
        HT,
        'rank_average = self.config.optimizer.loss_aggregation == "rank_average"',
        'rank_average = self.config.optimizer.loss_aggregation != "token_weighted"',
        "the same branch written from the other value (the Config admits only these two)",
        expected="inert",
        function="HyperTrainer.forward_backward_step",
    ),
    _plant(
        "inert_accumulators_reordered",
        "train-step",
        "new",
        HT,
        "            loss_sum += value * tok\n            arith_sum += value\n",
        "            arith_sum += value\n            loss_sum += value * tok\n",
        "two independent accumulations swapped",
        expected="inert",
        function="HyperTrainer.train_step",
    ),
    # ------------------------------------------------------------------ legacy builders / callbacks
    _plant(
        "legacy_cosine_clamped",
        "legacy",
        "legacy",
        BASE,
        "            progress = (step - warmup) / max(1, total - warmup)\n",
        "            progress = min(1.0, (step - warmup) / max(1, total - warmup))\n",
        "legacy 'fix' in _build_lr_scheduler: the cosine clamped past T",
        needs="lrsched_grid, legacy_lr goldens",
        function="BaseTrainer._build_lr_scheduler",
    ),
    _plant(
        "legacy_hf_horizon_from_data",
        "legacy",
        "legacy",
        "hyper_parallel/data/hf.py",
        "max_steps = min(int(requested), len(dataset) // max(int(global_batch_size), 1))",
        "max_steps = len(dataset) // max(int(global_batch_size), 1)",
        "legacy _build_dataset 'fix': the data alone sets max_steps (no cap at train.max_steps)",
        needs="dataloader_json_alpaca (max_steps 5)",
        function="build_hf_dataset",
    ),
    _plant(
        "legacy_collate_labels_pad_id",
        "legacy",
        "legacy",
        "hyper_parallel/data/collate.py",
        '_pad(item["labels"], length, IGNORE_INDEX)',
        '_pad(item["labels"], length, pad_id)',
        "legacy collate pads labels with the pad id",
        needs="a dataloader pair whose micro-batches need padding",
        function="pad_collate",
    ),
    _plant(
        "legacy_shuffle_forced",
        "legacy",
        "legacy",
        BASE,
        'shuffle=_get(data, "shuffle", True),',
        "shuffle=True,",
        "legacy _build_dataloader 'fix': always shuffle",
        needs="dataloader_preset (shuffle=False)",
        function="BaseTrainer._build_dataloader",
    ),
    _plant(
        "legacy_init_linear_default",
        "legacy",
        "legacy",
        BASE,
        "torch.nn.init.kaiming_uniform_(local)",
        "torch.nn.init.kaiming_uniform_(local, a=5**0.5)",
        "legacy materialisation with nn.Linear's a=sqrt(5)",
        needs="trainer_e2e losses, legacy_after_5_steps",
        function="BaseTrainer._materialize_and_init_shards",
    ),
    _plant(
        "legacy_resume_step_not_read",
        "legacy",
        "legacy",
        "hyper_parallel/trainer/callbacks/checkpoint.py",
        "        state.global_step, state.epoch = resumed.step, resumed.epoch\n",
        "",
        "legacy resume does not read extra_state.json (the step restarts at 0)",
        needs="component_checkpoint_resume, user_callbacks",
        function="CheckpointCallback.resume",
    ),
    _plant(
        "legacy_logging_min_step_time",
        "legacy",
        "legacy",
        "hyper_parallel/trainer/callbacks/logging.py",
        "elapsed = max(time.time() - self._step_start, 1e-9)",
        "elapsed = max(time.time() - self._step_start, 1e-6)",
        "legacy LoggingCallback floors the step time at 1e-6",
        needs="metrics_processor_vs_callbacks",
        function="LoggingCallback.build_record",
    ),
    _plant(
        "inert_legacy_keywords_minimal",
        "legacy",
        "legacy",
        BASE,
        'NO_DECAY_KEYWORDS = ("bias", "layernorm", "norm", "rmsnorm")',
        'NO_DECAY_KEYWORDS = ("bias", "norm")',
        "legacy keyword set written minimally ('layernorm' and 'rmsnorm' contain 'norm')",
        expected="inert",
        function="NO_DECAY_KEYWORDS",
    ),
    _plant(
        "inert_legacy_grad_accum_floors",
        "legacy",
        "legacy",
        BASE,
        "self._grad_accum = max(global_batch_size // (micro_batch_size * dp_size), 1)",
        "self._grad_accum = max(global_batch_size // micro_batch_size // dp_size, 1)",
        "floor(floor(g / m) / d) = floor(g / (m * d)) for positive integers",
        expected="inert",
        function="BaseTrainer._build_dataloader",
    ),
    _plant(
        "inert_legacy_pad_id_truthiness",
        "legacy",
        "legacy",
        LLM,
        "if tokenizer is not None and tokenizer.pad_token_id is not None:",
        "if tokenizer is not None and tokenizer.pad_token_id:",
        "a pad id of 0 takes the fallback, which is 0 too",
        expected="inert",
        function="LLMTrainer._build_collate_fn",
    ),
    _plant(
        "inert_legacy_log_cadence_truthiness",
        "legacy",
        "legacy",
        "hyper_parallel/trainer/callbacks/logging.py",
        "if state.global_step % self.log_steps != 0:",
        "if state.global_step % self.log_steps:",
        "'!= 0' written as the truthiness of the remainder",
        expected="inert",
        function="LoggingCallback.on_step_end",
    ),
    # ------------------------------------------------------------------ shared (tier B only)
    _plant(
        "shared_rmsnorm_div_sqrt",
        "shared",
        "shared",
        MODEL,
        "y = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)",
        "y = xf / torch.sqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)",
        "RMSNorm as x / sqrt(.) instead of x * rsqrt(.) (last bits move, both paths at once)",
        needs="legacy_debug_model_loss, hyper_trainer_debug_curve, component_loss goldens",
        function="Qwen3_5RMSNorm.forward",
    ),
    _plant(
        "shared_dummy_ids_from_one",
        "shared",
        "shared",
        "hyper_parallel/data/dummy.py",
        "ids = torch.randint(0, self.vocab_size, (self.seq_len,), generator=g)",
        "ids = torch.randint(1, self.vocab_size, (self.seq_len,), generator=g)",
        "dummy ids drawn from 1 (id 0 reserved for padding)",
        needs="dataloader_dummy_golden, legacy_dummy_batches",
        function="DummyDataset.__getitem__",
    ),
    _plant(
        "shared_text_truncation_short",
        "shared",
        "shared",
        "hyper_parallel/data/transforms.py",
        "list(texts), truncation=True, max_length=cutoff, padding=False",
        "list(texts), truncation=True, max_length=cutoff - 1, padding=False",
        "plain-text transform truncates one token short",
        needs="dataloader_hf_text_golden",
        function="build_text_transform",
    ),
    _plant(
        "shared_alpaca_split_reassociated",
        "shared",
        "shared",
        "hyper_parallel/data/transforms.py",
        "max_target_len = int(cutoff * (target_len / (source_len + target_len)))",
        "max_target_len = int((cutoff * target_len) / (source_len + target_len))",
        "prompt/response split multiplied before dividing (can differ by one token)",
        needs="a json_file (alpaca) dataloader golden with long prompts and responses",
        function="infer_seqlen",
    ),
    _plant(
        "shared_scale_reassociated",
        "shared",
        "shared",
        "hyper_parallel/trainer/utils/loss.py",
        "return loss * (mb_tokens / global_tokens) * dp_size",
        "return loss * mb_tokens / global_tokens * dp_size",
        "micro-batch scaling reassociated (exact for power-of-two ratios, not in general)",
        needs="an e2e golden on data with unequal token counts per micro-batch",
        function="mean_global_loss",
    ),
    _plant(
        "inert_shared_report_global_tokens",
        "shared",
        "shared",
        "hyper_parallel/trainer/init_helpers.py",
        "    return loss_sum / max(tok_local, 1)\n",
        "    return loss_sum / max(global_tokens, 1)\n",
        "one rank: the reported loss divides by global_tokens, which equals the local count there",
        expected="inert",
        function="reported_loss",
    ),
    # ------------------------------------------------------------------ claimed by case families
    # (written for ``selfcheck --quick``: each turns a whole family of component cases red)
    _plant(
        "loss_shift_pads_last_with_zero",
        "loss",
        "new",
        LOSS,
        "return get_platform().pad_last_dim(labels, 1, ignore_index)[..., 1:]",
        "return get_platform().pad_last_dim(labels, 1, 0)[..., 1:]",
        "the shifted labels' last position padded with token 0 instead of ignore_index (scored)",
        needs="component_loss_vs_legacy, component_loss goldens",
        function="shift_labels",
    ),
    _plant(
        "tok_encode_strips_text",
        "tokenizer",
        "new",
        TOK,
        "return list(self.hf.encode(text, add_special_tokens=add_special_tokens))",
        "return list(self.hf.encode(text.strip(), add_special_tokens=add_special_tokens))",
        "the component strips surrounding whitespace before encoding",
        needs="component_tokenizer_vs_legacy, component_tokenizer goldens",
        function="HuggingFaceTokenizer.encode",
    ),
    _plant(
        "tok_specials_always_added",
        "tokenizer",
        "new",
        TOK,
        "return list(self.hf.encode(text, add_special_tokens=add_special_tokens))",
        "return list(self.hf.encode(text, add_special_tokens=True))",
        "the component ignores add_special_tokens=False",
        needs="component_tokenizer_vs_legacy (special=False)",
        function="HuggingFaceTokenizer.encode",
    ),
    _plant(
        "blind_map_lr_min_to_lr_max",
        "mapping",
        "new",
        MAP,
        '_rule("train.optimizer.lr_min", "lr_scheduler.lr_min"),',
        '_rule("train.optimizer.lr_min", "lr_scheduler.lr_max"),',
        "legacy lr_min is sent to lr_scheduler.lr_max",
        needs="caught in the blind run by trainer_e2e x20, hyper_trainer_curve x4, +7 more",
        function="FIELD_MAP",
    ),
    _plant(
        "blind_inert_ht_zero_grad_before_scheduler",
        "train-step",
        "new",
        HT,
        "self.lr_scheduler.step()\n        self.optimizer.zero_grad()",
        "self.optimizer.zero_grad()\n        self.lr_scheduler.step()",
        "zero_grad and the scheduler step swapped (independent)",
        expected="inert",
        needs="none: it changes no compared bit; the suite must stay green",
        function="HyperTrainer.train_step",
    ),
    _plant(
        "blind_ht_on_log_cadence_offset",
        "train-step",
        "new",
        HT,
        "if callbacks and state.global_step % log_steps == 0:",
        "if callbacks and (state.global_step - 1) % log_steps == 0:",
        "user callbacks get on_log one step early on the log_steps cadence",
        needs="caught in the blind run by user_callbacks",
        function="HyperTrainer.train",
    ),
    _plant(
        "blind_map_log_steps_to_tensorboard",
        "mapping",
        "new",
        MAP,
        '_rule("train.logging.log_steps", "metrics.log_steps"),',
        '_rule("train.logging.log_steps", "metrics.tensorboard.log_steps"),',
        "legacy logging.log_steps is sent to the TensorBoard cadence (metrics.log_steps stays 10)",
        needs="caught in the blind run by trainer_e2e x5, user_callbacks, +3 more",
        function="FIELD_MAP",
    ),
    _plant(
        "blind_shared_alpaca_newline_without_input",
        "shared",
        "shared",
        "hyper_parallel/data/transforms.py",
        'prompt = inst + ("\\n" + inp if inp else "")',
        'prompt = inst + "\\n" + (inp or "")',
        "masked alpaca prompt ends with a newline when the record has no input",
        needs="caught in the blind run by dataloader_pad_golden, transform_grid_golden x2, +1 more",
        function="build_text_transform",
    ),
    _plant(
        "blind_inert_chunked_ce_floor_chunk_size",
        "loss",
        "new",
        LOSS,
        "size = max(1, -(-rows // cfg.chunks))",
        "size = max(1, rows // cfg.chunks)",
        "chunk size rounded down (more chunks): row chunking changes no bit",
        expected="inert",
        needs="none: it changes no compared bit; the suite must stay green",
        function="ChunkedCELoss.__call__",
    ),
    _plant(
        "blind_map_tokenizer_prefers_weights_path",
        "mapping",
        "new",
        MAP,
        "args.model.tokenizer_path or args.model.weights_path",
        "args.model.weights_path or args.model.tokenizer_path",
        "the tokenizer is read from weights_path when both paths are set",
        needs="timed out (601 s) in the first blind run on a loaded box; caught in the second by explore_cover x9",
        function="legacy_to_trainer_config",
    ),
    _plant(
        "blind_shared_gqa_key_tiled",
        "shared",
        "shared",
        MODEL,
        "key = key.repeat_interleave(groups, dim=1)",
        "key = key.repeat(1, groups, 1, 1)",
        "GQA keys are tiled instead of interleaved (query heads meet the wrong key head)",
        needs="caught in the blind run by component_checkpoint_manager, component_loss x2, +11 more (14 cases)",
        function="Qwen3_5Attention.forward",
    ),
    _plant(
        "blind_inert_rope_arange_float",
        "shared",
        "shared",
        MODEL,
        'torch.arange(0, r, 2, dtype=torch.int64, device="cpu").float() / r',
        'torch.arange(0, r, 2, dtype=torch.float32, device="cpu") / r',
        "RoPE exponents from a float arange (small integers are exact in float32)",
        expected="inert",
        needs="none: it changes no compared bit; the suite must stay green (inert-ok in the second blind run)",
        function="Qwen3_5RotaryEmbedding._compute_inv_freq",
    ),
    _plant(
        "blind_ht_run_settings_yaml_max_steps",
        "trainer-init",
        "new",
        HT,
        '"max_steps": self.state.max_steps,',
        '"max_steps": self.config.training.steps,',
        "the checkpoint records the configured max_steps, not the one the dataset changed",
        needs="SURVIVED the second blind run; caught since by explore_cover points whose data lowers max_steps (train_size short) now that the checkpoint artifact holds the manifest's recorded settings",
        function="HyperTrainer._init_checkpoint",
    ),
    _plant(
        "blind_map_dp_prefers_legacy_dp",
        "mapping",
        "new",
        MAP,
        "dp_shard = acc.dp_shard if acc.dp_shard is not None else acc.dp",
        "dp_shard = acc.dp if acc.dp is not None else acc.dp_shard",
        "the legacy dp wins over dp_shard when both are set",
        needs="SURVIVED the second blind run; caught since by explore_cover points that set the legacy dp and dp_shard together (dp_shard forms dp and both)",
        function="legacy_to_trainer_config",
    ),
    _plant(
        "blind_inert_metrics_sink_rank_check",
        "metrics",
        "new",
        MET,
        "return sink.enabled and self.rank == 0 and step % sink.log_steps == 0",
        "return sink.enabled and step % sink.log_steps == 0",
        "sink cadence without the rank test (sinks exist on rank 0 only)",
        expected="inert",
        needs="none: it changes no compared bit; the suite must stay green (inert-ok in the second blind run)",
        function="MetricsProcessor._sink_due",
    ),
    _plant(
        "blind_ht_preset_tokenizer_never_built",
        "trainer-init",
        "new",
        HT,
        "isinstance(loader, PresetPtDataLoader.Config) and not cfg.tokenizer.path",
        "isinstance(loader, PresetPtDataLoader.Config)",
        "preset_pt never builds its tokenizer, even with a path (pad id falls back to 0)",
        needs="SURVIVED the second blind run; caught since by the covering point with preset_pt data and its own pad token (preset points use 2-row micro-batches, which pad)",
        function="HyperTrainer._init_tokenizer",
    ),
    _plant(
        "blind_recipe_debug_warmup_ratio",
        "mapping",
        "new",
        "hyper_parallel/recipes/qwen3_5.py",
        "lr_warmup_ratio=0.1,",
        "lr_warmup_ratio=0.15,",
        "the debug recipe's warmup ratio drifts from examples/debug/train.yaml",
        needs="SURVIVED the second blind run; caught later by two points of the seed-0 covering set (cli route, warmup 0.1 as a ratio, saving: the manifest records the recipe's ratio); the seed-9 set (with the model and mp_dtypes features) has no such point, so it survives again: the catch needs four values at once, which pairwise coverage does not promise. Needs the resolved scheduler settings compared in every run, saving or not",
        function="debug",
    ),
    _plant(
        "blind_inert_decay_keyword_find",
        "optimizer",
        "new",
        OPT,
        "any(k in lname for k in decay_keywords)",
        "any(lname.find(k) >= 0 for k in decay_keywords)",
        "decay keyword test written with str.find",
        expected="inert",
        needs="none: it changes no compared bit; the suite must stay green (inert-ok in the second blind run)",
        function="split_decay_groups",
    ),
    _plant(
        "blind_optim_in_backward_no_decay_decays",
        "optimizer",
        "new",
        OPT,
        "weight_decays = (config.weight_decay, 0.0)",
        "weight_decays = (config.weight_decay, config.weight_decay)",
        "optimizer-in-backward applies weight decay to the no-decay group too",
        needs="caught in the second blind run by optim_in_backward_groups, optim_in_backward_state, optim_toy_in_backward_groups, +1 more",
        function="OptimizersInBackwardContainer.__init__",
    ),
    _plant(
        "blind_cfgmgr_bool_case_sensitive",
        "mapping",
        "shared",
        "hyper_parallel/config/_checks.py",
        "lowered = raw.strip().lower()",
        "lowered = raw.strip()",
        "the CLI bool parser (one for both CLIs since 1f978d2) no longer accepts True/False spelled with capitals",
        needs="SURVIVED the second blind run; caught since by explore_cover cli points that spell bools True/False or 1/0 (feature spelling)",
        function="parse_bool",
    ),
    _plant(
        "blind_optim_in_backward_index_per_group",
        "optimizer",
        "new",
        OPT,
        "            indices = []\n",
        "            indices = []\n            index = 0\n",
        "optimizer-in-backward state_dict restarts parameter indices per group (state entries collide)",
        needs="caught in the second blind run by optim_in_backward_state, optim_toy_in_backward_step",
        function="OptimizersInBackwardContainer.state_dict",
    ),
    _plant(
        "blind_lrsched_cosine_span_ignores_warmup",
        "lr_scheduler",
        "new",
        LRS,
        "progress = (step - warmup) / max(1, total - warmup)",
        "progress = (step - warmup) / max(1, total)",
        "cosine progress divides by the whole horizon, not the steps after warmup",
        needs="caught in the second blind run by lrsched_grid x6, lrsched_dataset_shrunk, lrsched_preset_pt_reset, +15 more (60 cases)",
        function="lr_factor",
    ),
    _plant(
        "blind_lrsched_warmup_ratio_rounded",
        "lr_scheduler",
        "new",
        LRS,
        "self.warmup_steps = math.ceil(training_steps * config.lr_warmup_ratio)",
        "self.warmup_steps = round(training_steps * config.lr_warmup_ratio)",
        "warmup steps from the ratio rounded to nearest instead of up",
        needs="caught in the second blind run by lrsched_grid x3, lrsched_dataset_shrunk, lrsched_hypothesis, +5 more (26 cases)",
        function="LRSchedulersContainer.__init__",
    ),
    _plant(
        "blind_dl_hf_steps_ceil",
        "dataloader",
        "new",
        DL,
        "full_batches = len(dataset) // self.global_batch_size",
        "full_batches = -(-len(dataset) // self.global_batch_size)",
        "hf/json horizon counts the trailing partial global batch as a step",
        needs="caught in the second blind run by dataloader_hf_text, dataloader_hf_text_golden, dataloader_pad x9, +6 more (35 cases)",
        function="HuggingFaceTextDataLoader._build_dataset",
    ),
    _plant(
        "blind_ckpt_final_export_when_saving_off",
        "checkpoint",
        "new",
        CKPT,
        "self.config.save_hf_weights and self.config.save_steps > 0 and step != self.last_exported_step",
        "self.config.save_hf_weights and step != self.last_exported_step",
        "train end exports HF weights even when saving is off (save_steps <= 0)",
        needs="caught in the second blind run by trainer_e2e x3, explore_cover x12, explore_drawn (16 cases)",
        function="CheckpointManager.save_final",
    ),
    _plant(
        "blind_ckpt_resume_export_step_not_set",
        "checkpoint",
        "new",
        CKPT,
        "self.last_saved_step = step\n        self.last_exported_step = step\n",
        "self.last_saved_step = step\n",
        "after a resume the loaded step counts as not exported (train end may export it again)",
        needs="SURVIVED the second blind run; it shows only after a resume with nothing left to train, which is now refused: close to an equivalent mutant",
        function="CheckpointManager.load",
    ),
    _plant(
        "blind_platform_collate_int32",
        "dataloader",
        "new",
        "hyper_parallel/platform/torch_platform.py",
        "return torch.as_tensor(data, dtype=torch.int64)",
        "return torch.as_tensor(data, dtype=torch.int32)",
        "the new collate builds int32 ids and labels",
        needs="timed out (1200 s) in the second blind run with nothing named; caught: every torch e2e case errs at once (cross_entropy refuses int32 targets: dummy 9 cases, dp2_padded in 39 s); the time went to hypothesis shrinking the erring drawn cases, which the self-check no longer does",
        function="TorchPlatform.as_int64",
    ),
    _plant(
        "blind_model_init_tied_drawn_twice",
        "trainer-init",
        "new",
        MODEL,
        "for _name, param in self.named_parameters():",
        "for _name, param in self.named_parameters(remove_duplicate=False):",
        "init_weights draws the tied embedding/head weight twice (RNG stream shifts)",
        needs="caught in the second blind run by trainer_e2e x19, hyper_trainer_curve x4, user_callbacks, +7 more (53 cases)",
        function="Qwen3_5ForCausalLM.init_weights",
    ),
    # --- plants for cases that had none (claims)
    # Each was written for a case of parity/tools/claims.py's UNMEASURED list (the one named in
    # needs) and measured against it with `python -m parity selfcheck --plant <name> -- --id <case>`.
    _plant(
        "dl_set_epoch_ignored",
        "dataloader",
        "new",
        DL,
        "self.sampler.set_epoch(epoch)",
        "self.sampler.set_epoch(0)",
        "the loader's set_epoch keeps epoch 0's permutation (every epoch sees the same order)",
        needs="dataloader_set_epoch_groups (epoch 2, shuffled)",
        function="BaseDataLoader.set_epoch",
    ),
    _plant(
        "prof_enabled_default_on",
        "profiler",
        "new",
        PROF,
        "enabled: bool = False",
        "enabled: bool = True",
        "Profiler.Config.enabled defaults on (the legacy train.profile is off unless set)",
        needs="profiler_defaults; profiler_run with train.profile untouched (steps=5)",
        function="Profiler.Config",
    ),
    _plant(
        "legacy_profiler_ignores_enabled",
        "legacy",
        "legacy",
        "hyper_parallel/trainer/callbacks/profiler.py",
        "if not self.enabled or self.prof is not None:",
        "if self.prof is not None:",
        "legacy ProfilerCallback starts the profiler whatever train.profile.enabled says",
        needs="profiler_run with enabled=false (the schedule left unchecked, wait=-1, and a valid one)",
        function="ProfilerCallback.on_train_begin",
    ),
    _plant(
        "tok_call_drops_kwargs",
        "tokenizer",
        "new",
        TOK,
        "return self.hf(*args, **kwargs)",
        "return self.hf(*args)",
        "the component's pass-through call drops the keyword arguments (truncation, max_length)",
        needs="component_tokenizer_transform_vs_legacy (rows longer than the cutoff)",
        function="HuggingFaceTokenizer.__call__",
    ),
    _plant(
        "tok_vocab_check_dropped",
        "tokenizer",
        "new",
        TOK,
        "        self.check_vocab(vocab_size)\n",
        "",
        "the component no longer checks the tokenizer size against model.vocab_size",
        needs="trainer_tokenizer_vocab_refusal_vs_legacy; dataloader_error (vocab=300)",
        function="HuggingFaceTokenizer.__init__",
    ),
    _plant(
        "tok_empty_path_is_none_check",
        "tokenizer",
        "new",
        TOK,
        "        if not path:\n",
        "        if path is None:\n",
        "an unset tokenizer.path tested with 'is None' (the empty string falls through to FileNotFoundError)",
        needs="dataloader_error (text data without a tokenizer: legacy raises ValueError)",
        function="HuggingFaceTokenizer.__init__",
    ),
    _plant(
        "dl_batch_multiple_ignores_dp",
        "dataloader",
        "new",
        DL,
        "if global_batch_size % (local_batch_size * dp_world_size):",
        "if global_batch_size % local_batch_size:",
        "the global-batch divisibility check ignores the dp world size",
        needs="dataloader_error (gbs 8, mbs 2, world 3: legacy refuses)",
        function="BaseDataLoader.__init__",
    ),
    _plant(
        "legacy_tok_pad_from_unk",
        "legacy",
        "legacy",
        LLM,
        "tokenizer.pad_token = tokenizer.eos_token",
        "tokenizer.pad_token = tokenizer.unk_token",
        "legacy pad falls back to the unk token (the Llama convention) instead of eos",
        needs="legacy_multilingual (pad_token_id)",
        function="LLMTrainer._build_model_assets",
    ),
    _plant(
        "legacy_warmup_inclusive",
        "legacy",
        "legacy",
        BASE,
        "            if step < warmup:\n",
        "            if step <= warmup:\n",
        "legacy warmup branch taken at step == warmup (with no warmup, the first step runs at lr 0)",
        needs="lr_curve.legacy_lr with warmup_ratio 0 (constant style)",
        function="BaseTrainer._build_lr_scheduler",
    ),
    _plant(
        "legacy_warmup_floor",
        "legacy",
        "legacy",
        BASE,
        'warmup = math.ceil(total * _get(opt, "lr_warmup_ratio", 0.0))',
        'warmup = int(total * _get(opt, "lr_warmup_ratio", 0.0))',
        "legacy warmup steps floored instead of ceiled (50 * 0.33 = 16.5 -> 16)",
        needs="lr_curve.legacy_lr with a fractional warmup (constant style, 50 steps, ratio 0.33)",
        function="BaseTrainer._build_lr_scheduler",
    ),
    _plant(
        "platform_generator_unseeded",
        "trainer-init",
        "new",
        "hyper_parallel/platform/torch_platform.py",
        "return torch.Generator().manual_seed(seed)",
        "return torch.Generator()",
        "platform.generator(seed) ignores the seed (torch's fixed default seed instead)",
        needs="reseed (a generator seeded like the engine's global reseed)",
        function="TorchPlatform.generator",
    ),
    _plant(
        "platform_lambda_lr_multiplicative",
        "lr_scheduler",
        "new",
        "hyper_parallel/platform/torch_platform.py",
        "return torch.optim.lr_scheduler.LambdaLR(optimizer, lr_lambda)",
        "return torch.optim.lr_scheduler.MultiplicativeLR(optimizer, lr_lambda)",
        "platform.lambda_lr builds MultiplicativeLR (factors compound) instead of LambdaLR",
        needs="lambda_warmup_cosine",
        function="TorchPlatform.lambda_lr",
    ),
    _plant(
        "platform_adamw_is_adam",
        "optimizer",
        "new",
        "hyper_parallel/platform/torch_platform.py",
        "return torch.optim.AdamW(param_groups, **kwargs)",
        "return torch.optim.Adam(param_groups, **kwargs)",
        "platform.adamw builds Adam (weight decay as an L2 term, not decoupled)",
        needs="adamw_tiny",
        function="TorchPlatform.adamw",
    ),
    _plant(
        "map_decay_style_dropped",
        "mapping",
        "new",
        MAP,
        '    _rule("train.optimizer.lr_decay_style", "lr_scheduler.decay_style"),\n',
        "",
        "the legacy lr_decay_style row lost from the mapping (the component's default cosine is used)",
        needs="trainer_e2e lr_curve on the alpaca recipe (constant after warmup: only the decay style moves it)",
        function="FIELD_MAP",
    ),
    _plant(
        "map_reduce_dtype_dropped",
        "mapping",
        "new",
        MAP,
        '    _rule("train.mixed_precision.reduce_dtype", "training.mixed_precision_reduce"),\n',
        "",
        "the legacy reduce_dtype row lost from the mapping (HyperTrainer reduces gradients in float32)",
        needs="explore_cover points with bf16, reduce_dtype bfloat16 and 2 or 3 ranks (feature mp_dtypes)",
        function="FIELD_MAP",
    ),
    _plant(
        "legacy_model_flavor_only",
        "legacy",
        "legacy",
        "hyper_parallel/models/qwen3_5/__init__.py",
        "    return build_from_config(config_from_args(args))",
        "    return build_from_config(Qwen3_5Config(**FLAVORS[args.model.flavor]))",
        "the legacy model builder takes the flavour preset and drops the universal overrides "
        "(model.num_hidden_layers, model.num_key_value_heads, ...)",
        needs="explore_cover points with model overrides (feature model: deep_mha)",
        function="build_qwen3_5",
    ),
)


def select(names: Iterable[str] | None = None, plants: Sequence[Plant] = PLANTS) -> list[Plant]:
    """The plants named (in catalogue order), or all; an unknown name is a ``KeyError`` listing it."""
    if not names:
        return list(plants)
    wanted = list(dict.fromkeys(names))
    known = {p.name for p in plants}
    unknown = [n for n in wanted if n not in known]
    if unknown:
        raise KeyError(
            f"unknown plant(s): {', '.join(unknown)} (`python -m parity selfcheck --list` shows the catalogue)"
        )
    return [p for p in plants if p.name in wanted]


def catalogue_problems(plants: Sequence[Plant] = PLANTS) -> list[str]:
    """Structural problems of a catalogue (names, categories, sides, expectations, no-op edits)."""
    problems = []
    seen: set[str] = set()
    for plant in plants:
        if plant.name in seen:
            problems.append(f"plant {plant.name}: the name is used twice")
        seen.add(plant.name)
        if plant.category not in CATEGORIES:
            problems.append(f"plant {plant.name}: category {plant.category!r} is not one of {CATEGORIES}")
        if plant.side not in SIDES:
            problems.append(f"plant {plant.name}: side {plant.side!r} is not one of {SIDES}")
        if plant.expected not in EXPECTATIONS:
            problems.append(f"plant {plant.name}: expected {plant.expected!r} is not one of {EXPECTATIONS}")
        if not plant.old or plant.old == plant.new:
            problems.append(f"plant {plant.name}: the edit changes nothing")
        if not plant.function:
            problems.append(f"plant {plant.name}: no function= (the function or constant it lives in)")
        if not plant.models.strip():
            problems.append(f"plant {plant.name}: 'models' is empty")
        if plant.expected == "caught" and not plant.needs.strip():
            problems.append(f"plant {plant.name}: 'needs' (the case that catches it) is empty")
    return problems


# ----------------------------------------------------------------------------- what mutmut writes
# The single-token edits mutmut 3's operators make (``mutmut.mutation.mutators``): a plant that
# makes one of them is a divergence the mutation run generates anyway, in every function.
_MUTMUT_SWAPS = {
    **dict.fromkeys(("+", "-"), None),
    "+": "-", "-": "+", "*": "/", "/": "*", "//": "/", "%": "/", "<<": ">>", ">>": "<<",
    "&": "|", "|": "&", "^": "&", "**": "*", "+=": "-=", "-=": "+=", "*=": "/=", "/=": "*=",
    "//=": "/=", "%=": "/=", "<": "<=", "<=": "<", ">": ">=", ">=": ">", "==": "!=", "!=": "==",
    "and": "or", "or": "and", "True": "False", "False": "True", "in": "not in", "is": "is not",
    "break": "return", "continue": "break",
}  # fmt: skip


def _tokens(text: str) -> list[str]:
    import io
    import tokenize

    skip = (
        tokenize.NL,
        tokenize.NEWLINE,
        tokenize.INDENT,
        tokenize.DEDENT,
        tokenize.COMMENT,
        tokenize.ENDMARKER,
    )
    try:
        return [t.string for t in tokenize.generate_tokens(io.StringIO(text).readline) if t.type not in skip]
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return []


def _in_function(plant: Plant, root: Path) -> bool:
    """Whether ``plant.function`` is a function or method (mutmut mutates function bodies only,
    never module-level constants or class attributes)."""
    path = root / plant.file
    if not path.is_file():
        return False
    try:
        with _AST_PARSE_LOCK:
            tree = ast.parse(path.read_text(encoding="utf-8"))
    except SyntaxError:
        return False
    parts = plant.function.split(".")
    body: list[ast.stmt] = tree.body
    node: ast.stmt | None = None
    for part in parts:
        node = next((n for n in body if getattr(n, "name", None) == part), None)
        if node is None:
            return False
        body = getattr(node, "body", [])
    return isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)


def _in_call(tokens: list[str], at: int) -> bool:
    """Whether position ``at`` lies inside the parentheses of a call (``name(`` or ``)(``)."""
    depth = 0
    for i in range(at - 1, -1, -1):
        if tokens[i] in (")", "]", "}"):
            depth += 1
        elif tokens[i] in ("(", "[", "{"):
            if depth == 0:
                return (
                    tokens[i] == "("
                    and i > 0
                    and (tokens[i - 1].isidentifier() or tokens[i - 1] in (")", "]"))
                )
            depth -= 1
    return False


# Plants mutmut could write that stay, each the only measured claim of some case, until a mutation
# run records a kill by that case (``parity/tools/mutation/kills.json``; a run stops at the first
# killing case, so a case that is never first records nothing).
KEPT_FOR_CLAIMS = {
    "legacy_warmup_inclusive": "the only claim of legacy_lr (constant schedule)",
    "loss_shift_default_ignore_index": "the only claim of component_loss_ignore_index_vs_legacy",
    "shared_dummy_ids_from_one": "the only claim of the legacy recipe goldens and legacy_dummy_batches",
    "tok_call_drops_kwargs": "the only claim of component_tokenizer_transform_vs_legacy",
}


def mutation_operator(plant: Plant, root: Path | None = None) -> str | None:
    """The mutmut operator that makes ``plant``'s edit, or None when no operator can express it
    (the plants the catalogue keeps): a swap of one operator, keyword or boolean; a number made
    one larger; one call argument dropped; ``not`` dropped; a right-hand side made ``None``; in a
    function body (mutmut leaves module-level and class-level code alone)."""
    import difflib

    if not _in_function(plant, root or Path(__file__).resolve().parents[2]):
        return None
    old, new = _tokens(plant.old), _tokens(plant.new)
    if not old or not new:
        return None
    ops = [
        op for op in difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes() if op[0] != "equal"
    ]
    if len(ops) != 1:
        return None
    tag, i1, i2, j1, j2 = ops[0]
    if tag == "replace" and i2 - i1 == 1 and j2 - j1 == 1:
        x, y = old[i1], new[j1]
        if _MUTMUT_SWAPS.get(x) == y:
            return f"swap {x} -> {y}"
        try:
            if float(y) == float(x) + 1:
                return "number + 1"
        except ValueError:
            pass
    keyword_value = _in_call(old, i1) or old[i2 : i2 + 1] == [","]  # ``f(x=value,``: not an assignment
    if tag == "replace" and new[j1:j2] == ["None"] and i1 > 0 and old[i1 - 1] == "=" and not keyword_value:
        return "assignment to None"
    if tag == "delete":
        gone = old[i1:i2]
        if gone == ["not"]:
            return "not removed"
        balanced = gone.count("(") == gone.count(")") and gone.count("[") == gone.count("]")
        if balanced and (gone[0] == "," or gone[-1] == ",") and _in_call(old, i1):
            return "argument removed"
    return None
