"""Shared pytest fixtures: each fixture family lives in its own module under tests/fixtures/."""

pytest_plugins = [
    "tests.fixtures.nats",
    "tests.fixtures.kubesim",
    "tests.fixtures.kube136",
    "tests.fixtures.logs",
    "tests.fixtures.repairs",
    "tests.fixtures.hangs",
    "tests.fixtures.kubectl",
]
