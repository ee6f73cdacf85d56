"""Golden store through the engine: create, byte-stable regeneration, missing/corrupt/unused/fingerprint."""

from __future__ import annotations

import json

import pytest

from parity import golden, numerics
from parity.engine import Engine
from parity.env import platform_key
from tests.parity import parity_synthetic as synth

# This run's golden key (cpu-<arch>-<capability> on CPU) and CPU profile.
KEY = platform_key()
PROFILE = numerics.active_profile()

CASE_ID = "checkpoint.tiny-large=true"


@pytest.fixture
def engine(tmp_path):
    return Engine(synth.REGISTRY, golden_root=tmp_path / "golden", report_dir=tmp_path / "reports")


@pytest.fixture
def case():
    return synth.REGISTRY.get(CASE_ID)


def _edit(path, fn):
    doc = json.loads(path.read_text())
    fn(doc)
    path.write_text(golden.dumps(doc))


def test_missing_golden_fails_with_the_create_command(engine, case, tmp_path):
    outcome = engine.check(case, "torch")
    path = engine.golden_path(case, "torch")
    assert outcome.status == "fail"
    assert f"missing golden {path}" in outcome.message
    create = (
        f"PYTHONHASHSEED=0 python -m parity update --cpu-profile {PROFILE} --cases tests.parity.parity_synthetic:REGISTRY "
        f"--golden-dir {tmp_path / 'golden'} --backend torch --id {CASE_ID}"
    )
    assert create in outcome.message
    report = json.loads((tmp_path / "reports" / "torch" / KEY / f"{CASE_ID}.json").read_text())
    assert report["error"].startswith("missing golden") and report["case_id"] == CASE_ID


def test_golden_is_created_then_regenerated_byte_identical(engine, case, tmp_path):
    created = engine.update(case, "torch")
    path = created.golden_path
    assert created.status == "created" and created.diff.startswith("--- /dev/null")
    assert path == tmp_path / "golden" / "torch" / KEY / f"{CASE_ID}.json"
    first = path.read_bytes()
    assert first.endswith(b"}\n") and json.loads(first)["schema_version"] == golden.SCHEMA_VERSION
    assert engine.update(case, "torch").status == "unchanged"
    path.unlink()
    assert engine.update(case, "torch").status == "created"
    assert path.read_bytes() == first
    assert not list(path.parent.glob("*.tmp"))  # atomic write leaves no temp file
    assert engine.check(case, "torch").status == "pass"
    assert not (tmp_path / "reports" / "torch" / KEY / f"{CASE_ID}.json").exists()


def test_corrupt_golden_is_reported_by_name_and_never_replaced(engine, case):
    path = engine.update(case, "torch").golden_path
    path.write_text('{"artifacts": [truncated')
    outcome = engine.check(case, "torch")
    assert outcome.status == "fail" and f"corrupt golden {path}: not valid JSON" in outcome.message
    refused = engine.update(case, "torch")
    assert refused.status == "error" and str(path) in refused.message
    assert path.read_text() == '{"artifacts": [truncated'


def test_unused_and_stray_goldens_are_found(engine, case):
    engine.update(case, "torch")
    root = engine.golden_root
    (root / "torch" / KEY / "checkpoint.gone.json").write_text("{}\n")
    (root / "torch" / KEY / "lr_curve.warmup_ceil-steps=10.json").write_text("{}\n")  # tier A id
    (root / "torch" / KEY / ".x.json.abc.tmp").write_text("")
    (root / "mindspore" / KEY).mkdir(parents=True)
    (root / "mindspore" / KEY / f"{CASE_ID}.json").write_text("{}\n")  # case is torch-only
    found = {path.name: why for path, why in engine.unused_goldens()}
    assert found == {
        "checkpoint.gone.json": "no registered case has this id",
        "lr_curve.warmup_ceil-steps=10.json": "the case with this id is tier A (no golden)",
        ".x.json.abc.tmp": "leftover temp file of an interrupted write",
        f"{CASE_ID}.json": "case does not run on backend 'mindspore'",
    }


def test_framework_version_mismatch_fails_and_python_version_does_not(engine, case):
    path = engine.update(case, "torch").golden_path
    _edit(path, lambda d: d["fingerprint"].update(python="3.99.0", numpy="0.0"))
    assert engine.check(case, "torch").status == "pass"  # informational fields
    _edit(path, lambda d: d["fingerprint"].update(torch="2.12.0"))
    outcome = engine.check(case, "torch")
    assert outcome.status == "fail"
    first = outcome.message.splitlines()[0]
    assert first.startswith(f"ENVIRONMENT DIFFERS from golden {path}: torch: golden '2.12.0', this run '")
    assert f"--id {CASE_ID}" in first and "regenerate for this environment: " in first
    assert (
        outcome.report.environment == first
        and "the artifacts equal the golden bit for bit" in outcome.message
    )


def test_golden_mismatch_names_path_and_first_index(engine, case):
    path = engine.update(case, "torch").golden_path

    def flip(doc):
        leaf = doc["artifacts"]["state"]["model"]["proj.weight"]
        leaf["values"][synth.FLIP_INDEX] ^= 1 << 3
        leaf["sha256"] = "0" * 64
        doc["artifacts"]["state"]["model"]["big"]["sha256"] = "f" * 64

    _edit(path, flip)
    outcome = engine.check(case, "torch")
    report = outcome.report
    assert outcome.status == "fail" and report.golden_path == str(path)
    assert [(d.path, d.index) for d in report.differences] == [
        ("checkpoint.state.model.big", None),  # hash-only in the golden: no element detail
        ('checkpoint.state.model["proj.weight"]', synth.FLIP_INDEX),
    ]
    assert "which elements differ is not known" in report.differences[0].message
    assert report.differences[1].max_ulp == 8
    text = outcome.message
    for needle in (
        f"case={CASE_ID}",
        "backend=torch",
        f"platform={KEY}",
        f"reproduce: PYTHONHASHSEED=0 python -m parity run --cpu-profile {PROFILE}",
    ):
        assert needle in text


def test_changed_seed_shows_in_the_case_block(engine, case):
    path = engine.update(case, "torch").golden_path
    _edit(path, lambda d: d["case"].update(seed=8))
    outcome = engine.check(case, "torch")
    assert outcome.report.first.path == "case.seed"


def test_syrupy_extension_is_bound_to_the_golden_path(tmp_path):
    from parity.snapshot import golden_extension

    ext = golden_extension(tmp_path / "torch" / KEY / "k.c.json")
    assert ext.get_location(test_location=None, index=0) == str(tmp_path / "torch" / KEY / "k.c.json")
    assert list(ext().discover_snapshots(test_location=None)) == []  # syrupy never sees goldens as unused
    with pytest.raises(golden.GoldenCorruptError, match="missing top-level"):
        ext().serialize("{}")
