// The editor's side of air's ACP test, on the official ACP client SDK: starts
// `air acp` (the AIR_BIN environment variable names the binary) in the current
// directory, as an editor does, and plays a scenario against it. On stdout, one JSON
// object: what each step answered and every update and request the agent sent.
//
//   node client.mjs drive PROMPT SLOW_PROMPT   new session, PROMPT (permission
//                                              requests allowed), the mode set to
//                                              plan, SLOW_PROMPT cancelled once it
//                                              read a file, list;
//                                              the editor's file system offered, with
//                                              README.md open and changed, unsaved
//                                              and its terminals offered (each run,
//                                              its output and exit status reported)
//   node client.mjs load SESSION_ID            load the session: its history replayed
import * as acp from "@agentclientprotocol/sdk";
import { spawn } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { Readable, Writable } from "node:stream";

const [mode, ...args] = process.argv.slice(2);
const cwd = process.cwd();
const agent = spawn(process.env.AIR_BIN ?? "air", ["acp"], {
  cwd,
  stdio: ["pipe", "pipe", "inherit"],
});

const report = { updates: [], permissions: [], steps: {}, reads: [], writes: [], terminals: [] };
// The terminals the agent asked for, as an editor runs them: the command started,
// its output kept, its exit awaited.
const terminals = new Map();
const terminal = (id) => {
  const t = terminals.get(id);
  if (!t) throw new Error(`no terminal ${id}`);
  return t;
};
// The editor's buffers: README.md is open with a change not saved yet.
const buffers = new Map();
if (mode === "drive") {
  buffers.set(path.join(cwd, "README.md"), "An unsaved greeting tool.\n");
}
// Resolved by the first update the current prompt makes (for the cancel step).
let onUpdate = () => {};

const app = acp
  .client({ name: "air-acp-test" })
  .onNotification(acp.methods.client.session.update, ({ params }) => {
    report.updates.push(params.update);
    onUpdate(params.update);
  })
  .onRequest(acp.methods.client.session.requestPermission, ({ params }) => {
    report.permissions.push(params);
    return { outcome: { outcome: "selected", optionId: "allow" } };
  })
  // As an editor does: a file's text from its buffer when it has one open, else from
  // disk; a write goes into the buffer, which is saved.
  .onRequest(acp.methods.client.fs.readTextFile, ({ params }) => {
    report.reads.push(params.path);
    if (buffers.has(params.path)) return { content: buffers.get(params.path) };
    return { content: fs.readFileSync(params.path, "utf8") };
  })
  .onRequest(acp.methods.client.fs.writeTextFile, ({ params }) => {
    report.writes.push({ path: params.path, content: params.content });
    buffers.set(params.path, params.content);
    fs.writeFileSync(params.path, params.content);
    return {};
  })
  .onRequest(acp.methods.client.terminal.create, ({ params }) => {
    const id = `term-${terminals.size + 1}`;
    const shown = { id, command: params.command, args: params.args ?? [], output: "", exitStatus: null };
    report.terminals.push(shown);
    const child = spawn(params.command, params.args ?? [], {
      cwd: params.cwd ?? cwd,
      stdio: ["ignore", "pipe", "pipe"],
    });
    child.stdout.on("data", (d) => (shown.output += d));
    child.stderr.on("data", (d) => (shown.output += d));
    const done = new Promise((resolve) =>
      child.on("close", (exitCode, signal) => {
        shown.exitStatus = { exitCode, signal };
        resolve(shown.exitStatus);
      }),
    );
    terminals.set(id, { shown, child, done });
    return { terminalId: id };
  })
  .onRequest(acp.methods.client.terminal.output, ({ params }) => {
    const { shown } = terminal(params.terminalId);
    return { output: shown.output, truncated: false, exitStatus: shown.exitStatus };
  })
  .onRequest(acp.methods.client.terminal.waitForExit, async ({ params }) => {
    return await terminal(params.terminalId).done;
  })
  .onRequest(acp.methods.client.terminal.kill, ({ params }) => {
    terminal(params.terminalId).child.kill();
    return {};
  })
  .onRequest(acp.methods.client.terminal.release, ({ params }) => {
    const t = terminal(params.terminalId);
    t.shown.released = true;
    t.child.kill();
    return {};
  });

const stream = acp.ndJsonStream(
  Writable.toWeb(agent.stdin),
  Readable.toWeb(agent.stdout),
);

const step = async (name, work) => {
  try {
    report.steps[name] = { ok: await work() };
  } catch (e) {
    report.steps[name] = { error: { code: e.code, message: e.message, data: e.data } };
  }
};

await app.connectWith(stream, async (ctx) => {
  await step("initialize", () =>
    ctx.request(acp.methods.agent.initialize, {
      protocolVersion: acp.PROTOCOL_VERSION,
      clientCapabilities: {
        fs: { readTextFile: mode === "drive", writeTextFile: mode === "drive" },
        terminal: mode === "drive",
      },
      clientInfo: { name: "air-acp-test", version: "1" },
    }),
  );
  if (mode === "drive") {
    const [prompt, slow] = args;
    await step("new", () =>
      ctx.request(acp.methods.agent.session.new, { cwd, mcpServers: [] }),
    );
    const sessionId = report.steps.new.ok?.sessionId;
    if (!sessionId) return;
    // For a terminal to attach to the session meanwhile.
    if (process.env.ACP_SESSION_FILE) fs.writeFileSync(process.env.ACP_SESSION_FILE, sessionId);
    await step("prompt", () =>
      ctx.request(acp.methods.agent.session.prompt, {
        sessionId,
        prompt: [{ type: "text", text: prompt }],
      }),
    );
    report.steps.updates_after_prompt = { ok: report.updates.length };
    // Until the terminal shows the first exchange: the second prompt then appears
    // there as it is made.
    const go = process.env.ACP_GO_FILE;
    const until = Date.now() + 60_000;
    while (go && !fs.existsSync(go) && Date.now() < until) {
      await new Promise((r) => setTimeout(r, 20));
    }
    // Read-only from here on.
    await step("set_mode", () =>
      ctx.request(acp.methods.agent.session.setMode, { sessionId, modeId: "plan" }),
    );
    // The slow prompt is cancelled once the agent has read a file in it.
    const underWay = new Promise((resolve) => {
      onUpdate = (u) => {
        if (u.sessionUpdate === "tool_call_update" && u.status === "completed") resolve();
      };
    });
    const answered = step("slow_prompt", () =>
      ctx.request(acp.methods.agent.session.prompt, {
        sessionId,
        prompt: [{ type: "text", text: slow }],
      }),
    );
    await underWay;
    onUpdate = () => {};
    await ctx.notify(acp.methods.agent.session.cancel, { sessionId });
    await answered;
    await step("list", () => ctx.request(acp.methods.agent.session.list, { cwd }));
  } else if (mode === "load") {
    await step("load", () =>
      ctx.request(acp.methods.agent.session.load, {
        sessionId: args[0],
        cwd,
        mcpServers: [],
      }),
    );
  }
});

agent.stdin.end();
process.stdout.write(JSON.stringify(report) + "\n");
agent.kill();
