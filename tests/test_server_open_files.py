"""A server raises its limit of open files to what the system allows it: a few hundred
streams (a socket each, and one to Redis each with several workers) outgrow the usual
1,024. Checked in a fresh interpreter started with a low soft limit."""

from __future__ import annotations

import resource
import subprocess
import sys

import pytest

SHOW = """
import resource
from taverna.cli.entry import more_open_files
more_open_files()
print(resource.getrlimit(resource.RLIMIT_NOFILE)[0])
"""


def test_a_server_raises_its_soft_limit_of_open_files() -> None:
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard <= 256:
        pytest.skip("the hard limit leaves nothing to raise")
    low = 256

    def lowered() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (low, hard))

    out = subprocess.run(
        [sys.executable, "-c", SHOW],
        preexec_fn=lowered,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    raised = int(out.stdout.strip())
    assert raised > low
    assert raised == (65_536 if hard == resource.RLIM_INFINITY else hard)
