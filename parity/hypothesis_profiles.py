"""Hypothesis profiles for parity tests: dev, ci, nightly, repro, explore, selfcheck; chosen by ``HYPOTHESIS_PROFILE``.

``explore`` is the nightly run of the drawn ``explore`` cases: 2000 examples at most (about two
hours of runs), so ``--explore-budget`` (seconds) is what ends it.

``selfcheck`` is ``ci`` without the shrink phase: a self-check only asks whether a planted case
goes red, and shrinking a drawn resume example re-runs whole trainings for minutes.

``ci`` extends hypothesis's built-in ``ci`` profile (derandomized, no example database, blobs
printed), which hypothesis itself loads when ``CI`` is set. Without ``HYPOTHESIS_PROFILE`` the
choice is ``ci`` under CI and ``dev`` elsewhere. Hypothesis only ever drives tier A cases:
goldens never come from generated examples.
"""

from __future__ import annotations

import os

__all__ = ["PROFILES", "register_profiles", "selected_profile", "load_selected_profile"]

PROFILES = ("dev", "ci", "nightly", "repro", "explore", "selfcheck")
_builtin_ci = None


def register_profiles() -> None:
    """Register the six profiles (idempotent)."""
    from hypothesis import HealthCheck, Phase, Verbosity, settings

    global _builtin_ci
    if _builtin_ci is None:
        _builtin_ci = settings.get_profile("ci")
    settings.register_profile("dev", max_examples=25, deadline=None, print_blob=True)
    settings.register_profile("ci", parent=_builtin_ci, max_examples=50)
    settings.register_profile(
        "selfcheck", parent=settings.get_profile("ci"), phases=[Phase.explicit, Phase.reuse, Phase.generate]
    )
    settings.register_profile(
        "nightly",
        max_examples=1000,
        deadline=None,
        print_blob=True,
        suppress_health_check=[HealthCheck.too_slow],
    )
    settings.register_profile(
        "explore",
        max_examples=2000,
        deadline=None,
        print_blob=True,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )
    settings.register_profile(
        "repro",
        phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink],
        deadline=None,
        print_blob=True,
        verbosity=Verbosity.verbose,
    )


def selected_profile(environ: os._Environ[str] | dict[str, str] | None = None) -> str:
    env = os.environ if environ is None else environ
    name = env.get("HYPOTHESIS_PROFILE") or ("ci" if env.get("CI") else "dev")
    if name not in PROFILES:
        raise ValueError(f"HYPOTHESIS_PROFILE={name!r} is not one of {', '.join(PROFILES)}")
    return name


def load_selected_profile() -> str:
    """Register the profiles and load the selected one; returns its name."""
    from hypothesis import settings

    register_profiles()
    name = selected_profile()
    settings.load_profile(name)
    return name
