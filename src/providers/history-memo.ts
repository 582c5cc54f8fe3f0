/**
 * What an adapter derived from the last request of a conversation, kept for the next request of
 * the same conversation. A session sends its whole history before every model call, and the next
 * request is the last one plus what the turn added: the messages compared pointer by pointer (the
 * cheapest walk there is, no property read) give the part both share, and only the rest needs
 * converting. Without it a long session paid O(history) conversions per turn on top of the
 * serialization every client pays (bench/README.md, target 4).
 *
 * Keyed by the conversation's first message (each run's transcript starts with a message object of
 * its own), so concurrent runs on one model keep one entry each. Two conversations that share a
 * first message take turns in one entry: still right, only slower. Like the per-message caches of
 * the adapters, it relies on messages never being changed in place once sent (the loop builds a
 * new message rather than editing one); the array itself is copied, so a caller may reuse it.
 */
import type { Message } from "../messages.js";

interface Entry<State> {
  /** The messages of the request `state` was made for (a copy). */
  readonly messages: readonly Message[];
  readonly state: State;
}

/** A memo found for a request: `state` was made for its first `shared` messages when `shared === length`. */
export interface HistoryMatch<State> {
  /** How many leading messages the request shares with the one `state` was made for. */
  readonly shared: number;
  /** How many messages that request had. */
  readonly length: number;
  readonly state: State;
}

export class HistoryMemo<State> {
  private readonly entries = new WeakMap<Message, Entry<State>>();

  /** What was kept for the last request of this conversation, and how much of it `messages` shares. */
  match(messages: readonly Message[]): HistoryMatch<State> | undefined {
    const first = messages[0];
    if (first === undefined) return undefined;
    const entry = this.entries.get(first);
    if (entry === undefined) return undefined;
    const previous = entry.messages;
    const length = previous.length;
    const limit = Math.min(length, messages.length);
    let shared = 1;
    while (shared < limit && previous[shared] === messages[shared]) shared++;
    return { shared, length, state: entry.state };
  }

  /** Keeps `state` as made for `messages` (the array is copied). */
  keep(messages: readonly Message[], state: State): void {
    const first = messages[0];
    // Not an object: not a message either, and the conversion reports it (a WeakMap would throw its own error).
    if (typeof first === "object" && first !== null) this.entries.set(first, { messages: messages.slice(), state });
  }
}
