// Issue 12, failure 5: a client sending 60 MB gets the 413, every time, with and without
// `Expect: 100-continue` (the server reads the rest before answering, so no reset eats the answer).
import assert from "node:assert/strict";
import { execFile, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { startTestServer, type TestServer } from "./helpers.js";
import { registeredRoutes } from "./registered-routes.js";

const MB = 1024 * 1024;
const curl = spawnSync("curl", ["--version"]).status === 0;
/** Tries per case: 3 in the suite (curl loading 60 MB takes a while on a busy machine); AGENTLOOP_413_TRIES=10 for the 10 of 10. */
const TRIES = Number(process.env.AGENTLOOP_413_TRIES ?? 3);
const directory = mkdtempSync(join(tmpdir(), "agentloop-413-"));
const bigFile = join(directory, "60mb.json");

/** curl POSTs the 60 MB file; resolves with the status it printed ("000" when the connection was reset). */
function curlStatus(url: string, expect: boolean): Promise<string> {
  const args = ["-s", "-o", "/dev/null", "-w", "%{http_code}", "-H", "content-type: application/json", "-H", expect ? "Expect: 100-continue" : "Expect:", "--data-binary", `@${bigFile}`, url];
  return new Promise((resolve) => execFile("curl", args, (_error, stdout) => resolve(String(stdout).trim())));
}

/** Runs `count` tries, five at a time (curl loads the file first: seconds on a busy machine); the outcomes in order. */
async function tries(count: number, attempt: (index: number) => Promise<string>): Promise<string[]> {
  const outcomes: string[] = [];
  for (let index = 0; index < count; index += 5) {
    outcomes.push(...(await Promise.all(Array.from({ length: Math.min(5, count - index) }, (_, offset) => attempt(index + offset)))));
  }
  return outcomes;
}
const chunk = Buffer.alloc(MB, 0x20);

/** POSTs `megabytes` MB (declared, or chunked) and resolves with the status and body, or rejects with the socket error. */
function sendLarge(url: string, path: string, megabytes: number, options: { chunked?: boolean } = {}): Promise<{ status: number; body: string }> {
  const target = new URL(path, url);
  return new Promise((resolve, reject) => {
    const headers: Record<string, string | number> = { "content-type": "application/json" };
    if (!options.chunked) headers["content-length"] = megabytes * MB;
    const outgoing = request({ host: target.hostname, port: target.port, path: target.pathname, method: "POST", headers, agent: false });
    outgoing.on("response", (response) => {
      let body = "";
      response.setEncoding("utf8");
      response.on("data", (text: string) => (body += text));
      response.on("end", () => resolve({ status: response.statusCode ?? 0, body }));
      response.on("error", reject);
    });
    // A write error after the response arrived does not matter; before it, the 413 was lost.
    outgoing.on("error", reject);
    let sent = 0;
    const write = () => {
      while (sent < megabytes) {
        sent++;
        if (!outgoing.write(chunk)) return void outgoing.once("drain", write);
      }
      outgoing.end();
    };
    write();
  });
}

/**
 * POSTs 8 MB with `Connection: close` (chunked, or with its length declared): 2 MB, then, once the
 * answer is in, the other 6 MB. The status, the body, and the socket errors the client saw.
 */
function closingClientPost(url: string, path: string, declared = false): Promise<{ status: number; body: string; errors: string[] }> {
  const target = new URL(path, url);
  return new Promise((resolve) => {
    const errors: string[] = [];
    const headers: Record<string, string | number> = { "content-type": "application/json", connection: "close" };
    if (declared) headers["content-length"] = 8 * MB;
    const outgoing = request({ host: target.hostname, port: target.port, path: target.pathname, method: "POST", headers, agent: false });
    outgoing.on("error", (error: NodeJS.ErrnoException) => errors.push(error.code ?? error.message));
    outgoing.write(chunk);
    outgoing.write(chunk);
    outgoing.on("response", (response) => {
      let body = "";
      response.setEncoding("utf8");
      response.on("data", (text: string) => (body += text));
      // The answer is in: the client goes on sending its body (6 MB more), then ends it.
      let left = 6;
      const more = () => {
        while (left > 0) {
          left--;
          if (!outgoing.write(chunk)) return void outgoing.once("drain", more);
        }
        outgoing.end();
      };
      more();
      outgoing.on("close", () => resolve({ status: response.statusCode ?? 0, body, errors }));
    });
  });
}

describe("413 for a body over the limit reaches the client", () => {
  let test: TestServer;
  before(async () => {
    test = await startTestServer({ AGENT_NAME: "big", DEBUG_MOCK_RESPONSES: JSON.stringify(["ok"]) });
    writeFileSync(bigFile, Buffer.alloc(60 * MB, 0x20));
  });
  after(async () => {
    await test.close();
    rmSync(directory, { recursive: true, force: true });
  });

  // curl, a client that stops sending and reads the answer as soon as it arrives: the old server
  // closed the connection on the unread body and curl got a reset (000) or only the 100 (Continue).
  for (const expect of [false, true]) {
    it(`60 MB to /v1/chat/completions ${expect ? "with" : "without"} Expect: 100-continue (curl): 413 in ${TRIES} of ${TRIES} tries`, { skip: curl ? false : "curl is not installed" }, async () => {
      const outcomes = await tries(TRIES, () => curlStatus(`${test.url}/v1/chat/completions`, expect));
      assert.deepEqual(outcomes, Array(TRIES).fill("413"));
    });
  }

  it("a chunked body (no Content-Length) over the limit gets the 413 too, and the server keeps serving", async () => {
    for (let attempt = 0; attempt < 3; attempt++) {
      const { status, body } = await sendLarge(test.url, "/v1/chat/completions", 8, { chunked: true });
      assert.equal(status, 413);
      assert.match(body, /larger than 1048576 bytes/);
    }
    const health = await fetch(`${test.url}/health`);
    assert.equal(health.status, 200);
  });

  it("a client that asks to close the connection gets the 413 and sends the rest of its body without a reset", async () => {
    // Node ends a `Connection: close` exchange when its response ends: ended before the body was
    // read, the connection was reset under the client's next writes (EPIPE), often before it had
    // read the 413.
    const { status, errors } = await closingClientPost(test.url, "/v1/chat/completions");
    assert.equal(status, 413);
    assert.deepEqual(errors, [], "the rest of the body was sent without a reset");
    assert.equal((await fetch(`${test.url}/health`)).status, 200);
  });

  // The Hono routes (A2A, runs, approvals): node reads their bodies first, so the same holds there.
  for (const [path, declared] of [
    ["/a2a", false],
    ["/a2a", true],
    ["/v1/runs", false],
    ["/v1/approvals", true],
  ] as const) {
    it(`the same on ${path} (${declared ? "a declared Content-Length" : "chunked"}): 413, no reset`, async () => {
      const { status, body, errors } = await closingClientPost(test.url, path, declared);
      assert.equal(status, 413);
      assert.match(body, /larger than 1048576 bytes/);
      assert.deepEqual(errors, [], "the rest of the body was sent without a reset");
    });
  }

  it("60 MB to the A2A endpoint (the Hono routes, curl): 413 with and without Expect", { skip: curl ? false : "curl is not installed" }, async () => {
    const outcomes = await tries(2, (attempt) => curlStatus(`${test.url}/a2a`, attempt % 2 === 0));
    assert.deepEqual(outcomes, Array(2).fill("413"));
  });
});

// Issue 27, item 6: the limit counts the chunk that arrives, the last one too (a reader that checked
// the size before adding the current chunk let a body over the limit only in its last chunk through).
describe("the body limit counts every chunk of a chunked body, the last one too", () => {
  const LIMIT = 4096;
  /** The last chunk's size: what the body is over by is in it. */
  const LAST = 64;
  let test: TestServer;
  before(async () => {
    test = await startTestServer({ AGENT_NAME: "limit", DEBUG_MOCK_RESPONSES: JSON.stringify(Array(10).fill("ok")) }, { bodyLimitBytes: LIMIT });
  });
  after(() => test.close());

  /** A JSON body of exactly `size` bytes: `json` with spaces before its closing brace. */
  const bodyOf = (json: object, size: number) => {
    const text = JSON.stringify(json);
    return Buffer.from(`${text.slice(0, -1)}${" ".repeat(size - Buffer.byteLength(text))}}`);
  };
  /** A body each route reads to its usual answer (the status at the limit); every other POST route gets `{}`. */
  const KNOWN: Record<string, [object, number]> = {
    "/v1/chat/completions": [{ messages: [{ role: "user", content: "hi" }] }, 200],
    "/v1/approvals": [{ session_id: "nobody", decisions: { call_a: { approve: true } } }, 404],
    "/a2a": [{ jsonrpc: "2.0", id: 1, method: "no/such/method", params: {} }, 200],
    "/a2a/": [{ jsonrpc: "2.0", id: 1, method: "no/such/method", params: {} }, 200],
    "/": [{ jsonrpc: "2.0", id: 1, method: "no/such/method", params: {} }, 200],
    // Durable runs are off here: 404 once the body is read.
    "/v1/runs/recover": [{ executor_id: "replica-0" }, 404],
    "/v1/runs/run_x/cancel": [{}, 404],
    "/v1/runs/run_x/resume": [{}, 404],
    // The UI protocols' routes: a body that is no request of theirs is a 400 once read.
    "/api/chat": [{ id: "s1" }, 400],
    "/ag-ui": [{ threadId: "s1" }, 400],
    // The studio's steering routes: no run is going on in that session.
    "/v1/sessions/s1/steer": [{ message: "hi" }, 404],
    "/v1/sessions/s1/abort": [{}, 404],
  };
  // Every POST route the server registers (read from its source): one reader, or one more, each must count.
  const routes: Array<[string, object, number]> = registeredRoutes()
    .filter((route) => route.startsWith("POST "))
    .map((route) => route.slice(5).replace(":run_id", "run_x").replace(":session_id", "s1"))
    .map((path) => {
      const known = KNOWN[path];
      assert.ok(known, `${path}: add a body for it to KNOWN`);
      return [path, ...known];
    });

  /** POSTs `body` chunked (no Content-Length) in two writes, the second once the first was sent. */
  function postChunked(path: string, body: Buffer): Promise<{ status: number; text: string }> {
    const target = new URL(path, test.url);
    return new Promise((resolve, reject) => {
      const outgoing = request({ host: target.hostname, port: target.port, path: target.pathname, method: "POST", headers: { "content-type": "application/json" }, agent: false });
      outgoing.on("response", (response) => {
        let text = "";
        response.setEncoding("utf8");
        response.on("data", (part: string) => (text += part));
        response.on("end", () => resolve({ status: response.statusCode ?? 0, text }));
      });
      outgoing.on("error", reject);
      outgoing.write(body.subarray(0, body.length - LAST), () => outgoing.end(body.subarray(body.length - LAST)));
    });
  }

  for (const [path, json, fine] of routes) {
    it(`${path} over node:http: a body of ${LIMIT} bytes is read; ${LIMIT + 1} bytes, over only in its last chunk (or declared), get the 413`, async () => {
      const atLimit = await postChunked(path, bodyOf(json, LIMIT));
      assert.equal(atLimit.status, fine, atLimit.text);
      const over = await postChunked(path, bodyOf(json, LIMIT + 1));
      assert.equal(over.status, 413, over.text);
      assert.equal(JSON.parse(over.text).error.code, "request_too_large");
      assert.match(over.text, /larger than 4096 bytes/);
      // With the length declared (checked before the body is read): the same boundary.
      const declared = (body: Buffer) => fetch(`${test.url}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body });
      const declaredAtLimit = await declared(bodyOf(json, LIMIT));
      assert.equal(declaredAtLimit.status, fine, await declaredAtLimit.text());
      const declaredOver = await declared(bodyOf(json, LIMIT + 1));
      assert.equal(declaredOver.status, 413);
      assert.match(await declaredOver.text(), /larger than 4096 bytes/);
    });

    it(`${path} through AgentServer.fetch: a streamed body over the limit only in its last chunk gets the 413 too`, async () => {
      const post = (body: Buffer) => {
        const stream = new ReadableStream<Uint8Array>({
          start(controller) {
            controller.enqueue(body.subarray(0, body.length - LAST));
            controller.enqueue(body.subarray(body.length - LAST));
            controller.close();
          },
        });
        return test.server.fetch(new Request(`http://agent${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: stream, duplex: "half" } as RequestInit));
      };
      const atLimit = await post(bodyOf(json, LIMIT));
      assert.equal(atLimit.status, fine, await atLimit.clone().text());
      await atLimit.body?.cancel();
      const over = await post(bodyOf(json, LIMIT + 1));
      assert.equal(over.status, 413);
      assert.match(await over.text(), /larger than 4096 bytes/);
    });
  }
});
