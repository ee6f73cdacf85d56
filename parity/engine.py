"""The one engine behind ``python -m parity`` and the pytest cases: run, check and update a case.

Per case and backend:

- tier A: reseed, run the legacy producer, canonicalise; reseed identically, run the new producer,
  canonicalise; compare (legacy is "expected"). With strategies, the same check runs inside a
  hypothesis ``@given`` whose failing example's blob goes into the report;
- tier B check: produce, canonicalise, load the golden (missing / corrupt / fingerprint errors
  name the file and the command to fix it), compare (golden is "expected");
- tier B update: produce and rewrite the golden only when its bytes change (never over a corrupt
  file), returning a unified diff.

A failing case gets a ``ParityReport`` (text for the failure message, JSON under the report dir);
a passing one removes its stale report. A failing tier A case with a localiser (``Case.localise``)
also gets where its two sides first diverged, in the text and in the JSON (``localisation``).
Nothing here prints.
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from parity import canonical, case_log, commands, golden, numerics, scratch
from parity.cases import Case, Registry
from parity.compare import Difference, compare
from parity.env import (
    backend_skip_reason,
    ensure_deterministic,
    fingerprint,
    fingerprint_mismatches,
    get_platform,
    informational_mismatches,
    platform_key,
    seed_all,
)
from parity.report import ParityReport, report_path, write_json_atomic
from parity.verdict import component_of

__all__ = [
    "Commands",
    "CliCommands",
    "PytestCommands",
    "Engine",
    "Outcome",
    "DEFAULT_REPORT_DIR",
    "REPORT_DIR_ENV",
]

# Where reports, the run state and update reviews go unless --report-dir says otherwise. The test
# suite points ``PARITY_REPORT_DIR`` at a folder of its own (tests/conftest.py), so that no test
# writes into the repository's reports, which a user's `update --failed` and review read.
REPORT_DIR_ENV = "PARITY_REPORT_DIR"
DEFAULT_REPORT_DIR = Path(os.environ.get(REPORT_DIR_ENV) or Path(__file__).resolve().parent / "reports")
_BLOB_RE = re.compile(r"reproduce_failure\('([^']+)', b'([^']+)'\)")


class Commands(Protocol):
    """Builds the one-line commands printed in reports (they depend on the driver: CLI or pytest).

    Every command names the CPU profile (this run's unless ``profile`` is given): a command run
    under another profile would reproduce nothing.
    """

    def run(self, case: Case, backend: str, blob: str | None = None, profile: str | None = None) -> str: ...

    def update(self, case: Case, backend: str) -> str: ...


# What every command line of the harness runs under (the nox sessions set it themselves).
_HASHSEED = ("PYTHONHASHSEED=0",)


@dataclass(frozen=True)
class CliCommands:
    source: str | None
    golden_root: Path | None = None

    def _args(self, verb: str, case: Case, backend: str, profile: str | None = None) -> list[str]:
        parts = [verb, "--cpu-profile", profile or numerics.active_profile()]
        if self.source:
            parts += ["--cases", self.source]
        if self.golden_root is not None and Path(self.golden_root).resolve() != golden.DEFAULT_ROOT:
            parts += ["--golden-dir", str(self.golden_root)]
        return [*parts, "--backend", backend, "--id", case.id]

    def run(self, case: Case, backend: str, blob: str | None = None, profile: str | None = None) -> str:
        parts = self._args("run", case, backend, profile)
        if blob:
            parts += ["--hypothesis-blob", blob]
        return commands.parity(*parts, env_prefix=_HASHSEED)

    def update(self, case: Case, backend: str) -> str:
        return commands.parity(*self._args("update", case, backend), env_prefix=_HASHSEED)


@dataclass(frozen=True)
class PytestCommands:
    nodeid: str

    def _base(self, profile: str | None = None) -> str:
        profile = profile or numerics.active_profile()
        return (
            f"PYTHONHASHSEED=0 {numerics.PROFILE_ENV}={profile} python -m pytest {shlex.quote(self.nodeid)} "
            "-n 0 -p no:cacheprovider"
        )

    def run(self, case: Case, backend: str, blob: str | None = None, profile: str | None = None) -> str:
        return self._base(profile) + (f" --parity-hypothesis-blob {shlex.quote(blob)}" if blob else "")

    def update(self, case: Case, backend: str) -> str:
        return self._base() + " --snapshot-update"


# unchanged / updated / created: ``update`` left, rewrote or wrote a golden.
Status = Literal["pass", "fail", "error", "skip", "unchanged", "updated", "created"]


@dataclass
class Outcome:
    """Result of one case on one backend."""

    case: Case
    backend: str
    platform: str
    status: Status
    seconds: float = 0.0
    message: str = ""
    report: ParityReport | None = None
    golden_path: Path | None = None
    document: str | None = None  # tier B: the golden text this run produced
    diff: str = ""  # update: unified diff of the golden

    @property
    def ok(self) -> bool:
        return self.status in ("pass", "skip", "unchanged", "updated", "created")


class _Mismatch(Exception):
    """Raised inside a hypothesis example so hypothesis can shrink a failing case."""

    def __init__(self, differences: list[Difference]) -> None:
        super().__init__(f"{len(differences)} differences; first at {differences[0].path}")
        self.differences = differences


@dataclass
class Engine:
    """Runs cases of one registry against one golden root; ``commands`` shape the printed commands."""

    registry: Registry
    golden_root: Path = golden.DEFAULT_ROOT
    report_dir: Path | None = DEFAULT_REPORT_DIR
    commands: Commands | None = None
    hypothesis_settings: Any = None  # a hypothesis.settings; None: the loaded profile
    catch_errors: bool = True  # False under pytest, so a producer's traceback is shown as is
    # Called with the case and the exception of an error outcome (the mutation runner tells a
    # crash of the product from one of the harness by the exception's frames).
    on_error: Callable[[Case, BaseException], None] | None = None
    _platform: Any = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        self.golden_root = Path(self.golden_root)
        if self.commands is None:
            self.commands = CliCommands(self.registry.source, self.golden_root)

    @property
    def _commands(self) -> Commands:
        """``commands``, which ``__post_init__`` fills in when none is given."""
        assert self.commands is not None, "set by __post_init__"
        return self.commands

    # ------------------------------------------------------------------ public
    def platform(self) -> Any:
        if self._platform is None:
            numerics.apply()  # pins the CPU profile (PARITY_CPU_PROFILE, default portable); idempotent
            self._platform = get_platform()
        return self._platform

    def platform_key(self) -> str:
        return platform_key(self.platform())

    def golden_path(self, case: Case, backend: str) -> Path:
        return golden.golden_path(self.golden_root, backend, self.platform_key(), case.id)

    def check(self, case: Case, backend: str, hypothesis_blob: str | None = None) -> Outcome:
        """Run one case on one backend and compare (tier A: the two sides; tier B: the golden)."""
        start = time.perf_counter()
        scratch.install()  # the case's temporary files go where the run removes them
        skip = backend_skip_reason(backend)
        if skip is not None:
            return Outcome(case, backend, self._key_or_unknown(), "skip", message=skip)
        ensure_deterministic(self.platform())
        # A framework error logged during the case fails it; the framework's prints go to the case's log.
        with case_log.capture() as log:
            try:
                if case.tier == "A":
                    outcome = self._check_pair(case, backend, hypothesis_blob)
                else:
                    outcome = self._check_golden(case, backend)
            except (KeyboardInterrupt, SystemExit, GeneratorExit):
                raise
            except BaseException as exc:  # an error outcome; DCP's CheckpointException is a BaseException
                if not self.catch_errors:
                    raise
                if self.on_error is not None:
                    self.on_error(case, exc)
                outcome = Outcome(
                    case, backend, self.platform_key(), "error", message=_format_error(case, backend, exc)
                )
        if outcome.status == "fail" and outcome.report is not None and case.localise is not None:
            outcome.report.localisation = self.localise(case)
            outcome.message = outcome.report.to_text()
        outcome = log.judge(outcome)
        outcome.seconds = time.perf_counter() - start
        if outcome.report is not None:
            outcome.report.fingerprint = self._fingerprint_or_none(backend)
        self._store_report(outcome)
        return outcome

    def localise(self, case: Case) -> dict[str, Any]:
        """``case.localise(**params)`` as a JSON-able dict with ``line`` and ``evidence``; a
        localiser that raises gives a ``status: error`` result instead (the failure stays the news)."""
        localiser = case.localise
        if localiser is None:
            raise ValueError(f"case {case.id} has no localiser")
        # Case.__post_init__ turns a "module:function" string into a callable.
        assert not isinstance(localiser, str), "Case.__post_init__ wraps a localiser string"
        try:
            result = localiser(**case.param_dict)
            data = result.to_dict() if hasattr(result, "to_dict") else dict(result)
            if not isinstance(data.get("line"), str):
                raise TypeError(f"the localiser returned no 'line' string: {sorted(data)}")
            return data
        except Exception as exc:  # a broken localiser must not hide the failure
            tb = traceback.format_exception(type(exc), exc, exc.__traceback__, limit=-4)
            return {
                "status": "error",
                "message": f"{type(exc).__name__}: {exc}",
                "line": f"first divergence: not localised (error): the localiser raised {type(exc).__name__}: {exc}",
                "evidence": "".join(tb).rstrip().splitlines()[-6:],
            }

    def produce_golden(self, case: Case, backend: str) -> tuple[Path, str]:
        """The golden path and the canonical golden text this run produces for a tier B case."""
        path, _, text = self._produce_golden_tree(case, backend)
        return path, text

    def update(self, case: Case, backend: str) -> Outcome:
        """Regenerate one golden; unchanged bytes are not rewritten; a corrupt file is never replaced."""
        start = time.perf_counter()
        scratch.install()
        skip = backend_skip_reason(backend)
        if skip is not None:
            return Outcome(case, backend, self._key_or_unknown(), "skip", message=skip)
        if case.tier != "B":
            return Outcome(
                case, backend, self.platform_key(), "skip", message="tier A case: no golden to update"
            )
        try:
            path, text = self.produce_golden(case, backend)
            old = ""
            if path.exists():
                old = path.read_text(encoding="utf-8")
                golden.parse(old, path)
            status: Status
            if old == text:
                status, diff = "unchanged", ""
            else:
                golden.write(path, text)
                status, diff = ("updated" if old else "created"), golden.unified_diff(old, text, path)
            outcome = Outcome(
                case, backend, self.platform_key(), status, golden_path=path, document=text, diff=diff
            )
        except golden.GoldenError as exc:
            outcome = Outcome(
                case, backend, self.platform_key(), "error", message=str(exc), golden_path=exc.path
            )
        except Exception as exc:
            if not self.catch_errors:
                raise
            outcome = Outcome(
                case, backend, self.platform_key(), "error", message=_format_error(case, backend, exc)
            )
        outcome.seconds = time.perf_counter() - start
        return outcome

    def unused_goldens(self) -> list[tuple[Path, str]]:
        return golden.find_unused(self.golden_root, self.registry)

    # ------------------------------------------------------------------ tier A
    def _pair_differences(self, case: Case, drawn: dict[str, Any]) -> list[Difference]:
        legacy = self._produce(case, case.legacy, drawn)
        new = self._produce(case, case.new, drawn)
        return compare(legacy, new, root=case.kind)

    def _check_pair(self, case: Case, backend: str, blob: str | None) -> Outcome:
        hyp_info = None
        if case.strategies:
            differences, hyp_info = self._run_hypothesis(case, backend, blob)
        else:
            differences = self._pair_differences(case, {})
        return self._outcome(case, backend, differences, hypothesis=hyp_info)

    def _run_hypothesis(
        self, case: Case, backend: str, blob: str | None
    ) -> tuple[list[Difference], dict | None]:
        import hypothesis
        from hypothesis import given, settings

        def check_example(**drawn: Any) -> None:
            differences = self._pair_differences(case, drawn)
            if differences:
                raise _Mismatch(differences)

        parent = self.hypothesis_settings or settings()
        test = given(**case.strategy_dict)(check_example)
        test = settings(parent, report_multiple_bugs=False, print_blob=True)(test)
        # Without this, every case would share one example database key (one inner function).
        test._hypothesis_internal_database_key = hashlib.sha384(  # type: ignore[attr-defined]  # hypothesis reads it
            f"parity:{case.id}:{backend}".encode()
        ).digest()
        if blob:
            test = hypothesis.reproduce_failure(hypothesis.__version__, blob.encode())(test)
        try:
            test()
        except _Mismatch as exc:
            notes = list(getattr(exc, "__notes__", []))
            info: dict[str, str] = {"version": hypothesis.__version__, "blob": blob or ""}
            for note in notes:
                match = _BLOB_RE.search(note)
                if match:
                    info["version"], info["blob"] = match.group(1), match.group(2)
                elif note.strip().startswith(("Falsifying example", "Failing test case")):
                    # The heading changed between hypothesis releases; both name the shrunk input.
                    info["falsifying_example"] = note.strip()
            return exc.differences, info
        return [], None

    # ------------------------------------------------------------------ tier B
    def _produce_golden_tree(self, case: Case, backend: str) -> tuple[Path, Any, str]:
        if case.tier != "B":
            raise ValueError(f"case {case.id} is tier A: it has no golden")
        ensure_deterministic(self.platform())
        tree = self._produce(case, case.producer, {})
        doc = golden.build_document(
            case,
            fingerprint(backend, self.platform()),
            canonical.to_json(tree),
            made_with=golden.made_with(self.golden_root, backend, case.id),
        )
        return self.golden_path(case, backend), tree, golden.dumps(doc)

    def _check_golden(self, case: Case, backend: str) -> Outcome:
        path, actual_tree, text = self._produce_golden_tree(case, backend)
        key = self.platform_key()
        regenerate = self._commands.update(case, backend)
        current = fingerprint(backend, self.platform())
        checked, missing = path, None
        try:
            stored = golden.load(path, regenerate)
        except golden.GoldenMissingError as exc:
            # Goldens of another environment (CPU capability, device) explain the absence.
            stored = None
            for sibling in golden.find_siblings(self.golden_root, backend, case.id, key):
                try:
                    stored, checked = golden.load(sibling, regenerate), sibling
                    break
                except golden.GoldenError:
                    continue
            if stored is None:
                return self._golden_error(case, backend, path, text, str(exc))
            missing = f"no golden for this environment ({path}); compared with {checked} instead"
        except golden.GoldenError as exc:
            return self._golden_error(case, backend, path, text, str(exc))
        assert stored is not None, "each path above loads a golden or returns"
        try:
            expected_case = canonical.from_json(stored["case"], f"{checked}:case")
            expected = canonical.from_json(stored["artifacts"], f"{checked}:artifacts")
        except ValueError as exc:  # a leaf in the golden does not parse
            err = golden.GoldenCorruptError(checked, f"corrupt golden {checked}: {exc}")
            return self._golden_error(case, backend, path, text, str(err))
        environment = None
        mismatches = fingerprint_mismatches(stored["fingerprint"], current)
        if mismatches or missing:
            recorded_profile = stored["fingerprint"].get("cpu_profile")
            rerun = None
            if recorded_profile in numerics.PROFILES and recorded_profile != current.get("cpu_profile"):
                rerun = self._commands.run(case, backend, profile=recorded_profile)
            environment = golden.environment_line(
                checked,
                mismatches or [("platform", checked.parent.name, key)],
                informational_mismatches(stored["fingerprint"], current),
                rerun,
                regenerate,
            )
        actual_case = canonical.from_json(golden.case_block(case))
        differences = compare(expected_case, actual_case, root="case") + compare(
            expected, actual_tree, root=case.kind
        )
        differences.sort(key=lambda d: d.phase)
        error = missing
        if environment and not differences:
            error = (missing + "; " if missing else "") + "the artifacts equal the golden bit for bit"
        outcome = self._outcome(case, backend, differences, error=error, environment=environment)
        outcome.golden_path, outcome.document, outcome.platform = path, text, key
        if outcome.report is not None:
            outcome.report.golden_path = str(checked)
        return outcome

    def _golden_error(self, case: Case, backend: str, path: Path, text: str, message: str) -> Outcome:
        outcome = self._outcome(case, backend, [], error=message)
        outcome.golden_path, outcome.document = path, text
        return outcome

    # ------------------------------------------------------------------ helpers
    def _produce(self, case: Case, producer: Callable[..., Any] | None, drawn: dict[str, Any]) -> Any:
        assert producer is not None
        seed_all(case.seed, self.platform())
        return canonical.canonicalise(producer(**case.param_dict, **drawn), case.kind)

    def _outcome(
        self,
        case: Case,
        backend: str,
        differences: list[Difference],
        *,
        error: str | None = None,
        hypothesis: dict | None = None,
        environment: str | None = None,
    ) -> Outcome:
        key = self.platform_key()
        if not differences and error is None and environment is None:
            return Outcome(case, backend, key, "pass")
        blob = (hypothesis or {}).get("blob") or None
        report = ParityReport(
            case_id=case.id,
            kind=case.kind,
            component=component_of(case.tags, case.kind),
            tier=case.tier,
            backend=backend,
            platform=key,
            reproduce=self._commands.run(case, backend, blob),
            differences=differences,
            error=error,
            hypothesis=hypothesis,
            environment=environment,
        )
        return Outcome(case, backend, key, "fail", message=report.to_text(), report=report)

    def _store_report(self, outcome: Outcome) -> None:
        if self.report_dir is None or outcome.status == "skip":
            return
        path = report_path(self.report_dir, outcome.backend, outcome.platform, outcome.case.id)
        if outcome.report is not None:
            write_json_atomic(path, outcome.report.to_dict())
        elif outcome.status == "pass":
            path.unlink(missing_ok=True)

    def _fingerprint_or_none(self, backend: str) -> dict[str, Any] | None:
        try:
            return fingerprint(backend, self.platform())
        except Exception:  # informational only
            return None

    def _key_or_unknown(self) -> str:
        try:
            return self.platform_key()
        except ImportError:
            return "unknown"


def _format_error(case: Case, backend: str, exc: BaseException) -> str:
    tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__, limit=-6))
    return f"PARITY ERROR  case={case.id}  backend={backend}: {type(exc).__name__}: {exc}\n{tb}"
