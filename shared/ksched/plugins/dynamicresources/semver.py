"""Semantic versions as the Kubernetes CEL ``semver`` library parses and orders them
(github.com/blang/semver/v4 ``Parse`` and ``Compare``: strict ``MAJOR.MINOR.PATCH[-PRE][+BUILD]``)."""

from __future__ import annotations

import re
from dataclasses import dataclass

_NUMERIC = re.compile(r"0|[1-9][0-9]*")
_IDENT = re.compile(r"[0-9A-Za-z-]+")


@dataclass(frozen=True)
class Version:
    major: int
    minor: int
    patch: int
    pre: tuple[str, ...] = ()
    build: tuple[str, ...] = ()

    def __str__(self) -> str:
        text = f"{self.major}.{self.minor}.{self.patch}"
        if self.pre:
            text += "-" + ".".join(self.pre)
        if self.build:
            text += "+" + ".".join(self.build)
        return text


def parse(text: str) -> Version:
    """ValueError (with blang's wording where it matters) for anything but a strict version."""
    if not text:
        raise ValueError("Version string empty")
    core, plus, build = text.partition("+")
    core, dash, pre = core.partition("-")
    parts = core.split(".")
    if len(parts) != 3:
        raise ValueError("No Major.Minor.Patch elements found")
    numbers = []
    for name, part in zip(("Major", "Minor", "Patch"), parts, strict=True):
        if not part.isascii() or not part.isdigit():
            raise ValueError(f"Invalid character(s) found in {name.lower()} number {part!r}")
        if _NUMERIC.fullmatch(part) is None:
            raise ValueError(f"{name} number must not contain leading zeroes {part!r}")
        numbers.append(int(part))
    pre_ids = tuple(pre.split(".")) if dash else ()
    for ident in pre_ids:
        if _IDENT.fullmatch(ident) is None:
            raise ValueError(f"Invalid character(s) found in prerelease {ident!r}")
        if ident.isdigit() and _NUMERIC.fullmatch(ident) is None:
            raise ValueError(f"Prerelease number must not contain leading zeroes {ident!r}")
    build_ids = tuple(build.split(".")) if plus else ()
    for ident in build_ids:
        if _IDENT.fullmatch(ident) is None:
            raise ValueError(f"Invalid character(s) found in build meta data {ident!r}")
    return Version(numbers[0], numbers[1], numbers[2], pre_ids, build_ids)


def is_valid(text: str) -> bool:
    try:
        parse(text)
    except ValueError:
        return False
    return True


def _compare_ident(a: str, b: str) -> int:
    a_num, b_num = a.isdigit(), b.isdigit()
    if a_num and b_num:
        return (int(a) > int(b)) - (int(a) < int(b))
    if a_num != b_num:
        return -1 if a_num else 1  # numeric identifiers have lower precedence
    return (a > b) - (a < b)


def compare(a: Version, b: Version) -> int:
    """-1, 0 or 1; build metadata is ignored, a pre-release sorts before its release."""
    for left, right in ((a.major, b.major), (a.minor, b.minor), (a.patch, b.patch)):
        if left != right:
            return -1 if left < right else 1
    if not a.pre or not b.pre:
        return (not a.pre) - (not b.pre) if a.pre or b.pre else 0
    for x, y in zip(a.pre, b.pre, strict=False):
        order = _compare_ident(x, y)
        if order:
            return order
    return (len(a.pre) > len(b.pre)) - (len(a.pre) < len(b.pre))
