#!/usr/bin/env node
// A real MCP client over Streamable HTTP for the integration tests: the official TypeScript SDK's
// `Client` + `StreamableHTTPClientTransport`, headers in `requestInit` — how LibreChat connects to a
// `type: streamable-http` server (`Authorization: Bearer …`, `X-User-Id: {{LIBRECHAT_USER_ID}}`).
//
// Usage: node ts_http_client.mjs < spec.json
//
// Spec:
//   {"url": "http://127.0.0.1:8765/mcp", "headers": {"Authorization": "Bearer …"}, "timeout_ms": 60000,
//    "steps": [{"op": "list_tools"}, {"op": "ping"},
//              {"op": "call", "name": "tool", "arguments": {...}, "label": "...", "expect_error": false,
//               "until": {"path": "structuredContent.status", "equals": "healthy"}, "attempts": 60, "interval_ms": 500}]}
//
// Prints ONE JSON document on stdout:
//   {"connected": bool, "session_id": str|null, "server": {name, version, capabilities},
//    "steps": [{op, label, ok, result?, error?, attempts?}], "ok": bool, "error"?: {name, code, message}}
// `error.code` of a refused connection is the HTTP status the server answered (401, 403, ...).
// Exit codes: 0 every step as expected; 3 some step not; 1 connection failure; 2 bad spec.

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const describeError = (err) => ({
  name: err?.constructor?.name ?? typeof err,
  code: err?.code ?? null,
  message: String(err?.message ?? err),
});
const valueAt = (obj, path) => path.split(".").reduce((cur, key) => (cur == null ? undefined : cur[key]), obj);

const OPS = {
  list_tools: (client, step, timeout) => client.listTools(undefined, { timeout }),
  ping: (client, step, timeout) => client.ping({ timeout }),
  call: (client, step, timeout) => client.callTool({ name: step.name, arguments: step.arguments ?? {} }, undefined, { timeout }),
};

async function run(client, step, timeout) {
  const out = { op: step.op, label: step.label ?? step.name ?? step.op };
  const op = OPS[step.op];
  if (op === undefined) return { ...out, ok: false, error: { name: "SpecError", code: null, message: `unknown op ${step.op}` } };
  const attempts = step.until ? Math.max(1, step.attempts ?? 20) : 1;
  for (out.attempts = 1; ; out.attempts++) {
    delete out.error;
    try {
      out.result = await op(client, step, step.timeout_ms ?? timeout);
    } catch (err) {
      out.error = describeError(err);
    }
    const settled = out.error !== undefined || !step.until || valueAt(out.result, step.until.path) === step.until.equals;
    if (settled || out.attempts >= attempts) break;
    await sleep(step.interval_ms ?? 500);
  }
  const threw = out.error !== undefined;
  out.ok = (step.expect_error ? threw : !threw) && (threw || !step.until || valueAt(out.result, step.until.path) === step.until.equals);
  return out;
}

async function main() {
  const chunks = [];
  for await (const chunk of process.stdin) chunks.push(chunk);
  let spec;
  try {
    spec = JSON.parse(Buffer.concat(chunks).toString("utf8"));
    if (!spec?.url) throw new Error("spec.url is required");
  } catch (err) {
    return [2, { connected: false, ok: false, error: describeError(err) }];
  }
  const transport = new StreamableHTTPClientTransport(new URL(spec.url), { requestInit: { headers: spec.headers ?? {} } });
  const client = new Client({ name: "lightrag-mcp-http-tests", version: "1.0.0" }, { capabilities: {} });
  const doc = { connected: false, ok: false, steps: [] };
  try {
    await client.connect(transport, { timeout: spec.connect_timeout_ms ?? 30000 });
  } catch (err) {
    doc.error = describeError(err);
    await client.close().catch(() => {});
    return [1, doc];
  }
  doc.connected = true;
  doc.session_id = transport.sessionId ?? null;
  doc.server = { ...client.getServerVersion(), capabilities: client.getServerCapabilities() };
  for (const step of spec.steps ?? []) doc.steps.push(await run(client, step, spec.timeout_ms ?? 60000));
  doc.ok = doc.steps.every((step) => step.ok);
  await transport.terminateSession().catch(() => {});
  await client.close().catch(() => {});
  return [doc.ok ? 0 : 3, doc];
}

main().then(
  ([code, doc]) => process.stdout.write(JSON.stringify(doc) + "\n", () => process.exit(code)),
  (err) => process.stdout.write(JSON.stringify({ connected: false, ok: false, error: describeError(err) }) + "\n", () => process.exit(1)),
);
