#!/usr/bin/env python3
"""Drive `toolgate serve --stdio` from another language (Python 3, standard library only).

Starts the server, initializes, runs one batch whose calls need approval, answers each
`permission/request` (showing the round trip), prints the events as they stream, and shuts
down. From the repository root:

    python3 examples/client.py -- cargo run -q -- -p examples/policies serve --stdio
    python3 examples/client.py -- target/debug/toolgate -p examples/policies serve --stdio

Without a command after `--`, the first of the two is used.

The protocol: one JSON-RPC 2.0 object per line in each direction. Requests from the client
get a response with the same id; the server sends `event` notifications for every engine
event, and `permission/request` requests that the client answers with
`{"decision": "allow"|"deny", "reason"?: ..., "feedback"?: ...}`.
"""

import json
import queue
import subprocess
import sys
import threading

DEFAULT_COMMAND = ["cargo", "run", "-q", "--", "-p", "examples/policies", "serve", "--stdio"]
TIMEOUT = 120  # seconds to wait for any one message (the first `cargo run` may build)


class Server:
    """A toolgate server process and the messages it sends."""

    def __init__(self, command):
        self.process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            bufsize=1,
        )
        self.messages = queue.Queue()
        self.next_id = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.process.stdout:
            if line.strip():
                self.messages.put(json.loads(line))
        self.messages.put(None)  # end of output

    def send(self, message):
        self.process.stdin.write(json.dumps(message) + "\n")
        self.process.stdin.flush()

    def request(self, method, params, approve=None):
        """Sends a request; handles notifications and permission requests until its
        response arrives; returns the result (raises on an error response)."""
        self.next_id += 1
        request_id = self.next_id
        self.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        show("→", method, params)
        while True:
            message = self.messages.get(timeout=TIMEOUT)
            if message is None:
                raise RuntimeError("the server stopped")
            if message.get("method") == "event":
                print_event(message["params"])
            elif message.get("method") == "permission/request":
                self.answer_permission(message, approve)
            elif message.get("id") == request_id:
                if "error" in message:
                    raise RuntimeError(f"{method} failed: {message['error']}")
                show("←", method, message["result"])
                return message["result"]

    def answer_permission(self, request, approve):
        params = request["params"]
        show("← permission/request", request["id"], {
            "tool": params["tool"], "input": params["input"], "reasons": params["reasons"]})
        answer = approve(params) if approve else {"decision": "deny", "reason": "no approver"}
        self.send({"jsonrpc": "2.0", "id": request["id"], "result": answer})
        show("→ response", request["id"], answer)

    def close(self):
        self.request("shutdown", {})
        self.process.stdin.close()
        return self.process.wait(timeout=TIMEOUT)


def show(arrow, what, payload):
    text = json.dumps(payload, ensure_ascii=False)
    if len(text) > 300:
        text = text[:300] + " …"
    print(f"{arrow} {what} {text}", flush=True)


def print_event(event):
    call = f" {event['call_id']}" if "call_id" in event else ""
    print(f"   event {event['type']}{call} (generation {event['generation']})", flush=True)


def approve(request):
    """The human in the loop, automated for the example: `touch` may run, anything else is
    refused with feedback the model will read."""
    command = request["input"].get("command", "")
    if command.startswith("touch "):
        return {"decision": "allow", "reason": "harmless"}
    return {"decision": "deny", "feedback": f"do not run `{command}`; ask the user first"}


def main():
    command = sys.argv[sys.argv.index("--") + 1:] if "--" in sys.argv else DEFAULT_COMMAND
    server = Server(command)
    info = server.request("initialize", {})
    print(f"toolgate {info['version']}, generation {info['generation']}, "
          f"{len(info['tools'])} tools", flush=True)

    batch = {
        "id": "client-demo",
        "calls": [
            {"id": "read", "tool": "Read", "input": {"file_path": "Cargo.toml"}},
            {"id": "ask-touch", "tool": "Bash", "input": {"command": "touch target/toolgate-demo.stamp"}},
            {"id": "ask-rm", "tool": "Bash", "input": {"command": "rm -rf target/toolgate-demo"}},
        ],
    }
    outcome = server.request("executeBatch", {"batch": batch}, approve=approve)
    print(f"batch {outcome['batch_id']} ran on generation {outcome['generation']}:")
    for result in outcome["results"]:
        first_line = result["model_content"].splitlines()[0] if result["model_content"] else ""
        print(f"  {result['call_id']:<10} {result['status']:<9} {first_line}")
    if outcome.get("feedback"):
        print(f"  feedback for the model: {outcome['feedback']}")

    code = server.close()
    print(f"server exited with {code}")
    return code


if __name__ == "__main__":
    sys.exit(main())
