# bench/lib/cgroup.sh - sourced by the benchmark scripts that run sluice
# inside a memory cgroup (stream.sh, stream_cmp.sh, cgroup_run.sh).
#
# cg_make LIMIT_MB TAG: makes a fresh memory cgroup of LIMIT_MB MiB with no
# swap (the v1 memory controller when mounted, else cgroup v2) named
# TAG-<pid>, and sets $cg (its folder) and $peak_file (the file holding
# its peak use). Returns non-zero when the cgroup cannot be made (needs root).
# cg_peak_mb: the cgroup's peak use in MiB so far.
# A process joins with: sh -c "echo \$\$ > $cg/cgroup.procs && exec CMD".
# The caller removes the folder (rmdir "$cg") when done.
cg_make() {
    local limit_mb=$1 tag=$2
    if [ -d /sys/fs/cgroup/memory ]; then
        cg=/sys/fs/cgroup/memory/$tag-$$
        mkdir "$cg" || return 1
        echo $(( limit_mb * 1048576 )) > "$cg/memory.limit_in_bytes" || return 1
        echo 0 > "$cg/memory.swappiness" 2>/dev/null || true
        peak_file=memory.max_usage_in_bytes
    else
        cg=/sys/fs/cgroup/$tag-$$
        mkdir "$cg" || return 1
        echo $(( limit_mb * 1048576 )) > "$cg/memory.max" || return 1
        echo 0 > "$cg/memory.swap.max" 2>/dev/null || true
        peak_file=memory.peak
    fi
}

cg_peak_mb() {
    echo $(( $(cat "$cg/$peak_file") / 1048576 ))
}
