import { Agent, type AgentConfig, type Model, ScriptedModel } from "agentloop";
import { hotelTools } from "./tools.js";

/** The demo's reference date: the scripted plan's dates are computed from it. */
export const DEMO_TODAY = "2026-11-21";

export const HOTEL_INSTRUCTIONS = `You are the booking assistant of Hotel Agentloop.
Work in waves: call every tool you can call now in parallel, read the results, then plan the next wave.
Resolve holidays and relative dates with the calendar tools before checking availability with pms.get_availability.
Answer briefly, listing the free rooms with their rates.`;

/**
 * The seeds' plan for "I need availability for Hanukkah and also next weekend": wave 1 resolves
 * both dates in parallel, wave 2 checks both availabilities in parallel, then the answer.
 */
export const HOTEL_SCRIPT: string[] = [
  JSON.stringify({
    tool_calls: [
      { id: "call_holiday", name: "calendar.resolve_holiday", arguments: { holiday_name: "Hanukkah" } },
      { id: "call_weekend", name: "calendar.resolve_date_hint", arguments: { hint: "next weekend" } },
    ],
  }),
  JSON.stringify({
    tool_calls: [
      { id: "call_avail_hanukkah", name: "pms.get_availability", arguments: { check_in: "2026-12-04", check_out: "2026-12-05" } },
      { id: "call_avail_weekend", name: "pms.get_availability", arguments: { check_in: "2026-11-27", check_out: "2026-11-29" } },
    ],
  }),
  "Here is what I found. For the first night of Hanukkah (check-in 2026-12-04, one night) the Standard Twin (115 €), " +
    "the Deluxe King (185 €) and the Family Suite (260 €) are free. For next weekend (2026-11-27 to 2026-11-29, two nights) " +
    "the Standard Twin (230 € in total) and the Family Suite (520 € in total) are free. Shall I book one of them?",
];

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
