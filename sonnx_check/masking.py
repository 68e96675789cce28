"""Credentials never reach a record: the one place that masks them in a command line.

sonnx-check's own command line (SARIF ``invocations``, the evidence record's ``run``) and the runtime command
(``--runtime-command``: every report's comparison, the evidence record's settings) are copied into files a CI
job uploads (SARIF goes to code scanning). A runtime command often carries a credential: a token for a
device farm, a URL with a password. Every writer records a command line through this module, which
replaces with ``***``:

- the value of an option whose name looks secret (``--token=V``, ``--token V``, ``-api_key V``): a name
  containing one of ``SECRET_WORDS``;
- an environment-style assignment of such a name (``API_KEY=V``, ``export GH_TOKEN=V``);
- the password of a URL (``https://user:V@host``), or its user when it has no password
  (``https://V@host``: a token used as the user name);
- the credentials after ``Bearer``/``Basic``/``Token`` (an ``Authorization`` header given to curl);
- the passwords of programs whose option names say nothing (``PROGRAM_PASSWORDS``): ``sshpass -p V``
  (``-pV``), the MySQL and MariaDB clients' ``-pV`` and ``--pass=V``, ``redis-cli -a V``, OpenSSL's
  ``pass:V``, and the ``SSHPASS=V`` assignment;
- every occurrence of a value named by ``--mask VALUE`` (repeatable), or by the environment variable
  ``SONNX_CHECK_MASK`` (one value per line), anywhere in the line; and the values given to ``--mask``
  themselves.

Masking errs on the side of hiding: ``--auth-mode strict`` records ``--auth-mode ***``. The masked line is
for reading, not for running again.

Standard library only.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Iterable, Sequence

MASK = "***"
ENVIRONMENT = "SONNX_CHECK_MASK"
OPTION = "--mask"
SECRET_WORDS = (
    "token",
    "password",
    "passwd",
    "passphrase",
    "pwd",
    "secret",
    "key",
    "auth",
    "credential",
    "cookie",
    "session",
    "signature",
    "private",
    "bearer",
)

_WORDS = "|".join(SECRET_WORDS)
_VALUE = r"""(?:'[^']*'|"(?:\\.|[^"\\])*"|[^\s'"]+)"""
# --name=VALUE or --name VALUE (one or two dashes), the name containing a secret word
_FLAG = re.compile(
    rf"(?i)(?<![\w-])(--?[A-Za-z0-9_.-]*(?:{_WORDS})[A-Za-z0-9_.-]*)(=(?=\S)|\s+(?!-))({_VALUE})"
)  # after '=' a value may start with '-' (base64url tokens do); after a space that is the next option
# Name: VALUE, an HTTP header or YAML-style pair whose name contains a secret word ("X-Api-Key: V")
_HEADER = re.compile(
    rf"(?i)(?<![\w/-])([A-Za-z0-9_-]*(?:{_WORDS})[A-Za-z0-9_-]*)(\s*:\s*)(?!//|(?:Bearer|Basic|Token)\s)({_VALUE})"
)
# "name": "VALUE" in JSON, the name containing a secret word
_JSON = re.compile(rf'(?i)("[^"]*(?:{_WORDS})[^"]*"\s*:\s*)"(?:\\.|[^"\\])*"')
# curl's -u/--user USER:PASSWORD
_USER_OPTION = re.compile(r"""(?<![\w-])(-u|--user)(=|\s+)([^\s:'"]*):([^\s'"]+)""")
# a URL's signature parameter (Azure SAS, S3 presigned: sig=, X-Amz-Signature= is caught by the words)
_QUERY_SIGNATURE = re.compile(r"(?i)([?&]sig=)([^&\s'\"]+)")
# NAME=VALUE, NAME an identifier containing a secret word (an environment assignment)
_ASSIGNMENT = re.compile(rf"(?i)(?<![\w-])([A-Za-z_][A-Za-z0-9_]*(?:{_WORDS})[A-Za-z0-9_]*)=({_VALUE})")
# scheme://user:password@ or scheme://token@
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)([^/\s:@'\"]*)(?::([^/\s@'\"]*))?@")
_SCHEME_CREDENTIALS = re.compile(r"(?i)(?<![\w-])(Bearer|Basic|Token)(\s+)(?!-)([^\s'\"]+)")
# OpenSSL's password argument (-passin pass:V, -passout pass:V, -pass pass:V)
_OPENSSL_PASS = re.compile(r"(?<![\w:-])(pass:)([^\s]+)")
# sshpass reads SSHPASS (-e); the other clients' variables carry a secret word (MYSQL_PWD, PGPASSWORD)
_PASSWORD_VARIABLE = re.compile(rf"(?<![\w-])(SSHPASS=)({_VALUE})")
# a command line's words and its command separators (; & | and their doubles), quotes kept in the word
_WORD = re.compile(r"""(?:'[^']*'|"(?:\\.|[^"\\])*"|[^\s'";&|])+|[;&|]+""")
_MYSQL_CLIENTS = frozenset(
    f"{family}{tool}"
    for family in ("mysql", "mariadb")
    for tool in ("", "dump", "admin", "import", "show", "check", "pump", "slap", "binlog")
) | frozenset(f"mariadb-{tool}" for tool in ("dump", "admin", "import", "show", "check", "slap", "binlog"))
PROGRAM_PASSWORDS = ("sshpass", *sorted(_MYSQL_CLIENTS), "redis-cli")
_MYSQL = "a MySQL client"

_given: list[str] = []  # --mask values of this run


def use(values: Iterable[str]) -> None:
    """The ``--mask`` values of this run (replacing any given before: one run, one list)."""
    _given[:] = [v for v in values if v]


def explicit_values() -> list[str]:
    """The values to mask wherever they appear: ``--mask`` and ``SONNX_CHECK_MASK``, longest first (a value
    that contains another is masked whole)."""
    from_environment = os.environ.get(ENVIRONMENT, "")
    values = set(_given)
    values.update(line.rstrip("\r") for line in from_environment.split("\n"))
    values.discard("")
    return sorted(values, key=lambda v: (-len(v), v))


def mask_text(text: str) -> str:
    """``text`` (a command line, or one argument) with every credential masked."""
    for value in explicit_values():
        text = text.replace(shlex.quote(value), MASK).replace(value, MASK)  # quoted first (as shlex.join)
    text = _USERINFO.sub(_userinfo, text)
    text = _SCHEME_CREDENTIALS.sub(lambda m: f"{m.group(1)}{m.group(2)}{MASK}", text)
    text = _program_passwords(text)
    text = _OPENSSL_PASS.sub(lambda m: f"{m.group(1)}{MASK}", text)
    text = _PASSWORD_VARIABLE.sub(lambda m: f"{m.group(1)}{MASK}", text)
    text = _USER_OPTION.sub(lambda m: f"{m.group(1)}{m.group(2)}{m.group(3)}:{MASK}", text)
    text = _QUERY_SIGNATURE.sub(lambda m: f"{m.group(1)}{MASK}", text)
    text = _JSON.sub(lambda m: f'{m.group(1)}"{MASK}"', text)
    text = _FLAG.sub(lambda m: f"{m.group(1)}{m.group(2)}{MASK}", text)
    text = _HEADER.sub(lambda m: f"{m.group(1)}{m.group(2)}{MASK}", text)
    return _ASSIGNMENT.sub(lambda m: f"{m.group(1)}={MASK}", text)


def _program_passwords(text: str) -> str:
    """The password options of ``PROGRAM_PASSWORDS``, read word by word from each program's name to the
    next command separator: sshpass's options end at the command it runs (``sshpass -p V ssh -p 22 h``
    keeps ssh's port), a MySQL client's ``-p`` takes its value attached (``-p db`` prompts: db is the
    database), redis-cli's ``-a`` the next word or attached."""
    spans: list[tuple[int, int]] = []
    program, take_next, skip_next = "", False, False
    for word in _WORD.finditer(text):
        token = word.group(0)
        if token[0] in ";&|":
            program, take_next, skip_next = "", False, False
            continue
        if take_next or skip_next:
            if take_next:
                spans.append(word.span())
            take_next = skip_next = False
            continue
        name = token.strip("'\"").rsplit("/", 1)[-1]
        if name in PROGRAM_PASSWORDS and program != _MYSQL:
            program = _MYSQL if name in _MYSQL_CLIENTS else name
            continue
        start = word.start()
        if program == "sshpass":
            if token == "-p":
                take_next = True
            elif token.startswith("-p"):
                spans.append((start + 2, word.end()))
            elif token in ("-f", "-d", "-P"):
                skip_next = True
            elif not token.startswith("-"):
                program = ""  # the command sshpass runs: its own options are its own
                if name in PROGRAM_PASSWORDS:
                    program = _MYSQL if name in _MYSQL_CLIENTS else name
        elif program == _MYSQL:
            if token.startswith("-p") and len(token) > 2:
                spans.append((start + 2, word.end()))
            elif token.startswith("--pass") and "=" in token:
                spans.append((start + token.index("=") + 1, word.end()))
        elif program == "redis-cli":
            if token in ("-a", "--pass", "--user-pass"):
                take_next = True
            elif token.startswith("-a") and not token.startswith("--"):
                spans.append((start + 2, word.end()))
    for start, end in reversed(spans):
        text = text[:start] + MASK + text[end:]
    return text


def _userinfo(match: re.Match[str]) -> str:
    scheme, user, password = match.group(1), match.group(2), match.group(3)
    if password is not None:
        return f"{scheme}{user}:{MASK}@"
    return f"{scheme}{MASK}@" if user else match.group(0)


def mask_command(command: str | None) -> str | None:
    """A runtime command line as it is recorded."""
    return None if command is None else mask_text(command)


def mask_arguments(argv: Sequence[str]) -> list[str]:
    """sonnx-check's own arguments as they are recorded: each one masked, the values of ``--mask`` whole,
    and the argument after an option whose name looks secret."""
    masked: list[str] = []
    hide_next = False
    for argument in argv:
        if hide_next:
            masked.append(MASK)
            hide_next = False
            continue
        if argument == OPTION or _secret_option(argument):
            masked.append(argument)
            hide_next = True
            continue
        if argument.startswith(OPTION + "="):
            masked.append(f"{OPTION}={MASK}")
            continue
        masked.append(mask_text(argument))
    return masked


def mask_command_line(program: str, argv: Sequence[str]) -> str:
    """``program`` and its masked arguments as one shell line."""
    return shlex.join([program, *mask_arguments(argv)])


def _secret_option(argument: str) -> bool:
    """``--token`` alone (its value is the next argument)."""
    if not argument.startswith("-") or "=" in argument or argument == "--":
        return False
    name = argument.lstrip("-").lower()
    return any(word in name for word in SECRET_WORDS)


__all__ = [
    "ENVIRONMENT",
    "MASK",
    "SECRET_WORDS",
    "explicit_values",
    "mask_arguments",
    "mask_command",
    "mask_command_line",
    "mask_text",
    "use",
]
