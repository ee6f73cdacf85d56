"""No complete checkpoint is ever lost: sequences of runs, resumes, replacements and kills over one
run folder, in both trainers, with an invariant checked after every operation.

Each operation is one command line (``scripts/train_lm.py`` or ``python -m hyper_parallel.train`` on
the debug YAML, ``save_steps=2``), forked from a warm server (``_warm_trainers.py``) so that a run
costs about a second instead of six:

- ``fresh``: no ``load_path``, ``max_steps=4`` (saves steps 2 and 4);
- ``newest``: ``load_path`` is the run folder (the newest complete checkpoint), two more steps;
- ``older``: ``load_path`` is the second newest complete checkpoint, two more steps, so its save
  lands on a step the folder may already hold;
- ``+overwrite``: with ``checkpoint.overwrite=true`` (the steps it saves may replace existing ones);
- ``kill@EVENT:N``: the run SIGKILLs itself the N-th time a save reaches ``EVENT`` (every point of a
  save and of a replacement, ``test_checkpoint_faults.POINTS`` / ``REPLACE_POINTS``).

Resumes set ``resume_config_changes=apply`` (they extend ``max_steps``). After each operation:

- every checkpoint complete before it (a ``step_<N>/`` or ``.replaced.step_<N>/`` whose
  ``manifest.json`` lists at least one file and whose files match it, checked here independently of
  the product) is still there under the same name with the same manifest, unless the operation was
  asked to overwrite step N (``+overwrite`` and it saves N): then step N is still findable complete
  (the new folder, or the old one under either name);
- the exit status is 0, 2 (refused: exactly one ``<prog>: error: ...`` line, nothing in the folder
  changed, no lock file left but a killed run's) or, for a kill, -SIGKILL; a finished run leaves
  its last step complete and no lock file.

The default run keeps two explicit sequences (one per trainer, the cheapest operations, their exit
statuses pinned); ``nox -s slow`` adds a kill at every point of a replacement and hypothesis-drawn
sequences (per trainer, and mixing both trainers on one folder).
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import signal
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from hypothesis.control import currently_in_test_context

from tests._subprocess import child_env
from tests.torch.legacy_trainer._warm_trainers import DEBUG_YAML, WarmTrainers
from tests.torch.legacy_trainer.test_checkpoint_faults import POINTS, REPLACE_POINTS

SAVE_STEPS = 2
FRESH_MAX = 4
LOCK = ".hyper_parallel.lock"
KILLED = -signal.SIGKILL
_NAME = re.compile(r"^(?:\.replaced\.)?step_(\d+)$")


# --------------------------------------------------------------------------- the oracle
def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _manifest_digest(folder: Path) -> str | None:
    """The sha256 of ``folder/manifest.json`` when the folder is complete (the manifest lists at
    least one file and every listed file has its size and sha256), else None."""
    try:
        raw = (folder / "manifest.json").read_bytes()
        files = json.loads(raw).get("files")
    except (OSError, ValueError, AttributeError):
        return None
    if not isinstance(files, dict) or not files:
        return None
    for rel, entry in files.items():
        path = folder / rel
        try:
            if path.stat().st_size != entry["size"] or _sha256(path) != entry["sha256"]:
                return None
        except (OSError, KeyError, TypeError):
            return None
    return hashlib.sha256(raw).hexdigest()


def complete_checkpoints(out: Path) -> dict[str, str]:
    """``{folder name: manifest digest}`` of the complete ``step_<N>/`` and ``.replaced.step_<N>/``."""
    found = {}
    if out.is_dir():
        for path in out.iterdir():
            if _NAME.match(path.name) and path.is_dir():
                digest = _manifest_digest(path)
                if digest is not None:
                    found[path.name] = digest
    return found


def _step(name: str) -> int:
    match = _NAME.match(name)
    assert match, name
    return int(match.group(1))


def _listing(out: Path) -> set[str]:
    return {p.name for p in out.iterdir()} if out.is_dir() else set()


# --------------------------------------------------------------------------- operations
@dataclass(frozen=True)
class Op:
    load: str = "fresh"  # fresh | newest | older
    overwrite: bool = False
    kill: str | None = None  # EVENT:N
    trainer: str | None = None  # None: the test's trainer

    def __str__(self) -> str:
        text = self.load + ("+overwrite" if self.overwrite else "")
        text += f" kill@{self.kill}" if self.kill else ""
        return f"{self.trainer}:{text}" if self.trainer else text


def plan(op: Op, out: Path, complete: dict[str, str]) -> tuple[list[str], set[int], int]:
    """The command line of ``op`` on ``out`` as it is now, the steps it is asked to overwrite, and
    its ``max_steps``."""
    argv = [
        str(DEBUG_YAML),
        f"--train.checkpoint.output_dir={out}",
        f"--train.checkpoint.save_steps={SAVE_STEPS}",
    ]
    steps = sorted({_step(name) for name in complete})
    start, max_steps = 0, FRESH_MAX
    if op.load != "fresh":
        if not steps:  # nothing to resume: the product refuses (no complete checkpoint)
            target = out if op.load == "newest" else out / f"step_{SAVE_STEPS}"
        elif op.load == "newest":
            target, start = out, steps[-1]
        else:
            start = steps[-2] if len(steps) > 1 else steps[-1]
            name = f"step_{start}" if f"step_{start}" in complete else f".replaced.step_{start}"
            target = out / name
        max_steps = start + SAVE_STEPS
        argv += [f"--train.checkpoint.load_path={target}", "--train.checkpoint.resume_config_changes=apply"]
    argv.append(f"--train.max_steps={max_steps}")
    if op.overwrite:
        argv.append("--train.checkpoint.overwrite=true")
    saves = {s for s in range(SAVE_STEPS, max_steps + 1, SAVE_STEPS) if s > start} | {max_steps}
    return argv, (saves if op.overwrite else set()), max_steps


@dataclass
class Outcome:
    returncode: int
    seconds: float


class Matrix:
    """One run folder and the operations applied to it so far (named in every failure)."""

    def __init__(self, server: WarmTrainers, trainer: str, root: Path) -> None:
        self.server, self.trainer, self.root = server, trainer, root
        self.out = root / "ckpt"
        self.done: list[str] = []

    def apply(self, op: Op) -> Outcome:
        before = complete_checkpoints(self.out)
        names_before = _listing(self.out)
        argv, asked, max_steps = plan(op, self.out, before)
        log = self.root / f"op{len(self.done)}.log"
        result = self.server.run(op.trainer or self.trainer, argv, log, kill=op.kill)
        self.done.append(f"{op} -> {result.returncode}")
        if (
            currently_in_test_context()
        ):  # --hypothesis-show-statistics: how often each kind ran or was refused
            event(
                f"{op.load}{'+overwrite' if op.overwrite else ''}{' killed' if op.kill else ''} -> {result.returncode}"
            )
        after = complete_checkpoints(self.out)
        names_after = _listing(self.out)

        def where() -> str:
            tail = "\n".join(result.output.strip().splitlines()[-15:])
            return (
                f"\nsequence ({self.trainer}): {' ; '.join(self.done)}\nargv: {argv}\n"
                f"complete before: {sorted(before)}\ncomplete after: {sorted(after)}\n"
                f"folder before: {sorted(names_before)}\nfolder after: {sorted(names_after)}\n"
                f"output tail:\n{tail}"
            )

        allowed = {0, 2} | ({KILLED} if op.kill else set())
        assert result.returncode in allowed, f"exit status {result.returncode}{where()}"
        for name, digest in sorted(before.items()):
            step = _step(name)
            if step in asked:  # asked for: the new one, or the old one still findable
                assert any(_step(n) == step for n in after), f"step {step} is lost{where()}"
            else:
                assert after.get(name) == digest, f"complete checkpoint {name} is lost or changed{where()}"
        if result.returncode == 2:
            errors = [line for line in result.output.splitlines() if ": error: " in line]
            lines = [line for line in result.output.splitlines() if line.strip()]
            assert len(errors) == 1 and lines[-1] == errors[0], f"a refusal is one line{where()}"
            assert names_after - {LOCK} == names_before - {LOCK}, f"a refused run changed the folder{where()}"
            # A lock file left by a killed run may stay (a refused run need not take it over).
            assert LOCK in names_before or LOCK not in names_after, f"the lock file outlived the run{where()}"
        if result.returncode == 0:
            assert LOCK not in names_after, f"the lock file outlived the run{where()}"
            assert f"step_{max_steps}" in after, f"the run's last checkpoint is not complete{where()}"
        return Outcome(result.returncode, result.seconds)


@pytest.fixture(scope="module")
def server() -> Iterator[WarmTrainers]:
    trainers = WarmTrainers(child_env())
    yield trainers
    trainers.close()


def _run_sequence(
    server: WarmTrainers, trainer: str, root: Path, ops: list[Op]
) -> tuple[list[int], set[str]]:
    """Each operation's exit status, and the complete checkpoints left at the end."""
    matrix = Matrix(server, trainer, root)
    codes = [matrix.apply(op).returncode for op in ops]
    left = set(complete_checkpoints(matrix.out))
    shutil.rmtree(matrix.out, ignore_errors=True)  # 12 MB a checkpoint; kept when a check failed
    return codes, left


# --------------------------------------------------------------------------- default run
QUICK = {
    # A killed first run, a refused fresh run, the resume that finishes it, a replacement killed
    # between moving the old step aside and committing the new one, a resume of the moved copy.
    "legacy": (
        [
            Op(kill="written:optimizer_rank0.pt:2"),
            Op(),
            Op("newest"),
            Op("older", overwrite=True, kill="commit:rename:1"),
            Op("newest"),
        ],
        [KILLED, 2, 0, KILLED, 0],
    ),
    # A refused resume of an older step, the same asked for (overwrite), a resume killed after its
    # manifest and before its rename, the resume after it.
    "new": (
        [
            Op(),
            Op("older"),
            Op("older", overwrite=True),
            Op("newest", kill="after:manifest.json:1"),
            Op("newest"),
        ],
        [0, 2, 0, KILLED, 0],
    ),
}


@pytest.mark.parametrize("trainer", sorted(QUICK))
def test_quick_sequence_loses_no_complete_checkpoint(server, tmp_path, trainer):
    ops, expected = QUICK[trainer]
    codes, left = _run_sequence(server, trainer, tmp_path, ops)
    assert codes == expected
    # legacy: the interrupted replacement's copy was resumed, and stays until moved.
    assert (
        left
        == {"legacy": {"step_2", ".replaced.step_4", "step_6"}, "new": {"step_2", "step_4", "step_6"}}[
            trainer
        ]
    )


# --------------------------------------------------------------------------- slow: every point of a replacement
def _replacement_params():
    for trainer in ("legacy", "new"):
        for point in (*POINTS, *REPLACE_POINTS):
            yield pytest.param(trainer, point, id=f"{trainer}-{point}")


@pytest.mark.slow
@pytest.mark.parametrize(("trainer", "point"), list(_replacement_params()))
def test_kill_at_every_point_of_a_replacement_then_go_on(server, tmp_path, trainer, point):
    """A re-save of step 4 (resume step 2, overwrite) killed at ``point``, then a resume of the
    newest, a refused fresh run and another re-save: step 4 is findable throughout."""
    ops = [
        Op(),
        Op("older", overwrite=True, kill=f"{point}:1"),
        Op("newest"),
        Op(),
        Op("older", overwrite=True),
    ]
    codes, _left = _run_sequence(server, trainer, tmp_path, ops)
    assert codes[:4] == [0, KILLED, 0, 2]


# --------------------------------------------------------------------------- slow: drawn sequences
KILL_EVENTS = (*POINTS, *REPLACE_POINTS)
_kills = st.none() | st.builds(
    lambda event, n: f"{event}:{n}", st.sampled_from(KILL_EVENTS), st.integers(1, 2)
)


def _ops(trainers: st.SearchStrategy) -> st.SearchStrategy:
    first = st.builds(Op, load=st.just("fresh"), overwrite=st.just(False), kill=_kills, trainer=trainers)
    rest = st.builds(
        Op,
        load=st.sampled_from(("fresh", "newest", "older")),
        overwrite=st.booleans(),
        kill=_kills,
        trainer=trainers,
    )
    return st.tuples(first, st.lists(rest, min_size=1, max_size=4)).map(lambda t: [t[0], *t[1]])


_DRAWN = settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


@pytest.mark.slow
@pytest.mark.parametrize("trainer", ["legacy", "new"])
@_DRAWN
@given(ops=_ops(st.none()))
def test_drawn_sequences_lose_no_complete_checkpoint(server, tmp_path_factory, trainer, ops):
    _run_sequence(server, trainer, tmp_path_factory.mktemp(f"drawn_{trainer}"), ops)


@pytest.mark.slow
@_DRAWN
@given(ops=_ops(st.sampled_from(("legacy", "new"))))
def test_drawn_sequences_mixing_both_trainers_lose_no_complete_checkpoint(server, tmp_path_factory, ops):
    """Both trainers write the same layout: a folder one of them wrote is resumed by the other."""
    _run_sequence(server, "legacy", tmp_path_factory.mktemp("drawn_mixed"), ops)
