"""``did you mean alibi?`` for a mistyped name: the closest valid names, compared case-insensitively
(``ALiBi`` is alibi, ``ropee`` is rope), so a long list of valid names need not be read to find it."""

from __future__ import annotations

import difflib


def did_you_mean(value: str, valid: list[str]) -> str:
    """``" (did you mean alibi?)"`` (or ``"... alibi or ..."``), or "" when no valid name is close."""
    lowered = {v.lower(): v for v in valid}
    close = difflib.get_close_matches(str(value).lower(), list(lowered), n=2, cutoff=0.6)
    return f" (did you mean {' or '.join(lowered[c] for c in close)}?)" if close else ""
