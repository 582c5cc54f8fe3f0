/**
 * AG-UI (protocol 1.0): `POST /ag-ui` takes a `RunAgentInput` (`threadId` is the session) and
 * answers with the run's AG-UI events over SSE. A run stopped for approvals ends with
 * `RUN_FINISHED` and the `interrupt` outcome (one interrupt per call); the next input's `resume`
 * entries (`{ approve: true }` / `{ approve: false, reason }`) go on with it through the same path
 * as `POST /v1/approvals`. The client leaving aborts the run.
 */
import { Hono } from "hono";
import { onAbort } from "../../abort.js";
import type { LoopEvent, RunResult } from "../../loop/events.js";
import { AG_UI_HEADERS, AgUiEncoder, agUiSse } from "../../ui/ag-ui.js";
import { clientToolClash } from "../../ui/client-tools.js";
import { parseRunAgentInput } from "../../ui/requests.js";
import { RequestController, webSseSink } from "../chat-stream.js";
import { readJson, type ServerContext } from "../context.js";
import { badRequest } from "../http-errors.js";
import { type ProtocolEncoder, parsedUiRequest, streamProtocolRun } from "../protocol-stream.js";

export const AG_UI_PATH = "/ag-ui";

export function agUiRoutes(server: ServerContext): Hono {
  const { runs, settings } = server;
  const app = new Hono();

  app.post(AG_UI_PATH, async (c) => {
    const json = await readJson(c);
    const input = parsedUiRequest(() => parseRunAgentInput(json));
    if (server.durable) throw badRequest(`${AG_UI_PATH} is not served in durable mode; use /v1/chat/completions`, null, "unsupported_in_durable_mode");
    const { sessionId, intent, tools } = input;
    if (tools.length > 0) {
      const clash = clientToolClash(tools, await server.toolNames(), "tools");
      if (clash) throw badRequest(clash.message, clash.param, clash.code);
    }
    const controller = new RequestController();
    const unlink = onAbort(c.req.raw.signal, () => controller.disconnect());
    const { sink, body } = webSseSink(() => controller.disconnect());
    const agUi = new AgUiEncoder({ threadId: sessionId, runId: input.runId, model: settings.name, clientToolNames: tools.map((tool) => tool.name), inputMessages: input.messages });
    const encoder: ProtocolEncoder = {
      opening: () => agUi.start().map(agUiSse),
      event: (event) => agUi.event(event).map(agUiSse),
      closing: (result) => agUi.closing(result).map(agUiSse),
      failure: (error) => agUi.failure(error.message, error.code ?? error.type).map(agUiSse),
    };
    let work: Promise<RunResult> | undefined;
    let accepted: () => void = () => undefined;
    const started = new Promise<void>((resolve) => {
      accepted = resolve;
    });
    const start = (onEvent: (event: LoopEvent) => void) => {
      if (intent.kind === "input") {
        work = runs.run({ input: intent.input, sessionId, controller, onEvent, clientTools: tools });
        accepted();
      } else work = runs.resume({ sessionId, decisions: intent.decisions, toolOutputs: intent.toolOutputs, clientTools: tools, controller, onEvent, onStart: accepted });
      return work;
    };
    void streamProtocolRun(server, sink, encoder, start).finally(unlink);
    // Resume entries refused before the run went on (nothing pending, answered already, an unknown call): a JSON error.
    const refused = await Promise.race([started.then(() => undefined), work!.then(() => undefined, (error: unknown) => error)]);
    if (refused !== undefined) throw refused;
    return new Response(body, { headers: { ...AG_UI_HEADERS, "x-session-id": sessionId } });
  });
  return app;
}
