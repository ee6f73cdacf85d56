"""Warm-started self-check children: fork each ``parity run`` from one interpreter that already
imported the heavy third-party libraries.

A fresh child interpreter spends about 5 s importing torch (and ``torch._dynamo``, which
``torch.optim`` pulls in), transformers, hypothesis ... before its 1-20 s of cases; the quick
self-check starts ~53 of them. :class:`WarmStarter` starts ONE helper interpreter (the "zygote")
with the children's environment, imports only third-party modules there, and forks each child
from it. What a child tests must still come from its copy, so the zygote never imports ``parity``
or ``hyper_parallel`` (it refuses to serve if one got in), and each child runs the same bootstrap
as a fresh one (``parity.tools.child._BOOTSTRAP``: the import probe, then ``python -m parity``).

Why these rules:

- the CPU profile's process-start knobs (glibc's libm variant, numpy's dispatch) are read when a
  process starts or imports numpy, so the zygote is started with them in its environment (as a
  re-executed child would be): ``parity.numerics.needs_reexec`` is then false in a forked child;
- the zygote runs no torch op: forking after ATen's intra-op thread pool started is a known hang;
- children are plain ``os.fork`` children in a session of their own (``os.setsid``), not
  ``multiprocessing`` processes: they start their own rank processes, and a timeout kills the
  whole group with SIGKILL.

Protocol (JSON lines): the parent writes ``{"job", "cwd", "env", "output", "argv", "code"}``; the
zygote answers ``{"job", "pid"}`` at the fork and ``{"job", "status"}`` (an exit code, negative
for a signal) when it reaped the child. ``PARITY_SELFCHECK_WARM=0`` turns the quick self-check
back to fresh interpreters (``parity.tools.quick``).
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType

from parity import numerics
from parity.tools.child import _BOOTSTRAP, _child_env

__all__ = ["WARM_ENV", "ZYGOTE_MODULES", "WarmChild", "WarmStartError", "WarmStarter", "enabled"]

WARM_ENV = "PARITY_SELFCHECK_WARM"
# Third-party modules a ``parity run`` imports (``python -X importtime -m parity run``); a module
# that is not installed is skipped. Never ``parity`` or ``hyper_parallel``: they come from each copy.
ZYGOTE_MODULES: tuple[str, ...] = (
    "numpy",
    "torch",
    "torch._dynamo",
    "torch.optim",
    "torch.distributed",
    "torch.distributed.checkpoint",
    "torch.distributed.fsdp",
    "torch.distributed.tensor",
    "torch.nn.functional",
    "torch.utils.data",
    "sympy",
    "transformers",
    "tokenizers",
    "safetensors",
    "safetensors.torch",
    "hypothesis",
    "hypothesis.strategies",
    "yaml",
    "rich",
    "rich.console",
    "rich.progress",
    "rich.table",
    "tqdm",
    "dill",
    "pygments",
)
_PER_COPY = ("PARITY_SELFCHECK_COPY", "PARITY_SELFCHECK_PROBE")
_FORBIDDEN = ("parity", "hyper_parallel")

# The zygote: plain text run with ``python -c`` (importing this module would import ``parity``).
_ZYGOTE = r"""
import importlib, json, os, selectors, signal, sys, traceback
modules, forbidden = json.loads(sys.argv[1]), json.loads(sys.argv[2])
req_fd, resp_fd = os.dup(0), os.dup(1)
null = os.open(os.devnull, os.O_RDONLY)
os.dup2(null, 0)
os.dup2(2, 1)  # a stray print of an import goes to the log, never into the protocol
resp = os.fdopen(resp_fd, "w", encoding="utf-8")

def send(**msg):
    resp.write(json.dumps(msg) + "\n")
    resp.flush()

loaded = []
for name in modules:
    try:
        importlib.import_module(name)
        loaded.append(name)
    except Exception:  # not installed, or broken: the children import it themselves
        pass
bad = sorted(m for m in sys.modules if m.split(".")[0] in forbidden)
if bad:
    send(fatal="the zygote imported %s: it must come from each copy" % ", ".join(bad[:5]))
    raise SystemExit(1)
send(ready=True, pid=os.getpid(), loaded=loaded, threads=len(os.listdir("/proc/self/task")))

sel = selectors.DefaultSelector()
sel.register(req_fd, selectors.EVENT_READ, None)
children = {}  # pidfd -> (job, pid)

def run_child(req):
    code = 1
    try:
        os.setsid()
        os.dup2(null, 0)
        out = os.open(req["output"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(out, 1)
        os.dup2(out, 2)
        os.close(out)
        sel.close()
        for fd in (req_fd, resp_fd, null, *children):
            os.close(fd)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        os.chdir(req["cwd"])
        os.environ.clear()
        os.environ.update(req["env"])
        sys.path.insert(0, req["cwd"])
        importlib.invalidate_caches()
        sys.argv = ["-c", *req["argv"]]
        exec(compile(req["code"], "<string>", "exec"), {"__name__": "__main__", "__builtins__": __builtins__})
        code = 0
    except SystemExit as exc:
        if exc.code is None:
            code = 0
        elif isinstance(exc.code, int):
            code = exc.code
        else:
            sys.stderr.write("%s\n" % (exc.code,))
            code = 1
    except BaseException:
        traceback.print_exc()
        code = 1
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
        os._exit(code & 0xFF)

buf = b""
while True:
    for key, _ in sel.select():
        if key.data is None:
            chunk = os.read(req_fd, 1 << 16)
            if not chunk:  # the parent is gone: so are its runs
                for job, pid in children.values():
                    try:
                        os.killpg(pid, signal.SIGKILL)
                    except OSError:
                        pass
                raise SystemExit(0)
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                req = json.loads(line)
                try:
                    pid = os.fork()
                except OSError as exc:
                    send(job=req["job"], error="fork failed: %s" % exc)
                    continue
                if pid == 0:
                    run_child(req)
                pidfd = os.pidfd_open(pid)
                children[pidfd] = (req["job"], pid)
                sel.register(pidfd, selectors.EVENT_READ, pid)
                send(job=req["job"], pid=pid)
        else:
            job, pid = children.pop(key.fd)
            sel.unregister(key.fd)
            os.close(key.fd)
            _, status = os.waitpid(pid, 0)
            send(job=job, status=os.waitstatus_to_exitcode(status))
"""


class WarmStartError(RuntimeError):
    """The zygote is not (or no longer) there to fork a child: run a fresh interpreter instead."""


def enabled(environ: Mapping[str, str] | None = None) -> bool:
    """Whether warm starts are on (``PARITY_SELFCHECK_WARM``, default on; ``0`` turns them off)."""
    value = (os.environ if environ is None else environ).get(WARM_ENV, "1").strip().lower()
    return value not in ("0", "false", "no", "off")


def _profile_env() -> dict[str, str]:
    """What ``numerics.export`` would put in a child's environment before it re-executes itself."""
    profile = numerics.resolve(None)
    env = {numerics.PROFILE_ENV: profile}
    if profile == "portable":
        env.update({k.env: k.value for k in numerics.knobs()})
    return env


class WarmChild:
    """One forked ``parity run``: its pid (the leader of its own process group) and its exit."""

    def __init__(self, starter: WarmStarter, job: int) -> None:
        self.starter = starter
        self.job = job
        self.pid: int | None = None
        self.status: int | None = None
        self.error: str | None = None
        self.started = threading.Event()
        self.done = threading.Event()

    def wait(self, timeout: float | None = None) -> int | None:
        """The exit code, or None when ``timeout`` passed first; ``WarmStartError`` if the zygote
        died before the child's status came back."""
        if not self.done.wait(timeout):
            return None
        if self.error is not None:
            raise WarmStartError(self.error)
        return self.status

    def kill(self) -> None:
        """SIGKILL the child's process group (it and the rank processes it started)."""
        if self.pid is not None and self.status is None:  # not reaped yet: the pid is still its
            try:
                os.killpg(self.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass


class WarmStarter:
    """A zygote interpreter that forks ``parity run`` children (use as a context manager).

    ``start`` returns at once; the first ``launch`` waits for the imports (``ready_timeout``).
    Several threads may launch at the same time.
    """

    def __init__(
        self,
        modules: Sequence[str] = ZYGOTE_MODULES,
        *,
        ready_timeout: float = 180.0,
        forbidden: Sequence[str] = _FORBIDDEN,
        home: Path | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        """``forbidden``: top-level packages the zygote must not import (each copy brings its own);
        ``home``/``env``: the zygote's working directory and environment (default: a temporary
        folder and :meth:`base_env`). The mutation runner preloads the mutated tree itself:
        ``forbidden=()``, ``home`` the tree."""
        self.modules = tuple(modules)
        self.ready_timeout = ready_timeout
        self.forbidden = tuple(forbidden)
        self.home = home
        self.env = dict(env) if env is not None else None
        self.proc: subprocess.Popen[bytes] | None = None
        self.info: dict[str, object] = {}  # the zygote's ready line (pid, loaded modules, threads)
        self.dead: str | None = None  # why the zygote cannot serve (None while it can)
        self._profile = _profile_env()
        self._jobs: dict[int, WarmChild] = {}
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._ready = threading.Event()
        self._reader: threading.Thread | None = None
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        self._warned = False

    # ------------------------------------------------------------ lifecycle
    def __enter__(self) -> WarmStarter:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def base_env(self) -> dict[str, str]:
        """The children's environment without a copy: ``_child_env`` less the per-copy variables,
        plus the CPU profile's knobs (the zygote must start with those)."""
        env = _child_env(Path(os.devnull), Path(os.devnull))
        for name in _PER_COPY:
            env.pop(name, None)
        old = os.environ.get("PYTHONPATH")
        if old:
            env["PYTHONPATH"] = old
        else:
            env.pop("PYTHONPATH", None)
        env.update(self._profile)
        return env

    def start(self) -> None:
        self._tmp = tempfile.TemporaryDirectory(prefix="parity-zygote-")
        self.log = Path(self._tmp.name) / "zygote.log"
        env = self.base_env() if self.env is None else {**self.env, **self._profile}
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-c", _ZYGOTE, json.dumps(self.modules), json.dumps(self.forbidden)],
                # never the project by default: '' on sys.path must not find parity
                cwd=str(self.home) if self.home is not None else self._tmp.name,
                env=env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                start_new_session=True,
            )
        self._reader = threading.Thread(target=self._read, name="warm-start-reader", daemon=True)
        self._reader.start()

    def close(self) -> None:
        """Stop the zygote (it SIGKILLs the groups of children still running) and kill those too."""
        proc = self.proc
        if proc is None:
            return
        with self._lock:
            for child in self._jobs.values():
                child.kill()
        if proc.stdin is not None:
            try:
                proc.stdin.close()
            except OSError:
                pass
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if self._reader is not None:
            self._reader.join(timeout=10)
        if self._tmp is not None:
            self._tmp.cleanup()
        self.proc = None

    def _read(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        for raw in self.proc.stdout:
            msg = json.loads(raw)
            if "ready" in msg:
                self.info = msg
                self._ready.set()
            elif "fatal" in msg:
                self.dead = str(msg["fatal"])
            elif "job" in msg:
                with self._lock:
                    child = self._jobs.get(msg["job"])
                if child is None:
                    continue
                if "pid" in msg:
                    child.pid = int(msg["pid"])
                    child.started.set()
                elif "status" in msg:
                    child.status = int(msg["status"])
                    with self._lock:
                        self._jobs.pop(child.job, None)
                    child.done.set()
                elif "error" in msg:
                    child.error = str(msg["error"])
                    child.started.set()
                    child.done.set()
        # EOF: the zygote exited (or was killed); nothing it forked can report back any more.
        if self.dead is None:
            self.dead = f"the zygote exited ({self._log_tail()})"
        self._ready.set()
        with self._lock:
            orphans, self._jobs = list(self._jobs.values()), {}
        for child in orphans:
            child.error = self.dead
            child.started.set()
            child.done.set()

    def _log_tail(self) -> str:
        try:
            lines = self.log.read_text(encoding="utf-8", errors="replace").strip().splitlines()
        except OSError:
            return "no log"
        return lines[-1][:200] if lines else "empty log"

    # ------------------------------------------------------------ launching
    def launch(
        self, copy: Path, env: Mapping[str, str], argv: Sequence[str], output: Path, code: str = _BOOTSTRAP
    ) -> WarmChild:
        """Fork ``python -c code *argv`` (default: the self-check bootstrap) in ``copy`` with ``env``
        (plus the CPU profile's knobs), its output into ``output``; ``WarmStartError`` when the
        zygote cannot."""
        if self.proc is None:
            raise WarmStartError("the warm starter was not started")
        if not self._ready.wait(self.ready_timeout):
            raise WarmStartError(f"the zygote was not ready after {self.ready_timeout:.0f}s")
        if self.dead is not None:
            raise WarmStartError(self.dead)
        child = WarmChild(self, next(self._ids))
        request = {
            "job": child.job,
            "cwd": str(copy),
            "env": {**env, **self._profile},
            "output": str(output),
            "argv": list(argv),
            "code": code,
        }
        line = (json.dumps(request) + "\n").encode("utf-8")
        with self._lock:
            self._jobs[child.job] = child
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.write(line)
                self.proc.stdin.flush()
            except (OSError, ValueError) as exc:
                self._jobs.pop(child.job, None)
                raise WarmStartError(f"the zygote took no request: {exc}") from None
        if not child.started.wait(60.0):
            child.error = "the zygote did not fork within 60s"
        if child.error is not None:
            raise WarmStartError(child.error)
        return child

    def warn_once(self, why: str) -> None:
        """One line on stderr the first time a run falls back to a fresh interpreter."""
        with self._lock:
            if self._warned:
                return
            self._warned = True
        sys.stderr.write(f"selfcheck: warm start unavailable ({why}); starting fresh interpreters\n")
