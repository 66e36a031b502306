"""Spark 4's lexer, as far as data types need it: words, numbers, punctuation, string literals with
Spark's escapes, back-quoted names, white space and SQL comments between tokens."""

from __future__ import annotations

import re
from dataclasses import dataclass

# Spark 4's lexer: these characters separate tokens (WS); anything else outside a token is an error.
_WHITESPACE = frozenset(" \t\n\f\r\x0b\u00a0\u1680\u2028\u202f\u205f\u3000" + "".join(chr(c) for c in range(0x2000, 0x200B)))


@dataclass(frozen=True)
class Token:
    kind: str  # WORD, INT, NUMBER (other numeric literal), NAME (back-quoted), STRING, PUNCT, BAD, EOF
    text: str  # source text (for BAD: what is wrong)
    start: int
    value: str = ""  # WORD: upper case; NAME/STRING: the unquoted value

    def shown(self) -> str:
        if self.kind == "EOF":
            return "the end of the text"
        return f"'{self.text}'"


_WORD = re.compile(r"[A-Za-z0-9_]+", re.ASCII)
# Spark's numeric literals; at equal length a numeric literal wins over an identifier (lexer order).
_NUMERIC = re.compile(
    r"[0-9]+[LSY]|(?:[0-9]+\.[0-9]*|\.[0-9]+|[0-9]+)(?:E[+-]?[0-9]+)?(?:BD|[FD])?", re.ASCII | re.IGNORECASE
)
_PUNCT = "<>(),:!"


def _string_literal(text: str, i: int) -> tuple[str, int] | None:
    """A Spark string literal at text[i]: (value, end) or None if unterminated."""
    raw = text[i] in "rR"
    quote = text[i + 1] if raw else text[i]
    j = i + (2 if raw else 1)
    if raw:
        end = text.find(quote, j)
        return (text[j:end], end + 1) if end >= 0 else None
    out: list[str] = []
    while j < len(text):
        c = text[j]
        if c == quote:
            if j + 1 < len(text) and text[j + 1] == quote:  # a doubled quote is one quote
                out.append(quote)
                j += 2
                continue
            return "".join(out), j + 1
        if c == "\\" and j + 1 < len(text):
            j = _unescape(text, j + 1, out)
            continue
        out.append(c)
        j += 1
    return None


def _unescape(text: str, j: int, out: list[str]) -> int:
    """Spark's unescapeSQLString for the character(s) after a backslash at text[j-1]."""
    c = text[j]
    hex4, hex8 = text[j + 1:j + 5], text[j + 1:j + 9]
    if c == "u" and len(hex4) == 4 and all(h in "0123456789abcdefABCDEF" for h in hex4):
        out.append(chr(int(hex4, 16)))
        return j + 5
    if c == "U" and len(hex8) == 8 and all(h in "0123456789abcdefABCDEF" for h in hex8):
        out.append(chr(int(hex8, 16)))
        return j + 9
    octal = text[j:j + 3]
    if len(octal) == 3 and octal[0] in "01" and all(o in "01234567" for o in octal[1:]):
        out.append(chr(int(octal, 8)))
        return j + 3
    out.append({"0": "\0", "b": "\b", "n": "\n", "r": "\r", "t": "\t", "Z": "\x1a",
                "%": "\\%", "_": "\\_"}.get(c, c))
    return j + 1


def tokenize(text: str) -> list[Token]:
    tokens: list[Token] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in _WHITESPACE:
            i += 1
        elif text.startswith("--", i):
            end = text.find("\n", i)
            i = n if end < 0 else end + 1
        elif text.startswith("/*", i):
            if text.startswith("/*+", i):
                tokens.append(Token("BAD", "/*+", i))
                break
            depth, j = 0, i
            while j < n:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                    if depth == 0:
                        break
                else:
                    j += 1
            if depth:
                tokens.append(Token("BAD", "an unterminated /* comment", i))
                break
            i = j
        elif c in _PUNCT:
            tokens.append(Token("PUNCT", c, i, c))
            i += 1
        elif c == "`":
            j, name = i + 1, []
            while j < n:
                if text[j] == "`":
                    if text.startswith("``", j):
                        name.append("`")
                        j += 2
                        continue
                    break
                name.append(text[j])
                j += 1
            if j >= n:
                tokens.append(Token("BAD", "an unterminated `name`", i))
                break
            tokens.append(Token("NAME", text[i:j + 1], i, "".join(name)))
            i = j + 1
        elif c in "'\"" or (c in "rR" and text[i + 1:i + 2] in ("'", '"')):
            literal = _string_literal(text, i)
            if literal is None:
                tokens.append(Token("BAD", "an unterminated string", i))
                break
            value, end = literal
            tokens.append(Token("STRING", text[i:end], i, value))
            i = end
        else:
            word = _WORD.match(text, i)
            number = _NUMERIC.match(text, i)
            w = word.end() - i if word else 0
            m = number.end() - i if number else 0
            if m and m >= w:
                kind = "INT" if text[i:i + m].isdigit() else "NUMBER"
                tokens.append(Token(kind, text[i:i + m], i))
                i += m
            elif w:
                tokens.append(Token("WORD", text[i:i + w], i, text[i:i + w].upper()))
                i += w
            else:
                tokens.append(Token("BAD", c, i))
                break
    tokens.append(Token("EOF", "", n))
    return tokens
