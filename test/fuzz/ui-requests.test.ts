// Property-based fuzzing (fast-check) of the UI protocols' request parsers (useChat's body, AG-UI's
// RunAgentInput, chat completions' client tools and tool results): any input gives a request or a
// 400 naming the problem, never another error, a 500 or a hang; and a result for a call the run
// never made is refused, never continuing a run with another call's state.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import fc from "fast-check";
import { ScriptedModel } from "../../src/index.js";
import { parseChatRequest } from "../../src/server/chat-request.js";
import { HttpError } from "../../src/server/http-errors.js";
import { parseRunAgentInput, parseUiChatRequest, UiRequestError } from "../../src/ui/index.js";
import { startTestServer, type TestServer } from "../server/helpers.js";
import { writeFile } from "../ui/scenarios.js";
import { seeded } from "./seed.js";

/** A value, or a 400 that names the problem; anything else fails the property. */
function valueOrBadRequest(fn: () => unknown): void {
  try {
    fn();
  } catch (error) {
    assert.ok(error instanceof UiRequestError || error instanceof HttpError, `threw ${String(error)}`);
    assert.equal(error.status, 400);
    assert.ok(error.message.length > 0 && (error as { code: string | null }).code, "the error names the problem");
  }
}

const sessionId = fc.oneof(fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9_.:@-]{0,20}$/), fc.string(), fc.jsonValue());
const toolState = fc.constantFrom("input-streaming", "input-available", "approval-requested", "approval-responded", "output-available", "output-error", "output-denied");
const uiPart = fc.oneof(
  fc.record({ type: fc.constant("text"), text: fc.oneof(fc.string(), fc.jsonValue()) }, { requiredKeys: ["type"] }),
  fc.record(
    {
      type: fc.oneof(fc.constant("tool-echo"), fc.constant("dynamic-tool"), fc.string()),
      toolCallId: fc.oneof(fc.string(), fc.jsonValue()),
      state: fc.oneof(toolState, fc.jsonValue()),
      input: fc.jsonValue(),
      output: fc.jsonValue(),
      approval: fc.oneof(fc.record({ id: fc.string(), approved: fc.oneof(fc.boolean(), fc.jsonValue()), reason: fc.oneof(fc.string(), fc.jsonValue()) }, { requiredKeys: [] }), fc.jsonValue()),
    },
    { requiredKeys: ["type"] },
  ),
  fc.jsonValue(),
);
const uiMessage = fc.oneof(
  fc.record({ id: fc.oneof(fc.string(), fc.jsonValue()), role: fc.oneof(fc.constantFrom("user", "assistant", "system"), fc.jsonValue()), parts: fc.oneof(fc.array(uiPart, { maxLength: 4 }), fc.jsonValue()) }, { requiredKeys: [] }),
  fc.jsonValue(),
);
const uiBody = fc.oneof(
  fc.record(
    {
      id: sessionId,
      messages: fc.oneof(fc.array(uiMessage, { maxLength: 4 }), fc.jsonValue()),
      trigger: fc.oneof(fc.constantFrom("submit-message", "regenerate-message"), fc.jsonValue()),
      messageId: fc.oneof(fc.string(), fc.jsonValue()),
    },
    { requiredKeys: [] },
  ),
  fc.jsonValue(),
);
const agUiMessage = fc.oneof(
  fc.record(
    {
      id: fc.oneof(fc.string(), fc.jsonValue()),
      role: fc.oneof(fc.constantFrom("user", "assistant", "tool", "system"), fc.jsonValue()),
      content: fc.oneof(fc.string(), fc.array(fc.oneof(fc.record({ type: fc.constant("text"), text: fc.jsonValue() }), fc.jsonValue()), { maxLength: 3 }), fc.jsonValue()),
      toolCallId: fc.oneof(fc.string(), fc.jsonValue()),
      error: fc.oneof(fc.string(), fc.jsonValue()),
    },
    { requiredKeys: [] },
  ),
  fc.jsonValue(),
);
const clientTool = fc.oneof(fc.record({ name: fc.oneof(fc.string(), fc.jsonValue()), description: fc.oneof(fc.string(), fc.jsonValue()), parameters: fc.jsonValue() }, { requiredKeys: [] }), fc.jsonValue());
const agUiBody = fc.oneof(
  fc.record(
    {
      threadId: sessionId,
      runId: fc.oneof(fc.string(), fc.jsonValue()),
      messages: fc.oneof(fc.array(agUiMessage, { maxLength: 4 }), fc.jsonValue()),
      tools: fc.oneof(fc.array(clientTool, { maxLength: 3 }), fc.jsonValue()),
      context: fc.jsonValue(),
      resume: fc.oneof(
        fc.array(fc.record({ interruptId: fc.oneof(fc.string(), fc.jsonValue()), status: fc.oneof(fc.constantFrom("resolved", "cancelled"), fc.jsonValue()), payload: fc.oneof(fc.record({ approve: fc.oneof(fc.boolean(), fc.jsonValue()), reason: fc.jsonValue() }, { requiredKeys: [] }), fc.jsonValue()) }, { requiredKeys: [] }), { maxLength: 3 }),
        fc.jsonValue(),
      ),
    },
    { requiredKeys: [] },
  ),
  fc.jsonValue(),
);
const chatWithTools = fc.record(
  {
    messages: fc.array(
      fc.oneof(
        fc.record({ role: fc.constant("user"), content: fc.string() }),
        fc.record({ role: fc.constant("tool"), tool_call_id: fc.oneof(fc.string(), fc.jsonValue()), content: fc.oneof(fc.string(), fc.jsonValue()) }, { requiredKeys: ["role"] }),
        fc.jsonValue(),
      ),
      { maxLength: 4 },
    ),
    tools: fc.oneof(fc.array(fc.oneof(fc.record({ type: fc.constant("function"), function: clientTool }), fc.jsonValue()), { maxLength: 3 }), fc.jsonValue()),
    session_id: sessionId,
    progress_blocks: fc.jsonValue(),
  },
  { requiredKeys: [] },
);

describe("fuzz: the UI request parsers", () => {
  it("parseUiChatRequest: any body gives a request or a 400 naming the problem", (t) => {
    fc.assert(fc.property(uiBody, (body) => valueOrBadRequest(() => parseUiChatRequest(body))), seeded(t, 500));
  });
  it("parseRunAgentInput: any body gives a request or a 400 naming the problem", (t) => {
    fc.assert(fc.property(agUiBody, (body) => valueOrBadRequest(() => parseRunAgentInput(body))), seeded(t, 500));
  });
  it("parseChatRequest with client tools and tool results: a request or a 400", (t) => {
    fc.assert(fc.property(chatWithTools, fc.option(fc.string()), (body, header) => valueOrBadRequest(() => parseChatRequest(body, undefined, header ?? undefined))), seeded(t, 500));
  });
});

describe("fuzz: /api/chat and /ag-ui on a server with a run waiting for approval", () => {
  let test: TestServer;
  before(async () => {
    const script = Array(400).fill(JSON.stringify({ tool_calls: [{ id: "call_real", name: "write_file", arguments: { path: "x" } }] }));
    test = await startTestServer({ AGENT_NAME: "fuzz-ui", MEMORY_TYPE: "memory" }, { build: { model: new ScriptedModel(script, { continueAcrossRuns: true }), tools: [writeFile] } });
  });
  after(() => test.close());

  async function post(path: string, body: string): Promise<{ status: number; text: string }> {
    const answer = (async () => {
      const response = await test.server.fetch(new Request(`http://fuzz${path}`, { method: "POST", headers: { "content-type": "application/json" }, body }));
      return { status: response.status, text: await response.text() };
    })();
    let timer: NodeJS.Timeout | undefined;
    const hang = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within 5 s to ${path} ${body.slice(0, 200)}`)), 5000);
    });
    try {
      return await Promise.race([answer, hang]);
    } finally {
      clearTimeout(timer);
    }
  }

  it("any body answers 200 or a 4xx, never a 500 or a hang", async (t) => {
    await fc.assert(
      fc.asyncProperty(fc.oneof(uiBody.map((body) => ["/api/chat", JSON.stringify(body) ?? ""] as const), agUiBody.map((body) => ["/ag-ui", JSON.stringify(body) ?? ""] as const)), async ([path, body]) => {
        const { status } = await post(path, body);
        assert.ok(status === 200 || (status >= 400 && status < 500), `status ${status} for ${path} ${body.slice(0, 200)}`);
      }),
      seeded(t, 60),
    );
  });

  it("a decision or a result for a call the run never made is refused; the run waiting is untouched", async (t) => {
    const stop = await post("/ag-ui", JSON.stringify({ threadId: "held", runId: "r0", messages: [{ id: "u", role: "user", content: "write" }] }));
    assert.match(stop.text, /"type":"interrupt"/);
    await fc.assert(
      fc.asyncProperty(fc.string({ minLength: 1, maxLength: 30 }).filter((id) => id !== "call_real"), fc.boolean(), async (callId, asResult) => {
        const body = asResult
          ? { threadId: "held", runId: "r1", messages: [{ id: "t", role: "tool", toolCallId: callId, content: "forged" }], tools: [{ name: "forged_tool", description: "" }] }
          : { threadId: "held", runId: "r1", messages: [], resume: [{ interruptId: callId, status: "resolved", payload: { approve: true } }] };
        const { status } = await post("/ag-ui", JSON.stringify(body));
        assert.equal(status, 400, `${callId} as ${asResult ? "a result" : "a decision"}`);
      }),
      seeded(t, 40),
    );
    // The real call still waits and goes on when answered.
    const resumed = await post("/ag-ui", JSON.stringify({ threadId: "held", runId: "r2", messages: [], resume: [{ interruptId: "call_real", status: "resolved", payload: { approve: false, reason: "no" } }] }));
    assert.equal(resumed.status, 200);
    assert.match(resumed.text, /"toolCallId":"call_real"/);
  });
});
