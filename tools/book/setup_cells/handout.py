# Set-up: installs what this notebook needs when it is missing.
# chainrule and chainrule-course come from the wheels beside this
# notebook (the course's pinned version), else from the environment
# variable CHAINRULE_PIP_SPEC, else from the course's repository.
import glob, importlib.util, os, shutil, site, subprocess, sys
SOURCE = "git+https://github.com/chainrule-course/backprop-book@main"
COURSE = (SOURCE + "#subdirectory=course" if SOURCE.startswith("git+")
          else SOURCE.replace("chainrule", "chainrule-course", 1))


def install(modules, specs):
    if all(importlib.util.find_spec(m) is not None for m in modules):
        return
    pip = subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-color",
         *specs], capture_output=True, text=True)
    if site.ENABLE_USER_SITE:  # pip may install into ~/.local
        site.addsitedir(site.getusersitepackages())
    importlib.invalidate_caches()
    if any(importlib.util.find_spec(m) is None for m in modules):
        last_lines = "\n".join(pip.stderr.splitlines()[-10:])
        raise RuntimeError(
            f"Installing {' and '.join(modules)} with `pip install "
            f"{' '.join(specs)}` failed:\n{last_lines}\nCheck the "
            "network, then run this cell again.")


if "google.colab" in sys.modules and shutil.which("dot") is None:
    subprocess.run(["apt-get", "install", "-y", "-qq", "graphviz"],
                   capture_output=True)  # Graphviz draws the figures
WHEELS = sorted(glob.glob("chainrule*-*.whl"))
install(["chainrule", "chainrule_course"], WHEELS or os.environ.get(
    "CHAINRULE_PIP_SPEC", "").split() or [SOURCE, COURSE])
install(["otter"], ["otter-grader==7.0.0"])  # runs the checks
# The public tests that grader.check runs, written into ./tests when
# the notebook came alone.
PUBLIC_TESTS: dict = {}
os.makedirs("tests", exist_ok=True)
for test_name, test_source in PUBLIC_TESTS.items():
    if not os.path.exists(os.path.join("tests", test_name)):
        with open(os.path.join("tests", test_name), "w") as test_file:
            test_file.write(test_source)
