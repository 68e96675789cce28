"""The specification revision the rules encode (``revision.json``, package data): the working group's commit
and the sha256 of each of its texts, and the seed texts with theirs. A record names it, so a reviewer can
tell which texts a verdict was reached against; a rule's help link points at its text at that commit.
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path
from typing import Any

_MD_NAME = re.compile(r"[A-Za-z0-9_]+\.md")


@functools.lru_cache(maxsize=1)
def revision() -> dict[str, Any]:
    with open(Path(__file__).with_name("revision.json"), encoding="utf-8") as handle:
        data: dict[str, Any] = json.load(handle)
    return data


def _text_paths() -> dict[str, str]:
    """A text's file name -> its path in the working group's folder (conv2.md -> ops/conv/conv2.md)."""
    return {Path(t["path"]).name: t["path"] for t in revision()["texts"]}


def spec_text(origin: str) -> str:
    """The specification text a rule's origin cites first: a working-group text's path when it is one,
    else the first document or requirement it names ("REQ-FO-010", "sonnx-check comparison policy")."""
    paths = _text_paths()
    names = _MD_NAME.findall(origin)
    for name in names:
        if name in paths:
            return paths[name]
    if names:
        return names[0]
    return re.split(r"[,(;]", origin, maxsplit=1)[0].strip() or origin


def text_url(origin: str) -> str | None:
    """The web page of the working-group text a rule's origin cites, at the encoded commit (None when it
    cites none of them)."""
    paths = _text_paths()
    for name in _MD_NAME.findall(origin):
        if name in paths:
            group = revision()["working_group"]
            return f"{group['repository']}/blob/{group['commit']}/{group['folder']}/{paths[name]}"
    return None
