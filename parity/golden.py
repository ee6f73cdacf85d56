"""The golden store: ``<root>/<backend>/<platform key>/<case_id>.json``, one canonical JSON per case.

A golden document is ``{"schema_version", "case", "fingerprint", "artifacts"}`` written as canonical
JSON (sorted keys, indent 2, trailing newline) through a temp file in the same directory and
``os.replace``, so regenerating an unchanged case rewrites identical bytes and a crash never
leaves half a file.

Fingerprint policy (``parity.env``). Fields that **must match** the checking run, else the check
fails and its report *leads* with one line naming each differing field and both values, and the
two ways out (rerun under the golden's CPU profile, or regenerate for this environment):
``backend``, ``platform`` (device key, e.g. ``cpu-x86_64-avx2``, ``cuda-h200``), ``arch``,
``cpu_capability`` (read back from the framework), ``cpu_profile`` (``parity.numerics``), the
framework version (``torch``, exact, local suffix included: another build may round
differently) and ``deterministic``. The artifacts are still compared, so the report shows how far
the bits moved. Recorded but **informational**: BLAS and oneDNN builds, threads, CPU vendor, the
CPU environment variables, python and numpy; the artifact comparison catches any numerical
effect they have, and the environment line names them when they differ too.

A golden missing under this run's key while the same case has goldens under other keys (another
CPU capability, another device) is compared against the first of those, so the report says
*why* it has no golden here before it shows any bit.

Failures name the file: a missing golden says how to create it; a corrupt one (not JSON, wrong
shape, unknown schema) is reported and never replaced, not even by an update: inspect it and
delete it by hand. A golden file with no registered tier B case is *unused* and fails the run.
"""

from __future__ import annotations

import difflib
import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from parity.fileio import TMP_SUFFIX, canonical_json, write_text_atomic

if TYPE_CHECKING:
    from parity.cases import Case, Registry

__all__ = [
    "SCHEMA_VERSION",
    "DEFAULT_ROOT",
    "GoldenError",
    "GoldenMissingError",
    "GoldenCorruptError",
    "golden_path",
    "build_document",
    "artifacts_sha256",
    "made_with",
    "stale_made_with",
    "dumps",
    "parse",
    "load",
    "environment_line",
    "find_siblings",
    "write",
    "find_unused",
    "unified_diff",
]

SCHEMA_VERSION = 1
# The backend every other backend's goldens are made alongside (``made_with``).
REFERENCE_BACKEND = "torch"
DEFAULT_ROOT = Path(__file__).resolve().parent / "golden"
_TOP_KEYS = ("artifacts", "case", "fingerprint", "schema_version")


class GoldenError(Exception):
    """A golden file problem; ``path`` is the file concerned."""

    def __init__(self, path: Path, message: str) -> None:
        super().__init__(message)
        self.path = Path(path)


class GoldenMissingError(GoldenError):
    pass


class GoldenCorruptError(GoldenError):
    pass


def golden_path(root: Path, backend: str, platform: str, case_id: str) -> Path:
    return Path(root) / backend / platform / f"{case_id}.json"


def case_block(case: Case) -> dict[str, Any]:
    """What identifies the producing case inside its golden (compared like an artifact)."""
    from parity.canonical import canonicalise, to_json

    return {
        "id": case.id,
        "kind": case.kind,
        "params": to_json(canonicalise(case.param_dict)),
        "seed": case.seed,
    }


def build_document(
    case: Case, fingerprint: dict[str, Any], artifacts_json: Any, made_with: dict[str, str] | None = None
) -> dict[str, Any]:
    """``made_with``: the reference backend's goldens of the case this one was made alongside."""
    doc = {
        "artifacts": artifacts_json,
        "case": case_block(case),
        "fingerprint": dict(fingerprint),
        "schema_version": SCHEMA_VERSION,
    }
    if made_with:
        doc["made_with"] = dict(sorted(made_with.items()))
    return doc


def artifacts_sha256(doc: dict[str, Any]) -> str:
    """The sha256 of a golden's artifacts in canonical JSON (what ``made_with`` records)."""
    return hashlib.sha256(canonical_json(doc["artifacts"]).encode("utf-8")).hexdigest()


def made_with(root: Path, backend: str, case_id: str) -> dict[str, str]:
    """For a golden of another backend than ``REFERENCE_BACKEND``: the reference goldens of the
    same case (``torch/<key>/<case_id>.json`` -> sha256 of its artifacts). Recorded in the golden,
    it lets the lint say by name when the torch golden changed and this one was not regenerated."""
    if backend == REFERENCE_BACKEND:
        return {}
    out: dict[str, str] = {}
    for path in sorted((Path(root) / REFERENCE_BACKEND).glob(f"*/{case_id}.json")):
        try:
            out[path.relative_to(root).as_posix()] = artifacts_sha256(json.loads(path.read_text("utf-8")))
        except (OSError, ValueError, KeyError, TypeError):
            continue  # a corrupt reference golden fails its own check
    return out


def stale_made_with(root: Path, path: Path, doc: dict[str, Any]) -> str | None:
    """One line when a reference golden recorded in ``doc["made_with"]`` changed or disappeared."""
    recorded = doc.get("made_with")
    if not isinstance(recorded, dict) or not recorded:
        return None
    backend = Path(path).parent.parent.name
    current = made_with(root, backend, Path(path).stem)
    moved = sorted(rel for rel, digest in recorded.items() if current.get(rel) != digest)
    if not moved:
        return None
    what = "changed" if all(rel in current for rel in moved) else "changed or disappeared"
    return (
        f"the {REFERENCE_BACKEND} golden {moved[0]} {what} since this {backend} golden was made alongside it: "
        f'regenerate it too (`nox -s "parity_update({backend})"`)'
    )


def dumps(document: dict[str, Any]) -> str:
    return canonical_json(document)


def parse(text: str, path: Path) -> dict[str, Any]:
    """Parse and validate a golden's text; any problem is a ``GoldenCorruptError`` naming ``path``."""
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise GoldenCorruptError(
            path,
            f"corrupt golden {path}: not valid JSON ({exc}); it was not replaced: "
            "inspect it, delete it, then regenerate",
        ) from None
    if not isinstance(doc, dict):
        raise GoldenCorruptError(
            path, f"corrupt golden {path}: expected a JSON object, got {type(doc).__name__}"
        )
    missing = [k for k in _TOP_KEYS if k not in doc]
    if missing:
        raise GoldenCorruptError(
            path, f"corrupt golden {path}: missing top-level field(s) {missing}; expected {list(_TOP_KEYS)}"
        )
    if doc["schema_version"] != SCHEMA_VERSION:
        raise GoldenCorruptError(
            path,
            f"golden {path} has schema_version {doc['schema_version']!r}, this harness reads {SCHEMA_VERSION}; "
            "delete it and regenerate",
        )
    if not isinstance(doc["fingerprint"], dict) or not isinstance(doc["case"], dict):
        raise GoldenCorruptError(path, f"corrupt golden {path}: 'fingerprint' and 'case' must be objects")
    return doc


def load(path: Path, create_command: str) -> dict[str, Any]:
    """Read and validate a golden; a missing file raises with the command that creates it."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise GoldenMissingError(
            path, f"missing golden {path}; create it with:\n    {create_command}"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise GoldenCorruptError(path, f"corrupt golden {path}: unreadable ({exc})") from None
    return parse(text, path)


def environment_line(
    golden_file: Path,
    mismatches: list[tuple[str, Any, Any]],
    informational: list[tuple[str, Any, Any]],
    rerun_command: str | None,
    regenerate_command: str,
) -> str:
    """The one line a report leads with when the golden was recorded in another environment.

    It names every must-match field with both values, then the two ways out: rerun under the
    golden's CPU profile (when the profile is what differs), or regenerate for this run's key.
    """
    fields = "; ".join(f"{name}: golden {old!r}, this run {new!r}" for name, old, new in mismatches)
    also = ""
    if informational:
        also = " (also differs: " + "; ".join(_informational(n, o, v) for n, o, v in informational) + ")"
    ways = f"regenerate for this environment: {regenerate_command}"
    if rerun_command:
        ways = f"rerun under the golden's profile: {rerun_command}; or {ways}"
    return f"ENVIRONMENT DIFFERS from golden {golden_file}: {fields}{also}. Either {ways}"


def _informational(name: str, old: Any, new: Any) -> str:
    if isinstance(old, dict) and isinstance(new, dict):  # only the entries that differ
        keys = sorted(k for k in old.keys() | new.keys() if old.get(k) != new.get(k))
        return "; ".join(f"{name}.{k} {old.get(k)!r} vs {new.get(k)!r}" for k in keys)
    return f"{name} {old!r} vs {new!r}"


def find_siblings(root: Path, backend: str, case_id: str, platform: str) -> list[Path]:
    """Goldens of the same case and backend recorded under other platform keys (sorted)."""
    base = Path(root) / backend
    if not base.is_dir():
        return []
    return sorted(p for p in base.glob(f"*/{case_id}.json") if p.parent.name != platform and p.is_file())


def write(path: Path, text: str) -> None:
    write_text_atomic(Path(path), text)


def find_unused(root: Path, registry: Registry) -> list[tuple[Path, str]]:
    """Golden files without a registered tier B case for their backend, and stray files: (path, why)."""
    root = Path(root)
    if not root.is_dir():
        return []
    out: list[tuple[Path, str]] = []
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        rel = path.relative_to(root)
        if len(rel.parts) != 3:
            out.append((path, "not at <backend>/<platform>/<case_id>.json"))
            continue
        backend = rel.parts[0]
        if path.name.endswith(TMP_SUFFIX):
            out.append((path, "leftover temp file of an interrupted write"))
            continue
        if path.suffix != ".json":
            out.append((path, "not a .json golden"))
            continue
        case: Case | None = registry.get(path.stem)
        if case is None:
            out.append((path, "no registered case has this id"))
        elif case.tier != "B":
            out.append((path, "the case with this id is tier A (no golden)"))
        elif backend not in case.backends:
            out.append((path, f"case does not run on backend {backend!r}"))
    return out


def unified_diff(old: str, new: str, path: Path) -> str:
    """A readable unified diff of a golden's text (``old`` empty for a created file)."""
    try:
        path = Path(path).resolve().relative_to(Path.cwd())
    except ValueError:
        pass
    return "".join(
        difflib.unified_diff(
            old.splitlines(keepends=True),
            new.splitlines(keepends=True),
            fromfile=f"a/{path}" if old else "/dev/null",
            tofile=f"b/{path}",
        )
    )
