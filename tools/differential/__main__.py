"""``make differential``: chainrule against PyTorch, apart from the tests.

Three parts, each printing what it tried and anything it found:

* every float64 sample of torch's OpInfo database whose op chainrule has (:mod:`.opinfo`);
* random programs of Tensor ops, and of Value and Dual ops (:mod:`.fuzz`);
* semantics probes, where an engine most often lies (:mod:`.probes`).

It exits with status 1 when it finds a wrong value or gradient, or an error that does not
name the function called. ``--programs N`` sets how many random programs of each kind.
"""

import argparse
import sys
import time
import warnings

from .fuzz import run_scalar_programs, run_tensor_programs
from .opinfo import run_opinfo
from .probes import PROBES, run_probes


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m tools.differential", description=__doc__.splitlines()[0])
    parser.add_argument("--programs", type=int, default=3000, help="random programs of each kind (default 3000)")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")  # torch's own warnings about its samples
    found = 0
    start = time.perf_counter()
    tally = run_opinfo()
    print(
        f"OpInfo samples: {tally.compared} compared, {tally.refused} refused with a clear message "
        f"(not supported), {len(tally.mismatches)} wrong, {len(tally.unclear)} unclear errors"
    )
    for reason, count in sorted(tally.reasons.items(), key=lambda item: -item[1]):
        print(f"  refused {count:4d}x  {reason}")
    for line in tally.mismatches + tally.unclear:
        print(f"  FOUND  {line}")
    for name in tally.unmatched:
        print(f"  FOUND  the adapter {name!r} is the name of no OpInfo: key it by the OpInfo's `name`")
    found += len(tally.mismatches) + len(tally.unclear) + len(tally.unmatched)
    for name, run in (("Tensor", run_tensor_programs), ("Value and Dual", run_scalar_programs)):
        problems = run(args.programs)
        print(f"random {name} programs: {args.programs} run, {len(problems)} differ from torch")
        for problem in problems[:20]:
            print(f"  FOUND  {problem}")
        found += len(problems)
    problems = run_probes()
    print(f"probes: {len(PROBES)} run, {len(problems)} found something")
    for name, problem in problems:
        print(f"  FOUND  {name}: {problem}")
    found += len(problems)
    print(f"{found} findings in {time.perf_counter() - start:.0f} s")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
