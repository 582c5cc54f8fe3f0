import { Agent, type AgentConfig, type Model, ScriptedModel } from "agentloop";
import { HOTEL_SCENARIOS, nativeScript } from "./scenarios.js";
import { hotelTools } from "./tools.js";

/** The demo's reference date: the scripted plan's dates are computed from it. */
export const DEMO_TODAY = "2026-11-21";

export const HOTEL_INSTRUCTIONS = `You are the booking assistant of Hotel Agentloop.
Work in waves: call every tool you can call now in parallel, read the results, then plan the next wave.
Resolve holidays and relative dates with the calendar tools before checking availability with pms.get_availability.
Answer briefly, listing the free rooms with their rates.`;

/**
 * The seeds' plan for "I need availability for Hanukkah and also next weekend" (scenario 2 of
 * `./scenarios.ts`): wave 1 resolves both dates in parallel, wave 2 checks both availabilities in
 * parallel, then the answer.
 */
export const HOTEL_SCRIPT: string[] = nativeScript(HOTEL_SCENARIOS[1]!);

export function hotelAgent(options: { model?: Model } & Partial<AgentConfig> = {}): Agent {
  return new Agent({
    name: "hotel-assistant",
    description: "Books rooms at Hotel Agentloop: resolves holidays and date hints, checks availability.",
    instructions: HOTEL_INSTRUCTIONS,
    tools: hotelTools,
    maxTurns: 5,
    ...options,
    model: options.model ?? new ScriptedModel(HOTEL_SCRIPT, { chunkDelayMs: 15 }),
  });
}
