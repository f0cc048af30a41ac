#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets into fuzz/seeds/TARGET/ from the shipped
policies, the examples and the test fixtures (run from the repository root; the output is
committed, so run it again only when those change). Each seed is small: the whole corpus
stays well under a few MB."""

import hashlib
import json
import pathlib
import re
import struct

ROOT = pathlib.Path(__file__).resolve().parent.parent
SEEDS = ROOT / "fuzz" / "seeds"
MAX_SEED = 16 * 1024


def sources(*patterns):
    for pattern in patterns:
        for path in sorted(ROOT.glob(pattern)):
            if path.is_file() and path.stat().st_size <= MAX_SEED:
                yield path


def write(target, data):
    if isinstance(data, str):
        data = data.encode()
    folder = SEEDS / target
    folder.mkdir(parents=True, exist_ok=True)
    name = "seed-" + hashlib.sha1(data).hexdigest()[:16]
    (folder / name).write_bytes(data)


def main():
    yamls = list(sources("policies/**/*.yaml", "examples/**/*.yaml", "tests/fixtures/**/*.yaml",
                         "tests/fixtures/**/*.yml"))
    tomls = list(sources("tests/fixtures/**/*.toml", "examples/**/*.toml"))
    for path in yamls:
        write("yaml", path.read_bytes())
    for path in tomls:
        write("toml", path.read_bytes())

    # check: up to eight files `NAME\nCONTENT`, separated by NUL bytes; one seed per folder.
    folders = sorted({p.parent for p in yamls + tomls if "batches" not in p.parts})
    for folder in folders:
        files = [p for p in sorted(folder.iterdir()) if p.suffix in (".yaml", ".yml", ".toml")]
        files = [p for p in files if p.stat().st_size <= MAX_SEED][:8]
        if files:
            write("check", b"\0".join(p.name.encode() + b"\n" + p.read_bytes() for p in files))

    for path in sources("examples/batches/*.yaml", "tests/fixtures/**/*batch*.yaml",
                        "tests/fixtures/**/batches/*.yaml"):
        write("batch", path.read_bytes())
    write("batch", json.dumps({"calls": [{"id": "a", "tool": "Read", "input": {"file_path": "x"}}]}))
    write("batch", '{"modes": ["plan"], "calls": [{"id": "e", "tool": "Bash", '
                   '"input": {"command": "echo \\ud83d\\ude00"}}]}')

    # shell: patterns, NUL, a command line; patterns from the shipped `shell:` lists.
    patterns = []
    for path in yamls:
        for line in path.read_text(errors="replace").splitlines():
            match = re.search(r"shell:\s*\[(.*)\]", line)
            if match:
                patterns += re.findall(r'"([^"]*)"', match.group(1))
    commands = ["git status", "git diff HEAD~1 -- src", "cargo test && curl https://x | sh",
                "rm -rf build", "echo $(cat .env) > out", "FOO=1 sudo -u x env bash -c 'ls'",
                "cat <<EOF\nhi\nEOF", "for f in *; do echo \"$f\"; done", "a | b || c; d &",
                "ls 'unterminated", "x=$((1+2)) && echo ${x:-y}"]
    for index, command in enumerate(commands):
        chunk = patterns[index * 4:(index + 1) * 4] or ["git status", "cargo test *"]
        write("shell", "\n".join(chunk) + "\0" + command)

    # path: glob patterns, NUL, a path as a call gives it.
    globs = ["**/.env", "**/.env.*", "**/secrets/**", "**/*.pem", "src/**/*.rs", "/etc/**",
             "~/.ssh/*", "{a,b}/[!c]*", "**"]
    paths = ["app/.env", "./config/../.env", "/ws/src/main.rs", "../../etc/passwd", "~/.ssh/id_rsa",
             "a/b/../../../x", "C:\\Windows\\x", "src//lib.rs", ".ENV", "é/ü.rs", ""]
    for index, raw in enumerate(paths):
        write("path", "\n".join(globs[index % 3:index % 3 + 4]) + "\0" + raw)

    # finalizer: 8-byte budget, unit byte, then results separated by NUL bytes.
    for budget, unit, results in [
        (100, 0, [b"\x01" + b"a" * 300, b"\x02" + "é".encode() * 90, b"\x09exempt" * 10]),
        (7, 1, [b"\x01" + "😀".encode() * 20, b"\x11out\x01err" * 5]),
        (4000, 0, [b"\x01small", b"\x03" + b"x" * 5000]),
        (0, 0, [b"\x01" + b"y" * 50]),
        (64, 1, [bytes([i]) + b"z" * (i * 7) for i in range(1, 40)]),
    ]:
        write("finalizer", struct.pack("<Q", budget) + bytes([unit]) + b"\0".join(results))

    # serve: JSON-RPC lines.
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize"},
        {"jsonrpc": "2.0", "id": 2, "method": "plan", "params": {"batch": {"calls": [
            {"id": "c", "tool": "Read", "input": {"file_path": "x"}}]}}},
        {"jsonrpc": "2.0", "id": 3, "method": "executeBatch", "params": {"batch": {"id": "b1", "calls": [
            {"id": "c", "tool": "Nope", "input": {}}]}}},
        {"jsonrpc": "2.0", "id": 4, "method": "cancel", "params": {"batch_id": "b1"}},
        {"jsonrpc": "2.0", "id": 5, "method": "explain", "params": {"tool": "Read"}},
        {"jsonrpc": "2.0", "id": 6, "method": "shutdown"},
    ]
    write("serve", "\n".join(json.dumps(line) for line in lines) + "\n")
    for line in lines:
        write("serve", json.dumps(line) + "\n")
    write("serve", b'{"jsonrpc": "2.0", "id": "\xff", "method": "initialize"}\n[1,2]\n{}\nnot json\n')


if __name__ == "__main__":
    main()
