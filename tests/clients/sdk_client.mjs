#!/usr/bin/env node
// A real Agent SDK client (TypeScript @anthropic-ai/claude-agent-sdk), as the
// real-client tests run it. Prints one JSON line per turn: {"turn",
// "session_id", "result", "is_error", "t_start", "t_result", "t_done"}.
//
// usage: node sdk_client.mjs MODE --cli PATH --turns N [--prompt 'message {k}']
//   replay   one query() per turn, the whole conversation replayed as
//            "Human: u1\n\nAssistant: a1\n\nHuman: u2" (a1: the last result)
//   eager    as replay, but turn k+1 starts the instant turn k's result
//            arrives, while turn k's CLI is still running
//   session  one query() with streaming input: one CLI process for every turn;
//            also prints every message it received ({"message": …})
//   interrupt as replay, but the last turn's message is streamed input and the
//            turn is interrupted (query.interrupt()) once its init message came
//   router   as session, but each message is the whole transcript so far, as a
//            router renders it: "[System: be brief]\n\nu1\n\n[Assistant: a1]\n\nu2"
//            (a1: the last result; --edit-replies: each with "." added;
//            --labels human: "Human: u1\n\nAssistant: a1\n\nHuman: u2")
//   --messages: the replaying modes also print every message ({"message": …})
//   tools    as replay, with a permission callback (canUseTool, allows) and a
//            PreToolUse hook; each turn line lists the calls they got ("callbacks")
// The SDK is found in $CLAUDE_AGENT_SDK_DIR (the package directory).
import { parseArgs } from 'node:util';
import { pathToFileURL } from 'node:url';
import path from 'node:path';

const sdk = process.env.CLAUDE_AGENT_SDK_DIR;
if (!sdk) { console.error('set CLAUDE_AGENT_SDK_DIR'); process.exit(2); }
const { query } = await import(pathToFileURL(path.join(sdk, 'sdk.mjs')).href);

const { values: a, positionals } = parseArgs({ allowPositionals: true, options: {
  cli: { type: 'string' }, turns: { type: 'string', default: '3' },
  prompt: { type: 'string', default: 'message {k}' }, messages: { type: 'boolean' },
  'edit-replies': { type: 'boolean' }, labels: { type: 'string' } } });
const mode = positionals[0];
if (!a.cli || !['replay', 'eager', 'session', 'router', 'tools', 'interrupt'].includes(mode)) { console.error('usage: MODE --cli PATH'); process.exit(2); }
const turns = +a.turns;
const now = () => Math.round((performance.timeOrigin + performance.now()) * 10) / 10;
const emit = (o) => process.stdout.write(JSON.stringify(o) + '\n');
const options = { pathToClaudeCodeExecutable: a.cli, cwd: process.cwd() };
// What the permission callback and the hook were asked, in order (tools mode).
const calls = [];
if (mode === 'tools') {
  options.canUseTool = async (name, input) => {
    calls.push({ permission: name, input });
    return { behavior: 'allow', updatedInput: input };
  };
  options.hooks = { PreToolUse: [{ hooks: [async (input) => {
    calls.push({ hook: input.hook_event_name, tool: input.tool_name, input: input.tool_input });
    return {};
  }] }] };
}
const transcript = (users, replies) => users.flatMap((u, i) =>
  i < replies.length ? [`Human: ${u}`, `Assistant: ${replies[i]}`] : [`Human: ${u}`]).join('\n\n');
const turnLine = (k, r, tStart, tResult) => ({ turn: k, session_id: r.session_id, result: r.result ?? '',
  is_error: r.is_error, subtype: r.subtype, t_start: tStart, t_result: tResult, t_done: now(),
  ...(calls.length ? { callbacks: calls.splice(0) } : {}) });

async function replay() {
  const users = [], replies = [], tasks = [];
  for (let k = 1; k <= turns; k++) {
    users.push(a.prompt.replaceAll('{k}', String(k)));
    const prompt = transcript(users, replies);
    const tStart = now();
    let result = null, tResult = 0;
    if (mode === 'interrupt' && k === turns) {
      // Streamed input keeps stdin open, so the interrupt can be sent.
      let done;
      const end = new Promise((r) => { done = r; });
      async function* input() {
        yield { type: 'user', session_id: '', parent_tool_use_id: null,
          message: { role: 'user', content: prompt } };
        await end;
      }
      const q = query({ prompt: input(), options });
      let asked = false;
      try {
        for await (const m of q) {
          if (a.messages) emit({ message: m });
          if (m.type === 'system' && m.subtype === 'init' && !asked) { asked = true; await q.interrupt(); }
          if (m.type === 'result') { result = m; tResult = now(); done(); }
        }
      } catch (e) {
        // The SDK throws after an error result: the result is what counts.
        if (!result) throw e;
      }
    } else if (mode === 'replay' || mode === 'tools' || mode === 'interrupt') {
      for await (const m of query({ prompt, options })) {
        if (a.messages) emit({ message: m });
        if (m.type === 'result') { result = m; tResult = now(); }
      }
    } else {
      let resolve;
      const got = new Promise((r) => { resolve = r; });
      tasks.push((async () => {
        for await (const m of query({ prompt, options })) {
          if (m.type === 'result') resolve([m, now()]);
        }
        resolve([null, now()]);
      })());
      [result, tResult] = await got;
    }
    if (!result) { emit({ turn: k, error: 'no result' }); return 1; }
    replies.push(result.result ?? '');
    emit(turnLine(k, result, tStart, tResult));
  }
  await Promise.all(tasks);
  return 0;
}

async function session() {
  // Each next message is given only after the previous turn's result; a
  // router's is the transcript so far.
  let next;
  const results = [];
  const human = a.labels === 'human';
  const parts = mode === 'router' && !human ? ['[System: be brief]'] : [];
  const message = (k) => {
    const text = a.prompt.replaceAll('{k}', String(k));
    if (mode !== 'router') return text;
    parts.push((human ? 'Human: ' : '') + text);
    return parts.join('\n\n');
  };
  async function* input() {
    for (let k = 1; k <= turns; k++) {
      yield { type: 'user', session_id: '', parent_tool_use_id: null,
        message: { role: 'user', content: message(k) } };
      await new Promise((r) => { next = r; });
    }
  }
  let k = 1, tStart = now();
  for await (const m of query({ prompt: input(), options })) {
    emit({ message: m });
    if (m.type === 'result') {
      const reply = (m.result ?? '') + (a['edit-replies'] ? '.' : '');
      parts.push(human ? `Assistant: ${reply}` : `[Assistant: ${reply}]`);
      emit(turnLine(k, m, tStart, now()));
      results.push(m);
      k += 1; tStart = now();
      next();
    }
  }
  return results.length === turns ? 0 : 1;
}

process.exit(mode === 'session' || mode === 'router' ? await session() : await replay());
