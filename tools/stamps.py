"""The key a set-up step's stamp is named by: the content of the files it was made from.

``make`` compares file times, and a fresh clone's files are all new, so a stamp that
depended on them would install everything again. The Makefile names each stamp by this
key instead (``.venv/.chainrule-install-<key>``): a stamp with the current key means the
step ran on exactly these files. ``python3 tools/stamps.py FILE ...`` prints the key.
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path


def key(paths: list) -> str:
    """16 hexadecimal digits of SHA-256 over the bytes of ``paths``, in order."""
    digest = hashlib.sha256()
    for path in paths:
        digest.update(Path(path).read_bytes() + b"\0")
    return digest.hexdigest()[:16]


if __name__ == "__main__":
    print(key(sys.argv[1:]))
