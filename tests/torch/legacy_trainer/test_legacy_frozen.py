"""The legacy builders and ``LLMTrainer`` do not change: their source hashes against a committed table.

The new path is measured against the legacy trainer bit for bit, so the legacy builders stay as
they are (no ``BaseTrainer._build_*`` body changes) and the old ``LLMTrainer(args)`` path does not
change at all. Sources are compared after ``ast.unparse``, so comments and formatting do not count;
any change of code, a docstring, a name or an argument does.

UPDATE ``FROZEN`` ONLY WITH A REASON IN THE COMMIT MESSAGE (what changed in the legacy trainer and
why the change is wanted); ``HYPER_PARALLEL_PRINT_FROZEN=1 pytest <this file>`` prints the table.
"""

from __future__ import annotations

import ast
import hashlib
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
BASE = ROOT / "hyper_parallel/trainer/base.py"
LLM = ROOT / "hyper_parallel/trainer/llm_trainer.py"

# sha256 of ``ast.unparse`` of each frozen source. Update only with a reason in the commit message.
FROZEN = {
    "BaseTrainer._build_model": "a7660aa1b1e5c290983f50d6ae73d2e177b17bf780c883f97416ecfae978a273",
    "BaseTrainer._build_model_assets": "830a71a8073b23e30abb728715a966adc21ac980ee18896cb953fd9257c05e97",
    "BaseTrainer._build_data_transform": "57e706b33b1c2f89fdec1637cdcb6c083ea60e73b6f369db9292819d64243846",
    "BaseTrainer._build_dataset": "f748efddad5df91cb77ed2077a70907681990a6235cfa74a6ebaba7d10de5acc",
    "BaseTrainer._build_collate_fn": "b0fbf6421dea4350609e271cc600e73b8a55f2fd4bb5aa21364774392aeaff14",
    "BaseTrainer._build_dataloader": "413709edbd319a757af306fe0904760c26ab2fdacd3811a2a7846354f1bd2c06",
    "BaseTrainer._build_parallelized_model": "e8e0881fc85e511acbd02633b7a13cab8be0573d7da2fd6eeb9f913caf451ca3",
    "BaseTrainer._build_optimizer": "9c4ef7926b915a06d1959272446bfdd5baa8e0e3c983ea0f6d0e7b10d51fe576",
    "BaseTrainer._build_lr_scheduler": "641d51642ae8ae41f74a81f23b332c144fb4dfcf58b1f4496a8337e613c9c612",
    "BaseTrainer._build_training_context": "3c8b7c57cbdc5d207666c1cc91149d0c56898ca7715e1566925bd093a1f0424b",
    "llm_trainer.py": "fa39ef7d7c8600eac1b46f8adde8b0aad83ad2bf2e989f13337c09bff880fb5f",
}


def _digest(tree: ast.AST) -> str:
    return hashlib.sha256(ast.unparse(tree).encode()).hexdigest()


def frozen_hashes(base_source: str, llm_source: str) -> dict[str, str]:
    """Every ``BaseTrainer._build_*`` method of ``base_source`` and the whole ``llm_source``, hashed."""
    out: dict[str, str] = {}
    for node in ast.parse(base_source).body:
        if isinstance(node, ast.ClassDef) and node.name == "BaseTrainer":
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name.startswith("_build_"):
                    out[f"BaseTrainer.{item.name}"] = _digest(item)
    out["llm_trainer.py"] = _digest(ast.parse(llm_source))
    return out


def _current() -> dict[str, str]:
    return frozen_hashes(BASE.read_text(encoding="utf-8"), LLM.read_text(encoding="utf-8"))


def test_legacy_builders_and_llm_trainer_are_unchanged() -> None:
    current = _current()
    if os.environ.get("HYPER_PARALLEL_PRINT_FROZEN"):
        print("".join(f'    "{name}": "{digest}",\n' for name, digest in current.items()))
    changed = sorted(name for name in FROZEN.keys() & current.keys() if FROZEN[name] != current[name])
    assert not changed, (
        f"legacy source changed: {', '.join(changed)}; the legacy builders and LLMTrainer are frozen "
        "(update FROZEN only with a reason in the commit message)"
    )
    assert current.keys() == FROZEN.keys(), (
        f"BaseTrainer._build_* methods added {sorted(current.keys() - FROZEN.keys())} "
        f"or removed {sorted(FROZEN.keys() - current.keys())}"
    )


@pytest.mark.parametrize(
    ("name", "old", "new"),
    [
        (
            "BaseTrainer._build_lr_scheduler",
            "total = self.state.max_steps",
            "total = self.args.train.max_steps",
        ),
        ("BaseTrainer._build_optimizer", "foreach=None", "foreach=False"),
        ("BaseTrainer._build_dataloader", 'shuffle=_get(data, "shuffle", True)', "shuffle=True"),
    ],
)
def test_a_changed_builder_body_is_caught_and_named(name: str, old: str, new: str) -> None:
    base = BASE.read_text(encoding="utf-8")
    assert base.count(old) == 1
    planted = frozen_hashes(base.replace(old, new), LLM.read_text(encoding="utf-8"))
    assert {key for key in FROZEN if planted[key] != FROZEN[key]} == {name}


def test_a_changed_llm_trainer_is_caught_and_formatting_is_not() -> None:
    base, llm = BASE.read_text(encoding="utf-8"), LLM.read_text(encoding="utf-8")
    old = "base._build_optimizer()  # 10\n        base._build_lr_scheduler()  # 11\n"
    assert llm.count(old) == 1
    swapped = "base._build_lr_scheduler()  # 11\n        base._build_optimizer()  # 10\n"
    assert frozen_hashes(base, llm.replace(old, swapped))["llm_trainer.py"] != FROZEN["llm_trainer.py"]
    # a comment or a blank line is not a change
    reformatted = llm.replace("# 10\n", "# ten\n\n")
    assert frozen_hashes(base, reformatted) == FROZEN
