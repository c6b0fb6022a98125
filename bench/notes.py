"""The verdict part of docs/benchmarks.md: issues 8 and 15's targets against this run's figures, and
the hand-written closing notes (bench/closing-notes.md, kept across regenerations).

Input: results from bench.py plus the aggregation helpers of report.py. Output: markdown lines.
"""

import os

NGINX_IDLE_MIB = 13  # the reference figure for nginx's idle RSS


def targets_table(results, get, median, added):
    def max_rps(name):
        return median(get(r, "rps") for r in results["max"].get(name, []))

    def max_cpu(name):
        return median(get(r, "cpu", "cpu_us_per_request") for r in results["max"].get(name, []))

    def sse_added(name, p):
        return added(results["sse"].get(name), results["sse"].get("direct"), "event_delay_us", p)

    at_2k = results["rate"].get("2000", {})
    p50_2k = added(at_2k.get("tooltap-full"), at_2k.get("direct"), "latency_us", "p50")
    p99_2k = added(at_2k.get("tooltap-full"), at_2k.get("direct"), "latency_us", "p99")
    # A difference smaller than direct's own spread is noise, not a verdict.
    direct_p99_2k = median(get(r, "latency_us", "p99") for r in at_2k.get("direct", []))
    # Above inspect.max_concurrent (1024 by default) streams are forwarded uninspected, so the
    # per-stream cost of inspection is read at the largest size below it.
    sizes = sorted((int(k) for k in results["hold"]), reverse=True)
    judged = next((k for k in sizes if k <= 1024), sizes[0] if sizes else None)
    largest = str(judged) if judged is not None else None
    hold = results["hold"].get(largest, {}) if largest else {}
    per_stream = get(hold, "tooltap-full", "bytes_per_stream")
    idle = get(hold, "tooltap-full", "rss_idle_kib")
    nginx_idle = get(hold, "nginx", "rss_idle_kib")
    rows = [
        ("full inspection throughput ≥ nginx's", max_rps("tooltap-full"), max_rps("nginx"),
         "req/s", lambda a, b: a >= b),
        ("full inspection CPU per request ≤ nginx's", max_cpu("tooltap-full"), max_cpu("nginx"),
         "µs", lambda a, b: a <= b),
        ("per-event added delay p50 ≤ nginx's", sse_added("tooltap-full", "p50"),
         sse_added("nginx", "p50"), "µs", lambda a, b: a <= b),
        ("per-event added delay p50 ≤ 50 µs", sse_added("tooltap-full", "p50"), 50, "µs",
         lambda a, b: a <= b),
        ("per-event added delay p99 ≤ nginx's + 100 µs", sse_added("tooltap-full", "p99"),
         plus(sse_added("nginx", "p99"), 100), "µs", lambda a, b: a <= b),
        ("`--record all` CPU per request ≤ 2× full inspection with `--record off`",
         max_cpu("tooltap-record"), times(max_cpu("tooltap-full-norec"), 2), "µs",
         lambda a, b: a <= b),
        ("the same with `--record-layout segments`",
         max_cpu("tooltap-record-seg"), times(max_cpu("tooltap-full-norec"), 2), "µs",
         lambda a, b: a <= b),
        ("added p50 at 2k req/s ≤ 50 µs", p50_2k, 50, "µs", lambda a, b: a <= b),
        ("added p99 at 2k req/s ≤ 250 µs", p99_2k, 250, "µs",
         (lambda a, b: None) if (direct_p99_2k or 0) > 250 else (lambda a, b: a <= b)),
        (f"RSS per concurrent stream ≤ 64 KiB ({largest} streams)",
         per_stream and per_stream / 1024, 64, "KiB", lambda a, b: a <= b),
        ("idle RSS near nginx's", idle and idle / 1024,
         (nginx_idle / 1024) if nginx_idle else NGINX_IDLE_MIB, "MiB", lambda a, b: a <= 1.5 * b),
    ]
    lines = ["| target | tooltap full inspection | reference | met? |", "|---|---|---|---|"]
    for label, ours, reference, unit, ok in rows:
        met = None if ours is None or reference is None else ok(ours, reference)
        verdict = {True: "yes", False: "**no**", None: "not measurable here"}[met]
        lines.append(f"| {label} | {show(ours, unit)} | {show(reference, unit)} | {verdict} |")
    layouts = [("one file per exchange", results.get("check")),
               ("segment files", results.get("check_segments"))]
    for layout, check in layouts:
        if not (check and check.get("mb_per_s") is not None):
            continue
        verdict = "yes" if check["mb_per_s"] >= 200 else "**no**"
        lines.append(f"| `tooltap check` ≥ 200 MB/s ({layout}) | {check['mb_per_s']:,.0f} MB/s "
                     f"| 200 MB/s | {verdict} |")
        if check.get("cpu_seconds"):
            per_core = check["bytes"] / 1e6 / check["cpu_seconds"]
            verdict = "yes" if per_core >= 200 else "**no**"
            lines.append(f"| `tooltap check` ≥ 200 MB/s per core, MB per CPU second ({layout}) | "
                         f"{per_core:,.0f} MB/s | 200 MB/s | {verdict} |")
    if not any(check and check.get("mb_per_s") is not None for _, check in layouts):
        lines.append("| `tooltap check` ≥ 200 MB/s | not measured | 200 MB/s | n/a (no "
                     "`--record all` variant in this run) |")
    lines.append(f"\nThe p99 target is not measurable on this machine when direct's own p99 at "
                 f"2k req/s ({show(direct_p99_2k, 'µs')}) is far above 250 µs: the difference of "
                 f"two noisy tails, even negative, says nothing. Negative added figures in the "
                 f"tables above mean the same.")
    return "\n".join(lines)


def plus(value, more):
    return None if value is None else value + more


def times(value, factor):
    return None if value is None else value * factor


def show(value, unit):
    if value is None:
        return "n/a"
    return f"{value:,.1f} {unit}" if abs(value) < 100 else f"{value:,.0f} {unit}"


def closing_notes(meta):
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "closing-notes.md")
    if not os.path.exists(path):
        return []
    with open(path) as notes:
        return ["## Closing notes", "", notes.read().strip(), ""]
