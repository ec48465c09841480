#!/bin/sh
# Runs a command and prints its wall time and its CPU time (user + system, the command's and its
# children's): timed.sh LABEL COMMAND ...; exits with the command's status.
label=$1
shift
start=$(date +%s)
status=0
"$@" || status=$?
seconds=$(( $(date +%s) - start ))
# `times` prints the shell's user and system time, then its children's ("0m12.5s 0m1.25s"). It
# runs in this shell, writing to a file: in a pipe it would be a subshell with no children.
report=$(mktemp)
times > "$report"
cpu=$(tail -n 1 "$report" | awk '{ for (i = 1; i <= 2; i++) { split($i, t, "m"); s += t[1] * 60 + t[2] } printf "%.0f", s }')
rm -f "$report"
echo "$label: $((seconds / 60)) min $((seconds % 60)) s wall, $cpu CPU-s (exit $status)"
exit $status
