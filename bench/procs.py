"""Processes of a benchmark run: the mock upstream, the proxies under test, and the client.

Input: the binaries built by bench/run (copied into the run directory so a concurrent build
cannot swap them mid-run) and the core pinning. Output: running processes with known pids and
ports, and the client's JSON reports. Every wait here is bounded in time.
"""

import json
import os
import shutil
import signal
import socket
import subprocess
import time


def free_port():
    """A port the kernel just handed out on 127.0.0.1 (closed again; reused immediately)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_port(port, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return
        except OSError:
            time.sleep(0.02)
    raise RuntimeError(f"nothing listens on 127.0.0.1:{port} after {timeout}s")


class Pinning:
    """Proxy on one core, load generator and mock on the other, when there are two and taskset."""

    def __init__(self, enabled=True):
        cores = sorted(os.sched_getaffinity(0))
        self.active = enabled and len(cores) >= 2 and shutil.which("taskset") is not None
        self.proxy_core = cores[0] if self.active else None
        self.load_core = cores[1] if self.active else None

    def prefix(self, role):
        core = {"proxy": self.proxy_core, "load": self.load_core}[role] if self.active else None
        return [] if core is None else ["taskset", "-c", str(core)]

    def describe(self):
        if not self.active:
            return "no pinning (fewer than 2 cores or no taskset)"
        return (f"proxies (tooltap, nginx) pinned to core {self.proxy_core}; "
                f"load generator and mock upstream pinned to core {self.load_core}")


class Proc:
    def __init__(self, name, cmd, rundir, env=None, port=None):
        self.name, self.port = name, port
        self.log = os.path.join(rundir, f"{name}.log")
        with open(self.log, "wb") as log:
            self.popen = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT,
                                          env={**os.environ, **(env or {})})
        # taskset execs the program, so this pid is the program's own.
        self.pid = self.popen.pid
        if port is not None:
            try:
                wait_port(port)
            except RuntimeError:
                self.stop()
                raise RuntimeError(f"{name} did not start; see {self.log}:\n{self.tail()}")

    def threads(self):
        try:
            return len(os.listdir(f"/proc/{self.pid}/task"))
        except OSError:
            return None

    def tail(self, lines=10):
        try:
            with open(self.log, "rb") as log:
                return b"\n".join(log.read().splitlines()[-lines:]).decode(errors="replace")
        except OSError:
            return ""

    def stop(self):
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait(timeout=5)


def nginx_conf(rundir, name, listen_port, mock_port, buffering):
    """nginx as a plain reverse proxy: one process (no master), one worker's worth of events,
    upstream keep-alive (without it every request opens a connection), default access log."""
    home = os.path.join(rundir, name)
    os.makedirs(os.path.join(home, "tmp"), exist_ok=True)
    conf = os.path.join(home, "nginx.conf")
    with open(conf, "w") as out:
        out.write(f"""daemon off;
master_process off;
worker_processes 1;
worker_rlimit_nofile 65536;
pid {home}/nginx.pid;
error_log {home}/error.log warn;
events {{ worker_connections 30000; }}
http {{
    access_log {home}/access.log;
    client_body_temp_path {home}/tmp/body;
    proxy_temp_path {home}/tmp/proxy;
    upstream mock {{ server 127.0.0.1:{mock_port}; keepalive 256; }}
    server {{
        listen 127.0.0.1:{listen_port} backlog=4096;
        location / {{
            proxy_pass http://mock;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_buffering {"on" if buffering else "off"};
        }}
    }}
}}
""")
    return conf, home


def start_variant(variant, bins, rundir, pin, mock_port, env=None, role="proxy"):
    """Starts one proxy variant on a fresh port; returns its Proc (None for `direct`)."""
    kind = variant["kind"]
    if kind == "direct":
        return None
    port = free_port()
    name = f"{variant['name']}-{port}"
    if kind == "tooltap":
        admin_port = free_port()
        cmd = [os.path.join(bins, "tooltap"), "proxy", "--listen", f"127.0.0.1:{port}",
               "--upstream", f"http://127.0.0.1:{mock_port}"]
        if variant.get("inspect", True):
            cmd += ["--violations", os.path.join(rundir, f"{name}-violations.jsonl"),
                    "--admin-listen", f"127.0.0.1:{admin_port}"]
        else:
            cmd += ["--inspect", "false", "--violations", "off", "--admin-listen", "off"]
        cmd += variant.get("args", [])
        if variant.get("record"):
            cmd += ["--record", "all", "--recordings", os.path.join(rundir, f"{name}-rec")]
        # tooltap's documented default verbosity, whatever the caller's environment says.
        proc_env = {"RUST_LOG": "info", **variant.get("env", {}), **(env or {})}
        proc = Proc(name, pin.prefix(role) + cmd, rundir, env=proc_env, port=port)
        proc.admin_port = admin_port if variant.get("inspect", True) else None
        return proc
    if kind == "floor":
        cmd = [os.path.join(bins, "bench_floor"), "--listen", f"127.0.0.1:{port}",
               "--upstream", f"127.0.0.1:{mock_port}"]
        return Proc(name, pin.prefix(role) + cmd, rundir, port=port)
    conf, home = nginx_conf(rundir, name, port, mock_port, variant.get("buffering", False))
    cmd = ["nginx", "-p", home + "/", "-c", conf, "-e", os.path.join(home, "error.log")]
    return Proc(name, pin.prefix(role) + cmd, rundir, port=port)


def run_client(bins, pin, url, pid, mode_args, budget, role="load"):
    """One bench_client run; its JSON report, or {"failed": reason}."""
    cmd = pin.prefix(role) + [os.path.join(bins, "bench_client"), "--url", url]
    if pid is not None:
        cmd += ["--pid", str(pid)]
    cmd += [str(a) for a in mode_args]
    try:
        done = subprocess.run(cmd, capture_output=True, timeout=budget)
    except subprocess.TimeoutExpired:
        return {"failed": f"client timed out after {budget}s"}
    if done.returncode != 0:
        return {"failed": done.stderr.decode(errors="replace").strip()[-500:]}
    try:
        return json.loads(done.stdout)
    except ValueError:
        return {"failed": "unreadable client output"}
