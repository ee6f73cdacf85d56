"""Which component cases exercise each method ``HyperTrainer`` uses on its components.

A case that calls only a component's main entry point misses a slip in another method the trainer
calls (``loss.count_tokens`` beside ``loss(...)``). ``TRAINER_METHODS`` lists, per trainer
attribute, every method or attribute ``HyperTrainer`` reaches on it (``__call__`` for
``self.x(...)``, ``__enter__`` for ``with self.x``) and the case names whose new side reaches it.
``problems`` checks the table against the trainer's source (``ast``) and the registered cases;
``tests/parity/test_parity_method_coverage.py`` runs it.

The underscore keeps this module out of the suite import loop (it registers no case).
"""

from __future__ import annotations

import ast
import builtins
import inspect
import textwrap
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

__all__ = ["TRAINER_METHODS", "TRAINER_SOURCE", "problems", "reached_names", "trainer_uses"]

TRAINER_SOURCE = Path(__file__).resolve().parents[2] / "hyper_parallel" / "trainer" / "hyper_trainer.py"

# trainer attribute -> {method or attribute: case names whose new side reaches it}
TRAINER_METHODS: dict[str, dict[str, tuple[str, ...]]] = {
    "loss_fn": {
        "__call__": ("component_loss_ignore_index_vs_legacy", "component_loss_drawn_vs_legacy"),
        "count_tokens": ("component_loss_ignore_index_vs_legacy", "component_loss_drawn_vs_legacy"),
    },
    "optimizer": {
        "step": ("optim_state", "optim_toy_step"),
        "zero_grad": ("optim_state", "optim_toy_step"),
    },
    "lr_scheduler": {
        "step": ("lrsched_grid", "optim_state"),
        "get_last_lr": ("lrsched_grid",),
    },
    "dataloader": {
        "training_steps": ("dataloader_fields", "dataloader_dummy"),
        "set_epoch": ("dataloader_set_epoch_groups",),
        "micro_batch_iterator": ("dataloader_micro_batch_groups", "dataloader_set_epoch_groups"),
    },
    "metrics": {
        "start_step": ("metrics_processor_vs_callbacks",),
        "log": ("metrics_processor_vs_callbacks",),
        "log_steps": ("metrics_processor_vs_callbacks",),
        "history": ("metrics_processor_vs_callbacks",),
        "close": ("metrics_processor_vs_callbacks",),
    },
    "checkpointer": {
        "config": ("component_checkpoint_layout",),
        "load": ("component_checkpoint_layout",),
        "load_weights": ("trainer_e2e",),  # e2e: the new side is HyperTrainer itself
        "maybe_save": ("component_checkpoint_layout", "component_checkpoint_resume"),
        "save_final": ("component_checkpoint_layout",),
    },
    "profiler": {
        "__enter__": ("profiler_run",),
        "step": ("profiler_run",),
    },
}


def trainer_uses(source: str, attributes: Iterable[str]) -> set[tuple[str, str]]:
    """``(attribute, member)`` for every ``self.<attribute>.<member>``, ``self.<attribute>(...)``
    (``__call__``), ``with self.<attribute> [as x]`` (``__enter__``, then ``x.<member>``) in ``source``."""
    wanted = set(attributes)
    uses: set[tuple[str, str]] = set()
    aliases: dict[str, str] = {}

    def self_attr(node: ast.AST) -> str | None:
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
            return node.attr if node.attr in wanted else None
        return None

    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.With | ast.AsyncWith):
            for item in node.items:
                attr = self_attr(item.context_expr)
                if attr is not None:
                    uses.add((attr, "__enter__"))
                    if isinstance(item.optional_vars, ast.Name):
                        aliases[item.optional_vars.id] = attr
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and (attr := self_attr(node.func)) is not None:
            uses.add((attr, "__call__"))
        elif isinstance(node, ast.Attribute):
            if (attr := self_attr(node.value)) is not None:
                uses.add((attr, node.attr))
            elif isinstance(node.value, ast.Name) and node.value.id in aliases:
                uses.add((aliases[node.value.id], node.attr))
    return uses


def _function_tree(func: Any) -> ast.AST | None:
    try:
        return ast.parse(textwrap.dedent(inspect.getsource(func)))
    except (OSError, TypeError, SyntaxError):
        return None


def reached_names(func: Any) -> set[str]:
    """Attribute names used by ``func`` and by the module-level functions of its module that it
    names (called or passed on, transitively); ``__call__`` when one of them calls a local value (``x(...)``: a built
    component), ``__enter__`` when one of them has a ``with`` block."""
    module = inspect.getmodule(func)
    globals_ = vars(module) if module is not None else {}
    seen: set[str] = set()
    names: set[str] = set()
    todo = [func]
    while todo:
        current = todo.pop()
        tree = _function_tree(current)
        if tree is None:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute):
                names.add(node.attr)
            elif isinstance(node, ast.With | ast.AsyncWith):
                names.add("__enter__")
            elif isinstance(node, ast.Call):
                callee = node.func
                if isinstance(callee, ast.Call) or (
                    isinstance(callee, ast.Name)
                    and callee.id not in globals_
                    and not hasattr(builtins, callee.id)
                ):
                    names.add("__call__")
            elif isinstance(node, ast.Name) and node.id not in seen:
                # a module function called or passed on (``_layout(manager_save, ...)``)
                target = globals_.get(node.id)
                if inspect.isfunction(target) and target.__module__ == getattr(module, "__name__", None):
                    seen.add(node.id)
                    todo.append(target)
    return names


def problems(
    registry: Iterable[Any],
    table: Mapping[str, Mapping[str, tuple[str, ...]]] = TRAINER_METHODS,
    source: str | None = None,
) -> list[str]:
    """One line per gap: a trainer use with no table entry, a stale entry, an unknown case, or a
    case whose new side does not reach the method it is listed for."""
    text = TRAINER_SOURCE.read_text(encoding="utf-8") if source is None else source
    used = trainer_uses(text, table)
    listed = {(attr, member) for attr, members in table.items() for member in members}
    out = [
        f"HyperTrainer uses self.{attr}.{member} but no case is listed for it in TRAINER_METHODS"
        for attr, member in sorted(used - listed)
    ]
    out += [
        f"TRAINER_METHODS lists self.{attr}.{member}, which HyperTrainer no longer uses"
        for attr, member in sorted(listed - used)
    ]
    by_name: dict[str, list[Any]] = {}
    for case in registry:
        by_name.setdefault(case.name, []).append(case)
    for attr, members in table.items():
        for member, names in members.items():
            if not names:
                out.append(f"self.{attr}.{member}: no case listed")
            for name in names:
                cases = by_name.get(name)
                if not cases:
                    out.append(f"self.{attr}.{member}: case {name!r} is not registered")
                    continue
                if "e2e" in cases[0].tags:
                    continue  # the new side runs HyperTrainer, which makes the call itself
                func = cases[0].new or cases[0].producer
                if member not in reached_names(func):
                    out.append(
                        f"self.{attr}.{member}: case {name!r} (new side {getattr(func, '__name__', func)}) never reaches it"
                    )
    return out
