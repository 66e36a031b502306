"""The shared parts of the verbs' parsers: flag types that validate numbers and lists (argparse
reports their error as "argument --x: <message>" after the usage, exit 2), the global flags (accepted
before or after the verb), `-o json|text`, and `add_verb`, which gives a verb's parser its help layout.
"""

from __future__ import annotations

import argparse
import re
import textwrap
from pathlib import Path
from typing import Any, Callable, Sequence

EXIT_CODES = """exit codes:
  0    success
  1    a pipeline update or a job task failed (or what the verb says: an alert triggered, a query failed)
  2    bad input or an error before anything ran (the message on stderr starts with "error:")
  130  Ctrl-C stopped the command; 143 SIGTERM stopped it (an update under way ends CANCELED)"""

# Global flags given after the verb land under this prefix and are merged with those given before it.
AFTER_VERB = "_after_verb_"


# -- flag types: argparse reports their ArgumentTypeError as "argument --x: <message>", exit 2 -------
def _whole_number(text: str, minimum: int) -> int:
    """`text` as a whole number of at least `minimum`, or the reason it is not."""
    try:
        value = int(text)
    except ValueError:
        value = None
    if value is None or value < minimum:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least {minimum}, got {text!r}")
    return value


def positive_int(text: str) -> int:
    """A whole number of at least 1."""
    return _whole_number(text, 1)


def non_negative_int(text: str) -> int:
    """A whole number of at least 0."""
    return _whole_number(text, 0)


def name_list(text: str) -> tuple[str, ...]:
    """Comma-separated names (tables, datasets), at least one: `a,b` -> ('a', 'b')."""
    names = tuple(t.strip() for t in text.split(",") if t.strip())
    if not names:
        raise argparse.ArgumentTypeError(f"expected comma-separated names (T1,T2), got {text!r}")
    bad = [n for n in names if not re.fullmatch(r"[\w.`-]+", n)]
    if bad:
        raise argparse.ArgumentTypeError(f"{bad[0]!r} is not a table name (write T1,T2)")
    return names


def key_value(text: str) -> tuple[str, str]:
    """`name=value` (the value may be empty or hold '=')."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expected name=value, got {text!r}")
    return key.strip(), value


def output_format(text: str) -> str:
    if text not in ("json", "text"):
        raise argparse.ArgumentTypeError(f"expected json or text, got {text!r}")
    return text


# -- global flags ----------------------------------------------------------------------------------
def global_flags(parser: argparse.ArgumentParser, after_verb: bool) -> None:
    """The global flags; on a verb's parser (`after_verb`) they default to nothing (SUPPRESS), so a
    value given before the verb stays, and `--var` lands apart to be merged."""
    default: Callable[[Any], Any] = (lambda _value: argparse.SUPPRESS) if after_verb else (lambda value: value)
    parser.add_argument("--verbose", action="store_true", default=default(False),
                        help="show stack traces of errors; `run` also prints where the update's seconds went")
    parser.add_argument("--home", type=Path, default=default(None), metavar="DIR",
                        help="local state folder (default: .lakewatch in the project, or $LAKEWATCH_HOME)")
    parser.add_argument("--remote", metavar="sc://HOST:PORT", default=default(None),
                        help="run on this Spark Connect endpoint instead of the local engine (or $LAKEWATCH_REMOTE)")
    parser.add_argument("--landing-root", type=Path, default=default(None), metavar="FOLDER",
                        help="the local landing root, any folder (default: variables.landing_root of lakewatch.local.yml)")
    parser.add_argument("-t", "--target", metavar="TARGET", default=default(None),
                        help="bundle target whose variables the local run resolves "
                             "(default: base_target of lakewatch.local.yml)")
    parser.add_argument("--var", action="append", type=key_value, metavar="NAME=VALUE",
                        dest=AFTER_VERB + "var" if after_verb else "var", default=default([]),
                        help="set a bundle variable, over lakewatch.local.yml and BUNDLE_VAR_<name> (repeatable)")


def add_output(parser: argparse.ArgumentParser) -> None:
    """`-o json|text` (and `--json`, its short form) on a verb that prints a result."""
    parser.add_argument("-o", "--output", type=output_format, default="text", metavar="json|text",
                        help="result format on stdout: text (default) or json (its shape: docs/cli.md)")
    parser.add_argument("--json", dest="output", action="store_const", const="json", help="same as -o json")


def add_verb(sub: argparse._SubParsersAction, common: argparse.ArgumentParser, name: str, help: str,
             description: str | None = None, examples: Sequence[str] = (), exits: str = EXIT_CODES,
             ) -> argparse.ArgumentParser:
    """A verb's parser with the global flags, its description, examples and exit codes in its --help."""
    epilog = ("examples:\n" + "\n".join(f"  {e}" for e in examples) + "\n\n" if examples else "") + exits
    text = textwrap.fill(description or help[0].upper() + help[1:] + ".", width=100)
    parser = sub.add_parser(name, help=help, description=text, parents=[common], epilog=epilog,
                            formatter_class=argparse.RawDescriptionHelpFormatter)
    return parser
