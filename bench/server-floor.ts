// Scenario 5's floor, run as a child process: a bare node:http server that parses the body and
// streams the scripted answer as Chat Completions chunks, paced like the scripted model. Nothing else.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { SERVER_ANSWER, announce, chunkDelayMs, words } from "./server-answer.js";

const pieces = words(SERVER_ANSWER);
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

const server = createServer((request, response) => {
  const chunks: Buffer[] = [];
  request.on("data", (chunk: Buffer) => chunks.push(chunk));
  request.on("end", async () => {
    const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as { model?: string; messages?: unknown };
    if (!Array.isArray(body.messages)) {
      response.writeHead(400).end();
      return;
    }
    const id = `chatcmpl-${Math.random().toString(36).slice(2)}`;
    const created = Math.floor(Date.now() / 1000);
    const model = body.model ?? "floor";
    const chunk = (delta: unknown, finishReason: string | null = null) =>
      `data: ${JSON.stringify({ id, object: "chat.completion.chunk", created, model, choices: [{ index: 0, delta, finish_reason: finishReason }] })}\n\n`;
    response.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache" });
    response.write(chunk({ role: "assistant", content: "" }));
    // Paced like the scripted model: chunk k is due k × chunkDelayMs after the stream started.
    const started = performance.now();
    let due = 0;
    for (const piece of pieces) {
      if (chunkDelayMs > 0) {
        due += chunkDelayMs;
        await sleep(Math.max(0, Math.round(started + due - performance.now())));
      }
      response.write(chunk({ content: piece }));
    }
    response.write(chunk({}, "stop"));
    response.end("data: [DONE]\n\n");
  });
});
server.listen(0, "127.0.0.1", () => announce((server.address() as AddressInfo).port));
