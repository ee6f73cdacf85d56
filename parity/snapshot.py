"""syrupy integration: a single-file extension that stores a case's golden at its golden path.

syrupy (>= 5; the hooks below have no leading underscore since v5) owns the update switch:
``pytest --snapshot-update`` makes ``assert snapshot.use_extension(ext) == document`` write the
golden when its text differs. The extension only redirects syrupy to the harness's golden store:

- location: ``golden_extension(path)`` returns a subclass bound to one golden file;
- read: the text is validated by ``parity.golden.parse``; a corrupt file raises, so syrupy records
  the error and never overwrites it, even with ``--snapshot-update``;
- write: ``parity.golden.write`` (temp file + ``os.replace``);
- discovery: empty. syrupy relates snapshot files to test files by name, which cannot work for
  ``<backend>/<platform>/<case_id>.json``; unused goldens are found against the case registry by
  ``parity.golden.find_unused`` instead, so syrupy never deletes a golden.

Checking (without ``--snapshot-update``) goes through ``parity.engine``, shared with the CLI.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar, cast

from syrupy.data import SnapshotCollection, SnapshotCollections
from syrupy.extensions.single_file import SingleFileSnapshotExtension, WriteMode

from parity import golden

__all__ = ["GoldenSnapshotExtension", "golden_extension"]


class GoldenSnapshotExtension(SingleFileSnapshotExtension):
    """Base class; use ``golden_extension(path)`` to get one bound to a golden file."""

    file_extension = "json"
    _write_mode = WriteMode.TEXT
    write_immediately = True
    golden_path: ClassVar[Path | None] = None

    @classmethod
    def _bound_path(cls) -> Path:
        if cls.golden_path is None:
            raise TypeError("GoldenSnapshotExtension is unbound: use parity.snapshot.golden_extension(path)")
        return cls.golden_path

    @classmethod
    def dirname(cls, *, test_location: Any) -> str:
        return str(cls._bound_path().parent)

    @classmethod
    def discovery_dirname(cls, *, test_location: Any) -> str:
        return str(cls._bound_path().parent)

    @classmethod
    def get_file_basename(cls, *, test_location: Any, index: Any) -> str:
        return cls._bound_path().stem

    @classmethod
    def matches_test_location(cls, *, test_location: Any, snapshot_location: str) -> bool:
        return Path(snapshot_location) == cls._bound_path()

    def discover_snapshots(self, *, test_location: Any, ignore_extensions: Any = None) -> SnapshotCollections:
        return SnapshotCollections()

    def serialize(self, data: Any, **kwargs: Any) -> str:
        if isinstance(data, str):
            golden.parse(data, self._bound_path())  # refuse to store anything that is not a golden
            return data
        return golden.dumps(data)

    def read_snapshot_data_from_location(
        self, *, snapshot_location: str, snapshot_name: str, session_id: str
    ) -> str | None:
        path = Path(snapshot_location)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        golden.parse(text, path)  # raises GoldenCorruptError naming the file
        return text

    @classmethod
    def write_snapshot_collection(
        cls, *, snapshot_collection: SnapshotCollection, name_order: Any = None
    ) -> None:
        data = next(iter(snapshot_collection)).data
        golden.write(Path(snapshot_collection.location), cast(str, data))  # the golden text serialize() made

    def delete_snapshots(self, *, snapshot_location: str, snapshot_names: set[str]) -> None:
        raise RuntimeError(
            f"parity never lets syrupy delete goldens ({snapshot_location}); delete unused ones by hand"
        )


def golden_extension(path: Path) -> type[GoldenSnapshotExtension]:
    """A ``GoldenSnapshotExtension`` subclass bound to one golden file."""
    return type("BoundGoldenSnapshotExtension", (GoldenSnapshotExtension,), {"golden_path": Path(path)})
