# Set-up: makes `import chainrule` work. On Colab it installs the
# engine and the course built on it (the environment variable
# CHAINRULE_PIP_SPEC, pip's arguments split at spaces, overrides from
# where).
import importlib.util, os, shutil, subprocess, sys
SOURCE = "git+https://github.com/chainrule-course/backprop-book@main"
COURSE = (SOURCE + "#subdirectory=course" if SOURCE.startswith("git+")
          else SOURCE.replace("chainrule", "chainrule-course", 1))
NEEDED = ("chainrule", "chainrule_course")
if any(importlib.util.find_spec(name) is None for name in NEEDED):
    specs = (os.environ.get("CHAINRULE_PIP_SPEC", "").split()
             or [SOURCE, COURSE])
    on_colab = "google.colab" in sys.modules
    if not on_colab and "CHAINRULE_PIP_SPEC" not in os.environ:
        raise ModuleNotFoundError(
            "chainrule is not installed in this kernel. In a clone of "
            "the course, run `make setup` and pick the .venv kernel, "
            "or run `pip install -e . -e course` in the clone.")
    if shutil.which("dot") is None:  # graphviz draws the figures
        subprocess.run(["apt-get", "install", "-y", "-qq", "graphviz"],
                       capture_output=True)
    pip = subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-color",
         *specs], capture_output=True, text=True)
    importlib.invalidate_caches()
    if any(importlib.util.find_spec(name) is None for name in NEEDED):
        raise RuntimeError(
            f"Installing chainrule with `pip install "
            f"{' '.join(specs)}` failed:\n{pip.stderr[-2000:]}\nCheck "
            "the network, or set CHAINRULE_PIP_SPEC to sources you can "
            "reach (the two wheel files, or git URLs), then run this "
            "cell again.")
