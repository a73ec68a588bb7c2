#!/usr/bin/env bash
# tools/train_moe/knobs.sh MODEL TEXT [CACHE_EXPERTS]: the lossy routing knobs
# on a trained file, one token per batch (-b 1, so --cache-route chooses per
# token as in decode), streamed through a cache of CACHE_EXPERTS experts
# (default 40: half of the trained glm4moe's 80): for each setting, the routing weight kept and the
# choices changed (sluice's own cost line), mean KLD, PPL(Q)/PPL(base) and
# the same-top rate against the exact run's base (same flags, no knob), the
# expert cache's hit rate and reads. A markdown table on stdout.
set -eu
model=${1:?usage: knobs.sh MODEL TEXT [CACHE_EXPERTS]}
text=${2:?TEXT}
S=${SLUICE:-$(cd "$(dirname "$0")/../.." && pwd)/build/rel/sluice}
w=$(mktemp -d "${TMPDIR:-/tmp}/knobs-XXXXXX")
trap 'rm -rf "$w"' EXIT
cache=${3:-40}
ST="--moe-stream --cache-experts $cache -b 1 -c 128"
"$S" perplexity -m "$model" -f "$text" $ST --kl-divergence-base "$w/base.kld" \
    --stats-json "$w/exact.json" >/dev/null 2>&1
row() {
    python3 - "$1" "$2" "$3" <<'PY'
import json, re, sys
name, log, js = sys.argv[1:]
d = json.load(open(js))
t = open(log).read() if log != "-" else ""
def grab(pat):
    m = re.search(pat, t)
    return m.group(1) if m else "-"
kept = d.get("knob_weight_kept", 1.0)
ch = d.get("knob_changed", 0) / d["knob_choices"] if d.get("knob_choices") else 0.0
kld = grab(r"Mean +KLD: +([0-9.e-]+)")
ratio = grab(r"Mean PPL\(Q\)/PPL\(base\) +: +([0-9.]+)")
top = grab(r"Same top p: +([0-9.]+)")
print(f"| {name} | {100 * kept:.1f} % | {100 * ch:.1f} % | {kld} | {ratio} | {top} % | "
      f"{100 * d['hit_rate']:.1f} % | {d['reads']} |")
PY
}
echo "cache: $cache experts; $(basename "$model"), $(basename "$text"), 128-token chunks, -b 1"
echo
echo "| knob | weight kept | choices changed | KLD | PPL(Q)/PPL(base) | same top | hit rate | reads |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|"
row exact - "$w/exact.json"
for k in "--n-expert-used 3" "--n-expert-used 2" "--n-expert-used 1" "--cache-route 3,8" \
         "--cache-route 2,8" "--cache-route 2,16" "--n-expert-used 3 --cache-route 2,8"; do
    # shellcheck disable=SC2086
    "$S" perplexity -m "$model" --kl-divergence-base "$w/base.kld" --kl-divergence $ST $k \
        --stats-json "$w/k.json" >"$w/k.log" 2>&1
    row "\`$k\`" "$w/k.log" "$w/k.json"
done
