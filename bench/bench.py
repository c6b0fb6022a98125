"""The benchmark plan: every variant, every figure, interleaved in rounds; then the report.

Input: the binaries bench/run built and copied (--bins), the plan (default or --quick).
Output: raw results (bench/results.json), docs/benchmarks.md and docs/img/*.svg via report.py.
All variants run side by side: within a round each measurement visits every variant before the
next measurement starts, and the order rotates per round, so the noise of a shared machine
(other builds running on the same two cores) falls on all of them alike.
"""

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

import procs
import report

FULL = dict(rounds=5, rates=[500, 1000, 2000, 5000], seconds=3.0, warmup=0.5, max_seconds=3.0,
            sse=dict(streams=10, events=100, interval_us=2000, waves=5),
            hold=[100, 1000, 5000], runtime_rounds=3)
QUICK = dict(rounds=1, rates=[500, 2000], seconds=1.0, warmup=0.3, max_seconds=1.0,
             sse=dict(streams=4, events=50, interval_us=2000, waves=2),
             hold=[100, 1000], runtime_rounds=1)


def variants(bins, want_record):
    out = [dict(name="direct", kind="direct", label="direct to the mock"),
           dict(name="tooltap-off", kind="tooltap", inspect=False, label="tooltap --inspect false"),
           dict(name="tooltap-full", kind="tooltap", label="tooltap full inspection"),
           # Diagnostic variants, in the closed-loop and SSE figures only: tooltap-full without
           # the per-exchange INFO lines and span fields (what logging costs), and without the
           # default `--record violations`, which writes every exchange to a temporary file
           # and deletes it when it is clean (what that costs).
           dict(name="tooltap-full-warn", kind="tooltap", env={"RUST_LOG": "warn"},
                phases={"max", "sse"}, label="tooltap full inspection, RUST_LOG=warn"),
           dict(name="tooltap-full-norec", kind="tooltap", args=["--record", "off"],
                phases={"max", "sse"}, label="tooltap full inspection, --record off")]
    if want_record:
        out.append(dict(name="tooltap-record", kind="tooltap", record=True,
                        label="tooltap full inspection + --record all"))
        # The same with segment files (many recordings per file, docs/recording-format.md), in
        # the closed-loop and SSE figures only; `check`'s throughput is measured on the one-file-
        # per-exchange variant's folder, the case of many small recordings.
        if supports_segments(bins):
            out.append(dict(name="tooltap-record-seg", kind="tooltap", record=True,
                            args=["--record-layout", "segments"], phases={"max", "sse"},
                            label="tooltap full inspection + --record all --record-layout "
                                  "segments"))
    # The floor of the HTTP stack tooltap is built on (bench/floor.rs: hyper's own
    # server and client connections, one upstream connection per client connection, nothing
    # else), in the closed-loop and SSE figures only: what any proxy on these parts costs.
    if os.path.exists(os.path.join(bins, "bench_floor")):
        out.append(dict(name="hyper-floor", kind="floor", phases={"max", "sse"},
                        label="hyper's connections and nothing else (bench/floor.rs)"))
    out.append(dict(name="nginx", kind="nginx", label="nginx, proxy_buffering off"))
    return out


def supports_segments(bins):
    helptext = subprocess.run([os.path.join(bins, "tooltap"), "proxy", "--help"],
                              capture_output=True, text=True, timeout=10).stdout
    return "--record-layout" in helptext


def supports_record(bins):
    helptext = subprocess.run([os.path.join(bins, "tooltap"), "proxy", "--help"],
                              capture_output=True, text=True, timeout=10).stdout
    return "--record" in helptext and "--recordings" in helptext


def machine_facts(bins):
    def first(cmd):
        try:
            return subprocess.run(cmd, capture_output=True, text=True, timeout=10).stdout.strip()
        except (OSError, subprocess.TimeoutExpired):
            return "unknown"
    cpu = "unknown"
    with open("/proc/cpuinfo") as info:
        for line in info:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    with open("/proc/meminfo") as info:
        mem_kib = int(info.readline().split()[1])
    return dict(cpu=cpu, cores=os.cpu_count(), kernel=platform.release(),
                memory_gib=round(mem_kib / 2**20, 1), loadavg_start=os.getloadavg(),
                nginx=first(["sh", "-c", "nginx -v 2>&1"]), rustc=first(["rustc", "--version"]),
                commit=first(["git", "rev-parse", "--short", "HEAD"]),
                date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()))


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bins", required=True)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--no-pin", action="store_true")
    parser.add_argument("--rounds", type=int)
    parser.add_argument("--repo", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    args = parser.parse_args()
    plan = dict(QUICK if args.quick else FULL)
    if args.rounds:
        plan["rounds"] = args.rounds
    rundir = tempfile.mkdtemp(prefix="tooltap-bench-")
    pin = procs.Pinning(not args.no_pin)
    print(f"run directory: {rundir}\npinning: {pin.describe()}", flush=True)
    record = supports_record(args.bins)
    print("--record all variant: " + ("yes" if record else "no (this tooltap has no --record)"))
    facts = machine_facts(args.bins)
    started = time.monotonic()
    results = run_all(args.bins, rundir, pin, plan, variants(args.bins, record))
    facts["loadavg_end"] = os.getloadavg()
    facts["wall_seconds"] = round(time.monotonic() - started)
    meta = dict(facts=facts, plan=plan, quick=args.quick, pinning=pin.describe(),
                record_variant=record, rundir=rundir)
    with open(os.path.join(args.repo, "bench", "results.json"), "w") as out:
        json.dump(dict(meta=meta, results=results), out, indent=1)
    report.write(args.repo, meta, results)
    print(f"done in {facts['wall_seconds']} s: docs/benchmarks.md, docs/img/, bench/results.json")


def run_all(bins, rundir, pin, plan, variant_list):
    mock = procs.Proc("mock", pin.prefix("load") + [os.path.join(bins, "bench_upstream"),
                      "--listen", f"127.0.0.1:{(mock_port := procs.free_port())}"], rundir,
                      port=mock_port)
    results = dict(variants={v["name"]: dict(label=v["label"]) for v in variant_list},
                   rate={}, max={}, sse={}, hold={}, runtime={}, checks={}, check=None,
                   check_segments=None)
    running = {}
    try:
        for v in variant_list:
            running[v["name"]] = procs.start_variant(v, bins, rundir, pin, mock_port)
            proc = running[v["name"]]
            results["variants"][v["name"]]["threads"] = proc.threads() if proc else None
        rounds(bins, pin, plan, variant_list, running, mock_port, results)
        results["checks"] = inspection_checks(running, rundir)
        for name, proc in running.items():
            if proc:
                proc.stop()
        if "tooltap-record" in running:
            results["check"] = check_throughput(bins, rundir, running["tooltap-record"])
        if running.get("tooltap-record-seg"):
            results["check_segments"] = check_throughput(bins, rundir,
                                                         running["tooltap-record-seg"])
        memory(bins, rundir, pin, plan, variant_list, mock_port, results)
        memory_streams(bins, rundir, pin, plan, mock_port, results)
        if plan["runtime_rounds"]:
            runtime(bins, rundir, plan, results)
    finally:
        for proc in running.values():
            if proc:
                proc.stop()
        mock.stop()
    return results


def in_phase(variant, phase):
    return phase in variant.get("phases", {"rate", "max", "sse", "hold"})


def url_pid(proc, mock_port):
    if proc is None:
        return f"http://127.0.0.1:{mock_port}", None
    return f"http://127.0.0.1:{proc.port}", proc.pid


def rounds(bins, pin, plan, variant_list, running, mock_port, results):
    sse = plan["sse"]
    for r in range(plan["rounds"]):
        order = variant_list[r % len(variant_list):] + variant_list[:r % len(variant_list)]
        print(f"round {r + 1}/{plan['rounds']}: order {[v['name'] for v in order]}", flush=True)
        for rate in plan["rates"]:
            for v in [v for v in order if in_phase(v, "rate")]:
                url, pid = url_pid(running[v["name"]], mock_port)
                out = procs.run_client(bins, pin, url, pid, [
                    "rate", "--rate", rate, "--seconds", plan["seconds"],
                    "--warmup", plan["warmup"]], budget=plan["seconds"] + 120)
                results["rate"].setdefault(str(rate), {}).setdefault(v["name"], []).append(out)
        for v in [v for v in order if in_phase(v, "max")]:
            url, pid = url_pid(running[v["name"]], mock_port)
            out = procs.run_client(bins, pin, url, pid, [
                "max", "--seconds", plan["max_seconds"], "--warmup", plan["warmup"],
                "--concurrency", 32], budget=plan["max_seconds"] + 180)
            results["max"].setdefault(v["name"], []).append(out)
        for v in [v for v in order if in_phase(v, "sse")]:
            url, pid = url_pid(running[v["name"]], mock_port)
            out = procs.run_client(bins, pin, url, pid, [
                "sse", "--streams", sse["streams"], "--events", sse["events"],
                "--interval-us", sse["interval_us"], "--waves", sse["waves"]], budget=120)
            results["sse"].setdefault(v["name"], []).append(out)
        sys.stdout.write(progress_line(results, v_names=[v["name"] for v in variant_list]))


def progress_line(results, v_names):
    cells = []
    for name in v_names:
        last = results["max"].get(name, [{}])[-1]
        rps = last.get("rps")
        cells.append(f"{name} {rps:.0f} req/s" if rps else f"{name} ?")
    return "  max: " + ", ".join(cells) + "\n"


def inspection_checks(running, rundir):
    """Proves the full-inspection variants really inspected: counters from /metrics, and that
    the clean traffic produced no violations (a violation here would be a mock or engine bug)."""
    checks = {}
    for name, proc in running.items():
        if proc is None or not name.startswith("tooltap") or name == "tooltap-off":
            continue
        text = ""
        if getattr(proc, "admin_port", None):
            metrics_url = f"http://127.0.0.1:{proc.admin_port}/metrics"
            try:
                with urllib.request.urlopen(metrics_url, timeout=5) as response:
                    text = response.read().decode()
            except OSError:
                text = ""

        def total(prefix):
            return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                       if line.startswith(prefix))
        violations_file = os.path.join(rundir, f"{proc.name}-violations.jsonl")
        checks[name] = dict(
            inspected=total("tooltap_exchanges_inspected_total"),
            requests=total("tooltap_requests_total"),
            violations=total("tooltap_violations_total"),
            incomplete=total("tooltap_inspection_incomplete_total"),
            violations_file_lines=(sum(1 for _ in open(violations_file))
                                   if os.path.exists(violations_file) else 0))
    return checks


def check_throughput(bins, rundir, recorder):
    """`tooltap check` over everything a --record all variant wrote during the rounds (both
    cores, default parallelism): MB/s of recordings re-judged, whether one file each or many to
    a segment file (counted by their exchange lines). The files are deleted after."""
    folder = os.path.join(rundir, f"{recorder.name}-rec")
    files, size, recordings = 0, 0, 0
    for root, _, names in os.walk(folder):
        for name in names:
            if name.endswith(".jsonl"):
                files += 1
                path = os.path.join(root, name)
                size += os.path.getsize(path)
                with open(path, "rb") as f:
                    recordings += sum(1 for line in f if line.startswith(b'{"type":"exchange",'))
    before = os.times()
    started = time.monotonic()
    try:
        done = subprocess.run([os.path.join(bins, "tooltap"), "check", folder, "--format", "json"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=600)
        exit_code, error = done.returncode, done.stderr.decode(errors="replace")[-300:]
    except subprocess.TimeoutExpired:
        exit_code, error = None, "timed out after 600 s"
    seconds = time.monotonic() - started
    after = os.times()
    cpu = (after.children_user - before.children_user) + (after.children_system
                                                           - before.children_system)
    shutil.rmtree(folder, ignore_errors=True)
    out = dict(files=files, recordings=recordings, bytes=size, seconds=seconds, cpu_seconds=cpu,
               exit_code=exit_code, error=error or None,
               mb_per_s=size / 1e6 / seconds if seconds else None)
    print(f"  check: {recordings} recordings in {files} files, {size / 1e6:.1f} MB in {seconds:.2f} s "
          f"({out['mb_per_s'] or 0:.0f} MB/s), exit {exit_code}", flush=True)
    return out


def memory(bins, rundir, pin, plan, variant_list, mock_port, results):
    """A fresh proxy per size, so earlier load does not sit in its allocator's caches."""
    for streams in plan["hold"]:
        for v in variant_list:
            if v["kind"] == "direct" or not in_phase(v, "hold"):
                continue
            proc = procs.start_variant(v, bins, rundir, pin, mock_port)
            try:
                url, pid = url_pid(proc, mock_port)
                procs.run_client(bins, pin, url, pid, ["sse", "--streams", 4, "--events", 5,
                                                      "--interval-us", 1000], budget=60)
                out = procs.run_client(bins, pin, url, pid, ["hold", "--streams", streams,
                                                            "--interval", 2.0], budget=180)
            finally:
                proc.stop()
            print(f"  hold {streams}: {v['name']} {out.get('bytes_per_stream')} B/stream",
                  flush=True)
            results["hold"].setdefault(str(streams), {})[v["name"]] = out


# Issue 39's huge arguments: one tool call whose arguments stream as a whole file would, 400
# fragments of 1,050 bytes 10 ms apart (420 KB), or 1,000 of 4,000 bytes 2 ms apart (4 MB).
ARGS_420K = ("args 150x420K", ["streams", "--streams", 150, "--events", 403,
                               "--interval-us", 10000, "--fragment", 1050])
ARGS_4M = ("args 50x4M", ["streams", "--streams", 50, "--events", 1003,
                          "--interval-us", 2000, "--fragment", 4000])
MEMORY_FULL = [("300x200", ["streams", "--streams", 300, "--events", 200]),
               ("1000x2000", ["streams", "--streams", 1000, "--events", 2000]),
               ("slow 500", ["slow", "--streams", 500, "--events", 20000, "--hold-s", 5]),
               ARGS_420K, ARGS_4M]
MEMORY_QUICK = [("300x200", ["streams", "--streams", 300, "--events", 200]),
                ("slow 100", ["slow", "--streams", 100, "--events", 20000, "--hold-s", 3]),
                ARGS_420K]


def memory_streams(bins, rundir, pin, plan, mock_port, results):
    """Issue 15's and issue 39's memory scenarios: a fresh proxy each, tooltap with its defaults
    beside `--record off` and nginx; `bench_memory` samples the proxy's VmRSS and its CPU time
    (see its doc)."""
    tool = os.path.join(bins, "bench_memory")
    if not os.path.exists(tool):
        print("  memory scenarios: no bench_memory binary, skipped", flush=True)
        return
    chosen = [dict(name="tooltap-full", kind="tooltap", label="tooltap full inspection"),
              dict(name="tooltap-full-norec", kind="tooltap", args=["--record", "off"],
                   label="tooltap full inspection, --record off"),
              dict(name="nginx", kind="nginx", label="nginx, proxy_buffering off")]
    quick = plan["seconds"] < FULL["seconds"]  # the --quick plan's shorter windows
    for scenario, args in (MEMORY_QUICK if quick else MEMORY_FULL):
        for v in chosen:
            if v["kind"] == "nginx" and not shutil.which("nginx"):
                continue
            proc = procs.start_variant(v, bins, rundir, pin, mock_port)
            try:
                url, pid = url_pid(proc, mock_port)
                cmd = pin.prefix("load") + [tool, "--url", url, "--pid", str(pid)]
                if getattr(proc, "admin_port", None):
                    cmd += ["--admin", f"http://127.0.0.1:{proc.admin_port}"]
                try:
                    done = subprocess.run(cmd + [str(a) for a in args], capture_output=True,
                                          timeout=400)
                    out = (json.loads(done.stdout) if done.returncode == 0 else
                           {"failed": done.stderr.decode(errors="replace").strip()[-300:]})
                except (subprocess.TimeoutExpired, ValueError) as error:
                    out = {"failed": str(error)}
            finally:
                proc.stop()
            print(f"  memory {scenario}: {v['name']} {out.get('bytes_per_stream')} B/stream",
                  flush=True)
            results.setdefault("memory", {}).setdefault(scenario, {})[v["name"]] = out


def runtime(bins, rundir, plan, results):
    """Unpinned (proxy, mock and load generator share both cores): tokio with one worker
    against two, via TOKIO_WORKER_THREADS, which tooltap's runtime builder honours."""
    free = procs.Pinning(enabled=False)
    full = dict(name="tooltap-full", kind="tooltap", label="tooltap full inspection")
    mock_port = procs.free_port()
    mock = procs.Proc("mock-unpinned", [os.path.join(bins, "bench_upstream"), "--listen",
                      f"127.0.0.1:{mock_port}"], rundir, port=mock_port)
    try:
        runtime_rounds(bins, rundir, plan, results, free, full, mock_port)
    finally:
        mock.stop()


def runtime_rounds(bins, rundir, plan, results, free, full, mock_port):
    for r in range(plan["runtime_rounds"]):
        for workers in ("1", "2"):
            proc = procs.start_variant(full, bins, rundir, free, mock_port,
                                       env={"TOKIO_WORKER_THREADS": workers})
            try:
                url, pid = url_pid(proc, mock_port)
                out = procs.run_client(bins, free, url, pid, [
                    "max", "--seconds", plan["max_seconds"], "--warmup", plan["warmup"],
                    "--concurrency", 32], budget=plan["max_seconds"] + 180)
                out["threads"] = proc.threads()
            finally:
                proc.stop()
            results["runtime"].setdefault(workers, []).append(out)


if __name__ == "__main__":
    main()
