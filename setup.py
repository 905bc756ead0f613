"""Build hook (everything else is in pyproject.toml): the wheel leaves out the ``*_test.py`` tables
that sit beside the code they test; setuptools' package-data excludes do not apply to modules."""

from __future__ import annotations

from fnmatch import fnmatch
from pathlib import PurePath

from setuptools import setup
from setuptools.command.build_py import build_py

TEST_FILES = ("*_test.py", "test_*.py", "conftest.py")
"""Module file names that are tests (pytest's ``python_files`` and its conftest), never shipped."""


def is_test_file(path: str) -> bool:
    """Whether the module at ``path`` is a test: a test file name, or anywhere under a tests folder."""
    p = PurePath(path)
    return any(fnmatch(p.name, pattern) for pattern in TEST_FILES) or "tests" in p.parts[:-1]


class BuildPyWithoutTests(build_py):
    """``build_py`` (what the wheel is made of) minus the test modules."""

    def find_package_modules(self, package: str, package_dir: str) -> list[tuple[str, str, str]]:
        modules = super().find_package_modules(package, package_dir)
        return [m for m in modules if not is_test_file(m[2])]


if __name__ == "__main__":  # as setuptools' build backend runs it (tests import the helpers above)
    setup(cmdclass={"build_py": BuildPyWithoutTests})
