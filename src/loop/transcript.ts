/**
 * `messages-updated`: whenever the transcript grew, an event with its length goes out before the
 * next event of the run (so at the latest before `run-end`), for a UI that persists the transcript.
 */
import type { Message } from "../messages.js";
import type { LoopEvent } from "./events.js";
import type { RunControl } from "./run.js";

/** Makes `control.emit` announce transcript changes first. */
export function trackTranscript(control: RunControl, messages: readonly Message[]): void {
  const emit = control.emit;
  let reported = 0;
  control.emit = (event: LoopEvent) => {
    if (messages.length !== reported) {
      reported = messages.length;
      const update = { type: "messages-updated" as const, runId: control.id, count: reported };
      // The live transcript, for in-process consumers; left out of JSON (it can be long).
      Object.defineProperty(update, "messages", { value: messages, enumerable: false });
      emit(update as LoopEvent);
    }
    emit(event);
  };
}
