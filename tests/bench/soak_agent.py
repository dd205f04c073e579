#!/usr/bin/env python3
"""Soak test of hippie-agent, bounded in time: many small jobs, some at once, with random rank
kills, client disconnects and reconnects (attach after the last seq held) and cancels.

It checks what a user relies on: every job's events arrive once each, seq 1.. with no gap, no
duplicate, across reconnects; every job ends in one final state (succeeded, failed or
cancelled) and none is left running; the agent's memory stays bounded (its RSS is sampled and
printed as a curve; with --max-kib-per-job, its growth from the end of the first third of the jobs
to the largest sample after it, per job submitted in between, must stay under that bound: a
leak of a job's buffers or files shows as tens of KiB per job).

The engine is a stand-in script (prints step events with short sleeps, then "done"), so the
soak needs no LibTorch and measures the agent, not training.

Usage: soak_agent.py HIPPIE_AGENT [--jobs 300] [--concurrent 4] [--seconds 600] [--seed 1]
Exit 0 when every check held; 1 with the failures listed otherwise.
"""
import argparse
import json
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import time

FINAL = {"succeeded", "failed", "cancelled"}
PLAN = {"format": "hippie-plan", "version": 1, "model": {"zoo": "mlp-tiny", "batch_size": 4},
        "cluster": "cpu-local", "planner": "manual", "stages": [{"first_layer": 0, "last_layer": 3}],
        "dp": 1, "micro_batches": 1, "global_batch": 4, "schedule": "1f1b", "optimizer": "sgd",
        "device_map": [[0]]}
# Each rank prints this many step events, STEP_SLEEP_S apart: a job lasts about a second.
STEPS = 20
STEP_SLEEP_S = 0.05
ENGINE = f"""#!/bin/sh
i=0
while [ $i -lt {STEPS} ]; do
  echo '{{"event":"step","step":'$i'}}'
  sleep {STEP_SLEEP_S}
  i=$((i+1))
done
echo '{{"event":"done"}}'
"""


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


class Connection:
    """One protocol connection: hello, then lines in and out."""

    def __init__(self, port, token):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.buf = b""
        self.send({"type": "hello", "token": token, "client": "soak", "protocol": 1})
        welcome = self.recv(10)
        if not welcome or welcome.get("type") != "welcome":
            raise RuntimeError(f"no welcome: {welcome}")
        self.sock.setblocking(False)

    def send(self, m):
        data = (json.dumps(m) + "\n").encode()
        self.sock.setblocking(True)
        self.sock.sendall(data)
        self.sock.setblocking(False)

    def recv(self, timeout):
        """The next message, or None after timeout seconds."""
        deadline = time.time() + timeout
        while b"\n" not in self.buf:
            remaining = deadline - time.time()
            if remaining <= 0:
                return None
            self.sock.settimeout(remaining)
            try:
                chunk = self.sock.recv(1 << 16)
            except (socket.timeout, BlockingIOError):
                return None
            if not chunk:
                raise ConnectionError("agent closed the connection")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def close(self):
        self.sock.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("agent")
    ap.add_argument("--jobs", type=int, default=300)
    ap.add_argument("--concurrent", type=int, default=4)
    ap.add_argument("--seconds", type=float, default=600)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--kill-prob", type=float, default=0.1, help="chance a running job gets a rank killed")
    ap.add_argument("--cancel-prob", type=float, default=0.1, help="chance a running job is cancelled")
    ap.add_argument("--reconnect-prob", type=float, default=0.02, help="chance per received message of reconnecting")
    ap.add_argument("--keep-finished", type=int, default=None, help="the agent's --keep-finished (default: its own)")
    ap.add_argument("--max-kib-per-job", type=float, default=None,
                    help="fail when the agent's RSS grows by more than this per job after the first third")
    args = ap.parse_args()
    rnd = random.Random(args.seed)

    work = tempfile.mkdtemp(prefix="hippie-soak-")
    token_file = os.path.join(work, "token")
    with open(os.open(token_file, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
        f.write("soak-token\n")
    engine = os.path.join(work, "engine.sh")
    with open(engine, "w") as f:
        f.write(ENGINE)
    os.chmod(engine, 0o700)
    agent = subprocess.Popen([args.agent, "--listen", "127.0.0.1:0", "--token-file", token_file, "--work-dir",
                              os.path.join(work, "agent"), "--engine", engine, "--max-jobs", str(args.concurrent),
                              "--heartbeat-ms", "200"]
                             + ([] if args.keep_finished is None else ["--keep-finished", str(args.keep_finished)]),
                             stdout=subprocess.PIPE, stderr=open(os.path.join(work, "agent.log"), "w"), text=True)
    port = json.loads(agent.stdout.readline())["port"]

    seqs = {}        # job -> list of seqs received
    finals = {}      # job -> final states seen
    pids = {}        # job -> rank pids
    submitted, accepted, rejected = 0, 0, 0
    running = set()
    failures = []
    rss = []
    conn = Connection(port, "soak-token")
    start = time.time()
    last_sample = 0.0
    reconnects = kills = cancels = 0

    def last_seq(job):
        return seqs[job][-1] if seqs.get(job) else 0

    try:
        while time.time() - start < args.seconds:
            now = time.time()
            if now - last_sample >= 1.0:
                rss.append((round(now - start, 1), rss_kib(agent.pid), submitted))
                last_sample = now
            if submitted < args.jobs and len(running) < args.concurrent:
                job = f"soak{submitted:05d}"
                submitted += 1
                conn.send({"type": "submit", "job": {"id": job, "plan": PLAN, "steps": 1, "world_size": 1,
                                                     "first_rank": 0, "rank_count": 1}})
                running.add(job)
                seqs[job] = []
            if submitted >= args.jobs and not running:
                break
            m = conn.recv(0.2)
            if m is None:
                continue
            t = m.get("type")
            if t == "accepted":
                accepted += 1
            elif t == "rejected":
                rejected += 1  # the agent was full: submit it again later
                running.discard(m["job"])
                seqs.pop(m["job"], None)
                submitted -= 1
            elif t == "event":
                job, seq, ev = m["job"], m["seq"], m["event"]
                if seq <= last_seq(job):
                    failures.append(f"{job}: seq {seq} again after {last_seq(job)}")
                elif seq != last_seq(job) + 1:
                    failures.append(f"{job}: seq {seq} after {last_seq(job)} (gap)")
                seqs.setdefault(job, []).append(seq)
                if ev.get("event") == "job-state":
                    state = ev.get("state")
                    if state == "running":
                        pids[job] = [r["pid"] for r in ev.get("ranks", [])]
                        if rnd.random() < args.kill_prob and pids[job]:
                            try:
                                os.kill(rnd.choice(pids[job]), signal.SIGKILL)
                                kills += 1
                            except ProcessLookupError:
                                pass
                        elif rnd.random() < args.cancel_prob:
                            conn.send({"type": "cancel", "job": job})
                            cancels += 1
                    elif state in FINAL:
                        finals.setdefault(job, []).append(state)
                        running.discard(job)
            elif t == "error":
                failures.append(f"error from the agent: {m.get('message')}")
            if rnd.random() < args.reconnect_prob:
                conn.close()
                conn = Connection(port, "soak-token")
                reconnects += 1
                for job in sorted(running):
                    conn.send({"type": "attach", "job": job, "after_seq": last_seq(job)})
        # What the agent says at the end: every job final.
        conn.send({"type": "status"})
        status = None
        while status is None:
            m = conn.recv(10)
            if m is None:
                break
            if m.get("type") == "status":
                status = m
        # A job released after --keep-finished later ones ended is named as such, with its files.
        released = None
        if args.keep_finished is not None and len(finals) > args.keep_finished + args.concurrent:
            conn.send({"type": "status", "job": "soak00000"})
            while released is None:
                m = conn.recv(10)
                if m is None:
                    break
                if m.get("type") in ("error", "status"):
                    released = m
            if released is None or "no longer held" not in released.get("message", "") \
                    or "jobs/soak00000/events.jsonl" not in released.get("message", ""):
                failures.append(f"the first job, long finished, is not reported as released: {released}")
    finally:
        conn.close()
        agent.send_signal(signal.SIGTERM)
        agent.wait(30)

    growth = None
    warm = [(k, n) for _, k, n in rss if n >= args.jobs // 3]
    if len(warm) >= 2 and submitted > warm[0][1]:
        growth = (max(k for k, _ in warm) - warm[0][0]) / (submitted - warm[0][1])
        if args.max_kib_per_job is not None and growth > args.max_kib_per_job:
            failures.append(f"agent RSS grew {growth:.1f} KiB per job after the first third "
                            f"(bound {args.max_kib_per_job} KiB)")
    elif args.max_kib_per_job is not None:
        failures.append("too few RSS samples after the first third of the jobs to bound the growth")

    if status is None:
        failures.append("no status answer at the end")
    else:
        stuck = [j["id"] for j in status["jobs"] if j["state"] not in FINAL]
        if stuck:
            failures.append(f"{len(stuck)} job(s) not final at the end: {stuck[:5]}")
    for job, states in finals.items():
        if len(states) != 1:
            failures.append(f"{job}: {len(states)} final states {states}")
    unfinished = [j for j in seqs if j not in finals]
    if unfinished:
        failures.append(f"{len(unfinished)} job(s) without a final state received: {unfinished[:5]}")
    if submitted < args.jobs:
        failures.append(f"only {submitted} of {args.jobs} jobs submitted in {args.seconds} s")

    by_state = {}
    for states in finals.values():
        by_state[states[0]] = by_state.get(states[0], 0) + 1
    elapsed = time.time() - start
    print(f"jobs {len(finals)} final of {submitted} submitted in {elapsed:.0f} s ({accepted} accepted, "
          f"{rejected} rejected while full and resubmitted); states {by_state}")
    print(f"rank kills {kills}, cancels {cancels}, reconnects {reconnects}; events {sum(len(s) for s in seqs.values())}")
    print("agent RSS (s, MiB): " + " ".join(f"{t:.0f}:{k / 1024:.1f}" for t, k, _ in rss[:: max(1, len(rss) // 30)]))
    if rss:
        print(f"agent RSS first {rss[0][1] / 1024:.1f} MiB, max {max(k for _, k, _ in rss) / 1024:.1f} MiB, "
              f"last {rss[-1][1] / 1024:.1f} MiB" + ("" if growth is None else f"; {growth:.1f} KiB per job after the first third"))
    for f in failures[:20]:
        print("FAIL:", f)
    print(f"work directory: {work}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
