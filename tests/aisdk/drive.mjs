// Drives a chat endpoint with the real AI SDK client (`AbstractChat` + `DefaultChatTransport`
// from the `ai` package), the way an AI SDK app's UI would, and prints what it saw.
//
//   node tests/aisdk/drive.mjs <ai-version> < scenario.json      (ai-version: 6.0.0 | 6.0.326 | 7.0.185)
//
// Scenario (stdin): {api, headers?, body?, chatId?, autoSendApprovals?, stepTimeoutMs?, steps: [...]},
// a step is
//   {"send": "text", "stopAfterMs"?: n}  sendMessage({text}); with stopAfterMs, chat.stop() after n ms;
//                                        with "stopAfterText": s, once the reply's text contains s;
//                                        with "stopRun": true, the stop is POST {runs}/{runId}/stop
//                                        (runId from the reply's metadata) instead of chat.stop(),
//                                        its answer in `stopAnswer`
//   {"submit": true}                     sendMessage() without a message (re-post the conversation)
//   {"regenerate": true}                 regenerate() (the last reply asked for again)
//   {"approve": bool, "reason"?: s}      addToolApprovalResponse for every approval-requested part
//                                        of the last message (with autoSendApprovals, the chat re-posts)
//   {"tamperInput": {...}}               rewrite the input of the approval-requested tool parts in
//                                        chat.messages (what a hostile client could send back)
//   {"resume": true}                     chat.resumeStream() (GET {api}/{chatId}/stream)
//   {"loadThread": url, "adopt"?: bool}  GET url with the scenario's headers, validateUIMessages on
//                                        its `messages`; with adopt, they become chat.messages
//
// Output (stdout): {"steps": [{step, status, error, messages, responses, streamingInputs,
// [validation, thread], [timeout]}]}, where responses are the raw HTTP exchanges since the
// previous step (recorded by a fetch that tees the body: the client sees it unchanged) and
// streamingInputs every {toolCallId, input} a tool part showed in state `input-streaming`
// since then, in order (what an app's UI renders while the model writes the arguments). Every step waits until the chat has
// settled (no request running, automatic re-posts included), at most
// the step's own timeoutMs, else stepTimeoutMs, else $LMCHATKIT_AISDK_STEP_TIMEOUT_MS, else 20000,
// then records "timeout": true and goes on.
// Exit 0 when the scenario ran (judging it is the caller's job); non-zero only when the harness
// broke (bad arguments or scenario, the package failed to import), the reason on stderr.
import { importAi } from './load.mjs';

const STEP_TIMEOUT_MS = Number(process.env.LMCHATKIT_AISDK_STEP_TIMEOUT_MS ?? 20000);

function fail(message) {
  process.stderr.write(`drive.mjs: ${message}\n`);
  process.exit(2);
}

async function readStdin() {
  let text = '';
  for await (const chunk of process.stdin) text += chunk;
  return text;
}

const clone = (v) => (v === undefined ? undefined : JSON.parse(JSON.stringify(v)));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** A fetch that records every exchange; bodies are teed so the caller reads them unchanged. */
function recordingFetch(records, pending) {
  return async (url, init = {}) => {
    const method = init.method ?? 'GET';
    let requestBody = init.body ?? null;
    try {
      requestBody = typeof requestBody === 'string' ? JSON.parse(requestBody) : requestBody;
    } catch {
      // not JSON: keep the text
    }
    const record = { url: String(url), method, requestHeaders: { ...(init.headers ?? {}) }, requestBody };
    let response;
    try {
      response = await fetch(url, init);
    } catch (e) {
      records.push({ ...record, status: null, headers: {}, body: '', error: String(e?.message ?? e) });
      throw e;
    }
    record.status = response.status;
    record.headers = Object.fromEntries(response.headers);
    if (!response.body) {
      records.push({ ...record, body: '' });
      return response;
    }
    const [mine, theirs] = response.body.tee();
    pending.add(
      (async () => {
        const decoder = new TextDecoder();
        let body = '';
        try {
          for await (const chunk of mine) body += decoder.decode(chunk, { stream: true });
          body += decoder.decode();
          records.push({ ...record, body });
        } catch (e) {
          records.push({ ...record, body, error: String(e?.message ?? e) });
        }
      })(),
    );
    return new Response(theirs, {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    });
  };
}

async function main() {
  const version = process.argv[2];
  let ai;
  try {
    ai = await importAi(version);
  } catch (e) {
    fail(e.message);
  }
  const { AbstractChat, DefaultChatTransport, isToolUIPart, validateUIMessages } = ai;
  if (!AbstractChat || !DefaultChatTransport) fail(`ai@${version} exports no AbstractChat/DefaultChatTransport`);

  let scenario;
  try {
    scenario = JSON.parse(await readStdin());
  } catch (e) {
    fail(`the scenario on stdin is not JSON: ${e.message}`);
  }
  if (typeof scenario?.api !== 'string' || !Array.isArray(scenario.steps)) {
    fail('the scenario needs "api" (a URL) and "steps" (an array)');
  }
  const kinds = ['send', 'submit', 'regenerate', 'approve', 'tamperInput', 'resume', 'loadThread'];
  for (const step of scenario.steps) {
    if (typeof step !== 'object' || step === null || !kinds.some((k) => k in step)) {
      fail(`unknown step ${JSON.stringify(step)} (a step has one of ${kinds.join(', ')})`);
    }
  }
  const headers = scenario.headers ?? {};

  /** The chat's state: a plain object, as framework bindings keep it in their own stores. */
  class PlainState {
    constructor() {
      this.status = 'ready';
      this.error = undefined;
      this.messages = [];
      this.streamingInputs = [];
    }
    record = (m) => {
      for (const p of m?.parts ?? []) {
        if (p.state === 'input-streaming') this.streamingInputs.push({ toolCallId: p.toolCallId, input: clone(p.input) ?? null });
      }
    };
    pushMessage = (m) => {
      this.record(m);
      this.messages = this.messages.concat(m);
    };
    popMessage = () => {
      this.messages = this.messages.slice(0, -1);
    };
    replaceMessage = (i, m) => {
      this.record(m);
      this.messages = [...this.messages.slice(0, i), m, ...this.messages.slice(i + 1)];
    };
    snapshot = (thing) => structuredClone(thing);
  }

  /** Counts running requests (automatic re-posts call makeRequest again) to know when it settled. */
  class DriverChat extends AbstractChat {
    running = 0;
    async makeRequest(options) {
      this.running += 1;
      try {
        return await super.makeRequest(options);
      } finally {
        this.running -= 1;
      }
    }
  }

  const records = [];
  const pending = new Set();
  const state = new PlainState();
  const chat = new DriverChat({
    id: scenario.chatId,
    state,
    transport: new DefaultChatTransport({
      api: scenario.api,
      headers,
      body: scenario.body ?? {},
      fetch: recordingFetch(records, pending),
    }),
    sendAutomaticallyWhen: scenario.autoSendApprovals
      ? ai.lastAssistantMessageIsCompleteWithApprovalResponses
      : undefined,
  });

  const settled = async () => {
    while (chat.running > 0 || chat.status === 'submitted' || chat.status === 'streaming') await sleep(5);
    // the recorder finishes reading a body a moment after the client did
    while (pending.size > 0) {
      const all = [...pending];
      await Promise.allSettled(all);
      for (const p of all) pending.delete(p);
    }
  };

  const approvalParts = () =>
    (chat.lastMessage?.parts ?? []).filter((p) => isToolUIPart(p) && p.state === 'approval-requested');

  // Stops the reply's server-side run (the way an app stops a run it can resume).
  const stopRun = async (out) => {
    const runId = chat.lastMessage?.metadata?.runId;
    const url = String(scenario.api).replace(/\/aisdk\/chat$/, `/runs/${runId}/stop`);
    const res = await fetch(url, { method: 'POST', headers });
    out.stopAnswer = { status: res.status, body: await res.json().catch(() => null) };
  };

  async function run(step, out) {
    if ('send' in step) {
      let done = false;
      const sent = chat.sendMessage({ text: String(step.send) }).finally(() => {
        done = true;
      });
      if (step.stopAfterMs != null) {
        await sleep(Number(step.stopAfterMs));
        await chat.stop();
      } else if (step.stopAfterText != null) {
        const seen = () =>
          chat.lastMessage?.role === 'assistant' &&
          chat.lastMessage.parts.some((p) => p.type === 'text' && p.text.includes(step.stopAfterText));
        while (!seen() && !done) await sleep(5);
        if (step.stopRun) await stopRun(out);
        else await chat.stop();
      }
      await sent;
    } else if ('submit' in step) {
      await chat.sendMessage();
    } else if ('regenerate' in step) {
      await chat.regenerate();
    } else if ('approve' in step) {
      const parts = approvalParts();
      out.approvalIds = parts.map((p) => p.approval.id);
      for (const p of parts) {
        await chat.addToolApprovalResponse({ id: p.approval.id, approved: Boolean(step.approve), reason: step.reason });
      }
    } else if ('tamperInput' in step) {
      const last = chat.messages.length - 1;
      out.tampered = approvalParts().map((p) => p.toolCallId);
      chat.messages = chat.messages.map((m, i) =>
        i !== last
          ? m
          : {
              ...m,
              parts: m.parts.map((p) =>
                isToolUIPart(p) && p.state === 'approval-requested' ? { ...p, input: clone(step.tamperInput) } : p,
              ),
            },
      );
    } else if ('resume' in step) {
      await chat.resumeStream();
    } else if ('loadThread' in step) {
      const response = await recordingFetch(records, pending)(String(step.loadThread), { method: 'GET', headers });
      const text = await response.text();
      try {
        out.thread = JSON.parse(text);
      } catch {
        out.thread = text;
      }
      try {
        const messages = await validateUIMessages({ messages: out.thread?.messages });
        out.validation = { ok: true, error: null };
        if (step.adopt) chat.messages = messages;
      } catch (e) {
        out.validation = { ok: false, error: String(e?.message ?? e) };
      }
    }
    await settled();
  }

  const stepTimeoutMs = Number(scenario.stepTimeoutMs ?? STEP_TIMEOUT_MS);
  const steps = [];
  for (const step of scenario.steps) {
    const out = { step };
    let timer;
    const timedOut = new Promise((resolve) => {
      timer = setTimeout(() => resolve('timeout'), Number(step.timeoutMs ?? stepTimeoutMs));
    });
    const result = await Promise.race([
      run(step, out).then(
        () => 'done',
        (e) => {
          out.thrown = String(e?.message ?? e);
          return 'done';
        },
      ),
      timedOut,
    ]);
    clearTimeout(timer);
    if (result === 'timeout') {
      out.timeout = true;
      await chat.stop();
      await Promise.race([settled(), sleep(2000)]);
    }
    out.status = chat.status;
    out.error = chat.error?.message ?? null;
    out.messages = clone(chat.messages);
    out.responses = records.splice(0);
    out.streamingInputs = state.streamingInputs.splice(0);
    steps.push(out);
  }
  process.stdout.write(JSON.stringify({ steps }) + '\n', () => process.exit(0));
}

main().catch((e) => fail(e?.stack ?? String(e)));
