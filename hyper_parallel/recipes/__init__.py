"""Python recipes for ``--module NAME --config RECIPE`` (``hyper_parallel.config.ConfigManager``).

Each module here is one ``--module`` value and exposes ``RECIPES: dict[str, () -> HyperTrainer.Config]``:
a recipe is a function so that every call returns a fresh tree (nothing is shared between runs).
A recipe sets every value it cares about explicitly; the command line then overrides single
fields (precedence: defaults < recipe < command line).

This package stays import-light: the CLI lists the modules with ``pkgutil`` and imports only the
one that ``--module`` names.
"""
