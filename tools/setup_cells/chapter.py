# Set-up: makes `import chainrule` work. On Colab it installs it
# (the environment variable CHAINRULE_PIP_SPEC overrides from where).
import importlib.util, os, shutil, subprocess, sys
SOURCE = "git+https://github.com/chainrule-course/backprop-book@main"
if importlib.util.find_spec("chainrule") is None:
    spec = os.environ.get("CHAINRULE_PIP_SPEC", SOURCE)
    on_colab = "google.colab" in sys.modules
    if not on_colab and "CHAINRULE_PIP_SPEC" not in os.environ:
        raise ModuleNotFoundError(
            "chainrule is not installed in this kernel. In a clone of "
            "the course, run `make setup` and pick the .venv kernel, "
            "or run `pip install -e .` in the clone.")
    if shutil.which("dot") is None:  # graphviz draws the figures
        subprocess.run(["apt-get", "install", "-y", "-qq", "graphviz"],
                       capture_output=True)
    pip = subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-color",
         spec], capture_output=True, text=True)
    importlib.invalidate_caches()
    if importlib.util.find_spec("chainrule") is None:
        raise RuntimeError(
            f"Installing chainrule with `pip install {spec}` failed:"
            f"\n{pip.stderr[-2000:]}\nCheck the network, or set "
            "CHAINRULE_PIP_SPEC to a source you can reach (a wheel "
            "file, a git URL or chainrule==x.y), then run this cell "
            "again.")
