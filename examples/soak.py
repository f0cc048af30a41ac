#!/usr/bin/env python3
"""A soak of `toolgate serve --stdio` (docs/fuzzing.md#the-serve-soak); not part of CI.

Two servers watch one policy folder: a fast client keeps several mixed batches in flight on
the first, a slow client (it reads its output late, pausing for seconds) drives the second.
The policy file is rewritten every 2.5 s: a valid set (two variants in turn), an invalid
one, or a half-written save (a valid first half without the deny rule, a 0.4 s pause, the
rest). Not every second: a change is loaded once the files have been quiet for a settle
window of 1 s (docs/cli.md, watch), so files rewritten every second would never load; 2.5 s
leaves each change its window, so every change is loaded or rejected.

At the end it checks: no batch failed (every request answered with a result, every call
with the status its kind must have), no batch mixed generations, each server's resident
memory stayed within 2x of its first-minute level, and no descriptor or process was left
over. It prints one status line every 10 s, then the verdict; exit 1 if a check failed.

    cargo build --release
    python3 examples/soak.py --minutes 10   # --binary PATH for another build

Standard library only; Linux (it reads /proc).
"""

import argparse
import itertools
import json
import os
import queue
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time

TOKEN = f"toolgate-soak-{os.getpid()}"

HEAD = """version: 1
engine:
  batch_budget: 60000
  artifacts: {{ dir: {artifacts} }}
tools:
  Echo:
    input_schema:
      type: object
      required: [command]
      properties: {{ command: {{ type: string }} }}
    concurrency: {{ concurrent_safe: true }}
    permission: {{ default: allow }}
    timeout: {{ default: 20s }}
    handler: {{ kind: command, argv: [sh, -c, "{{{{input.command}}}}", {token}], env: [PATH] }}
"""
RULES = """rules:
  - name: no-deny-me
    tools: [Echo]
    match: {{ command: {{ glob: "*deny-me*" }} }}
    decision: deny
    reason: the soak denies this ({variant})
"""
INVALID = "version: 1\ntools:\n  Echo: { handler: { kind: command, argv: [\n"
# Seconds between two changes of the policy file: more than the settle window (1 s) plus the
# half-written save's pause (0.4 s), so that every change settles and is loaded or rejected.
CHANGE_EVERY = 2.5

# Call kinds: (input command, the status the call must end with).
KINDS = {
    "ok": ("echo ok", "ok"),
    "big": ("head -c 200000 /dev/zero | tr '\\\\0' x", "ok"),
    "slow": ("sleep 0.3; echo slow", "ok"),
    "fail": ("echo oops >&2; exit 3", "error"),
    "denied": ("echo deny-me", "denied"),
    "unknown": (None, "error"),
}


def rss_kb(pid):
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def fds(pid):
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return -1


def processes_with_token():
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                if TOKEN.encode() in cmdline.read():
                    found.append(int(entry))
        except OSError:
            pass
    return found


class Client:
    """One server and the batches a client keeps in flight on it."""

    def __init__(self, name, command, cwd, slow):
        self.name, self.slow = name, slow
        self.process = subprocess.Popen(command, cwd=cwd, stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, text=True, bufsize=1)
        self.lock = threading.Lock()
        self.waiting = {}
        self.events = {}
        self.ids = itertools.count(1)
        self.batches = 0
        self.failures = []
        self.mixed = []
        self.reloads = 0
        self.reload_failures = 0
        self.rss = []  # (seconds since start, kB)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        pause_at = time.monotonic() + 10
        for line in self.process.stdout:
            if self.slow:
                time.sleep(0.002)
                if time.monotonic() > pause_at:
                    time.sleep(3)  # stops reading, as a stuck client does
                    pause_at = time.monotonic() + 10
            if not line.strip():
                continue
            message = json.loads(line)
            if message.get("method") == "event":
                params = message["params"]
                kind = params.get("type")
                if kind == "PolicyReloaded":
                    self.reloads += 1
                elif kind == "PolicyReloadFailed":
                    self.reload_failures += 1
                batch = params.get("batch_id")
                if batch is not None:
                    with self.lock:
                        self.events.setdefault(batch, set()).add(params.get("generation"))
            elif "id" in message and "method" not in message:
                with self.lock:
                    answer = self.waiting.pop(message["id"], None)
                if answer is not None:
                    answer.put(message)
        with self.lock:
            for answer in self.waiting.values():
                answer.put(None)

    def request(self, method, params, timeout=120):
        request_id = next(self.ids)
        answer = queue.Queue()
        with self.lock:
            self.waiting[request_id] = answer
        line = json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        with self.lock:
            self.process.stdin.write(line + "\n")
            self.process.stdin.flush()
        try:
            return answer.get(timeout=timeout)
        except queue.Empty:
            return None

    def run_batch(self, rng):
        batch_id = f"{self.name}-{next(self.ids)}"
        kinds = [rng.choice(list(KINDS)) for _ in range(rng.randint(1, 6))]
        calls = []
        for index, kind in enumerate(kinds):
            command, _ = KINDS[kind]
            tool = "Nope" if command is None else "Echo"
            calls.append({"id": f"c{index}", "tool": tool, "input": {"command": command or ""}})
        response = self.request("executeBatch", {"batch": {"id": batch_id, "calls": calls}})
        self.batches += 1
        if response is None or "result" not in response:
            self.failures.append(f"{batch_id}: no result ({response})")
            return
        result = response["result"]
        for kind, call in zip(kinds, result.get("results", [])):
            if call.get("status") != KINDS[kind][1]:
                self.failures.append(f"{batch_id}/{call.get('call_id')} ({kind}): status "
                                     f"{call.get('status')}, expected {KINDS[kind][1]}: "
                                     f"{str(call.get('model_content')).strip()[:120]}")
        with self.lock:
            generations = self.events.pop(batch_id, set())
        generations.add(result.get("generation"))
        if len(generations) > 1:
            self.mixed.append(f"{batch_id}: generations {sorted(generations)}")


def write_policy(path, text, half_pause=None):
    if half_pause is None:
        with open(path, "w") as file:
            file.write(text)
        return
    # An editor that writes in place in two steps: a valid first half, a pause, the rest.
    head, rest = text.split("rules:", 1)
    with open(path, "w") as file:
        file.write(head)
        file.flush()
        time.sleep(half_pause)
        file.write("rules:" + rest)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--binary", default="target/release/toolgate")
    parser.add_argument("--minutes", type=float, default=10)
    parser.add_argument("--inflight", type=int, default=4, help="batches in flight (fast client)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    binary = os.path.abspath(args.binary)
    root = tempfile.mkdtemp(prefix="toolgate-soak-")
    policies = os.path.join(root, "policies")
    os.makedirs(policies)
    policy = os.path.join(policies, "soak.yaml")
    head = HEAD.format(artifacts=os.path.join(root, "artifacts"), token=TOKEN)
    valid = [head + RULES.format(variant=v) for v in ("a", "b")]
    write_policy(policy, valid[0])
    command = [binary, "--no-builtin", "-p", policies, "--workspace", root, "serve", "--stdio"]
    clients = [Client("fast", command, root, slow=False), Client("slow", command, root, slow=True)]
    for client in clients:
        if client.request("initialize", {}, timeout=60) is None:
            sys.exit(f"{client.name}: the server did not answer `initialize`")
    time.sleep(1)
    fds_start = [fds(c.process.pid) for c in clients]
    start = time.monotonic()
    deadline = start + args.minutes * 60
    stop = threading.Event()

    def drive(client, seed):
        rng = random.Random(seed)
        while not stop.is_set():
            client.run_batch(rng)

    workers = []
    for client, count in ((clients[0], args.inflight), (clients[1], 2)):
        for n in range(count):
            worker = threading.Thread(target=drive, args=(client, args.seed * 100 + n + len(workers)))
            worker.start()
            workers.append(worker)

    def reload_loop():
        for step in itertools.count():
            if stop.wait(CHANGE_EVERY):
                return
            choice = step % 4
            if choice == 1:
                write_policy(policy, INVALID)
            elif choice == 3:
                write_policy(policy, valid[step % 2], half_pause=0.4)
            else:
                write_policy(policy, valid[step % 2])

    reloader = threading.Thread(target=reload_loop)
    reloader.start()
    next_report = start + 10
    while time.monotonic() < deadline:
        time.sleep(1)
        now = time.monotonic()
        for client in clients:
            client.rss.append((now - start, rss_kb(client.process.pid)))
        if now >= next_report:
            next_report += 10
            parts = [f"{c.name}: {c.batches} batches, {len(c.failures)} failed, "
                     f"{c.reloads}+{c.reload_failures} reloads, rss {c.rss[-1][1] // 1024} MB, "
                     f"fds {fds(c.process.pid)}" for c in clients]
            print(f"[{now - start:5.0f}s] " + " | ".join(parts), flush=True)
    stop.set()
    reloader.join()
    for worker in workers:
        worker.join(timeout=180)
    write_policy(policy, valid[0])
    time.sleep(1.5)
    fds_end = [fds(c.process.pid) for c in clients]
    children = []
    for client in clients:
        pid = client.process.pid
        for entry in os.listdir("/proc"):
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    if entry.isdigit() and int(stat.read().rsplit(")", 1)[1].split()[1]) == pid:
                        children.append((client.name, int(entry)))
            except (OSError, ValueError, IndexError):
                pass
    codes = []
    for client in clients:
        client.request("shutdown", {}, timeout=60)
        client.process.stdin.close()
        try:
            codes.append(client.process.wait(timeout=60))
        except subprocess.TimeoutExpired:
            client.process.kill()
            codes.append("killed")
    time.sleep(0.5)
    leftover = processes_with_token()

    problems = []
    print()
    for index, client in enumerate(clients):
        first = [kb for t, kb in client.rss if t <= 60] or [0]
        level, peak, last = max(first), max(kb for _, kb in client.rss), client.rss[-1][1]
        print(f"{client.name}: {client.batches} batches, {len(client.failures)} failed, "
              f"{len(client.mixed)} mixed, reloads {client.reloads} ok / "
              f"{client.reload_failures} rejected, rss first minute {level // 1024} MB, "
              f"peak {peak // 1024} MB, end {last // 1024} MB, fds {fds_start[index]} -> "
              f"{fds_end[index]}, exit {codes[index]}")
        problems += [f"{client.name}: failed {f}" for f in client.failures[:10]]
        if len(client.failures) > 10:
            problems.append(f"{client.name}: … {len(client.failures) - 10} more failed calls")
        problems += [f"{client.name}: mixed {m}" for m in client.mixed[:10]]
        if peak > 2 * level:
            problems.append(f"{client.name}: rss peak {peak} kB over 2x the first minute ({level} kB)")
        if fds_end[index] > fds_start[index]:
            problems.append(f"{client.name}: descriptors {fds_start[index]} -> {fds_end[index]}")
        if codes[index] != 0:
            problems.append(f"{client.name}: exit code {codes[index]}")
        # A soak whose reloads never happen proves nothing about them.
        if client.reloads == 0 or client.reload_failures == 0:
            problems.append(f"{client.name}: {client.reloads} reloads, {client.reload_failures} "
                            "rejected: the policy changes were not all seen")
    problems += [f"child process {pid} of the {name} server still running" for name, pid in children]
    problems += [f"handler process {pid} still running after shutdown" for pid in leftover]
    shutil.rmtree(root, ignore_errors=True)
    if problems:
        print("\nSOAK FAILED")
        for problem in problems:
            print("  " + problem)
        sys.exit(1)
    print("\nSOAK PASSED: no failed batch, no mixed generation, memory within 2x of the first "
          "minute, no descriptor or process left over")


if __name__ == "__main__":
    main()
