"""``parity/outputs.py`` against the trainers and the parity recorders: the inventory stays honest.

One tiny run of each trainer through the e2e recorder (``parity.e2e.run_legacy`` /
``run_new``: 2 steps of 2 micro-batches, a checkpoint with its HF export at each step, the
profiler, TensorBoard and an offline W&B run on), plus one run of each resumed from the other's
first checkpoint, give the trees the e2e cases compare and every file the trainers write (the files
in the output folders at each checkpoint commit too, so transient ones such as the lock file and
the staging folder are seen). The component cases' trees come from their own recorders, on one
side (a passing pair has the same tree on both). Then:

- every ``compared_by`` path exists in those trees, and names cases that compare that tree;
- every file written matches a pattern of the table (a new output file fails until it is listed);
- every callback hook, recorded event, metric record key, e2e artifact and checkpoint entry has a row;
- every ``path:Symbol`` location exists, and the claims of the uncompared rows hold.
"""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path
from typing import Any

import pytest

from parity.outputs import COMPARISONS, KINDS, OUTPUTS, ROOTS, TREES, Output

pytestmark = [
    # One worker runs the module: its tests share the tiny runs (a module fixture).
    pytest.mark.xdist_group("outputs_inventory"),
    pytest.mark.filterwarnings(
        "ignore:torch.distributed is disabled:UserWarning",
        "ignore:'set_vital' is deprecated:UserWarning",
    ),
]

REPO = Path(__file__).resolve().parents[2]

# The tiny run: the debug YAML with 2 steps of 2 micro-batches of 16 tokens, a checkpoint (and HF
# export) at each step, the profiler recording step 2, TensorBoard, and the FLOP fields (tflops, mfu).
_TINY = (
    "--train.max_steps=2",
    "--train.global_batch_size=4",
    "--data.max_seq_len=16",
    "--train.checkpoint.save_steps=1",
    "--train.profile.enabled=true",
    "--train.profile.wait_steps=0",
    "--train.profile.warmup_steps=1",
    "--train.profile.active_steps=1",
    "--train.logging.model_flops_per_token=1000",
    "--train.logging.peak_tflops=100.0",
)
# Folder of a run (relative to its work folder) -> the table's root.
_FOLDERS = {
    "ckpt": "checkpoint.output_dir",
    "profile": "profiler.output_dir",
    "tb": "tensorboard.output_dir",
    "wandb_dir": "WANDB_DIR",
}


# ----------------------------------------------------------------------------- the runs
@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Any]:
    """``{"legacy": {"fresh": artifacts, "resumed": artifacts}, "new": ..., "files": {(root, path)}}``."""
    from hyper_parallel.checkpointing import staging
    from parity import e2e

    root = tmp_path_factory.mktemp("outputs")
    files: set[tuple[str, str]] = set()
    commit = staging.commit_step_dir

    def listing_commit(partial: str, final: str, step: int, settings: Any = None) -> None:
        # Every rank's files are written: list the output folder as it is now (lock, staging).
        out_dir = Path(partial).parent
        files.update(("checkpoint.output_dir", str(p.relative_to(out_dir))) for p in _files(out_dir))
        commit(partial, final, step, settings)

    out: dict[str, Any] = {"root": root}
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(staging, "commit_step_dir", listing_commit)  # StepCommitter calls it
        mp.setenv("HYPER_PARALLEL_PROGRESS", "0")
        mp.setenv("WANDB_MODE", "offline")
        mp.setenv("WANDB_SILENT", "true")
        for side in ("legacy", "new"):
            work = root / side
            (work / "wandb_dir").mkdir(parents=True)
            mp.setenv("WANDB_DIR", str(work / "wandb_dir"))
            fresh = e2e.SIDES[side](
                *_TINY,
                "--train.tensorboard.enabled=true",
                f"--train.tensorboard.output_dir={work / 'tb'}",
                "--train.wandb.enabled=true",
                workdir=work,
            )
            out[side] = {"fresh": fresh}
        for side, other in (("legacy", "new"), ("new", "legacy")):
            out[side]["resumed"] = e2e.SIDES[side](
                *_TINY,
                f"--train.checkpoint.load_path={root / other / 'ckpt' / 'step_1'}",
                workdir=root / f"{side}_resumed",
            )
    for work in sorted(p for p in root.iterdir() if p.is_dir()):
        for path in _files(work):
            rel = path.relative_to(work)
            folder = _FOLDERS.get(rel.parts[0])
            assert folder is not None, f"{work.name}: a file outside the run's output folders: {rel}"
            files.add((folder, str(Path(*rel.parts[1:]))))
    out["files"] = files
    return out


def _files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file())


def _e2e_trees(runs: dict[str, Any]) -> list[dict[str, Any]]:
    from parity.e2e import RUN_ARTIFACTS, ArtifactError

    trees = []
    for side in ("legacy", "new"):
        for phase in ("fresh", "resumed"):
            run = runs[side][phase]
            for name in RUN_ARTIFACTS:
                assert not isinstance(run[name], ArtifactError), f"{side} {phase}: {run[name]}"
            trees.append({name: run[name] for name in RUN_ARTIFACTS})
    return trees


@pytest.fixture(scope="module")
def trees(runs) -> dict[str, list[Any]]:
    """Every tree of ``TREES``, as its recorder builds it."""
    from parity.suites import components_checkpoint as cc
    from parity.suites import components_metrics as cm
    from parity.suites import components_profiler as cp
    from parity.suites import e2e_seams, legacy_trainer

    fresh = [runs[side]["fresh"] for side in ("legacy", "new")]
    from parity.suites import e2e_callbacks

    # The events user code dispatches itself (on_evaluate), as user_callbacks records them.
    user_events = {"events": e2e_callbacks._train("new", str(runs["root"] / "user"), "--train.max_steps=1")}
    out = {
        "e2e": [*_e2e_trees(runs), user_events],
        "throughput": [e2e_seams._records(run["raw"]["log_history"]) for run in fresh],
        "metrics": [cm.legacy_case(**cm.CASE_PARAMS[0])],
        "wandb": [cm.legacy_wandb_init(run_name="parity-run", project="hp-parity")],
        "wandb_mapped": [cm.legacy_wandb_mapped(report_to="wandb", run_name="mapped-run")],
        "checkpoint": [
            cc.read_step_dir(runs["root"] / side / "ckpt" / "step_2") for side in ("legacy", "new")
        ],
        "profiler": [cp.legacy_profile(**cp.SCHEDULES[0])],
        "progress": [legacy_trainer.progress_bar(steps=2, log_steps=1)],
        "gc": [e2e_callbacks.legacy_gc(steps=1, gc_steps=1)],
        "log": [{side: runs[side]["fresh"]["log"] for side in ("legacy", "new")}],
    }
    assert set(out) == set(TREES), "a tree without a producer here, or the other way round"
    return out


def _has(node: Any, keys: list[str]) -> bool:
    """Whether ``keys`` lead somewhere in ``node``; a list matches when any of its items does."""
    if not keys:
        return True
    if isinstance(node, dict):
        return keys[0] in node and _has(node[keys[0]], keys[1:])
    if isinstance(node, list):
        return any(_has(item, keys) for item in node)
    return False


def _paths(row: Output) -> tuple[str, ...]:
    return row.compared_by or ()


# ----------------------------------------------------------------------------- the table alone
def test_rows_are_well_formed():
    from parity.suites import REGISTRY

    names = [row.name for row in OUTPUTS]
    assert len(names) == len(set(names)), "two rows of the same name"
    registered = {case.name for case in REGISTRY}
    for row in OUTPUTS:
        assert row.kind in KINDS, row.name
        if row.compared_by is None:
            assert row.reason, f"{row.name}: an uncompared output needs its reason"
            assert row.comparison is None and not row.cases, row.name
        else:
            assert row.compared_by, f"{row.name}: compared_by is None or a non-empty tuple"
            assert row.comparison in COMPARISONS, row.name
            assert row.cases, f"{row.name}: name the cases that compare it"
            for path in row.compared_by:
                assert path.split(".")[0] in TREES, f"{row.name}: {path}: unknown tree"
            for case in row.cases:
                assert case in registered, f"{row.name}: {case} is not a registered case"
                trees = {path.split(".")[0] for path in row.compared_by}
                assert any(case in TREES[t].cases for t in trees), (
                    f"{row.name}: {case} compares none of {trees}"
                )
        for pattern in row.files:
            assert row.kind == "file", row.name
            _pattern(pattern)  # a known root


def test_e2e_cases_compare_the_artifacts_they_are_listed_for():
    """The recipe grid compares ``ARTIFACTS``; explore_cover/drawn ``RUN_ARTIFACTS``; the resume
    cases a run's tail and the resumed runs' events; user_callbacks the events."""
    from parity.callback_events import EventRecorder
    from parity.e2e import ARTIFACTS, RUN_ARTIFACTS
    from parity.explore.runner import _TAIL
    from parity.suites import e2e_callbacks

    assert e2e_callbacks.EventRecorder is EventRecorder
    compares = {
        "trainer_e2e": set(ARTIFACTS),
        "explore_cover": set(RUN_ARTIFACTS),
        "explore_drawn": set(RUN_ARTIFACTS),
        "explore_resume": {*_TAIL, "events"},
        "explore_resume_fixed": {*_TAIL, "events"},
        "user_callbacks": {"events"},
    }
    for row in OUTPUTS:
        artifacts = {p.split(".")[1] for p in _paths(row) if p.startswith("e2e.")}
        for case in set(row.cases) & set(compares):
            assert artifacts & compares[case], f"{row.name}: {case} compares none of {sorted(artifacts)}"


def _symbol_defined(tree: ast.Module, dotted: str) -> bool:
    body: list[ast.stmt] = tree.body
    for part in dotted.split("."):
        found = None
        for node in body:
            if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == part:
                found = node
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if any(isinstance(t, ast.Name) and t.id == part for t in targets):
                    found = node
        if found is None:
            return False
        body = getattr(found, "body", [])
    return True


def test_every_location_exists():
    parsed: dict[str, ast.Module] = {}
    for row in OUTPUTS:
        for location in (*row.legacy, *row.new):
            path, _, symbol = location.partition(":")
            assert symbol, f"{row.name}: {location!r} is not path:Symbol"
            file = REPO / path
            assert file.is_file(), f"{row.name}: {path} does not exist"
            if path not in parsed:
                parsed[path] = ast.parse(file.read_text(encoding="utf-8"))
            assert _symbol_defined(parsed[path], symbol), f"{row.name}: {symbol} is not defined in {path}"


# ----------------------------------------------------------------------------- against the runs
def test_compared_paths_exist_in_the_recorded_trees(trees):
    missing = [
        f"{row.name}: {path}"
        for row in OUTPUTS
        for path in _paths(row)
        if not any(_has(tree, path.split(".")[1:]) for tree in trees[path.split(".")[0]])
    ]
    assert not missing, "compared_by paths that no recorder writes:\n" + "\n".join(missing)


def _pattern(pattern: str) -> tuple[str, re.Pattern[str]]:
    match = re.fullmatch(r"\{([^}]+)\}/(.+)", pattern)
    assert match is not None, f"{pattern!r}: expected {{root}}/path"
    root, rest = match.groups()
    assert root in ROOTS, f"{pattern!r}: unknown root {root!r}"
    parts = re.split(r"(<[^>/]+>|\*\*)", rest)
    regex = "".join("[^/]+" if p.startswith("<") else ".*" if p == "**" else re.escape(p) for p in parts)
    return root, re.compile(regex)


def test_every_file_written_is_listed(runs):
    patterns = [_pattern(p) for row in OUTPUTS for p in row.files]
    unlisted = sorted(
        f"{{{root}}}/{path}"
        for root, path in runs["files"]
        if not any(r == root and rx.fullmatch(path) for r, rx in patterns)
    )
    assert not unlisted, "files the trainers write that parity/outputs.py does not list:\n" + "\n".join(
        unlisted
    )
    # The runs wrote every kind of file they were set up for, transient ones included.
    roots = {root for root, _ in runs["files"]}
    assert roots == set(_FOLDERS.values()), roots
    names = {Path(path).name for _, path in runs["files"]}
    assert {".hyper_parallel.lock", "manifest.json", "extra_state.json"} <= names, names
    assert any(path.startswith(".partial.step_") for _, path in runs["files"])


def test_product_file_names_are_in_the_table():
    """Every file and folder name of the checkpoint layout both trainers write
    (``hyper_parallel.checkpointing.layout``, one place) appears in the patterns."""
    from hyper_parallel.checkpointing import layout
    from hyper_parallel.checkpointing.run_lock import LOCK_FILE

    patterns = " ".join(p for row in OUTPUTS for p in row.files)
    names = {LOCK_FILE, f"{layout.HF_SUBDIR}/"}
    names |= {getattr(layout, n) for n in dir(layout) if n.endswith(("_FILE", "_PREFIX"))}
    names -= {layout.HF_INDEX_FILE}  # read (a sharded HF folder given as weights), never written
    names |= {layout.optimizer_file(0), layout.rng_file(0), layout.dataloader_file(0)}
    for name in sorted(names):
        wanted = name.replace("rank0", "rank<r>")
        assert wanted in patterns, f"{wanted} is in no file pattern"


def _rows_with_path(prefix: str) -> bool:
    return any(path == prefix or path.startswith(prefix + ".") for row in OUTPUTS for path in _paths(row))


def test_every_hook_event_key_and_artifact_has_a_row(runs, trees):
    from hyper_parallel.trainer.callbacks.base import Callback
    from parity.e2e import RUN_ARTIFACTS

    event_rows = {row.name.split()[1] for row in OUTPUTS if row.kind == "event"}
    hooks = {name for name, _ in inspect.getmembers(Callback, inspect.isfunction) if name.startswith("on_")}
    assert hooks == event_rows, (
        f"hooks without a row: {hooks - event_rows}; rows of no hook: {event_rows - hooks}"
    )
    recorded = {hook for tree in trees["e2e"] for event in tree["events"] for hook in event}
    for hook in recorded:
        assert _rows_with_path(f"e2e.events.{hook}"), f"event {hook} is recorded but compared by no row"
    for name in RUN_ARTIFACTS:
        assert _rows_with_path(f"e2e.{name}"), f"e2e artifact {name} is in no row"
    keys = {key for tree in _trainer_runs(trees) for key in tree["metrics"]["keys"]}
    assert {"tflops", "mfu", "step_time", "tokens_per_sec"} <= keys, keys
    for key in keys:
        assert any(
            _rows_with_path(f"{tree}.metrics.{part}.{key}")
            for tree in ("e2e", "throughput")
            for part in ("keys", "values")
        ), f"metric record key {key} is in no row"
    for entry in trees["e2e"][0]["checkpoint"]["state"]:
        assert _rows_with_path(f"e2e.checkpoint.state.{entry}"), f"checkpoint entry {entry} is in no row"


def test_what_the_added_keys_hold(runs):
    """The keys added to the e2e recorder with the table: equal on both trainers here, and as described."""
    for phase in ("fresh", "resumed"):
        legacy, new = runs["legacy"][phase], runs["new"][phase]
        assert legacy["returned"] is None and new["returned"] is None
        assert legacy["layout"] == new["layout"], phase
    names = runs["legacy"]["fresh"]["layout"]["profiler_trace_names"]
    assert names == ["rank_0/rank0.<time_ns>.pt.trace.json"], names


def _trainer_runs(trees: dict[str, list[Any]]) -> list[Any]:
    """The e2e trees of whole runs (not the user_callbacks events alone)."""
    return [tree for tree in trees["e2e"] if "metrics" in tree]


def test_claims_of_uncompared_rows(trees):
    recorded = {hook for tree in _trainer_runs(trees) for event in tree["events"] for hook in event}
    # on_init_end and on_evaluate reach no user callback from a run; nothing in the product calls
    # dispatch_evaluate_event (user_callbacks dispatches it as user code would).
    assert not {"on_init_end", "on_evaluate"} & recorded
    sources = [p for p in (REPO / "hyper_parallel").rglob("*.py")]
    callers = [
        f"{p}:{n}"
        for p in sources
        for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if "dispatch_evaluate_event(" in line and "def dispatch_evaluate_event" not in line
    ]
    assert not callers, callers
    # HyperTrainer shows no progress bar.
    new_side = [
        REPO / "hyper_parallel/trainer/hyper_trainer.py",
        *(REPO / "hyper_parallel/components").glob("*.py"),
    ]
    assert not [p for p in new_side if "tqdm" in p.read_text(encoding="utf-8")]
    # Legacy-only monitors are listed as unmapped.
    from hyper_parallel.trainer.legacy_mapping import UNMAPPED

    for field in ("train.memory_monitor.enabled", "train.moe_monitor.enabled", "train.eval.eval_steps"):
        assert field in UNMAPPED, field
