#!/usr/bin/env python3
"""draft_stats_json.py ERR JSON: the drafting figures of --stats-json
against the draft lines --stats printed (stderr in ERR): each value the JSON
holds, printed as the text prints it, gives the text's figure. Prints what
differs; exit 1 then."""
import json
import re
import sys

err = open(sys.argv[1]).read()
js = json.loads(open(sys.argv[2]).read())
bad = []


def same(what, text, value):
    if text != value:
        bad.append("%s: text %r, JSON %r" % (what, text, value))


m = re.search(r"^draft: +(\d+) drafted, (\d+) accepted \(([0-9.]+) %\), (\d+) verify steps "
              r"\(([0-9.]+) tokens each\), (\d+) evaluations for \d+ tokens$", err, re.M)
if not m:
    sys.exit("no draft counts line in " + sys.argv[1])
same("drafted", int(m[1]), js["draft_drafted"])
same("accepted", int(m[2]), js["draft_accepted"])
same("acceptance", m[3], "%.1f" % (100 * js["draft_acceptance"]))
same("verify steps", int(m[4]), js["draft_verify_steps"])
same("tokens per verify step", m[5], "%.2f" % js["draft_tokens_per_verify"])
same("evaluations", int(m[6]), js["draft_evaluations"])
if js["draft_drafted"] <= 0:
    bad.append("nothing drafted: the test needs drafts")
m = re.search(r"^draft: +held by position:((?: \d+:\d+%)+)$", err, re.M)
held = [] if not m else [p.split(":")[1].rstrip("%") for p in m[1].split()]
same("held by position", held, ["%.0f" % (100 * a) for a in js["draft_held_by_position"]])
same("held = accepted / drafted at each position",
     ["%.6f" % a for a in js["draft_held_by_position"]],
     ["%.6f" % (a / d) for a, d in zip(js["draft_accepted_at"], js["draft_drafted_at"])])
m = re.search(r"^draft: +plain step ([0-9.]+) ms \((\d+)\), verify step ([0-9.]+) ms \((\d+), "
              r"([0-9.]+) tokens each\)(?:: ([0-9.]+)x plain decoding)?, switched off (\d+) "
              r"times, (\d+) probes$", err, re.M)
if not m:
    sys.exit("no draft timing line in " + sys.argv[1])
same("plain step ms", m[1], "%.3f" % js["draft_plain_step_ms"])
same("plain steps timed", int(m[2]), js["draft_plain_timed"])
same("verify step ms", m[3], "%.3f" % js["draft_verify_step_ms"])
same("verify steps timed", int(m[4]), js["draft_verify_timed"])
same("tokens a timed verify step", m[5], "%.2f" % js["draft_verify_tokens"])
same("gain", m[6], "%.2f" % js["draft_gain"] if js["draft_gain"] > 0 else None)
same("switched off", int(m[7]), js["draft_switched_off"])
same("probes", int(m[8]), js["draft_probes"])
for b in bad:
    print(b)
sys.exit(1 if bad else 0)
