"""Request bodies as the API server's create and update handlers read them, and the 400 for a body
whose type meta cannot be read.

The handlers first read ``apiVersion`` and ``kind`` with Go's ``encoding/json`` (into a struct of two
strings). A body that is no JSON, no object, or whose ``apiVersion`` or ``kind`` is no string is
"unrecognized": 400 ``the object provided is unrecognized (must be of type Pod): couldn't get
version/kind; json parse error: <Go's error> (<summary>)``, the summary being the body's first 30
bytes (hex unless it starts with ``{``, `` ...`` when cut, ``<empty>`` for none). Go's syntax
errors are reproduced by a scanner with the states and texts of ``encoding/json``'s. JSON ``null``
reads as an empty object (Go's zero value).
"""

from __future__ import annotations

import codecs
from typing import Any

from . import errors
from .errors import ApiError
from .jsonio import decode
from .time_fields import json_kind

#: how many bytes of an unrecognized body its 400 quotes
SUMMARY_BYTES = 30
#: the struct the type meta is read into, as Go prints its type
TYPE_META_STRUCT = (
    'struct { APIVersion string "json:\\"apiVersion,omitempty\\""; Kind string "json:\\"kind,omitempty\\"" }'
)


def _go_replace(exc: UnicodeError) -> tuple[str, int]:
    """One U+FFFD per invalid byte, as Go's encoding/json writes a string of invalid UTF-8."""
    if not isinstance(exc, UnicodeDecodeError):
        raise exc
    return "\ufffd" * (exc.end - exc.start), exc.end


codecs.register_error("ksched-go-replace", _go_replace)


def summarize(data: bytes, limit: int = SUMMARY_BYTES) -> str:
    """The body as the 400 of an unrecognized body quotes it."""
    if not data:
        return "<empty>"
    cut = " ..." if len(data) > limit else ""
    if data[:1] == b"{":
        return data[:limit].decode("utf-8", "ksched-go-replace") + cut
    return data[:limit].hex() + cut


def unrecognized(kind: str, problem: str, data: bytes) -> ApiError:
    """400 for a body of ``kind`` that does not read (``problem``: the decoder's error)."""
    return errors.bad_request(
        f"the object provided is unrecognized (must be of type {kind}): {problem} ({summarize(data)})"
    )


NO_TYPE_META = "couldn't get version/kind; json parse error: "


def no_type_meta(kind: str, detail: str, data: bytes) -> ApiError:
    """400 for a body of ``kind`` whose type meta does not read (``detail``: Go's JSON error)."""
    return unrecognized(kind, NO_TYPE_META + detail, data)


def type_meta_error(obj: Any) -> str | None:
    """The error reading the type meta of decoded JSON ``obj`` (None: it reads): Go's JSON error, or
    an apiVersion of more than group and version."""
    if obj is None:
        return None
    if not isinstance(obj, dict):
        return (
            NO_TYPE_META + f"json: cannot unmarshal {json_kind(obj)} into Go value of type {TYPE_META_STRUCT}"
        )
    for key, value in obj.items():
        if key in ("apiVersion", "kind") and value is not None and not isinstance(value, str):
            return (
                NO_TYPE_META
                + f"json: cannot unmarshal {json_kind(value)} into Go struct field .{key} of type string"
            )
    api_version = obj.get("apiVersion")
    if isinstance(api_version, str) and api_version.count("/") > 1:
        return f"unexpected GroupVersion string: {api_version}"
    return None


def read(data: bytes, kind: str, content_type: str = "application/json") -> dict[str, Any]:
    """The JSON object of a request body for ``kind`` (JSON, or YAML for ``application/yaml``), or
    the 400 the real server answers."""
    if content_type in YAML_TYPES:
        obj = _read_yaml(data, kind)
    else:
        try:
            obj = decode(data)
        except Exception:
            problem = syntax_error(data)
            if problem is not None:
                raise no_type_meta(kind, problem, data) from None
            obj = _decode_leniently(data, kind)
    problem = type_meta_error(obj)
    if problem is not None:
        raise unrecognized(kind, problem, data)
    return obj if obj is not None else {}


YAML_TYPES = ("application/yaml", "application/x-yaml")


def _read_yaml(data: bytes, kind: str) -> Any:
    """YAML converted to JSON values (an empty document is null). The syntax error is PyYAML's,
    in go-yaml's form ``yaml: line N: problem``."""
    import yaml

    try:
        return yaml.safe_load(data.decode("utf-8", "ksched-go-replace"))
    except yaml.MarkedYAMLError as exc:
        line = exc.problem_mark.line + 1 if exc.problem_mark else 1
        raise unrecognized(kind, f"yaml: line {line}: {exc.problem or exc.context}", data) from None
    except yaml.YAMLError as exc:
        raise unrecognized(kind, f"yaml: {exc}", data) from None


def _decode_leniently(data: bytes, kind: str) -> Any:
    """Valid JSON msgspec refuses (invalid UTF-8 in strings, integers beyond 64 bits): as Go reads it.
    Nesting deeper than Python's recursion limit (Go allows 10,000 levels) is refused: as Go does for
    an array (it is no object), with Go's depth error otherwise."""
    import json

    try:
        return json.loads(data.decode("utf-8", "ksched-go-replace"))
    except RecursionError:
        if data.lstrip(bytes(_SPACE))[:1] == b"[":
            return []
        raise no_type_meta(kind, "exceeded max depth", data) from None
    except ValueError as exc:  # not expected: the scanner found the body valid
        raise no_type_meta(kind, str(exc), data) from None


# --- Go's syntax check (encoding/json's checkValid, as Go 1.27 words its errors) --------------

_SPACE = frozenset(b" \t\r\n")
_DIGITS = frozenset(b"0123456789")
_HEX = frozenset(b"0123456789abcdefABCDEF")
_ESCAPES = frozenset(b'bfnrt\\/"')
_LITERALS = {ord("t"): b"true", ord("f"): b"false", ord("n"): b"null"}
_GO_ESCAPES = {7: "\\a", 8: "\\b", 9: "\\t", 10: "\\n", 11: "\\v", 12: "\\f", 13: "\\r", 0x5C: "\\\\"}
#: Go's limit on nesting
MAX_DEPTH = 10000
UNEXPECTED_END = "unexpected end of JSON input"


class _SyntaxError(Exception):
    pass


def _rune_at(data: bytes, pos: int) -> tuple[str | None, int]:
    """The UTF-8 rune at ``pos`` and its length; (None, 1) for an invalid byte (Go's RuneError)."""
    for size in (1, 2, 3, 4):
        try:
            text = data[pos : pos + size].decode("utf-8")
        except UnicodeDecodeError:
            continue
        if len(text) == 1:
            return text, size
    return None, 1


def _escape_rune(ch: str, quote: str) -> str:
    """One rune as strconv's quoting writes it inside ``quote`` marks."""
    code = ord(ch)
    if ch in (quote, "\\"):
        return "\\" + ch
    if code in _GO_ESCAPES:
        return _GO_ESCAPES[code]
    if ch.isprintable():
        return ch
    if code < 0x20 or code == 0x7F:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def _quote_rune(data: bytes, pos: int) -> str:
    """strconv.QuoteRune of the rune at ``pos`` (an invalid byte as ``'\\xNN'``)."""
    ch, _ = _rune_at(data, pos)
    if ch is None:
        return f"'\\x{data[pos]:x}'"
    return f"'{_escape_rune(ch, chr(39))}'"


def _quote(text: bytes) -> str:
    """strconv.Quote of bytes (invalid UTF-8 as ``\\xNN``)."""
    out, pos = ['"'], 0
    while pos < len(text):
        ch, size = _rune_at(text, pos)
        out.append(f"\\x{text[pos]:02x}" if ch is None else _escape_rune(ch, '"'))
        pos += size
    return "".join(out) + '"'


def _invalid_character(data: bytes, pos: int, where: str) -> _SyntaxError:
    return _SyntaxError(f"invalid character {_quote_rune(data, pos)} {where}")


def _invalid_escape(what: bytes) -> _SyntaxError:
    """An escape sequence Go does not know, in backquotes unless it needs quoting."""
    text = what.decode("utf-8", "replace")
    if "`" in text or any(ch == "\ufffd" or ch.isspace() or not ch.isprintable() for ch in text):
        shown = _quote(what)
    else:
        shown = f"`{text}`"
    return _SyntaxError(f"invalid escape sequence {shown} in string")


def syntax_error(data: bytes) -> str | None:
    """Go's error for ``data`` if it is not valid JSON, else None."""
    try:
        _Scanner(data).scan()
    except _SyntaxError as exc:
        return str(exc)
    return None


class _Scanner:
    """Reads one JSON value and checks nothing but space follows. Containers are kept on a stack (not
    recursion): Go allows 10,000 levels."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def space(self) -> int:
        """Skip space; the byte after it (not consumed), or the end-of-input error."""
        data, pos = self.data, self.pos
        while pos < len(data) and data[pos] in _SPACE:
            pos += 1
        self.pos = pos
        if pos >= len(data):
            raise _SyntaxError(UNEXPECTED_END)
        return data[pos]

    def scan(self) -> None:
        self.space()
        self.values()
        data, pos = self.data, self.pos
        while pos < len(data) and data[pos] in _SPACE:
            pos += 1
        if pos < len(data):
            raise _invalid_character(data, pos, "after top-level value")

    def values(self) -> None:
        """One value at ``pos`` (after space) with everything nested in it."""
        stack: list[int] = []  # '{' or '[' per open container
        while True:
            c = self.data[self.pos]
            if c in (ord("{"), ord("[")):
                if len(stack) >= MAX_DEPTH:
                    raise _SyntaxError("exceeded max depth")
                self.pos += 1
                close = ord("}") if c == ord("{") else ord("]")
                if self.space() == close:
                    self.pos += 1
                else:
                    stack.append(c)
                    if c == ord("{"):
                        self.key()
                    continue
            else:
                self.scalar(c)
            # after a value: close containers or move to the next member
            while stack:
                c = self.space()
                if stack[-1] == ord("{"):
                    if c == ord("}"):
                        self.pos += 1
                        stack.pop()
                        continue
                    if c != ord(","):
                        raise _invalid_character(self.data, self.pos, "after object key:value pair")
                    self.pos += 1
                    self.space()
                    self.key()
                    break
                if c == ord("]"):
                    self.pos += 1
                    stack.pop()
                    continue
                if c != ord(","):
                    raise _invalid_character(self.data, self.pos, "after array element")
                self.pos += 1
                self.space()
                break
            else:
                return

    def key(self) -> None:
        """An object key at ``pos``, its colon, and the space before its value."""
        if self.data[self.pos] != ord('"'):
            raise _invalid_character(self.data, self.pos, "looking for beginning of object key string")
        self.string()
        if self.space() != ord(":"):
            raise _invalid_character(self.data, self.pos, "after object key")
        self.pos += 1
        self.space()

    def scalar(self, c: int) -> None:
        if c == ord('"'):
            self.string()
        elif c == ord("-") or c in _DIGITS:
            self.number()
        elif c in _LITERALS:
            self.literal(_LITERALS[c])
        else:
            raise _invalid_character(self.data, self.pos, "looking for beginning of value")

    def literal(self, word: bytes) -> None:
        data, pos = self.data, self.pos
        for i, expected in enumerate(word):
            if pos + i >= len(data):
                raise _SyntaxError(UNEXPECTED_END)
            if data[pos + i] != expected:
                where = f"in literal {word.decode()} (expecting {_quote_rune(word, i)})"
                raise _invalid_character(data, pos + i, where)
        self.pos = pos + len(word)

    def digit(self) -> None:
        """A required digit at ``pos``, then any more."""
        data = self.data
        if self.pos >= len(data):
            raise _SyntaxError(UNEXPECTED_END)
        if data[self.pos] not in _DIGITS:
            raise _invalid_character(data, self.pos, "in numeric literal")
        self.pos += 1
        while self.pos < len(data) and data[self.pos] in _DIGITS:
            self.pos += 1

    def number(self) -> None:
        data = self.data
        if data[self.pos] == ord("-"):
            self.pos += 1
        if self.pos < len(data) and data[self.pos] == ord("0"):
            self.pos += 1
        else:
            self.digit()
        if self.pos < len(data) and data[self.pos] == ord("."):
            self.pos += 1
            self.digit()
        if self.pos < len(data) and data[self.pos] in (ord("e"), ord("E")):
            self.pos += 1
            if self.pos < len(data) and data[self.pos] in (ord("+"), ord("-")):
                self.pos += 1
            self.digit()

    def string(self) -> None:
        data, pos = self.data, self.pos + 1
        while pos < len(data):
            c = data[pos]
            if c == ord('"'):
                self.pos = pos + 1
                return
            if c == ord("\\"):
                if pos + 2 > len(data):
                    break
                escape = data[pos + 1]
                if escape == ord("u"):
                    digits = data[pos + 2 : pos + 6]
                    if len(digits) < 4 and all(d in _HEX for d in digits):
                        break  # cut short
                    if len(digits) < 4 or not all(d in _HEX for d in digits):
                        raise _invalid_escape(data[pos : pos + 6])
                    pos += 6
                elif escape in _ESCAPES:
                    pos += 2
                else:
                    raise _invalid_escape(data[pos : pos + 2])
            elif c < 0x20:
                raise _invalid_character(data, pos, "in string")
            elif c < 0x80:
                pos += 1
            else:  # any bytes are accepted; only a multi-byte character cut by the end is missing
                ch, size = _rune_at(data, pos)
                if ch is None and _truncated_rune(data[pos:]):
                    break
                pos += size
        raise _SyntaxError(UNEXPECTED_END)


def _truncated_rune(rest: bytes) -> bool:
    """Whether ``rest`` is the start of a multi-byte UTF-8 character cut by the end (Go's !FullRune)."""
    lead = rest[0]
    need = 2 if 0xC2 <= lead <= 0xDF else 3 if 0xE0 <= lead <= 0xEF else 4 if 0xF0 <= lead <= 0xF4 else 1
    if len(rest) >= need or need == 1:
        return False
    try:
        rest.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.reason == "unexpected end of data"
    return False
