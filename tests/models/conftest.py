"""The model tests build trainers too: the same process-group teardown as the trainer tests."""

from tests.trainer.conftest import _no_leaked_process_group  # noqa: F401
