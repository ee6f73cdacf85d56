"""What a diverging explore point leaves behind: YAML files, a reproduce line, a localisation.

``write_point(point, folder)`` writes, atomically:

- ``point.yaml``: the feature values (``python -m parity.explore point.yaml`` reruns exactly this);
- ``train.yaml``: the legacy YAML of the point, every field spelled out, its data, weights and
  tokenizer files kept beside it in ``assets/`` (so ``LLMTrainer`` or the legacy CLI runs it as is);
- ``reproduce.txt``: the one-line reproduce command.

The localisers of the explore cases (``parity.tools.localise_explore``) call ``write_point`` and
replay the point with ``parity.tools.localise``.
"""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from parity.explore import space

__all__ = ["DEFAULT_DIR", "load_point", "main", "point_id", "reproduce_line", "write_point"]

DEFAULT_DIR = Path(__file__).resolve().parents[1] / "reports" / "explore"


def point_id(point: Mapping[str, Any]) -> str:
    text = yaml.safe_dump(dict(sorted(point.items())), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def reproduce_line(path: Path) -> str:
    return f"python -m parity.explore {path}"


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.chmod(tmp, 0o644)  # mkstemp makes it private; these files are for people to read
    os.replace(tmp, path)


def write_point(point: Mapping[str, Any], folder: Path | None = None, *, note: str = "") -> Path:
    """Write the point's files into ``folder`` (default ``parity/reports/explore/<id>``); returns
    the ``point.yaml`` path."""
    from hyper_parallel.trainer.config import config_to_dict
    from parity.legacy_driver import legacy_args

    folder = Path(folder) if folder is not None else DEFAULT_DIR / point_id(point)
    header = "# explore point" + (f": {note}" if note else "") + "\n"
    point_path = folder / "point.yaml"
    _write(point_path, header + yaml.safe_dump(dict(point), sort_keys=False))
    overrides = space.render(point, folder / "assets")
    tree = config_to_dict(legacy_args(*overrides))
    tree.pop("train_steps", None)  # computed from train.max_steps; not a YAML key
    tree["train"].pop("local_rank", None)  # always read from LOCAL_RANK
    world = point["world"]
    launch = "" if world == 1 else f" (run with {world} ranks: torchrun --nproc_per_node={world})"
    _write(
        folder / "train.yaml",
        f"# legacy YAML of {point_path.name}{launch}\n" + yaml.safe_dump(tree, sort_keys=False),
    )
    _write(folder / "reproduce.txt", reproduce_line(point_path) + "\n")
    return point_path


def load_point(path: Path) -> dict[str, Any]:
    """A ``point.yaml``; an unknown feature or value is one error line naming it."""
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise ValueError(f"{path}: cannot read an explore point: {exc}") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a mapping of feature: value, got {type(data).__name__}")
    point = {**space.default_point(), **data}
    bad = space.violations(point)
    if bad:
        raise ValueError(f"{path}: {bad[0]}")
    return point


def main(argv: list[str] | None = None) -> int:
    """``python -m parity.explore POINT.yaml``: run the point on both trainers, print the
    differences (exit 1) or "equal" (exit 0); a bad file exits 2 with one line."""
    from parity import numerics
    from parity.compare import compare
    from parity.explore import runner

    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m parity.explore POINT.yaml", file=sys.stderr)
        return 2
    try:
        point = load_point(Path(args[0]))
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    numerics.apply()
    runs = runner.run_point(point)
    legacy, new = (runner.side_artifacts(runs[s]) for s in runs)
    differences = compare(legacy, new, root="explore")
    for d in differences[:20]:
        print(f"{d.path}: {d.message}")
    print(f"{len(differences)} difference(s)" if differences else "equal: every artifact matches bit for bit")
    return 1 if differences else 0
