import { type Command, Option } from "commander";
import { showRun } from "./run.js";

export interface DemoHotelOptions {
  scenario: "1" | "2" | "3";
  toolCallMode: "native" | "plan";
  json?: boolean;
}

/**
 * `agentloop demo hotel`: the hotel planner of seed 001 on a scripted model, no API key needed.
 * Scenario 1 "one night in Hanukkah" (2 waves), 2 "Hanukkah and also next weekend" (2 waves of 2
 * parallel calls), 3 "January 17-19" (1 wave); in native tool calls or the plan-next-wave protocol.
 */
export async function demoHotelCommand(options: DemoHotelOptions, io = { stdout: process.stdout, stderr: process.stderr }): Promise<number> {
  // The example is loaded only for this command.
  const [{ DEMO_TODAY, hotelAgent }, { HOTEL_SCENARIOS, nativeScript, planScript }, { ScriptedModel }] = await Promise.all([
    import("../../../examples/hotel/agent.js"),
    import("../../../examples/hotel/scenarios.js"),
    import("../../model/scripted.js"),
  ]);
  const scenario = HOTEL_SCENARIOS[Number(options.scenario) - 1]!;
  const plan = options.toolCallMode === "plan";
  const model = new ScriptedModel(plan ? planScript(scenario) : nativeScript(scenario), { chunkDelayMs: 15 });
  const agent = hotelAgent({ model, toolCallMode: options.toolCallMode });
  if (!options.json) io.stderr.write(`scenario ${scenario.number} (${options.toolCallMode}): ${scenario.prompt}\n`);
  const controller = new AbortController();
  const interrupt = () => controller.abort("interrupted (Ctrl-C)");
  process.once("SIGINT", interrupt);
  try {
    return await showRun(agent.run(scenario.prompt, { inputs: { today: DEMO_TODAY }, signal: controller.signal }), options, io);
  } finally {
    process.off("SIGINT", interrupt);
  }
}

export function registerDemoCommand(program: Command): void {
  const demo = program.command("demo").description("Runnable demos on a scripted model (no API key needed)");
  demo
    .command("hotel")
    .description("The hotel planner (seed 001): tool waves in parallel, re-planned after each wave, then the answer")
    .addOption(new Option("--scenario <n>", "1: one night in Hanukkah · 2: Hanukkah and next weekend · 3: January 17-19").choices(["1", "2", "3"]).default("2"))
    .addOption(new Option("--tool-call-mode <mode>", "native tool calls, or the plan-next-wave text protocol").choices(["native", "plan"]).default("native"))
    .option("--json", "print one JSON event per line on stdout")
    .addHelpText(
      "after",
      `
Examples:
  $ agentloop demo hotel                              # scenario 2: 2 waves of 2 parallel calls
  $ agentloop demo hotel --scenario 1                 # "one night in Hanukkah": 2 waves
  $ agentloop demo hotel --scenario 3 --tool-call-mode plan
  $ agentloop demo hotel --json | jq -c 'select(.type=="tool-end") | [.name, .output]'`,
    )
    .action(async (options: DemoHotelOptions) => {
      process.exitCode = await demoHotelCommand(options);
    });
}
