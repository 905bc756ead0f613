"""How hard the fuzzers try: hypothesis profiles ``ci`` (the default, a few seconds per target, run
by ``make test``) and ``chaos`` (hundreds of times more examples), chosen by ``KSCHED_FUZZ_PROFILE``::

    KSCHED_FUZZ_PROFILE=chaos .venv/bin/pytest tests/fuzz

Each fuzz test takes its settings from :func:`fuzz_settings`, scaled from its own example count in
``ci``, so the profile never changes the settings of other hypothesis tests.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

PROFILE_ENV = "KSCHED_FUZZ_PROFILE"
_SCALE = {"ci": 1, "chaos": 40}

settings.register_profile(
    "ci",
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
settings.register_profile("chaos", settings.get_profile("ci"))


def profile_name() -> str:
    name = os.environ.get(PROFILE_ENV, "ci")
    if name not in _SCALE:
        raise ValueError(f"{PROFILE_ENV}={name!r}: expected one of {', '.join(_SCALE)}")
    return name


def fuzz_settings(examples: int) -> settings:
    """``examples`` examples in the ``ci`` profile, that many times the chaos scale in ``chaos``."""
    name = profile_name()
    return settings(settings.get_profile(name), max_examples=examples * _SCALE[name])
