"""A MindSpore checkpoint save that the OS refuses names why: full disk or file-size limit.

safetensors reports a refused write as a bare ``SafetensorError`` ("... (os error 27)");
``mindspore_io`` turns it into the ``OSError`` (errno, path) that ``open``/``write`` raise, and the
checkpoint manager's ``CheckpointSaveError`` names the folder and the reason in one line. The
file-size limit is real (``RLIMIT_FSIZE`` in a child process; Python ignores ``SIGXFSZ``, so the
write fails with ``EFBIG`` instead of killing it); a full disk is simulated at safetensors.
"""

from __future__ import annotations

import errno
import subprocess
import sys
import textwrap

import pytest

from tests._subprocess import REPO, child_env

pytest.importorskip("mindspore")

_LIMIT = 4096

_CHILD = textwrap.dedent(
    f"""
    import os, resource, signal, sys
    os.environ["HYPER_PARALLEL_PLATFORM"] = "mindspore"
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    out, what = sys.argv[1], sys.argv[2]

    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, ({_LIMIT}, resource.RLIM_INFINITY))

    if what == "state":
        import numpy as np
        from hyper_parallel.platform import mindspore_io as msio

        limit()
        try:
            msio.save_state({{"w": np.zeros(1 << 16, np.float32)}}, os.path.join(out, "state.pt"))
        except Exception as exc:
            print(type(exc).__name__, getattr(exc, "errno", None), getattr(exc, "filename", None))
        sys.exit(0)

    from parity.suites import components_checkpoint as suite

    state = suite.trained_state(steps=1)
    mgr = suite.manager(state, out, save_steps=1, save_hf_weights=False)
    if what == "states":  # the shards fit; the limit bites at the optimizer's state file
        write_model = mgr._write_model

        def model_then_limit(*args, **kwargs):
            write_model(*args, **kwargs)
            limit()

        mgr._write_model = model_then_limit
    else:
        limit()
    try:
        if what == "hf":
            mgr._export_step(1, into=out)
        else:
            mgr.save(1, 0, force=True)
    except Exception as exc:
        print(type(exc).__name__, exc)
    """
)


def _child(out: str, what: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _CHILD, out, what],
        capture_output=True,
        text=True,
        env=child_env(HYPER_PARALLEL_PLATFORM="mindspore"),
        cwd=REPO,
        timeout=600,
    )


def test_a_refused_state_write_is_an_os_error_with_errno_and_path(tmp_path):
    proc = _child(str(tmp_path), "state")
    assert proc.stdout.split() == ["OSError", str(errno.EFBIG), str(tmp_path / "state.pt")], (
        proc.stdout + proc.stderr[-2000:]
    )


@pytest.mark.parametrize(
    ("what", "folder"),
    [("dcp", "step_1"), ("states", "step_1"), ("hf", "hf_ckpt")],
)
def test_a_file_size_limit_is_one_line_naming_the_folder(what, folder, tmp_path):
    out = tmp_path / "out"
    proc = _child(str(out), what)
    lines = proc.stdout.splitlines()
    assert len(lines) == 1, proc.stdout + proc.stderr[-2000:]
    prefix = f"CheckpointSaveError checkpoint save to {out / folder} failed at step 1: file size limit"
    assert lines[0].startswith(prefix), lines[0]
    if what == "states":  # the OSError of the refused write, not safetensors' text
        assert f"(OSError: [Errno {errno.EFBIG}] File too large:" in lines[0], lines[0]
        assert "optimizer_rank0.pt" in lines[0], lines[0]


def test_a_full_disk_is_named(tmp_path, monkeypatch):
    import safetensors

    from hyper_parallel.platform import mindspore_io as msio

    def full(*args, **kwargs):
        raise safetensors.SafetensorError(
            "Error while serializing: I/O error: No space left on device (os error 28)"
        )

    monkeypatch.setattr(safetensors, "serialize_file", full)
    target = tmp_path / "model.safetensors"
    with pytest.raises(OSError) as err:
        msio.save_safetensors({}, target)
    assert (err.value.errno, err.value.filename) == (errno.ENOSPC, str(target))

    from hyper_parallel.checkpointing import CheckpointSaveError

    message = str(CheckpointSaveError(str(tmp_path), 3, err.value))
    assert message.startswith(f"checkpoint save to {tmp_path} failed at step 3: no space left on device"), (
        message
    )
    assert "\n" not in message


def test_other_serializer_errors_pass_through(tmp_path, monkeypatch):
    import safetensors

    from hyper_parallel.platform import mindspore_io as msio

    def broken(*args, **kwargs):
        raise safetensors.SafetensorError("Error while serializing: misaligned")

    monkeypatch.setattr(safetensors, "serialize_file", broken)
    with pytest.raises(safetensors.SafetensorError, match="misaligned"):
        msio.save_safetensors({}, tmp_path / "x.safetensors")
