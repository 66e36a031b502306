"""The CLI's answers to bad input: one clear paragraph, exit code 2, before any engine starts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from pipelines.cli import error_paragraph, main
from pipelines.errors import LakewatchError
from tests.project_copy import engineless_project


def lakewatch(tmp_path, *args: str, **env_vars: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "LAKEWATCH_HOME": str(tmp_path / "home"), **env_vars}
    return subprocess.run([sys.executable, "-m", "pipelines.cli", *args], capture_output=True, text=True,
                          env=env, timeout=120)


@pytest.mark.parametrize("args, expected", [
    (("run", "nope"), "[BUNDLE_PIPELINE_NOT_FOUND] The bundle has no pipeline resource 'nope'"),
    (("generate", "--mix", "malformed=2"), "--mix malformed must be between 0 and 1"),
    (("generate", "--table", "invoices"), "no table 'invoices'"),
    (("run", "--set", "novalue"), "--set expects key=value"),
    (("alerts", "--since", "7d"), "--since goes with --replay"),
    (("alerts", "--replay", "--fail-on-trigger"), "--fail-on-trigger judges the alerts' state now"),
    (("replay", "invoices"), "no table 'invoices'"),
])
def test_bad_input_is_one_paragraph_and_exit_2(tmp_path, args, expected):
    result = lakewatch(tmp_path, *args)
    assert result.returncode == 2
    assert expected in result.stderr
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1
    assert not (tmp_path / "home" / "metastore_db").exists()  # no engine was started


def test_a_remote_endpoint_that_does_not_answer_fails_with_the_reason_and_exit_2(tmp_path):
    """Nothing listens on the port: the command retries for LAKEWATCH_REMOTE_RETRY_SECONDS, not Spark
    Connect's 10 minutes, then says which endpoint did not answer and gRPC's reason, in one paragraph."""
    import socket

    with socket.socket() as s:  # a port nothing listens on once closed
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    result = lakewatch(tmp_path, "--remote", f"sc://127.0.0.1:{port}", "query", "SELECT 1",
                       LAKEWATCH_REMOTE_RETRY_SECONDS="1")
    assert result.returncode == 2
    assert result.stderr.startswith(f"error: [REMOTE_UNREACHABLE] The Spark Connect endpoint sc://127.0.0.1:{port} "
                                    "did not answer for 1 s (UNAVAILABLE: ")
    assert "Connection refused" in result.stderr and result.stderr.count("\n") == 1, result.stderr


@pytest.mark.parametrize("value", ["soon", "-1", "nan"])
def test_a_remote_retry_setting_that_is_not_seconds_is_refused(tmp_path, value):
    result = lakewatch(tmp_path, "--remote", "sc://127.0.0.1:1", "query", "SELECT 1", LAKEWATCH_REMOTE_RETRY_SECONDS=value)
    assert result.returncode == 2
    assert f"[CLI_INVALID_ARGUMENT] Invalid argument: LAKEWATCH_REMOTE_RETRY_SECONDS='{value}'" in result.stderr


def test_connect_errors_drop_the_jvm_stack_unless_verbose():
    error = RuntimeError("[TABLE_OR_VIEW_NOT_FOUND] no table x.\n\nJVM stacktrace:\norg.apache.Foo\n\tat a.b(C.java:1)")
    assert error_paragraph(error, verbose=False) == "RuntimeError: [TABLE_OR_VIEW_NOT_FOUND] no table x."
    assert "at a.b(C.java:1)" in error_paragraph(error, verbose=True)


def test_a_locked_catalog_is_explained():
    error = RuntimeError("Failed to start database 'metastore_db' ... Another instance of Derby may have already booted the database")
    assert "[METASTORE_LOCKED]" in error_paragraph(error, verbose=False)
    assert error_paragraph(LakewatchError("QUERY_FAILED", {"reason": "x"}), verbose=False) == "[QUERY_FAILED] The query failed: x"


# -- bad configuration is refused before the engine starts (in-process, on a copy of the bundle) ------
@pytest.fixture
def bundle_copy(tmp_path, project_root, monkeypatch):
    """A copy of the project's bundle in tmp_path that `main` runs on. Starting the engine fails the
    test; every LocalProject `main` creates is kept, to check its engine was never started."""
    root, created = engineless_project(tmp_path, project_root, monkeypatch, ("resources", "conf", "jobs"))
    copy = SimpleNamespace(root=root, home=tmp_path / "home", created=created)
    copy.edit = lambda name, old, new: _edit(root / name, old, new)
    copy.landing = lambda *tables: [(copy.home / "landing" / t).mkdir(parents=True) for t in tables]
    yield copy
    assert created and all(p._local is None for p in created)  # no engine started


def _edit(path, old, new):
    text = path.read_text()
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, 1))


def refused(capsys, copy, *args):
    """Runs the CLI in-process; returns its stderr after checking exit code 2 and one paragraph."""
    code = main(["--home", str(copy.home), *args])
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.startswith("error: [") and err.count("\n") == 1 and "AssertionError" not in err
    return err


def test_unknown_key_in_tables_yml_is_refused_before_the_engine(capsys, bundle_copy):
    bundle_copy.edit("conf/tables.yml", "    landing: orders\n", "    landing: orders\n    partition_by: order_ts\n")
    err = refused(capsys, bundle_copy, "run")
    assert "[CONFIG_UNKNOWN_KEY]" in err and "'partition_by'" in err
    assert "Allowed keys: name, format, schema, landing, expectations, comment" in err


@pytest.mark.parametrize("declared, error_class, fix", [
    ("ARRAY<FOO>", "CONFIG_INVALID_TYPE", "'FOO' is not a Spark SQL type. Write a Spark SQL type such as"),
    ("'STRUCT<currency: STRING'", "CONFIG_INVALID_TYPE", "where ',' or '>' is expected"),
    ("VARCHAR(3)", "CONFIG_UNSUPPORTED_TYPE", "declare STRING and add an expectation such as `length(currency) <= 3`"),
])
def test_a_bad_type_is_refused_before_the_engine(capsys, bundle_copy, declared, error_class, fix):
    bundle_copy.edit("conf/tables.yml", "currency: STRING", f"currency: {declared}")
    err = refused(capsys, bundle_copy, "run")
    assert f"[{error_class}] Column 'currency' of table 'orders'" in err and fix in err


@pytest.mark.parametrize("landing, problem, fix", [
    ("../orders", "leaves the landing root ('..')", "write a folder under the root"),
    ("/srv/orders", "is outside the landing root", "change the landing_root bundle variable"),
    ("orders//eu", "has an empty segment", "write 'orders/eu'"),
])
@pytest.mark.parametrize("command", ["run", "job", "generate"])
def test_a_landing_outside_the_root_is_refused_before_the_engine(capsys, bundle_copy, command, landing, problem, fix):
    bundle_copy.edit("conf/tables.yml", "landing: orders", f"landing: {landing}")
    err = refused(capsys, bundle_copy, command)
    root = bundle_copy.home / "landing"
    assert f"[CONFIG_INVALID_LANDING] Table 'orders' has landing '{landing}', which {problem}" in err
    assert f"relative to the landing root {root}" in err and fix in err


def test_a_missing_landing_folder_is_refused_before_the_engine(capsys, bundle_copy):
    """The pipeline alone (`lakewatch run`) does not start on a missing landing folder, as the pipeline
    alone fails on Databricks; the job creates the folders first (its prepare_landing task)."""
    bundle_copy.landing("orders", "payments")
    err = refused(capsys, bundle_copy, "run")
    folder = bundle_copy.home / "landing" / "customers"
    assert f"[LANDING_FOLDER_NOT_FOUND] The ingest pipeline 'lakewatch_ingest' reads landing folders that do not exist: table 'customers': {folder}." in err
    assert f"`mkdir -p {folder}`" in err and "`lakewatch generate`" in err
    assert "run the bundle's job (`lakewatch job`), whose prepare_landing task creates them" in err
    assert "table 'orders'" not in err


@pytest.mark.parametrize("selection, missing", [
    ("orders_bronze", "orders, orders_rejected"),
    ("orders_bronze,orders", "orders_rejected"),
    ("LAKEWATCH.ORDERS_BRONZE,spark_catalog.lakewatch.orders", "orders_rejected"),  # names as the runner resolves them
])
def test_a_full_refresh_of_bronze_without_the_tables_that_stream_from_it_is_refused(capsys, bundle_copy, selection, missing):
    """The clean table and the rejected rows read bronze as a stream: resetting bronze alone would
    fail their flows after bronze was rewritten. Refused before the engine, naming the selection to give."""
    bundle_copy.landing("orders", "customers", "payments")
    err = refused(capsys, bundle_copy, "run", "--full-refresh", selection)
    assert f"[FULL_REFRESH_INCOMPLETE] The full refresh of 'orders_bronze' in pipeline 'lakewatch_ingest' leaves out {missing}," in err
    assert "orders_rejected" in err.split("--full-refresh ", 1)[1]


def test_a_full_refresh_naming_every_streaming_table_of_a_bronze_table_passes_in_any_spelling(project_root):
    from pipelines.config import load_tables
    from pipelines.local.preflight import check_full_refresh_selection

    tables = load_tables(project_root / "conf" / "tables.yml")
    for selection in (["orders_bronze", "orders", "orders_rejected"],
                      ["`lakewatch`.`orders_bronze`", "spark_catalog.lakewatch.ORDERS", "lakewatch.orders_rejected"],
                      ["orders", "orders_rejected"], ["customers", "customers_rejected"]):  # no bronze reset
        check_full_refresh_selection("lakewatch_ingest", tables, selection)


@pytest.mark.parametrize("selection, reset, missing", [("customers", "customers", "customers_rejected"),
                                                      ("customers_rejected", "customers_rejected", "customers")])
def test_a_full_refresh_of_a_clean_table_or_its_rejected_rows_alone_is_refused(capsys, bundle_copy, selection, reset, missing):
    """The clean table and its rejected rows split bronze's rows: resetting one alone would let a replay
    send a row the clean table takes from bronze again, or lose the rows queued before."""
    bundle_copy.landing("orders", "customers", "payments")
    err = refused(capsys, bundle_copy, "run", "--full-refresh", selection)
    assert (f"[FULL_REFRESH_INCOMPLETE] The full refresh of '{reset}' in pipeline 'lakewatch_ingest' leaves out "
            f"{missing}, which splits bronze's rows with it") in err
    assert f"(--full-refresh {selection},{missing})" in err


def test_the_job_is_not_refused_for_landing_folders_its_first_task_creates(bundle_copy):
    from pipelines.local import project as project_module
    from pipelines.local.home import LocalHome
    from pipelines.local.preflight import check_job

    project = project_module.LocalProject(home=LocalHome(bundle_copy.home))
    check_job(project, "lakewatch_job")  # no landing folder exists: prepare_landing runs before ingest
    assert not (bundle_copy.home / "landing").exists()  # the check itself creates nothing


def test_a_job_that_does_not_prepare_the_landing_folders_is_refused_before_the_engine(capsys, bundle_copy):
    bundle_copy.edit("resources/lakewatch.job.yml", "          depends_on:\n            - task_key: prepare_landing\n", "")
    bundle_copy.landing("orders", "payments")
    err = refused(capsys, bundle_copy, "job")
    assert "[LANDING_FOLDER_NOT_FOUND] The ingest pipeline 'lakewatch_ingest' reads landing folders that do not exist: " \
           f"table 'customers': {bundle_copy.home / 'landing' / 'customers'}." in err
    assert "no task this pipeline task runs after prepares them: see `lakewatch check`" in err


def test_a_job_that_prepares_other_landing_folders_is_refused_before_the_engine(capsys, bundle_copy):
    bundle_copy.edit("resources/lakewatch.job.yml", "              - ${var.landing_root}\n",
                     "              - ${var.landing_root}/elsewhere\n")
    err = refused(capsys, bundle_copy, "job")
    assert "[LANDING_FOLDER_NOT_FOUND]" in err and f"table 'orders': {bundle_copy.home / 'landing' / 'orders'}" in err


def test_a_landing_folder_set_on_the_command_line_is_the_one_checked(capsys, bundle_copy, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    err = refused(capsys, bundle_copy, "run", "--set", f"lakewatch.landing_root={elsewhere}")
    assert f"table 'orders': {elsewhere}/orders; table 'customers': {elsewhere}/customers" in err


@pytest.mark.parametrize("old, new, fix", [
    ("${var.landing_root}", "${var.landing_rot}", "no such variable in databricks.yml: declare it under `variables`, or correct the name"),
    ("${var.landing_root}", "${var.landing_zone}",
     "declared without a default and not set by the target: give it a default, set it in the target's variables"),
])
@pytest.mark.parametrize("command", ["run", "job"])
def test_an_unresolved_bundle_variable_is_refused_before_the_engine(capsys, bundle_copy, command, old, new, fix):
    bundle_copy.edit("resources/lakewatch_ingest.pipeline.yml", old, new)
    bundle_copy.edit("databricks.yml", "variables:\n", "variables:\n  landing_zone:\n    description: no default\n")
    bundle_copy.landing("orders", "customers", "payments")
    err = refused(capsys, bundle_copy, command)
    assert "[BUNDLE_UNRESOLVED_REFERENCE]" in err and "lakewatch_ingest.configuration.lakewatch.landing_root" in err
    assert f"'{new}'" in err and fix in err


def test_valid_input_passes_the_checks_without_an_engine(bundle_copy):
    from pipelines.local.home import LocalHome
    from pipelines.local.preflight import check_job, check_update

    bundle_copy.landing("orders", "customers", "payments")
    from pipelines.local import project as project_module

    project = project_module.LocalProject(home=LocalHome(bundle_copy.home))
    check_update(project, "lakewatch_ingest")
    check_update(project, "lakewatch_observability")  # reads the tables, not landing folders
    check_job(project, "lakewatch_job")
    with pytest.raises(LakewatchError) as info:
        check_job(project, "nightly")
    assert "no job 'nightly'" in str(info.value)


@pytest.mark.parametrize("old, new, reason", [
    ("path: ../jobs/archive_event_log.sql", "path: ../jobs/archive.sql", "jobs/archive.sql does not exist"),
    ("              slack_hours: \"24\"\n", "", "refers to parameter(s) slack_hours, which the task does not set"),
])
def test_a_sql_task_that_cannot_run_is_refused_before_the_engine(capsys, bundle_copy, old, new, reason):
    bundle_copy.edit("resources/lakewatch.job.yml", old, new)
    bundle_copy.landing("orders", "customers", "payments")
    err = refused(capsys, bundle_copy, "job")
    assert "[JOB_SQL_TASK_INVALID] Task 'archive_event_log' of job 'lakewatch_job' cannot run" in err
    assert reason in err


def test_a_python_task_without_its_file_is_refused_before_the_engine(capsys, bundle_copy):
    bundle_copy.edit("resources/lakewatch.job.yml", "python_file: ../jobs/snapshot_table_sizes.py",
                     "python_file: ../jobs/snapshot.py")
    bundle_copy.landing("orders", "customers", "payments")
    err = refused(capsys, bundle_copy, "job")
    assert "[JOB_PYTHON_TASK_INVALID] Task 'snapshot_table_sizes' of job 'lakewatch_job' cannot run" in err
    assert "jobs/snapshot.py does not exist" in err


def test_only_local_landing_folders_are_checked():
    from pipelines.local.preflight import local_path

    assert local_path("/tmp/landing/orders") == Path("/tmp/landing/orders")
    assert local_path("file:///tmp/landing/orders") == Path("/tmp/landing/orders")
    assert local_path("s3://bucket/landing/orders") is None
    assert local_path("dbfs:/Volumes/main/x/landing/orders") is None


# -- the parser: global flags, --version, refresh selection, numbers (no engine) ---------------------
GLOBAL_FLAGS = [["--verbose"], ["--home", "/tmp/h"], ["--remote", "sc://h:1"], ["-t", "dev"], ["--target", "prod"],
                ["--var", "landing_root=/x"], ["--landing-root", "/x"]]


@pytest.mark.parametrize("verb", [["run"], ["run", "lakewatch_observability", "--refresh", "a"], ["generate"],
                                  ["query", "SELECT 1"], ["job"], ["alerts"], ["report"], ["dashboard"], ["check"],
                                  ["engine", "stop"], ["demo"], ["redeliver"]])
@pytest.mark.parametrize("flag", GLOBAL_FLAGS, ids=lambda f: f[0])
def test_a_global_flag_before_or_after_the_verb_gives_the_same_namespace(verb, flag):
    from pipelines.cli import build_parser

    before = build_parser().parse_args([*flag, *verb])
    after = build_parser().parse_args([*verb, *flag])
    assert vars(before) == vars(after)
    neither = build_parser().parse_args(verb)
    assert vars(before) != vars(neither)  # the flag was taken, not dropped


def test_global_flags_on_both_sides_of_the_verb_add_up_and_the_one_before_is_kept():
    from pipelines.cli import build_parser

    args = build_parser().parse_args(["--home", "/tmp/h", "--var", "a=1", "--verbose", "run", "--var", "b=x=y"])
    assert (args.home, args.var, args.verbose, args.target) == (Path("/tmp/h"), [("a", "1"), ("b", "x=y")], True, None)


def test_version_is_the_package_version(tmp_path):
    import tomllib
    from importlib import metadata

    declared = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())["project"]["version"]
    result = lakewatch(tmp_path, "--version")
    assert result.returncode == 0 and result.stderr == ""
    assert result.stdout == f"lakewatch {metadata.version('lakewatch')}\n"
    assert metadata.version("lakewatch") == declared


def request(*words: str, capsys=None):
    from pipelines.cli import build_parser
    from pipelines.cli.updates import update_request

    return update_request(build_parser().parse_args(["run", *words]))


@pytest.mark.parametrize("words, full_refresh, full_refresh_selection, refresh_selection", [
    ((), False, (), ()),
    (("--full-refresh-all",), True, (), ()),
    (("--full-refresh", "orders_bronze,orders"), False, ("orders_bronze", "orders"), ()),
    (("--full-refresh", " orders_bronze , orders "), False, ("orders_bronze", "orders"), ()),
    (("--full-refresh-selection", "orders_bronze,orders"), False, ("orders_bronze", "orders"), ()),
    (("--refresh", "orders_bronze"), False, (), ("orders_bronze",)),
    (("lakewatch_observability", "--refresh", "a,b", "--set", "k=v=w", "--cause", "JOB_TASK"), False, (), ("a", "b")),
])
def test_the_refresh_spellings_make_the_update_request(words, full_refresh, full_refresh_selection, refresh_selection):
    from pipelines.local.update.types import UpdateRequest

    pipeline = words[0] if words and not words[0].startswith("-") else "lakewatch_ingest"
    configuration = (("k", "v=w"),) if "--set" in words else ()
    cause = "JOB_TASK" if "--cause" in words else "USER_ACTION"
    assert request(*words) == UpdateRequest(pipeline=pipeline, full_refresh=full_refresh,
                                            full_refresh_selection=full_refresh_selection,
                                            refresh_selection=refresh_selection, cause=cause,
                                            configuration=configuration)


def test_the_old_full_refresh_selection_says_it_is_deprecated(capsys):
    request("--full-refresh-selection", "orders")
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "--full-refresh-selection is deprecated; write --full-refresh T1,T2" in captured.err


@pytest.mark.parametrize("words, got", [
    (("--refresh", "a", "--full-refresh", "b"), "--refresh, --full-refresh"),
    (("--full-refresh-all", "--refresh", "a"), "--refresh, --full-refresh-all"),
    (("--full-refresh-all", "--full-refresh", "b"), "--full-refresh-all, --full-refresh"),
    (("--full-refresh-selection", "a", "--refresh", "b"), "--refresh, --full-refresh"),
])
def test_refresh_selections_exclude_each_other_as_in_databricks_bundle_run(capsys, words, got):
    with pytest.raises(SystemExit) as exit_info:
        request(*words)
    captured = capsys.readouterr()
    assert exit_info.value.code == 2 and captured.out == ""
    assert f"lakewatch run: error: pipeline run arguments are mutually exclusive (got {got})" in captured.err


@pytest.mark.parametrize("words, message", [
    (("generate", "--batches", "-1"), "argument --batches: expected a whole number of at least 1, got '-1'"),
    (("generate", "--batches", "0"), "argument --batches: expected a whole number of at least 1, got '0'"),
    (("generate", "--rows", "ten"), "argument --rows: expected a whole number of at least 1, got 'ten'"),
    (("generate", "--seed", "-3"), "argument --seed: expected a whole number of at least 0, got '-3'"),
    (("generate", "--files-per-batch", "1.5"), "argument --files-per-batch: expected a whole number of at least 1"),
    (("query", "SELECT 1", "--limit", "0"), "argument --limit: expected a whole number of at least 1, got '0'"),
    (("report", "--last", "-2"), "argument --last: expected a whole number of at least 1, got '-2'"),
    (("engine", "start", "--idle-seconds", "0"), "argument --idle-seconds: expected a whole number of at least 1"),
    (("demo", "--rows", "0"), "argument --rows: expected a whole number of at least 1, got '0'"),
    (("run", "--refresh", ","), "argument --refresh: expected comma-separated names (T1,T2), got ','"),
    (("alerts", "-o", "yaml"), "argument -o/--output: expected json or text, got 'yaml'"),
    (("run", "--var", "novalue"), "argument --var: expected name=value, got 'novalue'"),
    (("alerts", "--replay", "--since", "last month"), "argument --since: --since expects a duration (30d, 12h, 90m)"),
])
def test_a_bad_number_or_flag_value_exits_2_with_the_reason_on_stderr_and_nothing_on_stdout(capsys, words, message):
    with pytest.raises(SystemExit) as exit_info:
        main(list(words))
    captured = capsys.readouterr()
    assert exit_info.value.code == 2 and captured.out == ""
    assert captured.err.startswith("usage: lakewatch ") and message in captured.err, captured.err


def test_every_flag_has_a_help_text_and_every_verb_examples_and_exit_codes():
    import argparse

    from pipelines.cli import build_parser

    parser = build_parser()
    [sub] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]  # noqa: SLF001
    for name, verb in sub.choices.items():
        assert "exit codes:" in verb.epilog and (name == "demo" or f"lakewatch {name}" in verb.epilog), name
        for action in verb._actions:  # noqa: SLF001
            assert action.help, (name, action.option_strings or action.dest)


def test_every_verb_takes_the_output_format_and_its_json_short_form():
    import argparse

    from pipelines.cli import build_parser

    parser = build_parser()
    [sub] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]  # noqa: SLF001
    for name, verb in sub.choices.items():
        options = {o for action in verb._actions for o in action.option_strings}  # noqa: SLF001
        assert {"-o", "--output", "--json"} <= options, name
        words = [name]
        for action in verb._actions:  # noqa: SLF001 (a value for each required argument)
            if not action.option_strings and action.nargs in (None, "+"):
                words.append("x")
            elif action.required:
                words += [action.option_strings[0], "x"]
        words.append("--json")
        assert parser.parse_args(words).output == "json", name


# -- results on stdout, exactly (no engine) -------------------------------------------------------------
def test_json_holds_decimals_exactly_and_dates_as_iso_text(capsys):
    import json
    from datetime import date, datetime
    from decimal import Decimal

    from pipelines.cli.output import json_result

    big = Decimal("12345678901234567890.123456789012345678")
    json_result({"d": big, "small": Decimal("0.10"), "at": datetime(2026, 1, 2, 3, 4, 5), "day": date(2026, 1, 2),
                 "raw": b"\xff\x00", "nan": float("nan"), "nested": [{"x": Decimal("-1E-7")}]})
    out = capsys.readouterr().out
    assert out.count("\n") == 1
    document = json.loads(out)
    assert Decimal(document["d"]) == big and document["small"] == "0.10"
    assert document["nested"] == [{"x": "-1E-7"}] and document["nan"] is None and document["raw"] == "/wA="
    assert (document["at"], document["day"]) == ("2026-01-02T03:04:05", "2026-01-02")


def test_check_prints_its_json_result_alone_on_stdout(capsys, tmp_path):
    """The project's own bundle, checked offline (no engine starts: the state folder stays empty)."""
    import json

    code = main(["--home", str(tmp_path), "check", "-o", "json"])
    captured = capsys.readouterr()
    document = json.loads(captured.out)
    assert code == 0 and captured.err == "", captured.err
    assert set(document) == {"ok", "findings", "required_inputs", "queries"}
    assert document["ok"] is True and document["findings"] == [] and document["queries"] is None
    assert set(document["required_inputs"]) == {"dev", "prod"}
    text = main(["check", "-t", "prod", "--home", str(tmp_path)])
    out = capsys.readouterr().out
    assert text == 0 and out.startswith("bundle OK") and "deploying -t prod needs" in out and "-t dev" not in out
    assert list(tmp_path.iterdir()) == []


def test_the_shell_completes_verbs_and_flags_but_not_deprecated_ones(tmp_path):
    """What argcomplete answers the shell (`eval "$(register-python-argcomplete lakewatch)"`)."""
    answers = {}
    for line in ("lakewatch en", "lakewatch run --full"):
        out = tmp_path / "completions"
        result = lakewatch(tmp_path, _ARGCOMPLETE="1", COMP_LINE=line, COMP_POINT=str(len(line)),
                           _ARGCOMPLETE_STDOUT_FILENAME=str(out))
        assert result.returncode == 0, result.stderr
        answers[line] = set(out.read_text().replace("\v", " ").split())
    assert answers["lakewatch en"] == {"engine"}
    assert answers["lakewatch run --full"] == {"--full-refresh", "--full-refresh-all"}


def test_long_steps_and_counts_say_so_on_stderr_in_plain_lines_off_a_terminal(capsys):
    import re

    from pipelines.progress import Counter, step

    with step("setup: resolving"):
        print("the step's own output")
    with Counter("flows finished") as counter:
        counter.say("starting")
        counter.advance(1, "orders COMPLETED")
        counter.advance(2)
    captured = capsys.readouterr()
    assert captured.out == "the step's own output\n" and counter.done == 3
    lines = captured.err.splitlines()
    assert lines[0] == "setup: resolving ..." and re.fullmatch(r"setup: resolving: done in \d+s", lines[1])
    assert lines[2:] == ["starting", "orders COMPLETED"]


def test_var_overrides_the_local_settings_and_is_the_landing_folder_checked(capsys, bundle_copy, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    err = refused(capsys, bundle_copy, "run", "--var", f"landing_root={elsewhere}")
    assert f"table 'orders': {elsewhere}/orders; table 'customers': {elsewhere}/customers" in err
    err = refused(capsys, bundle_copy, "-t", "staging", "run")
    assert "[BUNDLE_UNKNOWN_TARGET]" in err and "staging" in err


def test_target_and_var_choose_what_the_bundle_resolves(bundle_copy):
    from pipelines.local import project as project_module
    from pipelines.local.home import LocalHome

    home = LocalHome(bundle_copy.home)
    default = project_module.LocalProject(home=home)
    assert (default.bundle.target, default.bundle.variable("schema")) == ("dev", "lakewatch")  # lakewatch.local.yml
    chosen = project_module.LocalProject(home=home, target="prod", variables={"schema": "audit"})
    assert (chosen.bundle.target, chosen.bundle.variable("schema")) == ("prod", "audit")
    assert chosen.bundle.variable("catalog") == "spark_catalog"  # the other local settings still hold


def test_a_replay_of_a_table_without_a_drop_expectation_is_refused_before_the_engine(capsys, bundle_copy):
    """Without a drop rule the pipeline keeps no rejected rows for the table: the message says how to
    replay the rows a rule removed before taking it out."""
    bundle_copy.edit("conf/tables.yml", "        condition: customer_id IS NOT NULL\n        action: drop",
                     "        condition: customer_id IS NOT NULL\n        action: warn")
    err = refused(capsys, bundle_copy, "replay", "customers")
    assert "table 'customers' has no drop expectation in" in err and "`condition: true`" in err


def test_a_replay_s_sql_is_printed_without_the_engine(capsys, bundle_copy):
    """`--sql` prints the statements for a SQL warehouse: the queue, then the keys of the rows of the
    named expectation appended to it, names unqualified."""
    code = main(["--home", str(bundle_copy.home), "replay", "orders", "--expectation", "has_order_id", "--sql", "-o", "json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and (out["table"], out["expectation"]) == ("orders", "has_order_id")
    create, insert = out["statements"]
    assert create.startswith("CREATE TABLE IF NOT EXISTS orders_replay (")
    assert insert.startswith("INSERT INTO orders_replay") and "FROM orders_rejected" in insert
    assert "array_contains(_failed_expectations, 'has_order_id')" in insert and out["replay_id"] in insert
