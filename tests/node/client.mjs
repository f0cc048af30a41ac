// The official TypeScript SDK client against `toolgate mcp serve`, driven by the Rust test
// `mcp::serve::node`. Usage:
//   node client.mjs POLICY_FILE --stdio TOOLGATE ARG...   (spawns the server)
//   node client.mjs POLICY_FILE --http URL                 (connects to a running one)
// It runs initialize, tools/list, tools/call (allow, deny, ask answered through elicitation,
// ask without elicitation, timeout), then rewrites POLICY_FILE to add a tool and waits for
// `notifications/tools/list_changed`. Each step is printed as one JSON line on stdout.
import { readFileSync, writeFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  ElicitRequestSchema,
  ToolListChangedNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";

const [policyFile, mode, ...rest] = process.argv.slice(2);

function transport() {
  if (mode === "--stdio") {
    const [command, ...args] = rest;
    return new StdioClientTransport({ command, args, stderr: "inherit" });
  }
  return new StreamableHTTPClientTransport(new URL(rest[0]));
}

function report(step, value) {
  process.stdout.write(JSON.stringify({ step, ...value }) + "\n");
}

function text(result) {
  return result.content.filter((c) => c.type === "text").map((c) => c.text).join("\n");
}

async function call(client, step, name, args) {
  const result = await client.callTool({ name, arguments: args });
  report(step, { isError: result.isError === true, text: text(result) });
}

async function connect(elicitation) {
  const capabilities = elicitation ? { elicitation: { form: {} } } : {};
  const client = new Client({ name: "toolgate-node-test", version: "0" }, { capabilities });
  const elicited = [];
  if (elicitation) {
    client.setRequestHandler(ElicitRequestSchema, async (request) => {
      elicited.push(request.params.message);
      return { action: "accept", content: {} };
    });
  }
  let announce;
  const changed = new Promise((resolve) => (announce = resolve));
  client.setNotificationHandler(ToolListChangedNotificationSchema, async () => announce());
  await client.connect(transport());
  return { client, elicited, changed };
}

const timer = setTimeout(() => {
  report("timeout", { isError: true, text: "the client gave up after 60 s" });
  process.exit(3);
}, 60_000);

const { client, elicited, changed } = await connect(true);
report("initialize", {
  server: client.getServerVersion(),
  capabilities: client.getServerCapabilities(),
});
const listed = await client.listTools();
report("list", { tools: listed.tools.map((t) => t.name) });
await call(client, "allow", "Echo", { text: "from node" });
await call(client, "deny", "Deploy", { target: "prod" });
await call(client, "ask", "Deploy", { target: "staging" });
report("elicited", { messages: elicited });
await call(client, "timeout", "Slow", {});

// A second client that cannot answer asks.
const plain = await connect(false);
await call(plain.client, "ask-without-elicitation", "Deploy", { target: "staging" });
await plain.client.close();

const policy = readFileSync(policyFile, "utf8");
writeFileSync(
  policyFile,
  policy.replace(
    "rules:\n",
    "  FromNode:\n    description: Added while serving.\n    permission: { default: allow }\n    handler: { kind: command, argv: [printf, added] }\nrules:\n",
  ),
);
await changed;
const relisted = await client.listTools();
report("reloaded", { tools: relisted.tools.map((t) => t.name) });
await call(client, "added", "FromNode", {});
await client.close();
clearTimeout(timer);
