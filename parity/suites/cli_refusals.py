"""Goldens of both command lines' refusals: every config field swept, the exact line it gets.

Tier B, one golden per route (``parity.config_sweep.ROUTES``): the legacy YAML with one
``--a.b=v`` override through ``scripts/train_lm.py`` and through ``python -m hyper_parallel.train``,
and the debug recipe with one ``--a.b v`` flag. Each field of the config trees gets one value per
class that refuses somewhere (out of range, of the wrong type, outside its closed set), and the
golden holds, per command line, ``ok`` or the exit status and the one error line. A check that
stops refusing, refuses another value, or words its refusal differently turns the golden red and
names the field; the fault suite (``tests/torch/ut/trainer/test_cli_fault_suite.py``) checks
that each line names its field, on drawn values.

The two entry points differ by design on the legacy YAML: the new one builds the model Config
while parsing and so refuses model sizes at parse time, while the legacy one refuses them when the
trainer builds the model; the two goldens record that difference line by line.

The ``cli_boundaries`` goldens give each number field the values where checks turn instead: 0, 1
and 2 (0 and 1 for a float) and the value of each number field beside it in its section, so a
bound moved by one (``>`` for ``>=``, ``> 1`` for ``> 2``) or a rule between two fields that
turns at equality (``lr_min`` against ``lr``) changes a row.

The ``cli_misuse`` goldens take the shape of the command itself on each entry point (no arguments, a
missing file, an unknown module or recipe, a flag without its value or with two, a near-miss and a
far unknown flag, a flag spelled with hyphens, an extra value after ``--a.b=v``, an unknown
subcommand, a stray word, a flag given twice, a YAML file with ``--module``, torchrun's
``--local-rank=`` token, ``LOCAL_RANK`` that is not an int, a warmup longer than the run, a
Config's refusal naming a field of two sections, and the help text's description).

The ``cli_yaml_files`` goldens take the shape of the YAML file on each entry point: not YAML, a
list or nothing at the top, unknown and moved top-level keys, a section that is a number or null, an
unknown or near-miss key before the known ones of a section, a duplicate key, a key that is a
number, a string or a mapping where a number goes (the error line, or ``ok`` with the values the
file moved, and the warnings).

The ``cli_override_types`` golden takes the overrides whose target's type decides the value: a key
under a mapping field (``model.config_overrides``: int, float, bool or the string), a string field
given number- or bool-like text, a number field given a bool or a non-finite number, a closed set
given another case, a section given a YAML mapping.

The ``cli_processes`` goldens start each entry point as a user does, a process of its own whose
arguments come from ``sys.argv`` (every other row calls the parse in this process): the exit status
and the error lines of a refused value, and of an init step that refuses after the parse.

The ``cli_config_manager`` golden (``parity.manager_sweep``) takes ``ConfigManager`` as a library,
with a root Config and recipe package of its own: fields a recipe leaves to the command line, a
mutually exclusive pair, a refusal two sections deep, recipe modules that fail to import (by
``--module`` and in the help text), ``cli_flags`` with a recipe's default, the same refusals under a
tyro without the parse-error hook, and both entry points' ``parse_args()`` reading ``sys.argv``.

The ``config_mapping`` golden (``parity.mapping_sweep``) takes each legacy field to values it accepts
besides the debug YAML's, through the new entry point: the row is every leaf of
``HyperTrainer.Config`` that moved (a field dropped, sent elsewhere or through another rule changes
it), or the error line.

The ``config_values`` goldens (``parity.value_sweep``) take the ways in that no command-line string
reaches: a YAML file holding ``null``, a list or a mapping in each field and an unknown key in each
section (status, error line and warnings, through either entry point), and a recipe built in
Python, each field of each Config node set to one value per class (what the node and
``HyperTrainer.check_config`` refuse before any init step).
"""

from __future__ import annotations

from parity.cases import REGISTRY
from parity.config_sweep import (
    MISUSE,
    PROCESS_COMMANDS,
    ROUTES,
    boundaries,
    misuse,
    override_types,
    processes,
    sweep,
    yaml_files,
)
from parity.manager_sweep import manager_rows
from parity.mapping_sweep import mapping_rows
from parity.value_sweep import VALUE_ROUTES, value_rows

SUITE = REGISTRY.suite(tags=("cli",), kind="cli")
SUITE.grid(params=[("cli_refusals", {"route": route}) for route in ROUTES], producer=sweep)
SUITE.grid(params=[("cli_boundaries", {"route": route}) for route in ROUTES], producer=boundaries)
SUITE.grid(params=[("cli_misuse", {"entry": entry}) for entry in MISUSE], producer=misuse)
SUITE.grid(params=[("cli_yaml_files", {"entry": entry}) for entry in MISUSE], producer=yaml_files)
SUITE.golden("cli_override_types", producer=override_types)
SUITE.grid(params=[("config_values", {"route": route}) for route in VALUE_ROUTES], producer=value_rows)
SUITE.golden("config_mapping", producer=mapping_rows)
SUITE.grid(params=[("cli_processes", {"entry": entry}) for entry in PROCESS_COMMANDS], producer=processes)
SUITE.golden("cli_config_manager", producer=manager_rows)
