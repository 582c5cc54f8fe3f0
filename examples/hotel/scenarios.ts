/**
 * The three scenarios of the hotel planner (seed 001), each as a script for the scripted model:
 * in native tool calls, or in the seed's plan-next-wave protocol (`toolCallMode: "plan"`), where
 * the model answers one plan `{status, action, tools, reasoning}` per wave and a plan without
 * tools ends planning before the answer.
 */

/** One planned call: the plan's id, the tool and its arguments. */
export interface ScenarioCall {
  id: string;
  tool: string;
  args: Record<string, unknown>;
}

export interface ScenarioWave {
  /** What the planner says it is doing (the plan's `action`). */
  action: string;
  reasoning: string;
  calls: ScenarioCall[];
}

export interface HotelScenario {
  number: 1 | 2 | 3;
  prompt: string;
  waves: ScenarioWave[];
  answer: string;
}

export const HOTEL_SCENARIOS: readonly HotelScenario[] = [
  {
    number: 1,
    prompt: "one night in Hanukkah",
    waves: [
      {
        action: "Getting Hanukkah dates",
        reasoning: "Need to resolve the holiday dates before checking availability",
        calls: [{ id: "holiday", tool: "calendar.resolve_holiday", args: { holiday_name: "Hanukkah" } }],
      },
      {
        action: "Checking availability for the first night of Hanukkah",
        reasoning: "Hanukkah starts on 2026-12-04: one night is 2026-12-04 to 2026-12-05",
        calls: [{ id: "avail", tool: "pms.get_availability", args: { check_in: "2026-12-04", check_out: "2026-12-05" } }],
      },
    ],
    answer:
      "For one night at the start of Hanukkah (check-in 2026-12-04, check-out 2026-12-05) the Standard Twin (115 €), " +
      "the Deluxe King (185 €) and the Family Suite (260 €) are free. Shall I book one of them?",
  },
  {
    number: 2,
    prompt: "Check availability for Hanukkah and also next weekend",
    waves: [
      {
        action: "Resolving both date ranges in parallel",
        reasoning: "The holiday and the date hint do not depend on each other",
        calls: [
          { id: "holiday", tool: "calendar.resolve_holiday", args: { holiday_name: "Hanukkah" } },
          { id: "weekend", tool: "calendar.resolve_date_hint", args: { hint: "next weekend" } },
        ],
      },
      {
        action: "Checking availability for both date ranges in parallel",
        reasoning: "Both date ranges are known now",
        calls: [
          { id: "avail_hanukkah", tool: "pms.get_availability", args: { check_in: "2026-12-04", check_out: "2026-12-05" } },
          { id: "avail_weekend", tool: "pms.get_availability", args: { check_in: "2026-11-27", check_out: "2026-11-29" } },
        ],
      },
    ],
    answer:
      "Here is what I found. For the first night of Hanukkah (check-in 2026-12-04, one night) the Standard Twin (115 €), " +
      "the Deluxe King (185 €) and the Family Suite (260 €) are free. For next weekend (2026-11-27 to 2026-11-29, two nights) " +
      "the Standard Twin (230 € in total) and the Family Suite (520 € in total) are free. Shall I book one of them?",
  },
  {
    number: 3,
    prompt: "Check availability for January 17-19",
    waves: [
      {
        action: "Checking availability for January 17-19",
        reasoning: "The dates are given: no calendar lookup needed",
        calls: [{ id: "avail", tool: "pms.get_availability", args: { check_in: "2027-01-17", check_out: "2027-01-19" } }],
      },
    ],
    answer:
      "Every room is free from 2027-01-17 to 2027-01-19 (two nights): the Standard Double (240 € in total), the Standard Twin (230 €), " +
      "the Deluxe King (370 €) and the Family Suite (520 €). Shall I book one of them?",
  },
];

/** The scenario's script in native tool calls: one `tool_calls` entry per wave, then the answer. */
export function nativeScript(scenario: HotelScenario): string[] {
  return [
    ...scenario.waves.map((wave) =>
      JSON.stringify({ tool_calls: wave.calls.map((call) => ({ id: `call_${call.id}`, name: call.tool, arguments: call.args })) }),
    ),
    scenario.answer,
  ];
}

/**
 * The scenario's script in the plan protocol: one plan per wave (status "continue"), a plan with
 * status "done" and no tools, then the answer.
 */
export function planScript(scenario: HotelScenario): string[] {
  return [
    ...scenario.waves.map((wave) =>
      JSON.stringify({
        status: "continue",
        action: wave.action,
        tools: wave.calls.map((call) => ({ id: call.id, tool: call.tool, args: call.args, needs: [] })),
        reasoning: wave.reasoning,
      }),
    ),
    JSON.stringify({ status: "done", action: "Answering", tools: [], reasoning: "I have all the information I need" }),
    scenario.answer,
  ];
}
