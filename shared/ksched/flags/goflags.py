"""Go's flag syntax (spf13/pflag, as kube-scheduler parses its command line) on argparse.

:class:`GoFlagParser` is an ``argparse.ArgumentParser`` that reads a command line the way
kube-scheduler's does:

- booleans take ``--flag``, ``--flag=true|false`` (and Go's other ``strconv.ParseBool`` spellings:
  ``1 t T TRUE True 0 f F FALSE False``); ``--flag false`` is *not* a value (pflag: a bare boolean
  never consumes the next word). Declare them with ``action=GoBool`` (``--no-flag`` is accepted too,
  ksched's older spelling);
- ``--name=value`` and ``--name value`` for every other flag; a one-letter flag also as ``-v 4``,
  ``-v=4``, ``-v4``;
- no prefix abbreviations (``--leader`` is not ``--leader-elect``);
- an unknown flag fails as cobra does: ``Error: unknown flag: --foo`` on standard error, exit 1.

:func:`klog_level` maps klog's ``--v`` verbosity onto Python's log levels.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})

_UNRECOGNIZED = "unrecognized arguments: "
"""How argparse's ``parse_args`` reports words it could not place (Python 3.11 - 3.13)."""
UNKNOWN_FLAG_EXIT_CODE = 1
"""kube-scheduler's exit status for a command line it cannot parse."""


def parse_bool(text: str) -> bool:
    """Go's ``strconv.ParseBool``; ValueError (pflag's wording) for anything else."""
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise ValueError(f'strconv.ParseBool: parsing "{text}": invalid syntax')


class GoBool(argparse.Action):
    """A pflag boolean: ``--x`` is true, ``--x=false`` false, ``--no-x`` false (ksched's spelling)."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        negated = [f"--no-{o[2:]}" for o in option_strings if o.startswith("--")]
        kwargs.pop("nargs", None)
        kwargs.pop("const", None)
        super().__init__([*option_strings, *negated], dest, nargs="?", const="true", **kwargs)
        self.negated = frozenset(negated)

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        if option_string in self.negated:
            if values not in (None, "true"):
                parser.error(f"{option_string} takes no value")
            setattr(namespace, self.dest, False)
            return
        try:
            setattr(namespace, self.dest, parse_bool(str(values)))
        except ValueError as exc:
            parser.error(f'invalid argument "{values}" for "{option_string}" flag: {exc}')


def _bool_options(parser: argparse.ArgumentParser) -> frozenset[str]:
    return frozenset(o for a in parser._actions if isinstance(a, GoBool) for o in a.option_strings)


def _short_options(parser: argparse.ArgumentParser) -> frozenset[str]:
    return frozenset(
        o for a in parser._actions for o in a.option_strings if len(o) == 2 and o[0] == "-" and o[1] != "-"
    )


def normalize(argv: Sequence[str], bools: frozenset[str], shorts: frozenset[str]) -> list[str]:
    """Rewrite a Go command line into argparse's: a bare boolean gets ``=true`` (so it never takes
    the next word), ``-v=4`` becomes ``-v 4``. Everything after ``--`` is left alone."""
    out: list[str] = []
    words = list(argv)
    for i, word in enumerate(words):
        if word == "--":
            out += words[i:]
            break
        name, eq, value = word.partition("=")
        if not eq and word in bools and not word.startswith("--no-"):
            out.append(f"{word}=true")
        elif eq and name in shorts:
            out += [name, value]
        else:
            out.append(word)
    return out


class GoFlagParser(argparse.ArgumentParser):
    """argparse with pflag's syntax and cobra's unknown-flag error (module docstring)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["allow_abbrev"] = False
        super().__init__(*args, **kwargs)

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        argv = sys.argv[1:] if args is None else list(args)
        return super().parse_known_args(normalize(argv, _bool_options(self), _short_options(self)), namespace)

    def error(self, message: str) -> NoReturn:
        """argparse's "unrecognized arguments" becomes cobra's unknown-flag error."""
        if message.startswith(_UNRECOGNIZED):
            self.unknown_flag(message[len(_UNRECOGNIZED) :].split(" ", maxsplit=1)[0])
        super().error(message)

    def unknown_flag(self, word: str) -> NoReturn:
        """cobra's message for the first word it could not place, then exit 1."""
        if word.startswith("--"):
            text = f"unknown flag: {word.partition('=')[0]}"
        elif word.startswith("-") and len(word) > 1:
            text = f"unknown shorthand flag: {word[1]!r} in {word}"
        else:
            text = f'unknown command "{word}" for "{self.prog}"'
        self.print_usage(sys.stderr)
        self.exit(UNKNOWN_FLAG_EXIT_CODE, f"Error: {text}\n")


def klog_level(verbosity: int) -> int:
    """klog ``--v`` → Python level: 0 to 3 (klog's default output and steady-state detail) INFO,
    4 and above (klog's debug and trace levels) DEBUG."""
    if verbosity < 0:
        raise ValueError(f"--v must not be negative, got {verbosity}")
    return logging.DEBUG if verbosity >= 4 else logging.INFO
