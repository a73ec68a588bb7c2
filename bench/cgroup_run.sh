#!/usr/bin/env bash
# bench/cgroup_run.sh LIMIT_MB CMD [ARGS...]: runs CMD inside a fresh memory
# cgroup of LIMIT_MB MiB (no swap), as bench/stream.sh makes one (v1 memory
# controller or v2), prints the cgroup's peak use, removes the cgroup and
# exits with CMD's status. Needs root.
set -u
LIMIT_MB=${1:?usage: bench/cgroup_run.sh LIMIT_MB CMD [ARGS...]}
shift
[ $# -gt 0 ] || { echo "usage: bench/cgroup_run.sh LIMIT_MB CMD [ARGS...]" >&2; exit 2; }
. "$(cd "$(dirname "$0")" && pwd)/lib/cgroup.sh"
cg_make "$LIMIT_MB" sluice-run || { echo "cannot make a memory cgroup (needs root)" >&2; exit 2; }
sh -c 'echo $$ > "$1/cgroup.procs" && shift && exec "$@"' sh "$cg" "$@"
rc=$?
[ -r "$cg/$peak_file" ] && echo "cgroup peak: $(cg_peak_mb) MiB"
rmdir "$cg" 2>/dev/null
exit $rc
