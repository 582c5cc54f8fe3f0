/** What the two UI protocol encoders (AI SDK UI message stream, AG-UI) share. */

/** The headers of every UI event stream; each protocol adds its own after these. */
export const UI_SSE_HEADERS = {
  "content-type": "text/event-stream; charset=utf-8",
  "cache-control": "no-cache",
  connection: "keep-alive",
} as const;

/** The loop's terminal states that are limits (each protocol names them to the client). */
export const LIMIT_STATES: ReadonlySet<string> = new Set(["TURN_LIMIT", "ROUND_LIMIT", "TOKEN_BUDGET", "TOOL_BUDGET", "LOOP_DETECTED"]);
