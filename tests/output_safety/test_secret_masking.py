"""Credentials on a command line never reach a record (masking.py): the runtime command and sonnx-check's own
arguments are copied into SARIF (uploaded to code scanning), JSON, HTML, the evidence record and the other
formats; every one of them must carry ``***`` in place of a secret."""

from __future__ import annotations

import importlib.util
import shlex
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from sonnx_check import masking
from sonnx_check.cli import main

ROOT = Path(__file__).resolve().parents[2]
MODEL = ROOT / "sample_models" / "conforming" / "maxpool_explicit.onnx"
HTML = all(importlib.util.find_spec(m) for m in ("jinja2", "matplotlib"))  # the [report] extra
FORMATS = (
    ("json", "sarif", "html", "text", "junit", "gitlab", "github")
    if HTML
    else ("json", "sarif", "text", "junit", "gitlab", "github")
)


@pytest.fixture(autouse=True)
def _no_given_values(monkeypatch):
    monkeypatch.delenv(masking.ENVIRONMENT, raising=False)
    masking.use(())
    yield
    masking.use(())


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("run --token=abc1 x", "run --token=*** x"),
        ("run --token abc1 x", "run --token *** x"),
        ('run --api-key "a b" x', "run --api-key *** x"),
        ("run -password=p1 x", "run -password=*** x"),
        ("API_KEY=zz GH_TOKEN=qq ./run", "API_KEY=*** GH_TOKEN=*** ./run"),
        ("curl https://u:pw@h/x", "curl https://u:***@h/x"),
        ("git clone https://ghp_abc@github.com/o/r", "git clone https://***@github.com/o/r"),
        ('curl -H "Authorization: Bearer abc.def" x', 'curl -H "Authorization: Bearer ***" x'),
        ("run --token --verbose m.onnx", "run --token --verbose m.onnx"),  # a flag, not a value
        ("run --model m.onnx --seed 3", "run --model m.onnx --seed 3"),  # nothing secret: unchanged
        ('curl -u me:S3 -H "X-Api-Key: S3" u', 'curl -u me:*** -H "X-Api-Key: ***" u'),  # review of issue 27
        ("run --header=Private-Token:S3 x", "run --header=Private-Token:*** x"),
        ("https://a.blob/x?sv=2020&sig=S3&se=1", "https://a.blob/x?sv=2020&sig=***&se=1"),
        ("run --token=-AbC123 x", "run --token=*** x"),  # a base64url token may start with '-'
        ('{"api_key": "S3"}', '{"api_key": "***"}'),
        ("run --shape x:1,3 https://example.com/a", "run --shape x:1,3 https://example.com/a"),
        # programs whose password option names nothing secret (issue 27's forms, completed)
        ("sshpass -p pw1 ssh -p 22 h run", "sshpass -p *** ssh -p 22 h run"),  # ssh's -p is a port
        ("sshpass -ppw1 ssh h", "sshpass -p*** ssh h"),
        ("sshpass -f /tmp/pwfile ssh -p 22 h", "sshpass -f /tmp/pwfile ssh -p 22 h"),
        ("SSHPASS=pw1 sshpass -e ssh h", "SSHPASS=*** sshpass -e ssh h"),
        ("mysql -ppw1 -u root db", "mysql -p*** -u root db"),
        ("/usr/bin/mysqldump -uroot -p'p w' db", "/usr/bin/mysqldump -uroot -p*** db"),
        ("mysql -u root -p db", "mysql -u root -p db"),  # -p alone prompts: db is the database
        ("mysql --password=pw1 db", "mysql --password=*** db"),
        ("mariadb --pass=pw1 db", "mariadb --pass=*** db"),
        ("PGPASSWORD=pw1 psql -h h", "PGPASSWORD=*** psql -h h"),
        ("MYSQL_PWD=pw1 mysql db", "MYSQL_PWD=*** mysql db"),
        ("run --password pw1 x", "run --password *** x"),
        ("redis-cli -a pw1 -p 6379 ping", "redis-cli -a *** -p 6379 ping"),
        ("openssl rsa -passin pass:pw1 -in k", "openssl rsa -passin pass:*** -in k"),
        ("ssh -p 22 h && mysql -ppw1", "ssh -p 22 h && mysql -p***"),
        ("docker run -p 8080:80 img", "docker run -p 8080:80 img"),  # a port elsewhere
        ("curl https://me:pw1@h/x", "curl https://me:***@h/x"),
    ],
)
def test_secret_looking_values_are_masked(line, expected):
    assert masking.mask_text(line) == expected


def test_values_named_by_mask_and_the_environment_are_masked_anywhere(monkeypatch):
    monkeypatch.setenv(masking.ENVIRONMENT, "envsecret\r\n\nsecond value\n")
    masking.use(["flagsecret"])
    line = "run --model x-flagsecret-y 'second value' envsecret"
    assert masking.mask_text(line) == "run --model x-***-y *** ***"


def test_the_values_of_mask_itself_are_never_recorded():
    masking.use(["s1"])
    assert masking.mask_arguments(["--mask", "s1", "--mask=s2", "m.onnx"]) == [
        "--mask",
        "***",
        "--mask=***",
        "m.onnx",
    ]


_SECRET = st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJ0123456789_+.~", min_size=6, max_size=30)


@given(
    secret=_SECRET,
    name=st.sampled_from(["token", "api-key", "password", "client_secret", "auth", "x-credential"]),
    form=st.sampled_from(
        [
            "--{n}={v}",
            "--{n} {v}",
            "--{n}='{v}'",
            "https://user:{v}@host/p",
            "sshpass -p {v} ssh host",
            "sshpass -p{v} ssh host",
            "mysql -p{v} db",
            "mysql --password={v} db",
            "PGPASSWORD={v} psql",
            "SSHPASS={v} sshpass -e ssh host",
        ]
    ),
)
def test_a_secret_in_any_recognised_form_never_survives(secret, name, form):
    line = f"runtime {form.format(n=name, v=secret)} model.onnx"
    assert secret not in masking.mask_text(line)
    assert secret not in " ".join(masking.mask_arguments(["--runtime-command", line]))


def test_no_format_and_no_record_carries_a_credential_of_the_runtime_command(tmp_path, monkeypatch):
    monkeypatch.setenv(masking.ENVIRONMENT, "SEKRIT5")
    command = shlex.join([sys.executable, "-c", "pass"])
    command += " --token=SEKRIT1 https://u:SEKRIT2@h/x API_KEY=SEKRIT3 --model x-SEKRIT4 SEKRIT5"
    command += " sshpass -p SEKRIT7 mysql -pSEKRIT8"
    args = ["--isolated", "--no-node-edges", "--mask", "SEKRIT4", "--runtime-command", command]
    for fmt in FORMATS:
        args += ["--output-format", f"{fmt}:{tmp_path / ('report.' + fmt)}"]
    args += ["--evidence", str(tmp_path / "evidence.json"), str(MODEL)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code in (1, 2), result.output
    written = sorted(tmp_path.iterdir())
    assert len(written) == len(FORMATS) + 1
    for path in written:
        text = path.read_text(encoding="utf-8")
        assert "SEKRIT" not in text, path.name
    for name in ("report.json", "report.sarif", "evidence.json", *(("report.html",) if HTML else ())):
        assert "--token=***" in (tmp_path / name).read_text(encoding="utf-8"), name
    assert "SEKRIT" not in result.output


def test_an_unparsable_runtime_command_is_named_masked_in_the_error(tmp_path):
    result = CliRunner().invoke(
        main, ["--isolated", "--runtime-command", "run --token=SEKRIT6 'unclosed", str(MODEL)]
    )
    assert result.exit_code == 2
    assert "--token=***" in result.stderr and "SEKRIT" not in result.output
