"""tools/cpu_time.py, which make test prints the tests' own CPU time with, counts a process whose
parent left it running (as Chromium's renderers are left), and passes the command's exit status on."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from common import ROOT

# A shell that starts a CPU-bound Python in a subshell and exits at once, with status 3: the Python
# is orphaned, and no `times` or getrusage of the shell sees its half-second of CPU.
ORPHAN = """( {python} -c "
import time
start = time.process_time()
while time.process_time() - start < 0.5:
    pass
" & ); exit 3"""


def test_an_orphaned_process_is_counted(tmp_path: Path):
    log = tmp_path / "cpu.log"
    command = [sys.executable, "-m", "tools.cpu_time", str(log), "orphan", "--", "sh", "-c"]
    run = subprocess.run([*command, ORPHAN.format(python=sys.executable)], cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 3, run.stderr
    [(label, seconds)] = [line.split() for line in log.read_text().splitlines()]
    assert label == "orphan" and float(seconds) >= 0.5, (run.stdout, log.read_text())
    summary = subprocess.run(
        [sys.executable, "-m", "tools.cpu_time", str(log)], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert summary.stdout.startswith("the tests' own CPU time:") and "(orphan " in summary.stdout
