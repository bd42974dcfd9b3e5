"""The CLI's promises under hostile or broken conditions: an unexpected error is a bug (exit 3,
one line, where to report), never a failed check (exit 1) and never a traceback; outputs that
cannot be written are refused before any work or reported after the results are shown."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

import cli.main
from cli.main import app

# Commands that choose their stack by default read a project folder of the test's own, never
# the checkout's stacks/ (where a team keeps its stacks: issue 29 item 2).
pytestmark = pytest.mark.usefixtures("own_project")

runner = CliRunner()


def test_an_unexpected_error_is_exit_3_naming_a_bug_without_traceback(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import fleet

    def boom(path: str) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(fleet, "load_fleet", boom)
    result = runner.invoke(app, ["fleet", "validate"])
    assert result.exit_code == 3
    assert "internal error: RuntimeError: boom" in result.output
    assert "bug in accelfleet" in result.output and "report it at" in result.output
    assert "Traceback" not in result.output


def test_the_console_entry_point_turns_escaping_errors_into_exit_3(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    def app_that_fails() -> None:
        raise KeyError("unexpected")

    monkeypatch.setattr(cli.main, "app", app_that_fails)
    with pytest.raises(SystemExit) as exit_info:
        cli.main.run()
    assert exit_info.value.code == 3
    err = capsys.readouterr().err
    assert "internal error: KeyError" in err and "Traceback" not in err


def test_debug_shows_the_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    import fleet

    def boom(path: str) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(fleet, "load_fleet", boom)
    monkeypatch.setenv("ACCELFLEET_DEBUG", "1")
    result = runner.invoke(app, ["fleet", "validate"])
    assert result.exit_code == 3
    assert "Traceback" in result.output


def test_smoke_local_junit_unwritable_keeps_the_results(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A path that passed the early check but cannot be written when the results are in
    (here: the check is skipped) loses nothing: the results are printed, then exit 2."""
    import cli._output

    pytest.importorskip("torch")
    monkeypatch.setattr(cli._output, "writable", lambda *a, **k: None)
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    result = runner.invoke(app, ["smoke", "local", "--tier", "0", "--json", "--junit",
                                 str(blocker / "junit.xml")])
    assert result.exit_code == 2, result.output
    assert '"results"' in result.output  # measured, printed, not lost
    assert f"cannot write {blocker / 'junit.xml'}" in result.output
    assert "Traceback" not in result.output


def test_smoke_local_junit_missing_parent_is_created(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    target = tmp_path / "new" / "dir" / "junit.xml"
    result = runner.invoke(app, ["smoke", "local", "--tier", "0", "--junit", str(target)])
    assert result.exit_code == 0, result.output
    assert "<testsuite" in target.read_text()


def test_a_backend_that_fails_to_load_is_a_setup_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """Not only ImportError: a CUDA build on a machine without libcudart raises OSError."""
    import sys

    class Broken:
        def __getattr__(self, name: str) -> None:
            raise OSError("libcudart.so.12: cannot open shared object file")

    monkeypatch.setitem(sys.modules, "smoke.probes._torch", Broken())
    result = runner.invoke(app, ["smoke", "local", "--backend", "torch", "--tier", "0"])
    assert result.exit_code == 2, result.output
    assert "failed to load: OSError: libcudart.so.12" in result.output
    assert "reinstall" in result.output and "Traceback" not in result.output


def test_help_loads_neither_pydantic_nor_the_rules() -> None:
    """`accelfleet --help` through the console entry point (which imports fleet.errors) stays
    light: the domain model loads only when a command needs it."""
    import subprocess
    import sys

    code = ("import sys, runpy\n"
            "sys.argv = ['accelfleet', '--help']\n"
            "try:\n"
            "    runpy.run_module('cli', run_name='__main__')\n"
            "except SystemExit:\n"
            "    pass\n"
            "heavy = ('pydantic', 'fleet.rules.validate', 'fleet.catalog', 'ruamel', 'pulumi',"
            " 'torch', 'jax', 'kubernetes')\n"
            "print(','.join(m for m in heavy if m in sys.modules), file=sys.stderr)\n")
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True,
                         text=True, check=True)
    assert out.stderr.strip() == ""
    assert "Usage" in out.stdout


def _commands(group: object, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    out = [prefix]
    for name, sub in (getattr(group, "commands", None) or {}).items():
        out += _commands(sub, (*prefix, name))
    return out


def test_every_help_reads_as_sentences_with_no_type_noise() -> None:
    """No `<bool>` beside a flag, no `<list[str]>`, and no sentence broken where the
    docstring's lines end (each paragraph wraps to the terminal)."""
    import typer

    for args in _commands(typer.main.get_command(app)):
        result = runner.invoke(app, [*args, "--help"], env={"COLUMNS": "200"})
        assert result.exit_code == 0, (args, result.output)
        assert "<bool>" not in result.output, args
        assert "<list[" not in result.output, args
        for line in result.output.splitlines():
            text = line.strip(" │")
            # a docstring line break shows as a short line followed by a lower-case one
            assert not (text.endswith(("the", "a", "of", "is", "to"))), (args, line)


@pytest.mark.parametrize("words", ["", "   "])
def test_an_empty_expect_is_bad_input_not_no_expectation(words: str) -> None:
    result = runner.invoke(app, ["smoke", "local", "--tier", "0", "--expect", words])
    assert result.exit_code == 2, result.output
    assert "--expect is empty" in result.output and "hint:" in result.output


def test_smoke_local_refuses_a_junit_directory_before_probing(tmp_path: Path) -> None:
    result = runner.invoke(app, ["smoke", "local", "--tier", "0", "--json", "--junit",
                                 str(tmp_path)])
    assert result.exit_code == 2
    assert "is a directory" in result.output and '"results"' not in result.output


@pytest.mark.parametrize("where", ["a-directory", "under-a-file"])
def test_plan_refuses_an_unwritable_out_before_planning(where: str, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    import components.engine.plan

    def never(*args: object, **kwargs: object) -> None:
        raise AssertionError("planned although --out cannot be written")

    monkeypatch.setattr(components.engine.plan, "run_plan", never)
    blocker = tmp_path / "file"
    blocker.write_text("x")
    out = tmp_path if where == "a-directory" else blocker / "plan.json"
    result = runner.invoke(app, ["plan", "--json", "--out", str(out)])
    assert result.exit_code == 2, result.output
    assert f"cannot write {out}" in result.output and "hint:" in result.output


def test_plan_survives_config_values_json_cannot_encode(tmp_path: Path) -> None:
    """Another `config:` key with a YAML date, `!!binary`, a set or a non-string key."""
    example = (Path(__file__).resolve().parents[2] / "stacks" / "Pulumi.example.yaml")
    text = example.read_text(encoding="utf-8").replace(
        "config:\n", "config:\n  acme:odd: {when: 2026-01-01, blob: !!binary aGk=, "
        "tags: !!set {a, b}, 1: one, at: 2026-01-01T10:00:00Z}\n", 1)
    stack = tmp_path / "Pulumi.odd.yaml"
    stack.write_text(text, encoding="utf-8")
    result = runner.invoke(app, ["plan", str(stack), "--json", "--out",
                                 str(tmp_path / "new" / "plan.json")])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "new" / "plan.json").read_text().startswith("{")
    from components.engine.plan import stack_config

    _, config, _ = stack_config(stack)
    assert '"when": "2026-01-01"' in config["acme:odd"] and '"blob": "aGk="' in config[
        "acme:odd"] and '"1": "one"' in config["acme:odd"]


@pytest.mark.parametrize("columns", ["60", "90", "250"])
def test_validate_output_fits_the_terminal_and_never_cuts_a_value(columns: str) -> None:
    result = runner.invoke(app, ["fleet", "validate"], env={"COLUMNS": columns})
    assert result.exit_code == 0, result.output
    assert all(len(line) <= int(columns) for line in result.output.splitlines())
    # whole values, however narrow the terminal: zone lists and reservation names
    assert "us-central1-a,us-central1-b" in result.output
    assert "acme-v5p-reservation" in result.output
    assert ("┃ pool" in result.output) == (columns == "250")  # a table only where it fits


def test_piped_output_is_not_squeezed_to_80_columns() -> None:
    result = runner.invoke(app, ["catalog", "list"], env={"COLUMNS": ""})
    assert result.exit_code == 0
    assert max(len(line) for line in result.output.splitlines()) > 80
