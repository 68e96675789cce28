"""``--list-rules`` and ``--explain``: the rule catalogue printed, then the command exits."""

from __future__ import annotations

import click

from sonnx_check.errors import UsageError
from sonnx_check.report.console import print_rendered, stdout_console


def show_catalogue(
    list_rules: bool, explain: str | None, output_format: str | None, aliases: bool = False
) -> None:
    """Print the catalogue (text or JSON) or one rule's explanation (``aliases``: --list-rules --aliases)."""
    from sonnx_check.explain import explain as explain_rule  # rich's tables: only for these two
    from sonnx_check.explain import list_rules as list_catalogue

    if not list_rules:
        assert explain is not None  # the command asks for the catalogue or for one rule
        print_rendered(stdout_console(), lambda console: explain_rule(console, explain))
    elif output_format == "json":
        from sonnx_check.explain import rules_json

        click.echo(rules_json(), nl=False)
    elif output_format in (None, "text"):
        print_rendered(stdout_console(), lambda console: list_catalogue(console, aliases))
    else:
        raise UsageError(f"--list-rules prints text or json, not {output_format}")
