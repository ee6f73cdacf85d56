"""ConfigManager: command line -> ``HyperTrainer.Config``, from a Python recipe or a legacy YAML file.

Two ways in::

    python -m hyper_parallel.train --module qwen3_5 --config debug [--training.steps 10 ...]
    python -m hyper_parallel.train examples/debug/train.yaml [--train.max_steps=10 ...]

The first goes through tyro: precedence is root defaults < recipe < command line. The second is
the legacy parser plus ``legacy_to_trainer_config``, so an old YAML keeps working unchanged.

Flag style (tyro path): every field takes exactly one value, booleans included
(``--debug.deterministic true``; no ``--no_x`` twins), and both ``--a.b v`` and ``--a.b=v`` work.
Names are the field names with underscores (hyphens are accepted too). Booleans take the legacy
spellings (true/false, yes/no, on/off, 1/0, any case), ``None`` clears an optional field.

Layering: ``config`` sits below ``trainer`` and names nothing above it. The caller hands in the root
Config class and, for the YAML path, a ``LegacyFormat`` (the legacy parser and mapping) as objects:
``hyper_parallel.trainer.legacy_mapping.config_manager()`` builds the manager of
``python -m hyper_parallel.train``. Only recipe modules are looked up by name (``--module``), as
torchtitan does. tyro is only imported on the tyro path.
"""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
import sys
import warnings
from collections.abc import Callable, Sequence
from typing import Any

from hyper_parallel.config._checks import parse_bool
from hyper_parallel.config.cross_checks import validate_cross_fields
from hyper_parallel.config.refusals import CommandLineError, refusals_as_errors

__all__ = ["CommandLineError", "ConfigManager", "LegacyFormat", "LEGACY_SUFFIXES"]

# A first positional argument with one of these suffixes selects the legacy YAML path.
LEGACY_SUFFIXES = (".yaml", ".yml")

_SELECTORS = ("--module", "--config")
_HELP = ("-h", "--help")


def _import_tyro() -> Any:
    try:
        import tyro
    except ImportError as exc:
        raise ImportError(
            "the --module/--config command line needs tyro (pip install tyro); "
            "the legacy YAML path (CONFIG.yaml --a.b=v) works without it"
        ) from exc
    return tyro


@dataclasses.dataclass(frozen=True)
class LegacyFormat:
    """How a legacy YAML command line becomes the root Config: ``to_root(parse(tokens))``."""

    parse: Callable[[list[str]], Any]  # ``CONFIG.yaml --a.b=v ...`` -> legacy args
    to_root: Callable[[Any], Any]  # legacy args -> an instance of the root Config


def _bool_registry(tyro: Any) -> Any:
    """A tyro registry whose ``bool`` takes one value in any of the legacy spellings."""
    from tyro.constructors import ConstructorRegistry, PrimitiveConstructorSpec, PrimitiveTypeInfo

    registry = ConstructorRegistry()

    @registry.primitive_rule
    def _bool_rule(type_info: PrimitiveTypeInfo) -> PrimitiveConstructorSpec | None:
        if type_info.type is not bool:
            return None
        return PrimitiveConstructorSpec(
            nargs=1,
            metavar="{true,false}",
            instance_from_str=lambda args: parse_bool(args[0]),
            is_instance=lambda value: isinstance(value, bool),
            str_from_instance=lambda value: ["true" if value else "false"],
        )

    return registry


def _tyro_options(tyro: Any, *, cascade: bool = True) -> dict[str, Any]:
    """The tyro settings that define the flag style; shared by parsing and the surface listing.

    ``cascade``: a subcommand's flags (``dataloader:hf_text --dataloader.train_path ...``) and the
    root's may come in any order after it, and the default subcommand's flags need no subcommand.
    The surface listing walks the plain parser, where each subcommand's flags sit under it.
    """
    return {
        "config": (tyro.conf.FlagConversionOff,) + ((tyro.conf.CascadeSubcommandArgs,) if cascade else ()),
        "use_underscores": True,
        "registry": _bool_registry(tyro),
    }


def _split_selectors(argv: Sequence[str]) -> tuple[dict[str, str], list[str]]:
    """Take ``--module``/``--config`` (``--x v`` or ``--x=v``) out of argv; return them and the rest."""
    picked: dict[str, str] = {}
    rest: list[str] = []
    tokens = list(argv)
    i = 0
    while i < len(tokens):
        token = tokens[i]
        flag, eq, value = token.partition("=")
        if flag in _SELECTORS:
            if not eq:
                if i + 1 >= len(tokens) or tokens[i + 1].startswith("-"):
                    raise CommandLineError(flag, "expected a value (e.g. --module qwen3_5 --config debug)")
                value = tokens[i + 1]
                i += 1
            if flag in picked:
                raise CommandLineError(flag, f"expected once, given twice ({picked[flag]!r} and {value!r})")
            picked[flag] = value
        else:
            rest.append(token)
        i += 1
    return picked, rest


def _first_positional(argv: Sequence[str]) -> str | None:
    """The first token that is not an option nor the value of a ``--flag value`` pair."""
    previous: str | None = None
    for token in argv:
        if not token.startswith("-"):
            takes_value = previous is not None and previous.startswith("-") and "=" not in previous
            if not takes_value:
                return token
        previous = token
    return None


def _import_failed(module: str, path: str, exc: BaseException) -> ImportError:
    reason = " ".join(str(exc).split()) or "no message"
    return ImportError(
        f"--module {module!r}: recipe module {path!r} failed to import ({type(exc).__name__}: {reason}); "
        "the other recipe modules are not affected"
    )


def _walk_flags(parser: Any, out: set[str]) -> set[str]:
    for action in parser._actions:
        # A subparsers action (tyro's vendored argparse has its own class): its choices are parsers.
        if not action.option_strings and isinstance(getattr(action, "choices", None), dict):
            for sub in action.choices.values():
                _walk_flags(sub, out)
        else:
            out.update(action.option_strings)
    return out


def _walk_subcommands(parser: Any, out: set[str]) -> set[str]:
    for action in parser._actions:
        if not action.option_strings and isinstance(getattr(action, "choices", None), dict):
            out.update(action.choices)
            for sub in action.choices.values():
                _walk_subcommands(sub, out)
    return out


@dataclasses.dataclass(frozen=True)
class ConfigManager:
    """Parses a command line into the root Config.

    ``root`` is the Configurable root class (``HyperTrainer.Config``), ``legacy`` the YAML path
    (``None``: recipes only). ``recipe_package`` holds one module per ``--module`` name, each
    exposing ``RECIPES: dict[str, () -> Config]``.
    """

    root: type
    legacy: LegacyFormat | None = None
    recipe_package: str = "hyper_parallel.recipes"
    prog: str = "python -m hyper_parallel.train"

    # ------------------------------------------------------------------ parsing
    def parse_args(self, argv: Sequence[str] | None = None) -> Any:
        """``[--module M --config NAME] [--a.b v ...]`` or ``CONFIG.yaml [--a.b.c=v ...]`` -> root Config.

        ``argv`` defaults to ``sys.argv[1:]``. A refused flag or value (unknown flag, wrong type,
        outside its choices, missing, refused by a Config's ``__post_init__``) and a bad
        ``--module``/``--config`` raise ``CommandLineError`` (a ``ValueError``) whose message is
        one line, ``<flag>: <what was expected>`` (``hyper_parallel.config.refusals``); a Config
        whose components disagree is a ``ValueError`` naming the field (``validate_cross_fields``).
        ``--help`` prints tyro's help and exits 0.
        """
        config = self._parse(argv)
        validate_cross_fields(config)
        return config

    def _parse(self, argv: Sequence[str] | None) -> Any:
        tokens = list(sys.argv[1:] if argv is None else argv)
        root_cls = self.root_class()
        picked, rest = _split_selectors(tokens)
        positional = _first_positional(rest)
        if positional is not None and positional.endswith(LEGACY_SUFFIXES):
            if picked:
                raise CommandLineError(
                    "/".join(sorted(picked)),
                    f"cannot be combined with the legacy YAML file {positional!r}; expected either a recipe "
                    "(--module/--config) or a YAML file",
                )
            return self._parse_legacy(tokens, root_cls)

        module, name = picked.get("--module"), picked.get("--config")
        if name is not None and module is None:
            raise CommandLineError(
                "--config",
                f"{name!r} needs --module (the recipe module, e.g. --module qwen3_5); "
                "a legacy YAML file is passed as the first positional argument instead",
            )
        default = root_cls() if module is None else self.load_recipe(module, name)
        return self._parse_tyro(root_cls, default, rest)

    def _parse_legacy(self, tokens: list[str], root_cls: type) -> Any:
        if self.legacy is None:
            raise ValueError(
                f"{tokens[0]!r}: this command line takes no legacy YAML file; use --module/--config"
            )
        config = self.legacy.to_root(self.legacy.parse(tokens))
        if not isinstance(config, root_cls):
            raise TypeError(
                f"{self.legacy.to_root!r} returned {type(config).__qualname__}; expected {root_cls.__qualname__}"
            )
        return config

    def _parse_tyro(self, root_cls: type, default: Any, rest: list[str]) -> Any:
        tyro = _import_tyro()
        description = self.describe() if any(t in _HELP for t in rest) else None
        with refusals_as_errors(rest, lambda: self._surface(default)):
            return tyro.cli(
                root_cls,
                args=rest,
                default=default,
                prog=self.prog,
                description=description,
                **_tyro_options(tyro),
            )

    def root_class(self) -> type:
        """The root Config class."""
        cls = self.root
        if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)):
            raise TypeError(f"ConfigManager.root is {cls!r}; expected a Config dataclass")
        return cls

    # ------------------------------------------------------------------ recipes
    def recipe_module_path(self, module: str) -> str:
        """``--module`` value -> module path: a bare name lives in ``recipe_package``, a dotted one is used as is."""
        return module if "." in module else f"{self.recipe_package}.{module}"

    def recipes(self, module: str) -> dict[str, Callable[[], Any]]:
        """The ``RECIPES`` mapping of a recipe module; an unknown module names the available ones."""
        path = self.recipe_module_path(module)
        try:
            mod = importlib.import_module(path)
        except ModuleNotFoundError as exc:
            if exc.name is None or not (path == exc.name or path.startswith(exc.name + ".")):
                raise _import_failed(module, path, exc) from exc  # one of its own imports failed
            raise CommandLineError(
                "--module",
                f"expected one of {', '.join(self.recipe_modules()) or '(none)'} (or a dotted module path), "
                f"got {module!r} (no recipe module {path!r})",
            ) from None
        except Exception as exc:  # the module raised while importing: only this --module is broken
            raise _import_failed(module, path, exc) from exc
        recipes = getattr(mod, "RECIPES", None)
        if not isinstance(recipes, dict):
            raise TypeError(f"--module {module!r}: {path} must define RECIPES = {{name: function -> Config}}")
        return recipes

    def load_recipe(self, module: str, name: str | None) -> Any:
        """Call recipe ``name`` of ``module``; the result must be an instance of the root Config."""
        recipes = self.recipes(module)
        if name is None or name not in recipes:
            given = "missing" if name is None else f"got {name!r}"
            raise CommandLineError(
                "--config",
                f"expected one of: {', '.join(sorted(recipes)) or '(none)'} (the recipes of --module {module!r}), "
                f"{given}",
            )
        config = recipes[name]()
        root_cls = self.root_class()
        if not isinstance(config, root_cls):
            raise TypeError(
                f"recipe {module}:{name} returned {type(config).__qualname__}; expected {root_cls.__qualname__}"
            )
        return config

    def recipe_modules(self) -> list[str]:
        """Names of the modules in ``recipe_package`` (each one a ``--module`` value)."""
        package = importlib.import_module(self.recipe_package)
        return sorted(
            info.name for info in pkgutil.iter_modules(package.__path__) if not info.name.startswith("_")
        )

    def available_recipes(self) -> dict[str, list[str]]:
        """``{module: [recipe names]}`` for every module of ``recipe_package`` that imports."""
        return {module: names for module, names in self._recipe_listing().items() if isinstance(names, list)}

    def _recipe_listing(self) -> dict[str, list[str] | str]:
        """``{module: [recipe names] or why it is unusable}``: one broken module hides no other."""
        listing: dict[str, list[str] | str] = {}
        for module in self.recipe_modules():
            try:
                listing[module] = sorted(self.recipes(module))
            except (ImportError, TypeError) as exc:
                listing[module] = str(exc)
        return listing

    def describe(self) -> str:
        """The help text's preamble: both ways in, the flag style and the available recipes."""
        recipes = [
            f"  {module}: {', '.join(names) if isinstance(names, list) else '(unusable) ' + names}"
            for module, names in self._recipe_listing().items()
        ]
        paragraphs = [
            "Build a HyperTrainer and train:\n"
            f"  {self.prog} --module MODULE --config RECIPE [--section.field VALUE ...]\n"
            f"  {self.prog} CONFIG.yaml [--legacy.dotted.key=VALUE ...]",
            "Precedence: defaults < recipe < command line. Every flag takes one value "
            "(--debug.deterministic true); '--a.b v' and '--a.b=v' both work.",
            "Recipes (--module MODULE: --config RECIPE ...):\n" + "\n".join(recipes or ["  (none)"]),
        ]
        return "\n\n".join(paragraphs)

    # ------------------------------------------------------------------ surface
    def cli_flags(self, default: Any = None) -> list[str]:
        """Every option string tyro accepts for the root tree (with ``default``), sorted.

        This is the command-line surface a test freezes; ``--module``/``--config`` are taken out
        before tyro runs, so they are added here.
        """
        root_cls = self.root_class()
        return self._surface(root_cls() if default is None else default)[0]

    def _surface(self, default: Any) -> tuple[list[str], list[str]]:
        """The flags and the subcommands tyro accepts with ``default`` (for "did you mean")."""
        tyro = _import_tyro()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            parser = tyro.extras.get_parser(
                self.root_class(), default=default, **_tyro_options(tyro, cascade=False)
            )
        return sorted(_walk_flags(parser, set(_SELECTORS))), sorted(_walk_subcommands(parser, set()))
