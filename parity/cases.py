"""Parity cases and the explicit registry that holds them.

A case is one named, seeded check of one artifact kind on a set of backends:

- tier A (``Registry.pair``): a legacy producer and a new producer, run in the same process on the
  same seed and compared bit for bit; its inputs may be drawn by hypothesis strategies;
- tier B (``Registry.golden``): a single producer whose canonical artifacts are compared with a
  committed golden file. Never hypothesis-driven: derandomized examples change with hypothesis.

Producers are called as ``producer(**params, **drawn)`` and return a canonicalisable tree (see
``parity.canonical``). The case id is built only from the kind, the name and the sorted params, so
every pytest-xdist worker derives the same ids in the same order.

``tags`` name what a case covers (the component: ``optimizer``, ``loss``...; or ``e2e``,
``legacy``); they select cases (``Registry.select(tags=...)``, ``case_params(registry, tag=...)``,
``python -m parity run --tag ...``) and are not part of the id, so they never rename a golden.

``share`` names the cached run a case reads (say ``e2e:hf_text``: every artifact of one trainer
run): cases with the same ``share`` are scheduled on one pytest-xdist worker, so the run happens
once; cases without one are spread freely. It is not part of the id either.

``localise`` (tier A only) is called as ``localise(**params)`` when the case fails: it says where
the two sides first diverged (an object with ``to_dict()`` holding ``line`` and ``evidence``, or
such a mapping; see ``parity.tools.localise``). It is a callable or a ``"module:function"``
reference, imported only when called: that is how a suite names a tool without the core
importing the tools. The engine puts it into the failure report, and
``python -m parity bisect CASE_ID`` runs it on demand. Not part of the id.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import math
import re
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from parity.select import keyword_matches

__all__ = [
    "Case",
    "Producer",
    "Registry",
    "REGISTRY",
    "SUPPORTED_BACKENDS",
    "Suite",
    "make_case_id",
    "load_registry",
]

Producer = Callable[..., Any]
# A: legacy vs new in one process; B: one side against its committed golden.
Tier = Literal["A", "B"]

SUPPORTED_BACKENDS = ("torch", "mindspore")

_NAME_RE = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
_STR_VALUE_RE = re.compile(r"[A-Za-z0-9_.+-]+")
_ID_RE = re.compile(r"[A-Za-z0-9_.=+-]+")


def _format_param(name: str, value: Any) -> str:
    """One param as it appears in a case id; only scalars with a stable text form are allowed."""
    if isinstance(value, bool) or value is None:
        return str(value).lower()
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"case param {name!r}={value!r}: expected a finite float")
        return repr(value)
    if isinstance(value, str):
        if not _STR_VALUE_RE.fullmatch(value):
            raise ValueError(f"case param {name!r}={value!r}: expected a string of [A-Za-z0-9_.+-]")
        return value
    raise TypeError(
        f"case param {name!r} has type {type(value).__name__}; expected int, float, str, bool or None "
        "(put structured inputs inside the producer, or draw them with strategies)"
    )


def make_case_id(kind: str, name: str, params: Mapping[str, Any]) -> str:
    """``<kind>.<name>[-<param>=<value>...]`` with params sorted by name."""
    parts = [f"{kind}.{name}"]
    parts += [f"{key}={_format_param(key, params[key])}" for key in sorted(params)]
    case_id = "-".join(parts)
    if not _ID_RE.fullmatch(case_id):
        raise ValueError(f"case id {case_id!r} has characters outside [A-Za-z0-9_.=+-]")
    return case_id


class LazyCallable:
    """A ``"module:function"`` reference, imported on first call (a suite's localiser names a tool
    this way, so the core never imports ``parity.tools``)."""

    def __init__(self, ref: str) -> None:
        module, _, attr = ref.partition(":")
        if (
            not module
            or not attr
            or not all(_NAME_RE.fullmatch(p) for p in (*module.split("."), *attr.split(".")))
        ):
            raise ValueError(f"callable reference {ref!r}: expected 'package.module:function'")
        self.ref = ref
        self._target: Callable[..., Any] | None = None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self._target is None:
            module, _, attr = self.ref.partition(":")
            target: Any = importlib.import_module(module)
            for part in attr.split("."):
                target = getattr(target, part)
            self._target = target
        return self._target(*args, **kwargs)

    def __repr__(self) -> str:
        return f"LazyCallable({self.ref!r})"


@dataclass(frozen=True)
class Case:
    """One registered check. Build it through ``Registry.pair`` or ``Registry.golden``."""

    name: str
    kind: str
    seed: int
    params: tuple[tuple[str, Any], ...]
    backends: tuple[str, ...]
    legacy: Producer | None = field(default=None, repr=False, compare=False)
    new: Producer | None = field(default=None, repr=False, compare=False)
    producer: Producer | None = field(default=None, repr=False, compare=False)
    strategies: tuple[tuple[str, Any], ...] = field(default=(), repr=False, compare=False)
    tags: tuple[str, ...] = field(default=(), compare=False)
    share: str | None = field(default=None, compare=False)
    localise: Callable[..., Any] | str | None = field(default=None, repr=False, compare=False)
    id: str = field(init=False)

    def __post_init__(self) -> None:
        for label, value in (("name", self.name), ("kind", self.kind)):
            if not isinstance(value, str) or not _NAME_RE.fullmatch(value):
                raise ValueError(f"case {label} {value!r}: expected an identifier ([A-Za-z][A-Za-z0-9_]*)")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise ValueError(f"case {self.name!r}: seed must be a non-negative int, got {self.seed!r}")
        if not self.backends:
            raise ValueError(f"case {self.name!r}: expected at least one backend")
        for backend in self.backends:
            if backend not in SUPPORTED_BACKENDS:
                raise ValueError(
                    f"case {self.name!r}: backend {backend!r} is not one of {', '.join(SUPPORTED_BACKENDS)}"
                )
        is_pair = self.legacy is not None or self.new is not None
        if is_pair and self.producer is not None:
            raise ValueError(
                f"case {self.name!r}: give either legacy+new (tier A) or producer (tier B), not both"
            )
        if is_pair and (self.legacy is None or self.new is None):
            raise ValueError(f"case {self.name!r}: a tier A case needs both a legacy and a new producer")
        if not is_pair and self.producer is None:
            raise ValueError(f"case {self.name!r}: expected legacy+new (tier A) or producer (tier B)")
        if self.strategies and not is_pair:
            raise ValueError(
                f"case {self.name!r}: hypothesis strategies are for tier A only; a golden must come from "
                "explicit params and seed (derandomized examples change with hypothesis versions)"
            )
        if isinstance(self.tags, str) or not isinstance(self.tags, tuple):
            raise TypeError(f"case {self.name!r}: tags must be a tuple of strings, got {self.tags!r}")
        for tag in self.tags:
            if not isinstance(tag, str) or not _NAME_RE.fullmatch(tag):
                raise ValueError(
                    f"case {self.name!r}: tag {tag!r}: expected an identifier ([A-Za-z][A-Za-z0-9_]*)"
                )
        if len(set(self.tags)) != len(self.tags):
            raise ValueError(f"case {self.name!r}: tags {self.tags!r} repeat a tag")
        if self.localise is not None and not is_pair:
            raise ValueError(
                f"case {self.name!r}: a localiser compares two sides; only tier A cases take one"
            )
        if isinstance(self.localise, str):
            object.__setattr__(self, "localise", LazyCallable(self.localise))
        if self.localise is not None and not callable(self.localise):
            raise TypeError(
                f"case {self.name!r}: localise must be callable, got {type(self.localise).__name__}"
            )
        if self.share is not None and (not isinstance(self.share, str) or not self.share):
            raise ValueError(f"case {self.name!r}: share must be a non-empty string, got {self.share!r}")
        clash = sorted({k for k, _ in self.params} & {k for k, _ in self.strategies})
        if clash:
            raise ValueError(f"case {self.name!r}: {clash} are both params and strategies")
        object.__setattr__(self, "id", make_case_id(self.kind, self.name, dict(self.params)))

    @property
    def tier(self) -> Tier:
        return "B" if self.producer is not None else "A"

    @property
    def param_dict(self) -> dict[str, Any]:
        return dict(self.params)

    @property
    def strategy_dict(self) -> dict[str, Any]:
        return dict(self.strategies)


class Registry:
    """An ordered, explicit set of cases; ids are unique within a registry.

    ``source`` is the spec the CLI imports it by (``module[:ATTR]`` or ``path.py[:ATTR]``); it goes
    into the reproduce commands of reports.
    """

    def __init__(self, source: str | None = None) -> None:
        self.source = source
        self._cases: dict[str, Case] = {}

    def add(self, case: Case) -> Case:
        if case.id in self._cases:
            raise ValueError(
                f"duplicate parity case id {case.id!r}; give the case a different name or params"
            )
        self._cases[case.id] = case
        return case

    def pair(
        self,
        name: str,
        *,
        kind: str,
        legacy: Producer,
        new: Producer,
        seed: int = 0,
        params: Mapping[str, Any] | None = None,
        backends: Sequence[str] = ("torch",),
        strategies: Mapping[str, Any] | None = None,
        tags: tuple[str, ...] = (),
        share: str | None = None,
        localise: Callable[..., Any] | str | None = None,
    ) -> Case:
        """Register a tier A case: ``legacy(**params, **drawn)`` vs ``new(**params, **drawn)``;
        ``localise(**params)``, when given, names where a failure first diverged."""
        return self.add(
            Case(
                name=name,
                kind=kind,
                seed=seed,
                params=tuple(sorted((params or {}).items())),
                backends=tuple(backends),
                legacy=legacy,
                new=new,
                strategies=tuple(sorted((strategies or {}).items())),
                tags=tags,
                share=share,
                localise=localise,
            )
        )

    def golden(
        self,
        name: str,
        *,
        kind: str,
        producer: Producer,
        seed: int = 0,
        params: Mapping[str, Any] | None = None,
        backends: Sequence[str] = ("torch",),
        tags: tuple[str, ...] = (),
        share: str | None = None,
    ) -> Case:
        """Register a tier B case: ``producer(**params)`` against its committed golden file."""
        return self.add(
            Case(
                name=name,
                kind=kind,
                seed=seed,
                params=tuple(sorted((params or {}).items())),
                backends=tuple(backends),
                producer=producer,
                tags=tags,
                share=share,
            )
        )

    def grid(
        self,
        name: str | None = None,
        *,
        params: Iterable[Mapping[str, Any] | tuple[str, Mapping[str, Any]]],
        legacy: Producer | None = None,
        new: Producer | None = None,
        producer: Producer | None = None,
        **common: Any,
    ) -> list[Case]:
        """Register one case per entry of ``params`` in one call: tier A with ``legacy`` and ``new``,
        tier B with ``producer``; every other keyword (``kind``, ``tags``, ``seed``, ``backends``,
        ``share`` ...) goes to each case. An entry is a params mapping (the case is named ``name``)
        or a ``(name, params)`` pair (a grid over several names). Ids are those of ``pair``/``golden``."""
        cases = []
        for entry in params:
            case_name, case_params = entry if isinstance(entry, tuple) else (name, entry)
            if case_name is None:
                raise ValueError("grid: give name=, or (name, params) pairs")
            if producer is not None:
                if legacy is not None or new is not None:
                    raise ValueError(
                        f"grid {case_name!r}: give either legacy+new (tier A) or producer (tier B)"
                    )
                cases.append(self.golden(case_name, producer=producer, params=case_params, **common))
            elif legacy is not None and new is not None:
                cases.append(self.pair(case_name, legacy=legacy, new=new, params=case_params, **common))
            else:
                raise ValueError(f"grid {case_name!r}: expected legacy+new (tier A) or producer (tier B)")
        return cases

    def suite(self, **defaults: Any) -> Suite:
        """A suite module's view of this registry: the keywords it gives every case (``tags``,
        ``backends``, ``seed``, ``kind``, ``share`` ...) said once; a case's own keyword wins."""
        return Suite(self, defaults)

    def get(self, case_id: str) -> Case | None:
        return self._cases.get(case_id)

    def __iter__(self) -> Iterator[Case]:
        return iter(self._cases.values())

    def __len__(self) -> int:
        return len(self._cases)

    def backends(self) -> list[str]:
        """Every backend some case runs on, in ``SUPPORTED_BACKENDS`` order."""
        used = {b for case in self for b in case.backends}
        return [b for b in SUPPORTED_BACKENDS if b in used]

    def tags(self) -> list[str]:
        """Every tag some case carries, sorted."""
        return sorted({t for case in self for t in case.tags})

    def select(
        self, keyword: str | None = None, ids: Sequence[str] = (), tags: Sequence[str] = ()
    ) -> list[Case]:
        """Cases whose id matches the ``-k`` expression and, when given, one of the exact ``ids``
        and one of the ``tags``."""
        unknown = [i for i in ids if i not in self._cases]
        if unknown:
            raise KeyError(f"unknown case id(s) {unknown}; `python -m parity list` shows the registered ids")
        unknown_tags = sorted(set(tags) - set(self.tags()))
        if unknown_tags:
            raise KeyError(f"unknown tag(s) {unknown_tags}; the registered tags are {self.tags()}")
        chosen = [c for c in self if (not ids or c.id in ids) and (not tags or set(c.tags) & set(tags))]
        return [c for c in chosen if keyword is None or keyword_matches(keyword, c.id)]


@dataclass(frozen=True)
class Suite:
    """``Registry.pair``/``golden``/``grid`` with one module's defaults (``Registry.suite``)."""

    registry: Registry
    defaults: Mapping[str, Any]

    def pair(self, name: str, **kwargs: Any) -> Case:
        return self.registry.pair(name, **{**self.defaults, **kwargs})

    def golden(self, name: str, **kwargs: Any) -> Case:
        return self.registry.golden(name, **{**self.defaults, **kwargs})

    def grid(self, name: str | None = None, **kwargs: Any) -> list[Case]:
        return self.registry.grid(name, **{**self.defaults, **kwargs})


# The default registry: suites under ``parity/suites/`` register into it.
REGISTRY = Registry(source="parity.suites:REGISTRY")


def load_registry(spec: str) -> Registry:
    """Import ``module[:ATTR]`` or ``path/to/file.py[:ATTR]`` and return its registry (ATTR: REGISTRY)."""
    target, _, attr = spec.partition(":")
    attr = attr or "REGISTRY"
    if target.endswith(".py"):
        path = Path(target).resolve()
        if not path.is_file():
            raise FileNotFoundError(f"cases file {target!r} does not exist")
        mod_name = "_parity_cases_" + hashlib.sha1(str(path).encode()).hexdigest()[:12]
        module = sys.modules.get(mod_name)
        if module is None:
            module_spec = importlib.util.spec_from_file_location(mod_name, path)
            if module_spec is None or module_spec.loader is None:
                raise ImportError(f"cannot import cases file {target!r}")
            module = importlib.util.module_from_spec(module_spec)
            sys.modules[mod_name] = module
            module_spec.loader.exec_module(module)
    else:
        module = importlib.import_module(target)
    registry = getattr(module, attr, None)
    if not isinstance(registry, Registry):
        raise TypeError(f"{target}:{attr} is {type(registry).__name__}, expected a parity.cases.Registry")
    if registry.source is None:
        registry.source = spec
    return registry
