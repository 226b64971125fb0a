"""The old import path of ``PosbenchError`` (now posbench/core/errors.py), kept for plug-ins written
against it. posbench itself imports posbench.core.errors (.importlinter forbids this module inside)."""

from posbench.core.errors import PosbenchError, user_errors

__all__ = ["PosbenchError", "user_errors"]
