#!/usr/bin/env python3
"""CPU time per request per function and per group, from bench/time-profile's samples.

Each round gives `perf report --sort sym -n` text and the load's JSON (`bench_client max
--pid`, whose CPU per request is the proxy's over the load). A function's time per request is
its share of the round's samples times that CPU per request; a mode's figure is the mean over
its rounds. Printed: the groups, then the functions whose time differs most between full
inspection and the pass-through. Sampling itself costs the proxy CPU (the timer's interrupt,
kernel time): compare the modes, not the absolute figures.

Usage: bench/time_top.py MODE SYMBOLS LOAD [MODE SYMBOLS LOAD ...] [--top N]
"""

import argparse
import collections
import json
import re

LINE = re.compile(r"^\s*([\d.]+)%\s+(\d+)\s+\[([.k])\]\s+(.*?)\s*$")

# First match wins: the libc allocator and copies apart from the code that calls them.
GROUPS = [
    ("kernel", lambda kind, name: kind == "k"),
    ("allocator", lambda kind, name: re.search(
        r"^(malloc|free|cfree|realloc|_int_|malloc_consolidate|unlink_chunk|tcache|"
        r"__libc_(malloc|free|calloc)|calloc|__rust_(alloc|dealloc|realloc))", name)),
    ("memcpy/memmove", lambda kind, name: re.search(r"mem(cpy|move|set|cmp)", name)),
    ("clock", lambda kind, name: "clock_gettime" in name or "Timespec" in name),
    ("engine", lambda kind, name: "tooltap::engine" in name or "jsonschema" in name
     or "serde_json" in name or "ChatState" in name),
    ("inspector", lambda kind, name: re.search(r"tooltap::(inspect|tap|record)", name)),
    ("service & admission", lambda kind, name: re.search(
        r"tooltap::(proxy|accept_loop|upstream|read_cap|metrics)", name)),
    ("hyper & http", lambda kind, name: re.search(r"\b(hyper|http|httparse)::", name)),
    ("tokio", lambda kind, name: "tokio::" in name or "mio::" in name),
]


def group_of(kind, name):
    for group, test in GROUPS:
        if test(kind, name):
            return group
    return "other"


def read_round(symbols_path, load_path):
    """Per (kind, name): µs per request in this round; and the round's CPU per request."""
    with open(load_path) as load:
        cpu = json.load(load)["cpu"]["cpu_us_per_request"]
    counts = collections.Counter()
    with open(symbols_path, errors="replace") as lines:
        for line in lines:
            match = LINE.match(line)
            if match:
                counts[(match.group(3), match.group(4))] += int(match.group(2))
    total = sum(counts.values()) or 1
    return {key: count / total * cpu for key, count in counts.items()}, cpu


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("rounds", nargs="+")
    parser.add_argument("--top", type=int, default=30)
    args = parser.parse_args()
    if len(args.rounds) % 3:
        parser.error("give MODE SYMBOLS LOAD triples")
    per_mode = collections.defaultdict(list)
    for at in range(0, len(args.rounds), 3):
        mode, symbols, load = args.rounds[at:at + 3]
        per_mode[mode].append(read_round(symbols, load))
    modes = list(per_mode)

    def mean(mode):
        rounds = per_mode[mode]
        totals = collections.Counter()
        for figures, _ in rounds:
            for key, value in figures.items():
                totals[key] += value / len(rounds)
        return totals, sum(cpu for _, cpu in rounds) / len(rounds)

    means = {mode: mean(mode) for mode in modes}
    print("== CPU per request (µs, sampled): " + ", ".join(
        f"{mode} {means[mode][1]:.1f} over {len(per_mode[mode])} rounds" for mode in modes))
    grouped = {mode: collections.Counter() for mode in modes}
    for mode in modes:
        for (kind, name), value in means[mode][0].items():
            grouped[mode][group_of(kind, name)] += value
    base, other = (modes + modes)[:2] if len(modes) < 2 else modes[:2]
    header = f"{'group':<22}" + "".join(f"{mode:>10}" for mode in modes)
    print(header + (f"{other + ' - ' + base:>16}" if other != base else ""))
    names = [group for group, _ in GROUPS] + ["other"]
    for group in sorted(names, key=lambda g: -(grouped[other][g] - grouped[base][g])):
        row = "".join(f"{grouped[mode][group]:>10.2f}" for mode in modes)
        diff = grouped[other][group] - grouped[base][group]
        print(f"{group:<22}{row}" + (f"{diff:>+16.2f}" if other != base else ""))
    keys = set(means[base][0]) | set(means[other][0])
    ranked = sorted(keys, key=lambda key: -(means[other][0][key] - means[base][0][key]))
    print(f"\n== functions by {other} - {base} (µs per request)")
    for kind, name in ranked[:args.top]:
        values = "".join(f"{means[mode][0][(kind, name)]:>8.2f}" for mode in modes)
        diff = means[other][0][(kind, name)] - means[base][0][(kind, name)]
        print(f"{values}{diff:>+8.2f}  [{kind}] {name[:110]}")


if __name__ == "__main__":
    main()
