/**
 * AG-UI (protocol 1.0): `POST /ag-ui` takes a `RunAgentInput` (`threadId` is the session) and
 * answers with the run's AG-UI events over SSE. A run stopped for approvals ends with
 * `RUN_FINISHED` and the `interrupt` outcome (one interrupt per call); the next input's `resume`
 * entries (`{ approve: true }` / `{ approve: false, reason }`) go on with it through the same path
 * as `POST /v1/approvals`. The client leaving aborts the run. Two doors (see protocol-post.ts): the
 * Hono route and `handleNode` on node:http.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { Hono } from "hono";
import { AG_UI_HEADERS, AgUiEncoder, agUiEventsSse } from "../../ui/ag-ui.js";
import { clientToolClash } from "../../ui/client-tools.js";
import { parseRunAgentInput } from "../../ui/requests.js";
import type { ServerContext } from "../context.js";
import { badRequest } from "../http-errors.js";
import { parsedUiRequest } from "../protocol-stream.js";
import { type PrepareProtocolChat, protocolHonoHandler, protocolNodeHandler } from "./protocol-post.js";

export const AG_UI_PATH = "/ag-ui";

export interface AgUiRoutes {
  app: Hono;
  /** `POST /ag-ui` straight on node:http: same checks and answers as the Hono route. Never rejects. */
  handleNode(incoming: IncomingMessage, outgoing: ServerResponse): Promise<void>;
}

export function agUiRoutes(server: ServerContext): AgUiRoutes {
  const { runs, settings } = server;

  const prepare: PrepareProtocolChat = async (json) => {
    const input = parsedUiRequest(() => parseRunAgentInput(json));
    if (server.durable) throw badRequest(`${AG_UI_PATH} is not served in durable mode; use /v1/chat/completions`, null, "unsupported_in_durable_mode");
    const { sessionId, intent, tools } = input;
    if (tools.length > 0) {
      const clash = clientToolClash(tools, await server.toolNames(), "tools");
      if (clash) throw badRequest(clash.message, clash.param, clash.code);
    }
    const agUi = new AgUiEncoder({ threadId: sessionId, runId: input.runId, model: settings.name, clientToolNames: tools.map((tool) => tool.name), inputMessages: input.messages });
    return {
      headers: { ...AG_UI_HEADERS, "x-session-id": sessionId },
      abortOnLeave: true,
      encoder: {
        opening: () => agUiEventsSse(agUi.start()),
        event: (event) => agUi.eventSse(event),
        closing: (result) => agUiEventsSse(agUi.closing(result)),
        failure: (error) => agUiEventsSse(agUi.failure(error.message, error.code ?? error.type)),
      },
      launch(controller, onEvent, accepted) {
        // Resume entries refused before the run went on (nothing pending, answered already, an unknown call): a JSON error.
        if (intent.kind !== "input") {
          return runs.resume({ sessionId, decisions: intent.decisions, toolOutputs: intent.toolOutputs, clientTools: tools, controller, onEvent, onStart: accepted });
        }
        const work = runs.run({ input: intent.input, sessionId, controller, onEvent, clientTools: tools });
        accepted();
        return work;
      },
    };
  };

  const app = new Hono();
  app.post(AG_UI_PATH, protocolHonoHandler(server, prepare));
  return { app, handleNode: protocolNodeHandler(server, AG_UI_PATH, prepare) };
}
