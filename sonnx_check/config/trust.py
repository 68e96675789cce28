"""What a configuration file found by discovery may set, as docs/untrusted.md's table shows it.

Generated from the declarations (``table.TOP_KEY_TRUST``, each comparison option's ``trust``), so that the
docs/untrusted.md and the code cannot disagree (tests/config/test_trust_table.py compares them):

    python -m sonnx_check.config.trust
"""

from __future__ import annotations

from sonnx_check import reading_options
from sonnx_check import settings as declared
from sonnx_check.config.reader import TABLE
from sonnx_check.config.table import TOP_KEY_TRUST

START = "<!-- discovered-trust:start (python -m sonnx_check.config.trust) -->"
END = "<!-- discovered-trust:end -->"


def rows() -> list[tuple[str, str, str]]:
    """(key, what a discovered file may set, why) for every key of the configuration."""
    out = [
        (f"`{key}`", declared.TRUST[trust], "") for key, trust in TOP_KEY_TRUST.items() if key != "compare"
    ]
    for option in declared.OPTIONS:
        if option.config_key is not None:
            why = f"it {option.why}" if option.why else ""
            out.append((f"`compare.{option.config_key}`", declared.TRUST[option.trust], why))
        if option.name == "readings":  # the readings' older keys (maxpool-nan), trusted as the table is
            for key in reading_options.alias_config_keys():
                out.append((f"`compare.{key}`", declared.TRUST[option.trust], why))
    return out


def markdown() -> str:
    lines = [
        START,
        f"| Key (in `[{TABLE}]`) | From a discovered file | Why not always |",
        "| --- | --- | --- |",
    ]
    lines += [f"| {key} | {may} | {why} |" for key, may, why in rows()]
    return "\n".join([*lines, END])


if __name__ == "__main__":
    print(markdown())
