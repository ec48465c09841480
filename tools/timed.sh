#!/bin/sh
# Runs a command and prints its wall time and its CPU time: timed.sh LABEL COMMAND ...; exits with
# the command's status. Two CPU figures: user + system of the command and the children it waited
# for, and the whole machine's busy time (/proc/stat) over the same span. They differ by what the
# first cannot see, Chromium's processes above all (its zygote's children are never waited for),
# and by anything else the machine ran meanwhile.
label=$1
shift
busy() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9 }' /proc/stat 2>/dev/null; }
start=$(date +%s)
ticks=$(busy)
status=0
"$@" || status=$?
seconds=$(( $(date +%s) - start ))
machine=""
[ -n "$ticks" ] && machine=", machine busy $(( ($(busy) - ticks) / $(getconf CLK_TCK) )) CPU-s of $(( seconds * $(getconf _NPROCESSORS_ONLN) ))"
# `times` prints the shell's user and system time, then its children's ("0m12.5s 0m1.25s"). It
# runs in this shell, writing to a file: in a pipe it would be a subshell with no children.
report=$(mktemp)
times > "$report"
cpu=$(tail -n 1 "$report" | awk '{ for (i = 1; i <= 2; i++) { split($i, t, "m"); s += t[1] * 60 + t[2] } printf "%.0f", s }')
rm -f "$report"
echo "$label: $((seconds / 60)) min $((seconds % 60)) s wall, $cpu CPU-s$machine (exit $status)"
exit $status
