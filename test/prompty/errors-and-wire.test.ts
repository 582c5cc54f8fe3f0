// Error paths of .prompty files that name the problem, and a prompty running on the model its
// frontmatter names, against a real OpenAI-compatible server on 127.0.0.1.
import assert from "node:assert/strict";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { AgentLoopError } from "../../src/errors.js";
import { ScriptedModel } from "../../src/model/scripted.js";
import { invokeAgent, loadPrompty, parsePrompty, prepare, resolvePromptyModel, startAgent } from "../../src/prompty/index.js";

const fixtures = join(fileURLToPath(new URL(".", import.meta.url)), "fixtures");
const configurationError = (pattern: RegExp) => (error: unknown) =>
  AgentLoopError.isInstance(error) && error.kind === "configuration" && pattern.test(error.message);

describe("malformed prompty files name the problem", () => {
  const cases: Array<[string, string, RegExp]> = [
    ["a frontmatter that is not a mapping", "---\n- a\n- b\n---\nuser:\nhi", /The frontmatter of x\.prompty must be a YAML mapping/],
    ["inputs that are neither a list nor a map", "---\ninputs: 3\n---\nuser:\nhi", /inputs in x\.prompty must be a list or a mapping/],
    ["an input entry that is not a mapping", "---\ninputs:\n  - 3\n---\nuser:\nhi", /inputs\[0\] in x\.prompty must be a mapping with a name/],
    ["an input without a name", "---\ninputs:\n  - kind: string\n---\nuser:\nhi", /every entry of inputs in x\.prompty needs a name/],
    ["a tool without a name", "---\ntools:\n  - kind: function\n---\nuser:\nhi", /every tool in x\.prompty needs a name/],
    [
      "a binding without an input",
      "---\ntools:\n  - name: t\n    kind: function\n    bindings:\n      - name: unit\n---\nuser:\nhi",
      /binding "unit" of tool "t" in x\.prompty needs an input name/,
    ],
    ["a model that is neither a mapping nor a name", "---\nmodel: [1, 2]\n---\nuser:\nhi", /model in x\.prompty must be a mapping or a model name/],
    ["a maxIterations that is not a positive integer", "---\nmaxIterations: 0\n---\nuser:\nhi", /maxIterations in x\.prompty must be a positive integer, got 0/],
  ];
  for (const [what, text, pattern] of cases) {
    it(what, () => assert.throws(() => parsePrompty(text, "x.prompty"), configurationError(pattern)));
  }

  it("a template that does not render names the prompty", () => {
    const agent = parsePrompty("---\nname: broken\n---\nuser:\n{% if %}", "broken.prompty");
    assert.throws(() => prepare(agent), configurationError(/^Cannot render the template of prompty broken \(.*broken\.prompty\): /));
  });

  it("a path that is not a readable file, an empty path and a value that is not a prompty", async () => {
    await assert.rejects(loadPrompty(fixtures), configurationError(/^Cannot read prompty file .*fixtures: /));
    await assert.rejects(loadPrompty(""), /loadPrompty: a file path is required/);
    await assert.rejects(invokeAgent({} as never), /invokeAgent: pass a \.prompty file path or a loaded prompty/);
  });

  it("an mcp tool without a connection names the tool and the file", async () => {
    const agent = parsePrompty("---\nname: m\ntools:\n  - name: search\n    kind: mcp\n---\nuser:\nhi", "m.prompty");
    await assert.rejects(
      startAgent(agent, {}, undefined, { model: new ScriptedModel([]) }),
      configurationError(/mcp tool "search" in m \(.*m\.prompty\) needs connection\.endpoint \(a URL\) or connection\.command/),
    );
  });
});

describe("the model section", () => {
  it("selects the provider from provider and apiType, or an OpenAI-compatible endpoint", async () => {
    const env = { OPENAI_API_KEY: "sk-test" };
    const responses = await resolvePromptyModel(parsePrompty("---\nmodel:\n  id: gpt-5\n  provider: openai\n  apiType: responses\n---\nuser:\nhi"), { env });
    assert.deepEqual([responses.provider, responses.modelId], ["openai-responses", "gpt-5"]);
    const foundry = parsePrompty("---\nmodel:\n  id: phi-4\n  provider: foundry\n  connection:\n    endpoint: http://127.0.0.1:9/v1\n---\nuser:\nhi");
    const compatible = await resolvePromptyModel(foundry, { env });
    assert.deepEqual([compatible.provider, compatible.modelId], ["openai-compatible", "phi-4"]);
  });

  describe("on the wire", () => {
    const bodies: Array<{ body: Record<string, unknown>; authorization?: string; url?: string }> = [];
    let server: Server;
    let endpoint = "";
    before(async () => {
      server = createServer(async (request: IncomingMessage, response) => {
        let text = "";
        for await (const chunk of request) text += chunk;
        bodies.push({ body: JSON.parse(text), authorization: request.headers.authorization, url: request.url });
        response.writeHead(200, { "content-type": "text/event-stream" });
        const chunk = (delta: object, finish: string | null) =>
          `data: ${JSON.stringify({ id: "c1", object: "chat.completion.chunk", created: 1, model: "m", choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
        response.write(chunk({ role: "assistant", content: "Hello, " }, null));
        response.write(chunk({ content: "Ana!" }, null));
        response.write(chunk({}, "stop"));
        response.end("data: [DONE]\n\n");
      });
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
      endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
    });
    after(async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    });

    it("runs on the frontmatter's model: id, endpoint, env API key and options reach the server", async () => {
      const env = { PROMPTY_TEST_MODEL: "gpt-wire", PROMPTY_TEST_ENDPOINT: endpoint, PROMPTY_TEST_KEY: "sk-from-env" };
      const result = await invokeAgent(join(fixtures, "greeting.prompty"), { name: "Ana", place: "Porto" }, undefined, { env });
      assert.equal(result.text, "Hello, Ana!");
      assert.equal(bodies.length, 1);
      const [{ body, authorization, url }] = bodies;
      assert.equal(url, "/v1/chat/completions");
      assert.equal(authorization, "Bearer sk-from-env");
      assert.equal(body.model, "gpt-wire");
      assert.equal(body.temperature, 0.2);
      assert.deepEqual(body.messages, [
        { role: "system", content: "You are a friendly assistant in Porto." },
        { role: "user", content: "Say hello to Ana." },
      ]);
    });
  });
});
