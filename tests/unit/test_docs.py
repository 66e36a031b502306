"""The README and docs/ hold to the code they describe (no JVM): every `lakewatch ...` command shown
in a shell code block parses with the CLI's own parser (tests/integration runs them all), every
`make X` names a Makefile target, every benchmark script shown exists and answers `--help`, every `databricks
bundle` command names the bundle's targets, variables and resources;
the alerts, dashboard pages, observability tables, health metrics and verbs the docs list (and count)
are the ones in the bundle and the code; every relative link and image points at a file that exists,
and every `#anchor` into a Markdown file at one of its headings."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
from pathlib import Path

import pytest
import yaml

from docs.tools import observability_tables
from pipelines.cli import build_parser
from pipelines.observability.catalog import HEALTH_METRIC_NAMES, PUBLISHED
from tests.docs_commands import DOCS, ROOT, all_commands, doc_id, prose

NUMBER_WORDS = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen twenty".split())}


def text_of(name: str) -> str:
    return (ROOT / name).read_text(encoding="utf-8")


def makefile_targets() -> set[str]:
    return {t for t in re.findall(r"^([A-Za-z0-9_.-]+)\s*:(?!=)", text_of("Makefile"), re.M) if not t.startswith(".")}


def verbs() -> dict[str, object]:
    parser = build_parser()
    (subparsers,) = [a for a in parser._actions if a.dest == "command"]  # noqa: SLF001 (argparse has no public accessor)
    return dict(subparsers.choices)


def alert_keys() -> list[str]:
    keys = []
    for path in sorted((ROOT / "resources" / "alerts").glob("*.yml")):
        keys += list(yaml.safe_load(path.read_text())["resources"]["alerts"])
    return keys


def dashboard_pages() -> list[dict]:
    pages = []
    for path in sorted((ROOT / "dashboards").glob("*.lvdash.json")):
        pages += json.loads(path.read_text())["pages"]
    return pages


def stated_counts(noun: str) -> list[tuple[str, int]]:
    """(document, number) for every 'N <noun>' the docs' prose states, N a numeral or a number word."""
    found = []
    pattern = re.compile(rf"\b(\d+|{'|'.join(NUMBER_WORDS)})\s+{noun}\b", re.I)
    for path in DOCS:
        for m in pattern.finditer(prose(path.read_text(encoding="utf-8"))):
            word = m.group(1).lower()
            found.append((doc_id(path), int(word) if word.isdigit() else NUMBER_WORDS[word]))
    return found


# -- (a) commands ----------------------------------------------------------------------------------
def test_docs_show_commands():
    commands = all_commands()
    lakewatch = [w for _, w in commands if Path(w[0]).name == "lakewatch"]
    assert len(lakewatch) > 20 and any(w[0] == "make" for _, w in commands)
    assert {w[1] for w in lakewatch if len(w) > 1} >= {"run", "demo", "query"}


@pytest.mark.parametrize("where,words", [c for c in all_commands() if Path(c[1][0]).name == "lakewatch"],
                         ids=lambda v: " ".join(v) if isinstance(v, list) else v)
def test_lakewatch_command_parses(where: str, words: list[str]):
    stderr = io.StringIO()
    try:
        with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(io.StringIO()):
            args = build_parser().parse_args(words[1:])
    except SystemExit as e:
        # `--help` and `--version` exit 0 after printing; anything else is a parse error
        assert e.code == 0 and {"-h", "--help", "--version"} & set(words), f"{where}: {' '.join(words)}: {stderr.getvalue()}"
        return
    assert args.handler is not None


@pytest.mark.parametrize("words", [["run", "--full-refresh"], ["run", "--no-such-flag"], ["generate", "--batches", "0"],
                                   ["run", "--refresh", "a", "--full-refresh-all"]])
def test_parser_refuses_what_the_docs_must_not_show(words: list[str]):
    """The oracle of the test above: argparse refuses a flag without its value, an unknown flag, a
    number out of range and selections that exclude each other."""
    with contextlib.redirect_stderr(io.StringIO()), pytest.raises(SystemExit) as exit_info:
        build_parser().parse_args(words)
    assert exit_info.value.code == 2


@pytest.mark.parametrize("where,words", [c for c in all_commands() if c[1][0] == "make"],
                         ids=lambda v: " ".join(v) if isinstance(v, list) else v)
def test_make_command_names_a_target(where: str, words: list[str]):
    targets = [w for w in words[1:] if not w.startswith("-") and "=" not in w]
    assert targets, f"{where}: bare `make` (write the target)"
    assert set(targets) <= makefile_targets(), f"{where}: {' '.join(words)}: no such Makefile target"


KNOWN_PROGRAMS = {"lakewatch", "make", "python", "databricks", "eval"}


def test_every_command_shown_is_one_a_test_runs_or_checks():
    """lakewatch commands run in the integration tier (tests/integration/test_own_data.py says which);
    the others are checked here, each kind by the test below it."""
    unknown = [(where, words) for where, words in all_commands() if Path(words[0]).name not in KNOWN_PROGRAMS]
    assert not unknown, unknown


@pytest.mark.parametrize("where,words", [c for c in all_commands() if Path(c[1][0]).name == "python"],
                         ids=lambda v: " ".join(v) if isinstance(v, list) else v)
def test_python_script_shown_exists_and_its_help_runs(where: str, words: list[str]):
    """A benchmark script runs for minutes and is measured by hand (bench/RESULTS.md): here, that it
    exists and answers `--help` (the options shown, none today, are passed before it)."""
    import subprocess
    import sys

    script = ROOT / words[1]
    assert script.is_file(), f"{where}: {words[1]} does not exist"
    done = subprocess.run([sys.executable, str(script), *words[2:], "--help"], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, env={**os.environ, "JAVA_HOME": "/nonexistent"})
    assert done.returncode == 0 and "usage:" in done.stdout, f"{where}: {' '.join(words)}\n{done.stderr[-2000:]}"


@pytest.mark.parametrize("where,words", [c for c in all_commands() if c[1][0] == "databricks"],
                         ids=lambda v: " ".join(v) if isinstance(v, list) else v)
def test_databricks_command_names_the_bundle_s_targets_variables_and_resources(where: str, words: list[str]):
    """`databricks bundle ...` needs a workspace: its target, `--var` names and the resource it runs
    are checked against databricks.yml and resources/ instead."""
    bundle = yaml.safe_load(text_of("databricks.yml"))
    assert words[1] == "bundle" and words[2] in {"validate", "deploy", "run", "summary", "destroy"}, words
    args = words[3:]
    for flag, value in zip(args, args[1:] + [""]):
        if flag in ("-t", "--target"):
            assert value in bundle["targets"], f"{where}: no target {value}"
    for word in args:
        if word.startswith("--var="):
            assert word.removeprefix("--var=").split("=", 1)[0] in bundle["variables"], f"{where}: {word}"
    if words[2] == "run":
        keys = set()
        for path in (ROOT / "resources").rglob("*.yml"):
            for kinds in (yaml.safe_load(path.read_text()) or {}).get("resources", {}).values():
                keys |= set(kinds)
        named = [w for i, w in enumerate(args) if not w.startswith("-") and (i == 0 or args[i - 1] not in ("-t", "--target"))]
        assert named and named[-1] in keys, f"{where}: {' '.join(words)} runs no resource of the bundle"


def test_the_completion_command_shown_prints_a_script_for_lakewatch():
    import shutil
    import subprocess
    import sys

    shown = [words for _, words in all_commands() if words[0] == "eval"]
    assert shown and all("register-python-argcomplete" in " ".join(w) for w in shown)
    program = shutil.which("register-python-argcomplete") or str(Path(sys.executable).parent / "register-python-argcomplete")
    done = subprocess.run([program, "lakewatch"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "lakewatch" in done.stdout and "complete" in done.stdout


def test_inline_make_targets_and_verbs_exist():
    """`make X` and `lakewatch VERB ...` written inline in the prose name real targets and verbs."""
    targets, names = makefile_targets(), set(verbs())
    for path in DOCS:
        text = prose(path.read_text(encoding="utf-8"))
        for span in re.findall(r"`([^`\n]+)`", text):
            words = span.split()
            if words[0] == "make" and len(words) > 1:
                assert {w for w in words[1:] if "=" not in w} <= targets, (doc_id(path), span)
            if Path(words[0]).name == "lakewatch" and len(words) > 1:
                assert inline_verb(words[1:]) in names | {"VERB", "--help", "--version"}, (doc_id(path), span)


def inline_verb(words: list[str]) -> str | None:
    """The verb of an inline `lakewatch ...`: the first word after the global flags (and their values)."""
    rest = iter(words)
    for word in rest:
        if word in ("--home", "--remote", "-t", "--target", "--var", "--landing-root"):
            next(rest, None)
        elif word == "--verbose":
            continue
        else:
            return word
    return None


# -- (b) lists and counts against the files ----------------------------------------------------------
def test_every_alert_is_documented_and_counted():
    keys = alert_keys()
    page = text_of("docs/alerts-and-dashboard.md")
    documented = set(re.findall(r"^\| `(lakewatch_\w+)` \|", page, re.M))
    assert documented == set(keys)
    counts = stated_counts(r"(?:SQL\s+)?alerts")
    assert counts and all(n == len(keys) for _, n in counts), (len(keys), counts)


def test_every_dashboard_page_is_documented_and_counted():
    pages = dashboard_pages()
    page = text_of("docs/alerts-and-dashboard.md")
    documented = re.findall(r"^### (?:\d+\. )?(.+)$", page.split("## The dashboard", 1)[1], re.M)
    assert [p["displayName"] for p in pages] == documented
    counts = stated_counts(r"(?:dashboard\s+)?pages")
    assert counts and all(n == len(pages) for _, n in counts), (len(pages), counts)


def test_observability_tables_page_matches_the_definitions():
    """docs/observability.md's generated part is what the definitions give today
    (`make docs-tables` writes it again)."""
    page = text_of("docs/observability.md")
    assert observability_tables.generated_part(page) == observability_tables.render(), \
        "docs/observability.md is out of date: run `make docs-tables`"
    documented = re.findall(r"^### `(\w+)`", page, re.M)
    assert documented == [t.name for t in PUBLISHED]
    counts = stated_counts(r"(?:published\s+)?(?:observability\s+)?tables and views")
    assert counts and all(n == len(PUBLISHED) for _, n in counts), (len(PUBLISHED), counts)


def test_every_health_metric_is_documented_and_counted():
    page = text_of("docs/observability.md")
    for name in HEALTH_METRIC_NAMES:
        assert f"`{name}`" in page, name
    counts = stated_counts(r"health\s+metrics")
    assert counts and all(n == len(HEALTH_METRIC_NAMES) for _, n in counts), (len(HEALTH_METRIC_NAMES), counts)


def test_every_verb_is_documented_and_counted():
    names = list(verbs())
    readme = text_of("README.md")
    assert set(re.findall(r"^\| `lakewatch ([\w-]+)", readme, re.M)) == set(names)
    cli = text_of("docs/cli.md")
    assert set(re.findall(r"^### `lakewatch ([\w-]+)", cli, re.M)) == set(names)
    counts = stated_counts(r"verbs")
    assert counts and all(n == len(names) for _, n in counts), (len(names), counts)


def test_every_flag_of_every_verb_is_in_the_cli_page():
    cli = text_of("docs/cli.md")
    sections = dict(re.findall(r"^### `lakewatch ([\w-]+)[^\n]*\n(.*?)(?=^##|\Z)", cli, re.M | re.S))
    global_flags = {flag for action in build_parser()._actions for flag in action.option_strings}  # noqa: SLF001
    for name, parser in verbs().items():
        for action in parser._actions:  # noqa: SLF001
            if action.help == argparse.SUPPRESS:  # a deprecated spelling, documented in prose
                continue
            for flag in action.option_strings:
                if flag not in global_flags:  # every verb takes the global flags: checked below
                    assert f"`{flag}" in sections[name], (name, flag)
    for action in build_parser()._actions:  # noqa: SLF001
        for flag in action.option_strings:
            if flag not in ("-h", "--help"):
                assert f"`{flag}" in cli, flag


# -- (c) links ---------------------------------------------------------------------------------------
def slug(heading: str) -> str:
    """GitHub's anchor of a Markdown heading."""
    text = re.sub(r"[`*]|\[|\]\([^)]*\)", "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def links(path: Path) -> list[str]:
    return re.findall(r"!?\[[^\]]*\]\(([^)\s]+)\)", prose(path.read_text(encoding="utf-8")))


@pytest.mark.parametrize("path", DOCS, ids=doc_id)
def test_relative_links_point_at_files(path: Path):
    broken = []
    for target in links(path):
        if re.match(r"^[a-z]+:", target):
            continue
        file_part, _, anchor = target.partition("#")
        linked = (path.parent / file_part).resolve() if file_part else path
        if not linked.exists():
            broken.append(target)
        elif anchor and linked.suffix == ".md":
            headings = re.findall(r"^#+\s+(.+)$", prose(linked.read_text(encoding="utf-8")), re.M)
            if anchor not in {slug(h) for h in headings}:
                broken.append(target)
    assert not broken, f"{doc_id(path)}: {broken}"


def test_docs_are_linked_from_the_readme():
    readme_links = {(ROOT / t.partition("#")[0]).resolve() for t in links(ROOT / "README.md")}
    for path in (ROOT / "docs").glob("*.md"):
        assert path.resolve() in readme_links, doc_id(path)


def test_readme_is_short():
    assert len(text_of("README.md").splitlines()) <= 200


def test_no_development_history_in_the_docs():
    for path in DOCS:
        text = re.sub(r"\]\([^)]*\)", "]", path.read_text(encoding="utf-8"))  # link targets are no history
        for pattern in (r"\bstop \d+", r"\bissues? \d+", r"(?<![\w&])#\d{1,4}\b"):
            hits = [m.group(0) for m in re.finditer(pattern, text, re.I)]
            assert not hits, (doc_id(path), hits)
