"""The key a set-up step's stamp is named by: the content of the files it was made from.

``make`` compares file times, and a fresh clone's files are all new, so a stamp that
depended on them would install everything again. The Makefile names each stamp by this
key instead (``.venv/.chainrule-install-<key>``): a stamp with the current key means the
step ran on exactly these files. ``python3 tools/stamps.py FILE ...`` prints the key.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import sys
from pathlib import Path

#: Debian's list of the system's packages: its size and time change when one is installed or upgraded.
SYSTEM_PACKAGES = Path("/var/lib/dpkg/status")


def key(paths: list) -> str:
    """16 hexadecimal digits of SHA-256 over the bytes of ``paths``, in order."""
    digest = hashlib.sha256()
    for path in paths:
        digest.update(Path(path).read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def environment() -> str:
    """SHA-256 of the Python running this, its installed packages (name and version: one installed by
    hand counts) and the system's packages (:data:`SYSTEM_PACKAGES`, by size and time). What a build
    or a test made from the repository's files also depends on (tools/book/after_site.py,
    tests/results_cache.py)."""
    installed = sorted(f"{d.metadata['Name']}=={d.version}" for d in importlib.metadata.distributions())
    status = os.stat(SYSTEM_PACKAGES) if SYSTEM_PACKAGES.is_file() else None
    system = f"{status and (status.st_size, status.st_mtime_ns)}"
    return hashlib.sha256("\0".join([sys.version, sys.executable, system, *installed]).encode()).hexdigest()


if __name__ == "__main__":
    print(key(sys.argv[1:]))
