"""Turns a run's raw results into docs/benchmarks.md and docs/img/bench-*.svg.

Input: `meta` (machine facts, plan, pinning) and `results` (per figure, per variant, one client
report per round) from bench.py, or bench/results.json via `python3 bench/report.py`.
Output: the markdown page and two plots. Added figures are computed per round (variant minus
direct, measured minutes apart in the same round) and the median over rounds is reported.
"""

import json
import os
import sys

import svg
from memory_report import memory_lines
from notes import closing_notes, targets_table


def get(tree, *path):
    for key in path:
        if not isinstance(tree, dict) or key not in tree:
            return None
        tree = tree[key]
    return tree


def median(values):
    values = sorted(v for v in values if v is not None)
    if not values:
        return None
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2


def added(runs, base_runs, *path):
    """Median over rounds of (variant − direct) for the same round."""
    pairs = zip(runs or [], base_runs or [])
    diffs = [get(v, *path) - get(b, *path) for v, b in pairs
             if get(v, *path) is not None and get(b, *path) is not None]
    return median(diffs)


def fmt(value, digits=0, unit=""):
    if value is None:
        return "n/a"
    return f"{value:,.{digits}f}{unit}"


def proxies(results):
    return [name for name in results["variants"] if name != "direct"]


def buffered_table(results, rates):
    lines = ["| rate (req/s) | variant | added p50 | added p90 | added p99 | added max | "
             "achieved req/s | errors | proxy CPU µs/req |", "|---|---|---|---|---|---|---|---|---|"]
    for rate in rates:
        by_variant = results["rate"].get(str(rate), {})
        base = by_variant.get("direct", [])
        lines.append(f"| {rate} | direct (absolute) | "
                     + " | ".join(fmt(median(get(r, "latency_us", p) for r in base), 0, " µs")
                                  for p in ("p50", "p90", "p99", "max"))
                     + f" | {fmt(median(get(r, 'achieved_rps') for r in base))} | "
                       f"{sum(get(r, 'errors') or 0 for r in base)} | — |")
        for name in [n for n in proxies(results) if n in by_variant]:
            runs = by_variant[name]
            cells = [fmt(added(runs, base, "latency_us", p), 0, " µs")
                     for p in ("p50", "p90", "p99", "max")]
            lines.append(f"| {rate} | {name} | " + " | ".join(cells)
                         + f" | {fmt(median(get(r, 'achieved_rps') for r in runs))} | "
                           f"{sum(get(r, 'errors') or 0 for r in runs)} | "
                           f"{fmt(median(get(r, 'cpu', 'cpu_us_per_request') for r in runs), 1)} |")
    return "\n".join(lines)


def max_table(results):
    base = median(get(r, "rps") for r in results["max"].get("direct", []))
    lines = ["| variant | req/s (32 connections, closed loop) | ratio to direct | "
             "proxy CPU µs/req | of it user / kernel | drain | p50 latency | threads |",
             "|---|---|---|---|---|---|---|---|"]
    for name in results["variants"]:
        runs = results["max"].get(name, [])
        rps = median(get(r, "rps") for r in runs)
        ratio = rps / base if rps and base else None
        lines.append(f"| {name} | {fmt(rps)} | {fmt(ratio, 2)} | "
                     f"{fmt(median(get(r, 'cpu', 'cpu_us_per_request') for r in runs), 1)} | "
                     f"{fmt(median(get(r, 'cpu', 'user_us_per_request') for r in runs), 1)} / "
                     f"{fmt(median(get(r, 'cpu', 'system_us_per_request') for r in runs), 1)} | "
                     f"{fmt(median(get(r, 'drain_seconds') for r in runs), 2, ' s')} | "
                     f"{fmt(median(get(r, 'latency_us', 'p50') for r in runs), 0, ' µs')} | "
                     f"{results['variants'][name].get('threads') or '—'} |")
    return "\n".join(lines)


def sse_table(results):
    base = results["sse"].get("direct", [])
    lines = ["| variant | first event p50 | added first event p50 | added per-event p50 | "
             "added p99 | added max | proxy CPU per event (of it user) | events in → out | "
             "frames out | complete streams |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for name in results["variants"]:
        runs = results["sse"].get(name, [])
        first = median(get(r, "ttfe_us", "p50") for r in runs)
        is_base = name == "direct"
        cells = ["—"] * 4 if is_base else [
            fmt(added(runs, base, "ttfe_us", "p50"), 0, " µs"),
            fmt(added(runs, base, "event_delay_us", "p50"), 0, " µs"),
            fmt(added(runs, base, "event_delay_us", "p99"), 0, " µs"),
            fmt(added(runs, base, "event_delay_us", "max"), 0, " µs")]
        cells.append("—" if is_base else cpu_per_event(runs))
        sent = sum(get(r, "events_expected") or 0 for r in runs)
        got = sum(get(r, "events_received") or 0 for r in runs)
        frames = sum(get(r, "frames_received") or 0 for r in runs)
        complete = sum(get(r, "streams_complete") or 0 for r in runs)
        streams = sum(get(r, "streams") or 0 for r in runs)
        lines.append(f"| {name} | {fmt(first, 0, ' µs')} | " + " | ".join(cells)
                     + f" | {sent:,} → {got:,} {'✓' if sent == got and sent else '✗'} | "
                       f"{frames:,} | {complete}/{streams} |")
    return "\n".join(lines)


def cpu_per_event(runs):
    """The proxy's CPU time per event received (median of rounds), and its user part: the
    client's per-stream figures times streams, over events. The total is the threads' run time
    in ns where the client read it (`run_seconds`), else utime and stime in clock ticks; the
    user part is always ticks."""
    total, user = [], []
    for r in runs:
        events, cpu = get(r, "events_received"), get(r, "cpu") or {}
        seconds = cpu.get("run_seconds")
        if seconds is None:
            seconds = cpu.get("cpu_seconds")
        if not events or seconds is None:
            continue
        total.append(seconds * 1e6 / events)
        if cpu.get("user_us_per_request") is not None:
            user.append(cpu["user_us_per_request"] * get(r, "streams") / events)
    return f"{fmt(median(total), 1, ' µs')} ({fmt(median(user), 1, ' µs')})"


def hold_table(results):
    lines = ["| concurrent streams | variant | open | idle RSS | loaded RSS | RSS per stream |",
             "|---|---|---|---|---|---|"]
    for streams, by_variant in results["hold"].items():
        for name, out in by_variant.items():
            idle, loaded = get(out, "rss_idle_kib"), get(out, "rss_loaded_kib")
            lines.append(f"| {streams} | {name} | {get(out, 'open')}/{streams} | "
                         f"{fmt(idle and idle / 1024, 1, ' MiB')} | "
                         f"{fmt(loaded and loaded / 1024, 1, ' MiB')} | "
                         f"{fmt((get(out, 'bytes_per_stream') or 0) / 1024 or None, 1, ' KiB')} |")
    return "\n".join(lines)


def runtime_table(results):
    lines = ["| TOKIO_WORKER_THREADS | req/s | proxy CPU µs/req | p50 latency | threads |",
             "|---|---|---|---|---|"]
    for workers, runs in results["runtime"].items():
        lines.append(f"| {workers} | {fmt(median(get(r, 'rps') for r in runs))} | "
                     f"{fmt(median(get(r, 'cpu', 'cpu_us_per_request') for r in runs), 1)} | "
                     f"{fmt(median(get(r, 'latency_us', 'p50') for r in runs), 0, ' µs')} | "
                     f"{median(get(r, 'threads') for r in runs) or '—'} |")
    return "\n".join(lines)


def cpu_values(results, rates, names):
    """CPU per request: steadier than latency tails on a shared machine, so it gets the plot."""
    def cpu(runs):
        return median(get(r, "cpu", "cpu_us_per_request") for r in runs or [])
    values = {}
    for n in names:
        values[n] = {str(rate): cpu(results["rate"].get(str(rate), {}).get(n)) for rate in rates}
        values[n]["closed loop"] = cpu(results["max"].get(n))
    return values


def plots(repo, results, rates):
    names = [n for n in proxies(results)
             if any(n in results["rate"].get(str(rate), {}) for rate in rates)]
    def series(path):
        return {n: {str(rate): added(results["rate"].get(str(rate), {}).get(n),
                                     results["rate"].get(str(rate), {}).get("direct"), *path)
                    for rate in rates} for n in names}
    buffered = svg.document([
        ("Buffered: added latency p50 vs direct (µs, median of rounds)", [str(r) for r in rates],
         series(("latency_us", "p50")), "µs"),
        ("Proxy CPU per request (µs, utime+stime / requests, median of rounds)",
         [str(r) for r in rates] + ["closed loop"], cpu_values(results, rates, names), "µs")],
        names, note="x: fixed request rate (req/s); p99 differences are not plotted: below the noise "
        "floor here")
    sse_names = [n for n in proxies(results) if n in results["sse"]]
    sse_values = {}
    for n in sse_names:
        runs, base = results["sse"].get(n), results["sse"].get("direct")
        sse_values[n] = {"first event p50": added(runs, base, "ttfe_us", "p50"),
                         "per-event p50": added(runs, base, "event_delay_us", "p50"),
                         "per-event p99": added(runs, base, "event_delay_us", "p99")}
    sse = svg.document([("SSE: added delay vs direct (µs, median of rounds)",
                         ["first event p50", "per-event p50", "per-event p99"], sse_values,
                         "µs")], sse_names)
    os.makedirs(os.path.join(repo, "docs", "img"), exist_ok=True)
    for name, text in (("bench-buffered.svg", buffered), ("bench-sse.svg", sse)):
        with open(os.path.join(repo, "docs", "img", name), "w") as out:
            out.write(text)


def write(repo, meta, results):
    rates = meta["plan"]["rates"]
    plots(repo, results, rates)
    facts, plan = meta["facts"], meta["plan"]
    sse = plan["sse"]
    page = [
        "# Benchmarks", "",
        "tooltap's overhead beside a direct connection and nginx, all measured in one run, "
        "interleaved in rounds. Generated by `bench/run`; do not edit by hand.", "",
        f"**Run:** {facts['date']}, commit `{facts['commit']}`, "
        f"{'quick mode, ' if meta['quick'] else ''}{plan['rounds']} round(s), "
        f"{facts['wall_seconds']} s wall time.  ",
        f"**Machine:** {facts['cpu']}, {facts['cores']} cores, {facts['memory_gib']} GiB, "
        f"Linux {facts['kernel']}; {facts['nginx']}; {facts['rustc']}. Load average "
        f"{', '.join(f'{x:.1f}' for x in facts['loadavg_start'])} at the start and "
        f"{', '.join(f'{x:.1f}' for x in facts['loadavg_end'])} at the end: the machine was "
        "shared with other builds, which is why every figure is a per-round difference and a "
        "median over rounds.  ",
        f"**Pinned:** {meta['pinning']}. A pinned tooltap sees one core, so its Tokio runtime "
        "runs one worker.",
        "", "## How to rerun", "",
        "```sh\nbench/run            # ~15 minutes after the release build: installs nginx if "
        "missing, runs everything\nbench/run --quick    # ~1-2 minutes smoke run\n"
        "python3 bench/report.py   # re-render this page from bench/results.json\n"
        "bench/profile full 2000   # callgrind: instructions per request (also without the "
        "/metrics answers its settling reads), top functions (needs valgrind)\nPROFILE_CACHE=1 bench/profile full 1000   # and simulated L1 "
        "misses per request\nbench/profile floor 1000  # the same for bench/floor.rs (hyper's "
        "connections and nothing else)\nbench/time-profile 3 6  # perf's cpu-clock samples: "
        "CPU time per request per function and group, full inspection beside the pass-through"
        "\n```", "",
        "Variants: " + "; ".join(f"`{n}` = {v['label']}" for n, v in results["variants"].items())
        + ". nginx runs as a single process (`master_process off`, one worker) with upstream "
        "keep-alive and its default access log; tooltap with its default `info` log to a file "
        "(the exchange span is at `debug` for exchanges neither enforced nor injected, and a "
        "clean exchange's summary line is at `debug` too, so the clean traffic here logs "
        "nothing per request), except `tooltap-full-warn`. The "
        "two diagnostic variants (`-warn`, `-norec`), `tooltap-record-seg` and `hyper-floor` "
        "run in the closed-loop and SSE figures only. `hyper-floor` is not a proxy to run but "
        "the floor of tooltap's HTTP stack: hyper's server and client connections with one "
        "upstream connection per client connection and no other work, so the part of "
        "tooltap's cost that is its own is the difference to it. "
        + ("" if meta["record_variant"] else
           "The `--record all` variant is missing: this tooltap build has no `--record` yet. "),
        "", "## Buffered requests at fixed rates", "",
        f"Open loop ({plan['seconds']} s per rate after {plan['warmup']} s warm-up, pacer thread, "
        "latency measured from each request's *scheduled* send time, so stalls are charged in "
        "full). Added = variant − direct in the same round, median over rounds. A forced "
        "tool-call completion of ~440 bytes; the request declares the tool's JSON schema. At "
        "fixed low rates every request wakes an idle process (a VM's wake-ups are dear), so CPU "
        "per request there is several times the closed-loop figure for every proxy, nginx "
        "included; compare proxies within a rate, and use the closed-loop column for budgets.",
        "",
        "![buffered added latency](img/bench-buffered.svg)", "",
        buffered_table(results, rates), "",
        "## Highest sustainable rate and CPU per request", "",
        "Closed loop, 32 keep-alive connections. CPU = the proxy's utime+stime from "
        "/proc/PID/stat, divided by the requests sent in the measured window (10 ms tick "
        "resolution): read after the warm-up's load has stopped and the proxy's CPU time has "
        "stopped growing, and again once it stops growing after the window, so work the proxy "
        "queued (a recorder behind on its disk writes) is charged to the requests that queued "
        "it. Of it user / kernel: utime and stime apart (medians each, so they need not add up "
        "to the total's median): the kernel's share is mostly the loopback TCP stack, which "
        "every proxy here pays for the same syscalls; the user share is the proxy's own code. "
        "Drain = how long that took after the last response (median of rounds). "
        "Direct runs the mock and the load generator on the same core, so its rate is a floor "
        "of what the mock can do, not a ceiling.", "",
        max_table(results), "",
        "## SSE streams", "",
        f"{sse['waves']} waves of {sse['streams']} concurrent streams, each {sse['events']} "
        f"tool-call chunks {sse['interval_us']} µs apart plus the finish chunk; each event "
        "carries the mock's send time (CLOCK_REALTIME ns) and the client subtracts it from its "
        "receive time. First event = request sent → first event received on a warm connection. "
        "Events in → out counts stamped events sent by the mock and received by the client "
        "(no loss); frames out ≥ events means no coalescing. Proxy CPU per event = the proxy's "
        "CPU time over the events it forwarded: its threads' run time in ns "
        "(/proc/PID/task/*/sched, where the kernel has it), else clock ticks; its user part is "
        "always ticks (10 ms: "
        f"{1e4 / (sse['waves'] * sse['streams'] * (sse['events'] + 1)):.1f} µs per event at this "
        "size, that part's step). With the proxy on one core and the ten streams' events due "
        "at nearly the same instants, an event waits on that core for the events ahead of it, "
        "so the added per-event delay grows with the proxy's CPU per event.",
        "",
        "![SSE added delay](img/bench-sse.svg)", "",
        sse_table(results), "",
        "## Memory per concurrent stream", "",
        "A fresh proxy per size; slow streams (an event every 2 s) opened 200 at a time; VmRSS "
        "from /proc/PID/status once every stream has its first event. Per stream = "
        "(loaded − idle) / open streams.", "",
        hold_table(results), "",
    ] + memory_lines(results)
    checks = [("one file per exchange (`tooltap-record`)", results.get("check")),
              ("segment files (`tooltap-record-seg`)", results.get("check_segments"))]
    if any(check for _, check in checks):
        page += ["## `tooltap check` throughput", "",
                 "Everything a `--record all` variant recorded during the rounds (buffered and "
                 "SSE exchanges), re-judged by `tooltap check DIR --format json` with its "
                 "default parallelism, unpinned; MB per CPU second is the per-core figure.", "",
                 "| layout | recordings | files | MB | wall time | MB/s | CPU time | "
                 "MB per CPU second | exit code |",
                 "|---|---|---|---|---|---|---|---|---|"]
        for layout, check in checks:
            if not check:
                continue
            per_cpu = check["bytes"] / 1e6 / check["cpu_seconds"] if check["cpu_seconds"] else None
            page.append(f"| {layout} | {check.get('recordings', check['files']):,} | "
                        f"{check['files']:,} | {check['bytes'] / 1e6:,.1f} | "
                        f"{check['seconds']:.2f} s | {fmt(check['mb_per_s'])} | "
                        f"{check['cpu_seconds']:.2f} s | {fmt(per_cpu)} | {check['exit_code']} |")
        page.append("")
    if results.get("runtime"):
        page += ["## One Tokio worker or two (unpinned)", "",
                 "tooltap full inspection, nothing pinned (proxy, mock and load generator share "
                 "both cores), closed loop as above; the worker count set through "
                 "`TOKIO_WORKER_THREADS`, which the multi-thread runtime honours.", "",
                 runtime_table(results), ""]
    page += ["## Inspection really ran", "",
             "Counters scraped from `/metrics` of the full-inspection variants at the end of "
             "the rounds; the traffic is clean, so violations must be zero.", "",
             "```json", json.dumps(results.get("checks", {}), indent=1), "```", "",
             "## Against the targets (issues 8 and 15)", "", targets_table(results, get, median, added),
             ""]
    page += closing_notes(meta)
    with open(os.path.join(repo, "docs", "benchmarks.md"), "w") as out:
        out.write("\n".join(page) + "\n")


if __name__ == "__main__":
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with open(os.path.join(root, "bench", "results.json")) as raw:
        data = json.load(raw)
    write(root, data["meta"], data["results"])
    sys.stdout.write("wrote docs/benchmarks.md and docs/img/bench-*.svg\n")
