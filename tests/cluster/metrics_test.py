#!/usr/bin/python3
"""Scrapes the daemons' Prometheus endpoints with plain HTTP requests during a job.

Runs the quickstart (2 servers, 2 workers) under psrt-launch with metrics.port=0 (each process
picks a port and logs it), scrapes worker 0 and server 0 while training runs, and checks that the
counters move: worker 0's pushed bytes grow between two scrapes, its chunk round-trip histogram
and iteration histogram count observations, server 0 counts received pushes. Then it stops the job
with SIGINT (psrt-launch stops every process).

Usage: metrics_test.py BIN_DIR SOURCE_DIR
"""
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request

BIN, SRC = sys.argv[1], sys.argv[2]


def scrape(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        text = r.read().decode()
    values = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            values[name] = float(value)
    return values


def value(values, prefix, **labels):
    total = 0.0
    for name, v in values.items():
        if name.startswith(prefix + "{") or name == prefix:
            if all(f'{k}="{val}"' in name for k, val in labels.items()):
                total += v
    return total


def main():
    cmd = [f"{BIN}/psrt-launch", f"{SRC}/examples/quickstart.yaml", "--set", "metrics.port=0",
           "--set", "job.iterations=1000000", "--set", "job.log_every=0"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    ports, lines = {}, []
    found = threading.Event()

    def read():
        for line in proc.stdout:
            lines.append(line)
            m = re.search(r"(server|worker) (\d+).*metrics on http://[^:]+:(\d+)/metrics", line)
            if m:
                ports[(m.group(1), int(m.group(2)))] = int(m.group(3))
            if ("worker", 0) in ports and ("server", 0) in ports:
                found.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    failures = []
    try:
        if not found.wait(120):
            failures.append("no metrics endpoint was logged: " + "".join(lines[-10:]))
            return 1
        w, s = ports[("worker", 0)], ports[("server", 0)]
        pushed0, moved = 0.0, None
        for _ in range(480):  # until the counter is seen non-zero and then larger, or the job ends
            if proc.poll() is not None:
                break
            now = scrape(w)
            pushed = value(now, "psrt_payload_bytes_total", direction="sent", type="push")
            if pushed > pushed0 > 0:
                moved = now
                break
            pushed0 = pushed0 or pushed
            time.sleep(0.25)
        if moved is None:
            failures.append("worker 0's pushed bytes did not grow between scrapes")
        else:
            if value(moved, "psrt_chunk_round_trip_seconds_count") <= 0:
                failures.append("no chunk round trip observed")
            if value(moved, "psrt_iteration_seconds_count") <= 0:
                failures.append("no iteration observed")
            if value(moved, "psrt_push_queue_wait_seconds_count") <= 0:
                failures.append("no queue wait observed")
            server = scrape(s)
            if value(server, "psrt_messages_total", direction="received", type="push") <= 0:
                failures.append("server 0 counted no pushes")
            if value(server, "psrt_messages_total", direction="sent", type="params") <= 0:
                failures.append("server 0 counted no parameter replies")
            if not any('role="server"' in k and 'rank="0"' in k for k in server):
                failures.append("server 0's metrics lack its role and rank labels")
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            failures.append("psrt-launch did not stop on SIGINT")
    for f in failures:
        print("FAIL:", f)
    print("PASS: metrics move during a job" if not failures else "FAIL")
    return 1 if failures else 0


sys.exit(main())
