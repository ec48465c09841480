#!/bin/sh
# Installs the Debian packages whose program is missing: system-packages.sh PYTHON program:package ...
# As root, or with sudo where sudo needs no password (a CI runner); otherwise prints the command
# to run and fails. python3-venv is added when PYTHON cannot create a venv.
python=$1
shift
missing=""
for pair in "$@"; do
  found=${pair%%:*}
  [ -x "$found" ] || command -v "$found" >/dev/null 2>&1 || missing="$missing ${pair#*:}"
done
"$python" -c "import ensurepip, venv" >/dev/null 2>&1 || missing="$missing python3-venv"
[ -n "$missing" ] || exit 0
if [ "$(id -u)" -eq 0 ]; then
  sudo=""
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
  sudo="sudo"
else
  echo "Missing Debian packages:$missing. Install them with:" >&2
  echo "" >&2
  echo "    sudo apt-get update && sudo apt-get install -y$missing" >&2
  echo "" >&2
  echo "then run make again." >&2
  exit 1
fi
echo "Installing Debian packages:$missing${sudo:+ (with sudo)}"
$sudo apt-get update && $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y $missing
