"""Run every benchmark section, print one table of ratios, save it as JSON and text.

    .venv/bin/python benchmarks/run.py           # the full run (what `make bench` does)
    .venv/bin/python benchmarks/run.py --quick   # a short smoke run; saves nothing

Each section is a module here with ``run()`` (or ``run(quick=...)``) returning a list
of rows, each a dict with exactly the keys of ``ROW_KEYS``.  The sections run in one
process, one after the other, each measuring its comparisons side by side.  Goals are
reported, not asserted: a missed goal still exits 0.  A section whose module is
missing or does not import is reported as missing and skipped.  A section that raises
while running (for example because its implementations disagree, so that timing them
would be meaningless) is reported as failed, and the run exits 1 after the others.

The full run writes ``results/latest.json`` (rows, machine information, timestamp)
and ``results/latest.txt`` (the printed table).
"""

import argparse
import datetime
import importlib
import importlib.metadata
import inspect
import json
import os
import platform
import sys
import time
import traceback
from pathlib import Path

SECTIONS = ("value_bench", "tensor_bench", "cnn_bench", "checkpoint_bench", "memory_bench", "page_bench")
ROW_KEYS = ("section", "name", "ratio", "goal", "met", "detail")
RESULTS = Path(__file__).resolve().parent / "results"


def check_rows(rows, module_name):
    """Raise TypeError unless ``rows`` is a list of dicts with exactly ``ROW_KEYS``."""
    if not isinstance(rows, list):
        raise TypeError(f"{module_name}.run() returned {type(rows).__name__}, not a list of rows")
    for i, row in enumerate(rows):
        if not isinstance(row, dict) or set(row) != set(ROW_KEYS):
            keys = sorted(row) if isinstance(row, dict) else type(row).__name__
            raise TypeError(f"{module_name}.run() row {i} has keys {keys}; expected exactly {list(ROW_KEYS)}")
        if row["goal"] == "" and row["met"] is not None:
            raise TypeError(f"{module_name}.run() row {i}: 'met' must be None when there is no goal")
    return [
        dict(row, ratio=float(row["ratio"]), met=None if row["met"] is None else bool(row["met"]),
             name=str(row["name"]), detail=str(row["detail"]))
        for row in rows
    ]  # fmt: skip


def run_section(module_name, quick):
    """Import and run one section: ``("ok", rows)``, ``("missing", why)`` or ``("failed", why)``."""
    try:
        module = importlib.import_module(module_name)
    except Exception as error:  # not written yet, or broken: report and go on
        return "missing", f"{type(error).__name__}: {error}"
    try:
        accepts_quick = "quick" in inspect.signature(module.run).parameters
        rows = module.run(quick=quick) if accepts_quick else module.run()
        return "ok", check_rows(rows, module_name)
    except Exception:
        traceback.print_exc()
        error = sys.exc_info()[1]
        return "failed", f"{type(error).__name__}: {error}"


# --------------------------------------------------------------------------- machine information


def _version(package):
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def _cpu_model():
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def _blas_threads():
    """Thread pools of the loaded BLAS/OpenMP libraries, via threadpoolctl when installed."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        info = {"threadpoolctl": "not installed"}
        try:
            import numpy

            blas = numpy.show_config(mode="dicts")["Build Dependencies"]["blas"]
            info["numpy_blas"] = f"{blas.get('name')} {blas.get('version')}"
        except Exception:
            pass
        return info
    return {
        "threadpoolctl": _version("threadpoolctl"),
        "pools": [
            {key: pool.get(key) for key in ("user_api", "internal_api", "num_threads", "version", "filepath")}
            for pool in threadpool_info()
        ],
    }


def machine_info():
    info = {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "cpus_usable": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "load_average": [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None,
        "versions": {name: _version(name) for name in ("numpy", "torch", "jax", "jaxlib", "micrograd", "chainrule")},
        "env": {name: os.environ.get(name) for name in ("OPENBLAS_CORETYPE", "OPENBLAS_NUM_THREADS",
                                                        "OMP_NUM_THREADS", "MKL_NUM_THREADS")},
        "blas": _blas_threads(),
    }  # fmt: skip
    if "torch" in sys.modules:  # only if a section used it; importing it here would cost seconds
        info["torch_threads"] = sys.modules["torch"].get_num_threads()
    return info


# --------------------------------------------------------------------------- the table


def _met_text(met):
    return "-" if met is None else ("yes" if met else "NO")


def format_table(rows):
    headers = ("section", "comparison", "ratio", "goal", "met", "detail")
    cells = [(r["section"], r["name"], f"{r['ratio']:.3g}", r["goal"] or "-", _met_text(r["met"]), r["detail"])
             for r in rows]  # fmt: skip
    widths = [max([len(h)] + [len(c[i]) for c in cells]) for i, h in enumerate(headers[:-1])]

    def line(values):
        aligned = enumerate(zip(values[:-1], widths, strict=True))  # the detail, last, is not padded
        left = [f"{v:<{w}}" if i in (0, 1) else f"{v:>{w}}" for i, (v, w) in aligned]
        return "  ".join(left + [values[-1]]).rstrip()

    rule = "  ".join("-" * w for w in widths) + "  ------"
    return "\n".join([line(headers), rule] + [line(c) for c in cells])


def format_machine(info):
    versions = ", ".join(f"{k} {v}" for k, v in info["versions"].items() if v)
    blas = info["blas"]
    if "pools" in blas:
        pools = "; ".join(f"{p['internal_api']} {p['version']}: {p['num_threads']} threads" for p in blas["pools"])
    else:
        pools = f"threadpoolctl not installed (numpy BLAS: {blas.get('numpy_blas', '?')})"
    env = ", ".join(f"{k}={v}" for k, v in info["env"].items() if v is not None) or "none set"
    lines = [
        f"machine: {info['cpu']}, {info['cpu_count']} CPUs ({info['cpus_usable']} usable), "
        f"load average {info['load_average']}",
        f"python {info['python']} on {info['platform']}",
        f"versions: {versions}",
        f"BLAS/OpenMP: {pools}" + (f"; torch threads {info['torch_threads']}" if "torch_threads" in info else ""),
        f"thread env vars: {env}",
    ]
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a short smoke run (fewer repeats); saves nothing")
    args = parser.parse_args(argv)

    started = time.perf_counter()
    timestamp = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    load_before = os.getloadavg() if hasattr(os, "getloadavg") else None
    rows, sections = [], {}
    for module_name in SECTIONS:
        section_start = time.perf_counter()
        print(f"running {module_name} ...", flush=True)
        status, result = run_section(module_name, args.quick)
        seconds = round(time.perf_counter() - section_start, 1)
        if status == "ok":
            rows.extend(result)
            sections[module_name] = {"status": "ok", "seconds": seconds}
        else:
            sections[module_name] = {"status": status, "error": result, "seconds": seconds}
            word = "MISSING (skipped)" if status == "missing" else "FAILED"
            print(f"section {module_name}: {word}: {result}", flush=True)
    total = time.perf_counter() - started

    info = machine_info()
    info["load_average_before"] = [round(x, 2) for x in load_before] if load_before else None
    lines = [
        f"chainrule benchmarks, {timestamp}{' (quick run)' if args.quick else ''}",
        "",
        format_table(rows),
        "",
    ]
    for name, section in sections.items():
        if section["status"] != "ok":
            lines.append(f"section {name}: {section['status'].upper()}: {section['error']}")
    if load_before and load_before[0] > 0.5:
        lines.append(f"WARNING: the machine was busy (load average {load_before[0]:.2f} at the start): "
                     "timings are noisy; trust the best-of ratios more than the medians")  # fmt: skip
    missed = [r for r in rows if r["met"] is False]
    lines.append(f"goals: {sum(r['met'] is True for r in rows)} met, {len(missed)} missed "
                 f"(ratio = chainrule / other; goals are reported, not asserted)")  # fmt: skip
    lines += [format_machine(info), f"total time: {total:.1f} s"]
    text = "\n".join(lines)
    print()
    print(text)

    if args.quick:
        print("(quick run: results not saved)")
    else:
        RESULTS.mkdir(exist_ok=True)
        record = {
            "timestamp": timestamp,
            "quick": args.quick,
            "total_seconds": round(total, 1),
            "sections": sections,
            "rows": rows,
            "machine": info,
        }
        (RESULTS / "latest.json").write_text(json.dumps(record, indent=2) + "\n")
        (RESULTS / "latest.txt").write_text(text + "\n")
        print(f"saved {RESULTS / 'latest.json'} and latest.txt")
    return 1 if any(s["status"] == "failed" for s in sections.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
