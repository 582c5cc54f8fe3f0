/**
 * `messages-updated`: whenever the transcript grew, an event with its length goes out before the
 * next event of the run (so at the latest before `run-end`), for a UI that persists the transcript.
 */
import type { Message } from "../messages.js";
import { keepShape } from "../shapes.js";
import type { LoopEvent } from "./events.js";
import type { RunControl } from "./run.js";

/**
 * The event. The live transcript is a getter on the prototype: in-process consumers read it, JSON
 * leaves it out (it can be long), and the event stays a plain fast object (no defineProperty per event).
 */
class MessagesUpdated {
  readonly type: "messages-updated";
  readonly runId: string;
  readonly count: number;
  readonly #messages: readonly Message[];
  constructor(runId: string, count: number, messages: readonly Message[]) {
    this.type = "messages-updated";
    this.runId = runId;
    this.count = count;
    this.#messages = messages;
  }
  get messages(): readonly Message[] {
    return this.#messages;
  }
}
keepShape(new MessagesUpdated("", 0, [])); // see src/shapes.ts

/** Makes `control.emit` announce transcript changes first. */
export function trackTranscript(control: RunControl, messages: readonly Message[]): void {
  const emit = control.emit;
  let reported = 0;
  control.emit = (event: LoopEvent) => {
    if (messages.length !== reported) {
      reported = messages.length;
      emit(new MessagesUpdated(control.id, reported, messages));
    }
    emit(event);
  };
}
