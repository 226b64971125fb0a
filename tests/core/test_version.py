"""posbench/core/version.py: ``--version`` says posbench's version with torch's, Python's and the device."""

import platform

import torch

from posbench import __version__
from posbench.core.device import describe, resolve_device
from posbench.core.version import version_text


def test_the_version_line_has_what_a_bug_report_needs():
    assert version_text() == (f"posbench {__version__} (torch {torch.__version__}, Python {platform.python_version()}; "
                              f"device: {describe(resolve_device('auto'))})")
