#!/usr/bin/env node
// A real MCP client for the integration tests: the official TypeScript SDK's `Client` +
// `StdioClientTransport`, the stack LibreChat and VS Code are built on.
//
// Usage: node ts_client.mjs '<json spec>'   or   node ts_client.mjs < spec.json
//
// Spec:
//   {
//     "server": {"command": "/abs/python", "args": ["-m", "mcp_front"],
//                "env": {...}, "cwd": "/some/dir"},
//     "timeout_ms": 60000,              // default per-request timeout
//     "roots": ["file:///abs/dir"],     // offer MCP roots (like VS Code's workspace folders)
//     "steps": [
//       {"op": "list_tools"},
//       {"op": "ping"},
//       {"op": "sleep", "ms": 200},
//       {"op": "call", "name": "tool", "arguments": {...},
//        "progress": true,              // pass onprogress: the SDK sends a progress token (like VS Code)
//        "expect_error": false,         // true: the call is expected to throw (JSON-RPC error)
//        "until": {"path": "structuredContent.status", "equals": "healthy"},
//        "attempts": 20, "interval_ms": 500,   // with `until`: poll, bounded
//        "timeout_ms": 60000, "label": "..."},
//       {"op": "call_each", "arguments": {...}},  // call every tool of the last list_tools
//       {"op": "list_resources", "cursor": "..."},      // one page; `all: true` follows nextCursor
//       {"op": "list_resource_templates"},
//       {"op": "read_resource", "uri": "lightrag://documents/doc-…", "expect_error": false},
//       {"op": "wait_list_changed", "timeout_ms": 60000}  // until a resources/list_changed arrives
//     ]                                                   // that no earlier wait consumed
//   }
//
// Prints ONE JSON document on stdout:
//   {"connected": true, "server": {name, version, capabilities, instructions},
//    "steps": [{op, label, ok, elapsed_ms, result?, error?, progress?, attempts?, calls?}], "ok": bool}
// A `call` step is ok when it did (or, with expect_error, did not) return a result — an isError
// result counts as returned — and met `until`; `call_each` records {name, result?, error?} per
// tool in `calls` and is ok when none threw.
// `error` is {name, code, message, data} of whatever the SDK threw.
// The server's stderr is forwarded to our stderr.
//
// Exit codes: 0 every step went as expected; 3 some step did not (details in the JSON);
// 1 connection failure; 2 bad spec.

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import {
  ListRootsRequestSchema,
  ResourceListChangedNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";

async function readSpec() {
  if (process.argv[2] !== undefined) return JSON.parse(process.argv[2]);
  // Read stdin as a stream: readFileSync(0) fails with EAGAIN on a pipe that is still
  // being written (a spec carrying a multi-MB base64 upload).
  const chunks = [];
  for await (const chunk of process.stdin) chunks.push(chunk);
  return JSON.parse(Buffer.concat(chunks).toString("utf8"));
}

function describeError(err) {
  if (err === null || err === undefined) return null;
  return {
    name: err?.constructor?.name ?? typeof err,
    code: err?.code ?? null,
    message: String(err?.message ?? err),
    data: err?.data ?? null,
  };
}

function getPath(obj, path) {
  let cur = obj;
  for (const part of path.split(".")) {
    if (cur === null || cur === undefined) return undefined;
    cur = cur[part];
  }
  return cur;
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function runCall(client, step, defaultTimeout) {
  const progress = [];
  const options = { timeout: step.timeout_ms ?? defaultTimeout };
  if (step.progress) {
    options.onprogress = (p) => progress.push(p);
  }
  const record = { progress };
  try {
    record.result = await client.callTool(
      { name: step.name, arguments: step.arguments ?? {} },
      undefined,
      options,
    );
  } catch (err) {
    record.error = describeError(err);
  }
  return record;
}

let lastTools = [];
// notifications/resources/list_changed received, and how many `wait_list_changed` consumed.
const listChanged = { received: 0, consumed: 0 };

async function runStep(client, step, defaultTimeout) {
  const started = Date.now();
  const out = { op: step.op, label: step.label ?? step.name ?? step.op };
  try {
    switch (step.op) {
      case "list_tools":
        out.result = await client.listTools(undefined, { timeout: step.timeout_ms ?? defaultTimeout });
        lastTools = out.result.tools.map((tool) => tool.name);
        out.ok = true;
        break;
      case "ping":
        out.result = await client.ping({ timeout: step.timeout_ms ?? defaultTimeout });
        out.ok = true;
        break;
      case "sleep":
        await sleep(step.ms ?? 0);
        out.ok = true;
        break;
      case "call": {
        const attempts = step.until ? Math.max(1, step.attempts ?? 20) : 1;
        let record;
        let n = 0;
        for (n = 1; n <= attempts; n++) {
          record = await runCall(client, step, defaultTimeout);
          if (!step.until || record.error) break;
          if (getPath(record.result, step.until.path) === step.until.equals) break;
          if (n < attempts) await sleep(step.interval_ms ?? 500);
        }
        Object.assign(out, record);
        out.attempts = Math.min(n, attempts);
        const threw = record.error !== undefined;
        let ok = step.expect_error ? threw : !threw;
        if (ok && step.until && !threw) {
          ok = getPath(record.result, step.until.path) === step.until.equals;
        }
        out.ok = ok;
        break;
      }
      case "list_resources": {
        const options = { timeout: step.timeout_ms ?? defaultTimeout };
        const pages = [];
        let cursor = step.cursor;
        do {
          const page = await client.listResources(cursor === undefined ? undefined : { cursor }, options);
          pages.push(page);
          cursor = page.nextCursor;
        } while (step.all && cursor !== undefined);
        out.result = { ...pages[pages.length - 1], resources: pages.flatMap((page) => page.resources) };
        out.pages = pages.length;
        out.ok = true;
        break;
      }
      case "list_resource_templates":
        out.result = await client.listResourceTemplates(undefined, { timeout: step.timeout_ms ?? defaultTimeout });
        out.ok = true;
        break;
      case "read_resource":
        try {
          out.result = await client.readResource({ uri: step.uri }, { timeout: step.timeout_ms ?? defaultTimeout });
        } catch (err) {
          out.error = describeError(err);
        }
        out.ok = step.expect_error ? out.error !== undefined : out.error === undefined;
        break;
      case "wait_list_changed": {
        const deadline = Date.now() + (step.timeout_ms ?? defaultTimeout);
        while (listChanged.received <= listChanged.consumed && Date.now() < deadline) await sleep(50);
        out.ok = listChanged.received > listChanged.consumed;
        listChanged.consumed = listChanged.received;
        out.received = listChanged.received;
        break;
      }
      case "call_each": {
        out.calls = [];
        for (const name of lastTools) {
          const record = await runCall(client, { ...step, name }, defaultTimeout);
          out.calls.push({ name, ...record });
        }
        out.ok = out.calls.length > 0 && out.calls.every((c) => c.error === undefined);
        break;
      }
      default:
        out.ok = false;
        out.error = { name: "SpecError", code: null, message: `unknown op ${step.op}`, data: null };
    }
  } catch (err) {
    out.ok = false;
    out.error = describeError(err);
  }
  out.elapsed_ms = Date.now() - started;
  return out;
}

async function main() {
  let spec;
  try {
    spec = await readSpec();
    if (!spec?.server?.command) throw new Error("spec.server.command is required");
  } catch (err) {
    process.stdout.write(JSON.stringify({ connected: false, ok: false, error: describeError(err) }) + "\n");
    return 2;
  }
  const defaultTimeout = spec.timeout_ms ?? 60000;
  const transport = new StdioClientTransport({
    command: spec.server.command,
    args: spec.server.args ?? [],
    env: spec.server.env,
    cwd: spec.server.cwd,
    stderr: "pipe",
  });
  // Forward the server's stderr (a pipe we own: a lingering grandchild cannot hold our caller's pipe).
  transport.stderr?.on("data", (chunk) => process.stderr.write(chunk));
  const capabilities = spec.roots ? { roots: { listChanged: false } } : {};
  const client = new Client({ name: "lightrag-mcp-tests", version: "1.0.0" }, { capabilities });
  client.setNotificationHandler(ResourceListChangedNotificationSchema, async () => {
    listChanged.received += 1;
  });
  if (spec.roots) {
    client.setRequestHandler(ListRootsRequestSchema, async () => ({
      roots: spec.roots.map((uri) => ({ uri, name: uri.split("/").pop() })),
    }));
  }

  const doc = { connected: false, ok: false, steps: [] };
  try {
    await client.connect(transport, { timeout: spec.connect_timeout_ms ?? 30000 });
  } catch (err) {
    doc.error = describeError(err);
    process.stdout.write(JSON.stringify(doc) + "\n");
    await client.close().catch(() => {});
    return 1;
  }
  doc.connected = true;
  doc.server = {
    ...client.getServerVersion(),
    capabilities: client.getServerCapabilities(),
    instructions: client.getInstructions(),
  };
  for (const step of spec.steps ?? []) {
    doc.steps.push(await runStep(client, step, defaultTimeout));
  }
  doc.ok = doc.steps.every((s) => s.ok);
  await client.close().catch((err) => {
    doc.close_error = describeError(err);
  });
  process.stdout.write(JSON.stringify(doc) + "\n");
  return doc.ok ? 0 : 3;
}

// Exit only once stdout is flushed: a pipe takes ~64 KB at a time and process.exit() would cut the document.
const exitAfterFlush = (code) => process.stdout.write("", () => process.exit(code));

main().then(
  (code) => exitAfterFlush(code),
  (err) => {
    process.stdout.write(JSON.stringify({ connected: false, ok: false, error: describeError(err) }) + "\n");
    exitAfterFlush(1);
  },
);
