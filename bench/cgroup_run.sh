#!/usr/bin/env bash
# bench/cgroup_run.sh LIMIT_MB CMD [ARGS...]: runs CMD inside a fresh memory
# cgroup of LIMIT_MB MiB (no swap), as bench/stream.sh makes one (v1 memory
# controller or v2), prints the cgroup's peak use, removes the cgroup and
# exits with CMD's status. Needs root.
set -u
LIMIT_MB=${1:?usage: bench/cgroup_run.sh LIMIT_MB CMD [ARGS...]}
shift
[ $# -gt 0 ] || { echo "usage: bench/cgroup_run.sh LIMIT_MB CMD [ARGS...]" >&2; exit 2; }
if [ -d /sys/fs/cgroup/memory ]; then
    cg=/sys/fs/cgroup/memory/sluice-run-$$
    mkdir "$cg" || exit 2
    echo $(( LIMIT_MB * 1048576 )) > "$cg/memory.limit_in_bytes"
    echo 0 > "$cg/memory.swappiness" 2>/dev/null || true
    peak_file=memory.max_usage_in_bytes
else
    cg=/sys/fs/cgroup/sluice-run-$$
    mkdir "$cg" || exit 2
    echo $(( LIMIT_MB * 1048576 )) > "$cg/memory.max"
    echo 0 > "$cg/memory.swap.max" 2>/dev/null || true
    peak_file=memory.peak
fi
sh -c 'echo $$ > "$1/cgroup.procs" && shift && exec "$@"' sh "$cg" "$@"
rc=$?
[ -r "$cg/$peak_file" ] && echo "cgroup peak: $(( $(cat "$cg/$peak_file") / 1048576 )) MiB"
rmdir "$cg" 2>/dev/null
exit $rc
