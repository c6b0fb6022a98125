"""The memory section's stream scenarios (issue 15's and issue 39's memory targets) as markdown.

Input: `results["memory"]` from bench.py's `memory_streams`: per scenario, per variant, one
`bench_memory` report (idle and peak VmRSS of the proxy, streams done, incomplete reasons, and
for the huge-argument scenarios the proxy's CPU time and the argument bytes carried).
Output: the lines of the table and its explanation, for report.py's memory section.
"""


def _get(tree, *path):
    for key in path:
        if not isinstance(tree, dict) or key not in tree:
            return None
        tree = tree[key]
    return tree


def _kib(value, digits=1):
    return "n/a" if value is None else f"{value / 1024:,.{digits}f} KiB"


def _mib(kib):
    return "n/a" if kib is None else f"{kib / 1024:,.1f} MiB"


TARGETS = {"300x200": 64 * 1024, "1000x2000": 128 * 1024,
           "args 150x420K": 128 * 1024, "args 50x4M": 128 * 1024}

# Scenarios of one huge tool-call argument per stream (issue 39), reported in a table of their
# own with the CPU the proxy spent per MB of arguments.
ARGS_PREFIX = "args "


def memory_lines(results):
    runs = results.get("memory") or {}
    if not any(not scenario.startswith(ARGS_PREFIX) for scenario in runs):
        return argument_lines(runs)
    lines = [
        "### Streams held at once (issue 15's targets)", "",
        "A fresh proxy per scenario, default settings (full inspection, `--record violations`); "
        "`bench_memory` opens every stream (64 at a time), samples the proxy's VmRSS every "
        "20 ms from /proc/PID/status, and reports (peak − idle after a warm-up) / streams. "
        "`NxE`: N concurrent streams of E tool-call events (~250 bytes each, 5 ms apart, read as "
        "they come). `slow N`: N streams of 20,000 events sent as fast as the proxy takes, "
        "whose clients read the first frame and then stop for 5 s.", "",
        "| scenario | variant | streams done | idle RSS | peak RSS | RSS per stream | target "
        "| inspection incomplete |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for scenario, by_variant in runs.items():
        if scenario.startswith(ARGS_PREFIX):
            continue
        for name, out in by_variant.items():
            if _get(out, "failed"):
                lines.append(f"| {scenario} | {name} | failed: {out['failed'][:80]} "
                             "| | | | | |")
                continue
            done = (f"{_get(out, 'streams_done')}/{_get(out, 'streams')}"
                    if _get(out, "mode") == "streams" else "held open")
            rss, reasons = _cells(scenario, out)
            lines.append(f"| {scenario} | {name} | {done} | {rss} | {reasons} |")
    return lines + [""] + argument_lines(runs)


def _cells(scenario, out):
    """A run's idle, peak and per-stream RSS and its target (one markdown span of cells), and
    its incomplete reasons."""
    target = TARGETS.get(scenario)
    per = _get(out, "bytes_per_stream")
    mark = "" if target is None or per is None else (" ✓" if per <= target else " ✗")
    rss = (f"{_mib(_get(out, 'rss_idle_kib'))} | {_mib(_get(out, 'rss_peak_kib'))} | "
           f"{_kib(per)} | {'—' if target is None else _kib(target, 0)}{mark}")
    incomplete = _get(out, "incomplete")
    reasons = ("n/a" if not isinstance(incomplete, dict) else
               ", ".join(f"{k} {int(v)}" for k, v in incomplete.items() if v) or "none")
    return rss, reasons


def argument_lines(runs):
    """The huge-argument scenarios: RSS per stream against issue 39's bound, and CPU per MB."""
    chosen = {k: v for k, v in runs.items() if k.startswith(ARGS_PREFIX)}
    if not chosen:
        return []
    lines = [
        "### Huge tool-call arguments (issue 39's targets)", "",
        "The same procedure, each stream one tool call whose arguments come as a coding agent "
        "streams a whole file: `args 150x420K` is 150 concurrent streams of one 420 KB argument "
        "(400 fragments of 1,050 bytes, 10 ms apart), `args 50x4M` 50 streams of one 4 MB "
        "argument (1,000 fragments of 4,000 bytes, 2 ms apart). CPU per MB: the proxy's user + "
        "system time (/proc/PID/stat) over the load, per MB of arguments the streams carried "
        "(nginx, which inspects nothing, is the baseline of forwarding alone).", "",
        "| scenario | variant | streams done | idle RSS | peak RSS | RSS per stream | target "
        "| CPU per MB of arguments | inspection incomplete |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for scenario, by_variant in chosen.items():
        for name, out in by_variant.items():
            if _get(out, "failed"):
                lines.append(f"| {scenario} | {name} | failed: {out['failed'][:80]} "
                             "| | | | | | |")
                continue
            cpu, size = _get(out, "cpu_ms"), _get(out, "argument_bytes")
            per_mb = "n/a" if cpu is None or not size else f"{cpu / (size / 1e6):,.1f} ms"
            rss, reasons = _cells(scenario, out)
            done = f"{_get(out, 'streams_done')}/{_get(out, 'streams')}"
            lines.append(f"| {scenario} | {name} | {done} | {rss} | {per_mb} | {reasons} |")
    return lines + [""]
