#!/usr/bin/env python3
"""Exclusive instructions and call counts per function from a series of callgrind dumps.

`callgrind_control -d` writes one file per dump, and a later dump refers to a function by the
number an earlier dump gave its name: `callgrind_annotate` on the second dump alone attributes
everything to `clone`. This reads the dumps in order, keeps the names, and prints the last dump's
figures divided by a unit count (requests, events).

Usage: bench/callgrind_top.py UNITS DUMP [DUMP...] [--top N] [--calls REGEX]
  --top N        the N most expensive functions by exclusive instructions (default 40)
  --calls REGEX  also: calls per unit and inclusive instructions per unit of the functions
                 matching REGEX, with their two main callers
  --apart REGEX  also: the instructions per unit spent in calls to the functions matching
                 REGEX from functions that do not match it (so nested matches count once), and
                 the total without them (bench/profile: the admin listener's /metrics answers
                 that its settling loop asks for inside the measured window)
"""

import argparse
import collections
import re

NAME = re.compile(r"^(c?fn)=\((\d+)\)(?: (.*))?$")


def is_cost_line(line):
    return bool(line) and (line[0].isdigit() or line[0] in "+-*")


def read(paths):
    """Per function of the last dump: exclusive cost, calls, inclusive cost, callers, and the
    inclusive cost per call edge (caller, callee)."""
    names = {}
    for path in paths:
        exclusive = collections.Counter()
        calls = collections.Counter()
        inclusive = collections.Counter()
        callers = collections.defaultdict(collections.Counter)
        edges = collections.Counter()
        function = callee = pending = None
        with open(path, errors="replace") as dump:
            for line in dump:
                line = line.rstrip("\n")
                named = NAME.match(line)
                if named:
                    kind, number, name = named.groups()
                    if name:
                        names[number] = name
                    resolved = names.get(number, f"?{number}")
                    if kind == "fn":
                        function = resolved
                    else:
                        callee = resolved
                    continue
                if line.startswith("calls="):
                    count = int(line[len("calls="):].split()[0])
                    calls[callee] += count
                    callers[callee][function] += count
                    pending = callee
                    continue
                if not is_cost_line(line):
                    continue
                fields = line.split()
                if len(fields) < 2:
                    continue
                cost = int(fields[1])
                if pending is not None:
                    # The line after `calls=` is the call's inclusive cost, not the caller's own.
                    inclusive[pending] += cost
                    edges[(function, pending)] += cost
                    pending = None
                else:
                    exclusive[function] += cost
    return exclusive, calls, inclusive, callers, edges


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("units", type=float)
    parser.add_argument("dumps", nargs="+")
    parser.add_argument("--top", type=int, default=40)
    parser.add_argument("--calls")
    parser.add_argument("--apart")
    args = parser.parse_args()
    exclusive, calls, inclusive, callers, edges = read(args.dumps)
    total = sum(exclusive.values())
    print(f"{total / args.units:,.0f} instructions per unit ({total:,} in {args.dumps[-1]})")
    if args.apart:
        apart = re.compile(args.apart)
        cost = sum(cost for (caller, callee), cost in edges.items()
                   if apart.search(callee) and not apart.search(caller or ""))
        print(f"{cost / args.units:,.0f} per unit in calls to {args.apart}; "
              f"{(total - cost) / args.units:,.0f} per unit without them")
    print("exclusive per unit  function")
    for function, cost in exclusive.most_common(args.top):
        print(f"{cost / args.units:>19,.1f}  {function[:160]}")
    if args.calls:
        wanted = re.compile(args.calls)
        print("calls per unit  inclusive per unit  function (main callers)")
        for function in sorted(calls, key=lambda f: -inclusive[f]):
            if not wanted.search(function):
                continue
            print(
                f"{calls[function] / args.units:>14.2f}  "
                f"{inclusive[function] / args.units:>18,.1f}  {function[:140]}"
            )
            for caller, count in callers[function].most_common(2):
                print(f"{'':>36}from {count / args.units:.2f}/unit {caller[:120]}")


if __name__ == "__main__":
    main()
