"""The commands the README and docs/ show, as argument lists (no JVM): read by tests/unit/test_docs.py
(every one parses), tests/integration/test_demo.py (the read-only ones run on the demo's state),
tests/integration/own_project.py (the ones that write run in a user's project) and test_remote (the
`--remote` one runs against a real server)."""

from __future__ import annotations

import re
import shlex
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md")])
SHELL_FENCES = {"sh", "bash", "shell", "console"}
# A fenced code block, at the start of a line or indented (inside a list item).
_FENCE = re.compile(r"^([ \t]*)```([^\n`]*)\n(.*?)^[ \t]*```", re.S | re.M)


def doc_id(path: Path) -> str:
    return str(path.relative_to(ROOT))


def code_blocks(text: str) -> list[tuple[str, str]]:
    """(info string, body) of every fenced code block, the body dedented."""
    return [(m.group(2).strip().lower(), textwrap.dedent(m.group(3))) for m in _FENCE.finditer(text)]


def prose(text: str) -> str:
    """The text without its fenced code blocks."""
    return _FENCE.sub("", text)


def shell_commands(text: str) -> list[list[str]]:
    """The commands of the shell code blocks, as argument lists: a `$ ` prompt, comments, line
    continuations and leading VAR=value assignments removed; lines that are output (in a console
    block, those without a prompt) are left out."""
    commands = []
    for info, body in code_blocks(text):
        if info in SHELL_FENCES:
            commands += block_commands(info, body)
    return commands


def block_commands(info: str, body: str) -> list[list[str]]:
    """The commands of one shell code block (see `shell_commands`)."""
    commands = []
    joined = re.sub(r"\\\n\s*", " ", body)
    for line in joined.splitlines():
        line = line.strip()
        if info == "console" and not line.startswith("$ "):
            continue
        line = line.removeprefix("$ ")
        if not line or line.startswith("#"):
            continue
        for part in re.split(r"\s(?:&&|\|\||;|\|)\s", line):
            words = shlex.split(part, comments=True)
            while words and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[0]):
                words = words[1:]
            if words and words[0] == "export":
                continue
            if words:
                commands.append(words)
    return commands


def shell_blocks(path: Path) -> list[list[list[str]]]:
    """The commands of each shell code block of one document, block by block."""
    return [block_commands(info, body) for info, body in code_blocks(path.read_text(encoding="utf-8"))
            if info in SHELL_FENCES]


def all_commands() -> list[tuple[str, list[str]]]:
    """(document, argument list) of every command the README and docs show."""
    return [(doc_id(path), words) for path in DOCS for block in shell_blocks(path) for words in block]


def lakewatch_commands() -> list[tuple[str, list[str]]]:
    """(document, the arguments after `lakewatch`) of every lakewatch command shown."""
    return [(where, words[1:]) for where, words in all_commands() if Path(words[0]).name == "lakewatch"]


def section(path: Path, heading: str) -> str:
    """The text of a document's section, from its heading to the next heading of the same level."""
    text = path.read_text(encoding="utf-8")
    level = heading.split(" ", 1)[0]
    start = text.index(heading + "\n")
    ends = [m.start() for m in re.finditer(rf"^{level} ", text[start + 1:], re.M)]
    return text[start:start + 1 + ends[0]] if ends else text[start:]


def section_blocks(path: Path, heading: str) -> list[list[list[str]]]:
    """The lakewatch commands (arguments after `lakewatch`) of each shell block of a section."""
    blocks = [block_commands(info, body) for info, body in code_blocks(section(path, heading)) if info in SHELL_FENCES]
    return [[words[1:] for words in block if Path(words[0]).name == "lakewatch"] for block in blocks]


# Verbs that only read the state (or the bundle): test_demo runs each documented command with one of
# them on the demo's state, but those in a block over the reader's own files (a `~/...` path in it).
READ_ONLY_VERBS = {"query", "report", "alerts", "check", "drift", "engine"}


def read_only_on_demo_state() -> list[tuple[str, list[str], list[str]]]:
    """(document, the arguments to run, the arguments shown) of each read-only command outside a
    block over the reader's own files; `--home X` left out (the test's state folder stands in)."""
    from pipelines.cli import build_parser

    found = []
    for path in DOCS:
        for block in shell_blocks(path):
            if any(w.startswith("~") for words in block for w in words):
                continue
            for words in block:
                if Path(words[0]).name != "lakewatch":
                    continue
                shown = list(words[1:])
                args = list(shown)
                if {"-h", "--help", "--version"} & set(args) or "--remote" in args:
                    continue
                if "--home" in args:
                    i = args.index("--home")
                    del args[i:i + 2]
                parsed = build_parser().parse_args(args)
                if parsed.command not in READ_ONLY_VERBS or getattr(parsed, "apply", None) is not None:
                    continue
                if parsed.command == "engine" and parsed.action != "status":
                    continue
                found.append((doc_id(path), args, shown))
    return found
