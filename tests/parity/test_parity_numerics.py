"""The CPU numerics profile: choice, pinning (also after ``import torch``), evidence, fingerprints.

Each knob of ``parity.numerics`` has a test here showing it changes bits on a machine where it can
(ATen, MKL, oneDNN, threads, numpy's dispatch, glibc's libm variant).

Every check that needs another kernel set runs in a subprocess: ATen fixes its CPU capability for
the life of a process at the first kernel it dispatches.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from parity import numerics
from tests._subprocess import REPO, child_env

_KNOB_VARS = (*numerics.KNOB_ENV_VARS, numerics.PROFILE_ENV)
X86 = numerics.machine_arch() in ("x86_64", "amd64")


def _env(**extra: str) -> dict[str, str]:
    """A child environment with no profile knob inherited from this (portable) test process."""
    env = child_env()
    for name in _KNOB_VARS:
        env.pop(name, None)
    env.update(extra)
    return env


def _python(code: str, **env: str) -> str:
    proc = subprocess.run(
        [sys.executable, "-c", code], env=_env(**env), cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def _parity(*args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "parity", *args],
        env=_env(HYPER_PARALLEL_PLATFORM="torch", PYTHONHASHSEED="0", **env),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )


# ----------------------------------------------------------------------------- choosing a profile
def test_profile_defaults_to_portable_and_the_flag_beats_the_variable(monkeypatch):
    monkeypatch.delenv(numerics.PROFILE_ENV, raising=False)
    assert numerics.resolve() == "portable"
    monkeypatch.setenv(numerics.PROFILE_ENV, "Native")
    assert numerics.resolve() == "native"
    assert numerics.resolve("portable") == "portable"


def test_a_bad_profile_names_its_source_and_the_choices(monkeypatch):
    monkeypatch.setenv(numerics.PROFILE_ENV, "fast")
    with pytest.raises(
        numerics.ProfileError,
        match=r"PARITY_CPU_PROFILE='fast' is not a CPU profile; expected one of portable, native",
    ):
        numerics.resolve()
    with pytest.raises(numerics.ProfileError, match=r"--cpu-profile='x'"):
        numerics.resolve("x")


def test_this_test_session_runs_under_its_profile():
    from hyper_parallel.platform import get_platform

    platform = get_platform()
    if numerics.resolve() != "portable":
        assert numerics.active_profile() == "native"
        pytest.skip("this session runs the native profile: nothing is pinned")
    assert numerics.active_profile() == "portable"
    assert platform.num_threads() == numerics.PORTABLE_THREADS
    if X86:
        assert platform.cpu_capability() == "AVX2"


# ----------------------------------------------------------------------------- pinning
_PROBE = (
    "import os, torch; from parity import numerics\n"
    "{before}\n"
    "numerics.apply('portable')\n"
    "print(torch.backends.cpu.get_cpu_capability(), torch.get_num_threads(), os.environ['ATEN_CPU_CAPABILITY'])"
)


@pytest.mark.skipif(not X86, reason="the x86-64 capability pin")
def test_pinning_works_after_import_torch_and_overrides_the_callers_capability():
    # The caller asked for scalar kernels; torch is imported first; no kernel has run yet.
    out = _python(_PROBE.format(before=""), ATEN_CPU_CAPABILITY="default")
    assert out.split() == ["AVX2", "1", "avx2"]


@pytest.mark.skipif(not X86, reason="the x86-64 capability pin")
def test_pinning_after_a_kernel_ran_is_a_clear_error():
    code = _PROBE.format(before="torch.ones(3).exp()").replace(
        "numerics.apply('portable')",
        "try:\n    numerics.apply('portable')\nexcept numerics.ProfileError as e:\n    print('ERR', e); raise SystemExit(0)",
    )
    out = _python(code, ATEN_CPU_CAPABILITY="default")
    assert out.startswith(
        "ERR the portable CPU profile needs ATen capability AVX2, but torch already runs DEFAULT"
    )
    assert "PARITY_CPU_PROFILE=portable ATEN_CPU_CAPABILITY=avx2" in out


@pytest.mark.skipif(not X86, reason="the x86-64 capability pin")
def test_the_cli_reexecutes_itself_when_torch_ran_before_it():
    code = (
        "import runpy, sys, torch\n"
        "torch.ones(3).exp()  # fixes the scalar capability in this process\n"
        "sys.argv = ['parity', 'env', '--json']\n"
        "runpy.run_module('parity', run_name='__main__')\n"
    )
    out = json.loads(_python(code, ATEN_CPU_CAPABILITY="default", HYPER_PARALLEL_PLATFORM="torch"))
    assert (out["cpu_capability"], out["cpu_profile"], out["threads"]) == ("AVX2", "portable", 1)


def test_native_pins_nothing():
    out = _python(
        "import os, torch; from parity import numerics; numerics.apply('native'); "
        "print(os.environ.get('MKL_CBWR', 'unset'), os.environ[numerics.PROFILE_ENV])"
    )
    assert out.split() == ["unset", "native"]


# ----------------------------------------------------------------------------- each knob changes bits
_BITS = (
    "import hashlib, os, torch\n"
    "t = int(os.environ.get('PROBE_THREADS', '0'))\n"
    "t and torch.set_num_threads(t)\n"
    "g = torch.Generator().manual_seed(0)\n"
    "a, b = torch.randn(257, 513, generator=g), torch.randn(513, 129, generator=g)\n"
    "x = torch.randn(4_000_000, generator=g)\n"
    "h = lambda v: hashlib.sha256(v.reshape(-1).contiguous().view(torch.uint8).numpy().tobytes()).hexdigest()[:12]\n"
    "print(h(torch.softmax(a, -1)), h(a @ b), h(a.bfloat16() @ b.bfloat16()), h(x.sum()))"
)


def _bits(**env: str) -> dict[str, str]:
    return dict(zip(("softmax", "matmul", "bf16_matmul", "sum"), _python(_BITS, **env).split(), strict=True))


@pytest.mark.skipif(not X86, reason="x86-64 kernels")
def test_aten_capability_changes_bits():
    assert _bits(ATEN_CPU_CAPABILITY="avx2")["softmax"] != _bits(ATEN_CPU_CAPABILITY="default")["softmax"]


def test_the_intra_op_thread_count_changes_bits():
    assert _bits(PROBE_THREADS="1")["sum"] != _bits(PROBE_THREADS="2")["sum"]


@pytest.mark.skipif(not X86, reason="MKL is the x86-64 BLAS of the torch wheel")
def test_mkl_cbwr_compatible_changes_gemm_bits():
    pinned = dict(ATEN_CPU_CAPABILITY="avx2", OMP_NUM_THREADS="1")
    assert _bits(**pinned, MKL_CBWR="COMPATIBLE")["matmul"] != _bits(**pinned)["matmul"]


def test_onednn_isa_cap_changes_bf16_matmul_bits_on_avx512_cpus():
    native = _python("import torch; print(torch.backends.cpu.get_cpu_capability())")
    if native != "AVX512":
        pytest.skip(f"this CPU runs {native} kernels; the AVX2 cap changes oneDNN only above AVX2")
    assert _bits(ONEDNN_MAX_CPU_ISA="AVX2")["bf16_matmul"] != _bits()["bf16_matmul"]


# ----------------------------------------------------------------------------- goldens across CPUs
@pytest.mark.skipif(not X86, reason="x86-64 capabilities")
def test_a_golden_from_another_capability_is_named_in_the_first_line(tmp_path):
    """Record under scalar kernels (native), check under AVX2 (native): the report says why first."""
    args = (
        "--cases",
        "tests.parity.parity_synthetic:REGISTRY",
        "--golden-dir",
        str(tmp_path),
        "--backend",
        "torch",
    )
    report_dir = ("--report-dir", str(tmp_path / "reports"))
    made = _parity("update", "--cpu-profile", "native", *args, ATEN_CPU_CAPABILITY="default")
    assert made.returncode == 0, made.stdout + made.stderr
    arch = numerics.machine_arch()
    assert sorted(p.parent.name for p in tmp_path.glob("torch/*/*.json")) == [f"cpu-{arch}-default"] * 2
    checked = _parity(
        "run",
        "--cpu-profile",
        "native",
        *args,
        *report_dir,
        "-k",
        "tiny or groups",
        ATEN_CPU_CAPABILITY="avx2",
    )
    assert checked.returncode == 1, checked.stdout + checked.stderr
    reports = sorted((tmp_path / "reports").glob("torch/*/*.json"))  # the case reports, not last_run.json
    assert len(reports) == 2
    for path in reports:
        data = json.loads(path.read_text())
        first = data["environment"]
        assert first.startswith("ENVIRONMENT DIFFERS from golden ")
        assert "cpu_capability: golden 'DEFAULT', this run 'AVX2'" in first
        assert f"platform: golden 'cpu-{arch}-default', this run 'cpu-{arch}-avx2'" in first
        assert (
            "regenerate for this environment: PYTHONHASHSEED=0 python -m parity update --cpu-profile native"
            in first
        )
    # In the printed report the environment line comes before any bit difference.
    text = checked.stdout
    assert text.index("ENVIRONMENT DIFFERS") < text.index("PARITY FAIL")


def test_env_json_prints_what_decides_the_bits():
    proc = _parity("env", "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    for name in ("arch", "cpu_capability", "blas", "threads", "cpu_profile", "platform", "torch"):
        assert name in data
    assert data["cpu_profile"] == "portable" and data["threads"] == 1 and data["deterministic"] is True
    native = json.loads(_parity("env", "--json", "--cpu-profile", "native").stdout)
    assert native["cpu_profile"] == "native" and native["cpu_env"]["MKL_CBWR"] == "unset"


@pytest.mark.distributed
def test_torchrun_workers_inherit_the_profile(tmp_path):
    """A worker started from this (portable) test process runs the pinned kernels and thread count."""
    if numerics.active_profile() != "portable":
        pytest.skip("this session runs the native profile: nothing is pinned to inherit")
    script = tmp_path / "probe.py"
    script.write_text(
        "import os, torch\n"
        "print('RANK', os.environ['RANK'], torch.backends.cpu.get_cpu_capability(), torch.get_num_threads(), "
        "os.environ.get('PARITY_CPU_PROFILE'), os.environ.get('MKL_CBWR'))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", str(script)],
        env=child_env(),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stderr
    lines = sorted(line.split()[1:] for line in proc.stdout.splitlines() if line.startswith("RANK"))
    capability = "AVX2" if X86 else numerics.portable_capability()
    cbwr = "COMPATIBLE" if X86 else "None"
    assert lines == [["0", capability, "1", "portable", cbwr], ["1", capability, "1", "portable", cbwr]]


# ----------------------------------------------------------------------------- knobs read at process start
_NUMPY_POWER = (
    "import hashlib, numpy as np\n"
    "x = np.linspace(0.1, 3.0, 1000, dtype=np.float32)\n"
    "print(hashlib.sha256(np.power(np.float32(1e7), x / np.float32(7)).tobytes()).hexdigest()[:12])"
)
_COSINE = (
    "import hashlib, math, struct\n"
    "n = 100_001\n"
    "v = [0.5 * (1 + math.cos(math.pi * i / (n - 1))) for i in range(n)]\n"
    "print(hashlib.sha256(struct.pack(f'{n}d', *v)).hexdigest()[:12])"
)
_DISPATCH = "from parity import env; print(' '.join(env.numpy_dispatch()) or '-')"


def _knob(name: str) -> str:
    return next(k.value for k in numerics.knobs() if k.env == name)


def _has_avx512_numpy() -> bool:
    return any("512" in t or t == "X86_V4" for t in _python(_DISPATCH).split())


@pytest.mark.skipif(not X86, reason="numpy's x86-64 dispatch")
def test_numpy_dispatch_knob_removes_every_avx512_target():
    pinned = _python(_DISPATCH, NPY_DISABLE_CPU_FEATURES=_knob("NPY_DISABLE_CPU_FEATURES")).split()
    assert not any("512" in t or t == "X86_V4" for t in pinned), pinned


@pytest.mark.skipif(not X86, reason="numpy's x86-64 dispatch")
def test_numpy_dispatch_knob_changes_float32_power_bits():
    if not _has_avx512_numpy():
        pytest.skip("numpy runs no AVX-512 code path on this CPU: the knob changes nothing here")
    pinned = _python(_NUMPY_POWER, NPY_DISABLE_CPU_FEATURES=_knob("NPY_DISABLE_CPU_FEATURES"))
    assert pinned != _python(_NUMPY_POWER)


def _glibc_fma() -> bool:
    from parity import env

    return env.libc().startswith("glibc") and {"fma", "avx2"} <= env.cpu_flags()


@pytest.mark.skipif(not X86, reason="glibc's x86-64 libm variants")
def test_glibc_hwcaps_knob_changes_libm_cos_bits():
    if not _glibc_fma():
        pytest.skip("no glibc FMA variant on this machine: every process runs the non-FMA cos")
    assert _python(_COSINE, GLIBC_TUNABLES=_knob("GLIBC_TUNABLES")) != _python(_COSINE)


@pytest.mark.skipif(not X86, reason="the x86-64 process-start knobs")
def test_a_process_started_without_the_start_knobs_needs_a_reexec():
    probe = "from parity import numerics; print(numerics.needs_reexec('portable'), numerics.needs_reexec('native'))"
    assert _python(probe).split() == ["True", "False"]
    started = {k.env: k.value for k in numerics.knobs() if k.at_start}
    assert _python(probe, **started).split() == ["False", "False"]  # torch not loaded: nothing else to pin


@pytest.mark.skipif(not X86, reason="the x86-64 process-start knobs")
def test_the_cli_reexecutes_itself_into_the_pinned_libm_and_numpy():
    """Started with none of the knobs, ``python -m parity env`` reports the pinned libm and numpy."""
    out = json.loads(_parity("env", "--json").stdout)
    assert not any("512" in t or t == "X86_V4" for t in out["numpy_dispatch"]), out["numpy_dispatch"]
    assert out["libm_variant"] == "non-fma" and out["libc"] == _python(
        "from parity import env; print(env.libc())"
    )
    native = json.loads(_parity("env", "--json", "--cpu-profile", "native").stdout)
    if _glibc_fma():
        assert native["libm_variant"] == "fma"
