"""A configuration file found by discovery (beside the models, so possibly added with them by a pull request)
cannot make sonnx-check run a program, read outside its folder or lift a limit: such a key is one
configuration error naming the file and the key (exit 2), and nothing runs. The command line and a file
named by --config may set everything (docs/untrusted.md)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from clikit import maxpool_r2, run_cli, save, write_pyproject

from sonnx_check import settings as declared
from sonnx_check.config import CliOptions, ConfigError, load, parse_table, resolve
from sonnx_check.config.table import TOP_KEY_TRUST


def _command(mark: Path) -> str:
    """A runtime command that leaves a mark if it is ever run (the shell is not involved: no quoting)."""
    script = mark.parent / "runtime.sh"
    script.write_text(f"#!/bin/sh\ntouch {mark}\n", encoding="utf-8")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return str(script)


def _repository(tmp_path: Path, body: str, beside: bool = False) -> Path:
    root = tmp_path / "repo"
    save(maxpool_r2(), root / "models" / "m.onnx")
    write_pyproject(root / "models" if beside else root, body)
    return root


def _error_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr  # one line, no traceback
    return lines[0]


@pytest.mark.parametrize(
    "args",
    [
        ["models"],  # the GitHub Action's default command line (no --compare)
        ["--compare", "models"],
        ["models/m.onnx"],  # the pre-commit hook passes the staged files
    ],
    ids=["action-default", "compare-folder", "pre-commit"],
)
@pytest.mark.parametrize("beside", [False, True], ids=["found-from-cwd", "found-beside-model"])
def test_a_discovered_runtime_command_is_refused_and_never_run(
    tmp_path: Path, args: list[str], beside: bool
) -> None:
    mark = tmp_path / "ran"
    command = _command(mark)
    root = _repository(
        tmp_path, f'[tool.sonnx-check.compare]\nenabled = true\nruntime-command = "{command}"\n', beside
    )
    run = run_cli(args, cwd=root)
    assert run.code == 2, run.stdout + run.stderr
    line = _error_line(run.stderr)
    shown = "models/pyproject.toml" if beside else "pyproject.toml"
    assert f"{shown}: tool.sonnx-check.compare.runtime-command: not accepted from a discovered" in line
    assert "--runtime-command" in line and "--config" in line  # says how to give it
    assert not mark.exists()


NO_FILE = "a discovered configuration file may name only generated datasets (random, edge), no file"
NOT_ACCEPTED = "not accepted from a discovered configuration file"


@pytest.mark.parametrize(
    ("key", "value", "problem"),
    [
        ("inputs", '["../../outside/x.npz"]', NO_FILE),
        ("inputs", '["edge", "data/../../outside/x.npz"]', NO_FILE),
        ("inputs", '["OUTSIDE/x.npz"]', NO_FILE),
        ("inputs", '["escape/x.npz"]', NO_FILE),
        ("inputs", '["data/x.npz"]', NO_FILE),  # inside the folder, but a link there reads any file
        ("outputs", '"../../outside"', NOT_ACCEPTED),
        ("outputs", '"OUTSIDE"', NOT_ACCEPTED),
        ("outputs", '"saved"', NOT_ACCEPTED),  # saved outputs would stand in for the runtime under test
    ],
)
def test_a_discovered_file_names_no_data_file_and_no_saved_outputs(
    tmp_path: Path, key: str, value: str, problem: str
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "x.npz").write_bytes(b"PK\x05\x06" + bytes(18))  # an empty archive: would be read
    root = _repository(
        tmp_path, f"[tool.sonnx-check.compare]\n{key} = {value.replace('OUTSIDE', str(outside))}\n"
    )
    (root / "escape").symlink_to(outside)  # a link inside the tree to a folder outside it
    (root / "data").mkdir()
    (root / "data" / "x.npz").symlink_to(outside / "x.npz")  # a link planted among the data
    run = run_cli(["--compare", "models"], cwd=root)
    assert run.code == 2, run.stdout + run.stderr
    line = _error_line(run.stderr)
    assert line.startswith(f"sonnx-check: error: pyproject.toml: tool.sonnx-check.compare.{key}: {problem}")


def test_a_discovered_file_may_ask_for_the_generated_datasets(tmp_path: Path) -> None:
    root = _repository(tmp_path, '[tool.sonnx-check.compare]\ninputs = ["random", "edge"]\n')
    compare = resolve(CliOptions(), load(None, False, str(root)), str(root)).compare
    assert compare.inputs == ("random", "edge")


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ('timeout = "none"', "may not lift the limit"),
        ("timeout = 0", "may not lift the limit"),
        ("timeout = 301", "may not raise the limit above its default"),
        ('max-memory = "0"', "may not lift the limit"),
        ('max-memory = "64GiB"', "may not raise the limit above its default"),
        ("max-elements = 100000001", "may not raise the limit above its default"),
    ],
)
def test_a_discovered_file_cannot_lift_a_limit(tmp_path: Path, line: str, problem: str) -> None:
    root = _repository(tmp_path, f"[tool.sonnx-check.compare]\nenabled = true\n{line}\n")
    run = run_cli(["models"], cwd=root)
    assert run.code == 2, run.stdout + run.stderr
    key = line.split(" =")[0]
    assert f"pyproject.toml: tool.sonnx-check.compare.{key}: a discovered configuration file {problem}" in (
        _error_line(run.stderr)
    )


def test_a_discovered_file_may_enable_the_comparison_and_tighten_limits(tmp_path: Path) -> None:
    """Comparing with onnxruntime is the product's purpose and adds no program: a project's own file may ask
    for it (and for tighter limits) without --config."""
    body = (
        '[tool.sonnx-check.compare]\nenabled = true\ntimeout = 30\nmax-memory = "1GiB"\nmax-elements = 1000\n'
    )
    root = _repository(tmp_path, body)
    compare = resolve(CliOptions(), load(None, False, str(root)), str(root)).compare
    assert compare.enabled and compare.timeout == 30.0 and compare.max_memory == 1 << 30
    assert compare.max_elements == 1000


def test_a_file_named_by_config_may_set_every_key(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    body = (
        '[tool.sonnx-check.compare]\nruntime-command = "my-runtime --fast"\n'
        f'inputs = ["../outside/x.npz", "{outside}/y.npz"]\noutputs = "../outside"\ntimeout = "none"\n'
        'max-memory = "64GiB"\n'
    )
    root = _repository(tmp_path, body)
    compare = resolve(CliOptions(), load(str(root / "pyproject.toml"), False, str(root)), str(root)).compare
    assert compare.runtime_command == "my-runtime --fast" and compare.timeout is None
    assert compare.max_memory == 64 << 30 and len(compare.inputs) == 2


def test_the_command_line_gives_what_a_discovered_file_may_not(tmp_path: Path) -> None:
    root = _repository(tmp_path, "[tool.sonnx-check]\nselect = ['MaxPool.*']\n")
    cli = CliOptions(runtime_command="my-runtime", timeout=0.0)
    compare = resolve(cli, load(None, False, str(root)), str(root)).compare
    assert compare.runtime_command == "my-runtime" and compare.timeout is None


def test_untrusted_values_in_the_error_are_sanitised(tmp_path: Path) -> None:
    root = _repository(tmp_path, '[tool.sonnx-check.compare]\ninputs = ["../\\u001b[31mred\\u0007/x.npz"]\n')
    run = run_cli(["models"], cwd=root)
    assert run.code == 2
    line = _error_line(run.stderr)
    assert "\x1b" not in line and "\x07" not in line and "red" in line


def test_every_key_declares_what_a_discovered_file_may_set() -> None:
    """The trust of a key is declared with it; a key that runs a program or names a path is never 'any'."""
    assert set(TOP_KEY_TRUST.values()) <= set(declared.TRUST)
    for option in declared.OPTIONS:
        if option.config_key is None:
            continue
        assert option.trust in declared.TRUST, option.name
        assert option.trust != declared.TRUST_CPUS, option.name  # enforced for the top-level jobs only
        assert (option.trust == declared.TRUST_ANY) == (not option.why), option.name
        path_reader = option.read in (declared.kinds.read_path, declared.kinds.read_inputs)
        assert not path_reader or option.trust in (declared.TRUST_GENERATED, declared.TRUST_EXPLICIT), (
            option.name
        )
    assert declared.BY_NAME["runtime_command"].trust == declared.TRUST_EXPLICIT


@pytest.mark.parametrize("option", [o for o in declared.OPTIONS if o.trust == declared.TRUST_EXPLICIT])
def test_an_explicit_only_key_is_refused_before_its_value_is_read(option: declared.Option) -> None:
    with pytest.raises(ConfigError, match=f"compare.{option.config_key}: not accepted from a discovered"):
        parse_table({"compare": {option.config_key: [[]]}}, "pyproject.toml", os.getcwd())


def test_a_discovered_file_asks_for_at_most_one_worker_per_cpu(tmp_path: Path) -> None:
    root = _repository(tmp_path, "[tool.sonnx-check]\njobs = 100000\n")
    cpus = os.cpu_count() or 1
    assert resolve(CliOptions(), load(None, False, str(root)), str(root)).jobs == cpus
    named = load(str(root / "pyproject.toml"), False, str(root))  # --config: the user's own choice
    assert resolve(CliOptions(), named, str(root)).jobs == 100000


@pytest.mark.parametrize("key", ["inputs", "outputs", "runtime-command"])
def test_a_nul_byte_in_a_path_or_command_is_a_configuration_error(tmp_path: Path, key: str) -> None:
    value = '["a\\u0000b.npz"]' if key == "inputs" else '"a\\u0000b"'
    root = _repository(tmp_path, f"[tool.sonnx-check.compare]\n{key} = {value}\n")
    for args in (["models"], ["--config", "pyproject.toml", "models"]):  # was exit 3 with --compare
        run = run_cli(args, cwd=root)
        assert run.code == 2, run.stdout + run.stderr
        assert f"pyproject.toml: tool.sonnx-check.compare.{key}: " in _error_line(run.stderr)
