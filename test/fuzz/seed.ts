// The seed of the fuzz tests' fast-check runs, so a run can be repeated: fixed unless
// AGENTLOOP_FUZZ_SEED says otherwise (an integer, or `random` for a new one each run). Each test
// prints it (a diagnostic in node's report), and fast-check's own failure message names it too.
import type { TestContext } from "node:test";

const fixedSeed = 20261128;

/** The seed named by `value` (AGENTLOOP_FUZZ_SEED): the fixed one when unset, a new one for `random`. */
export function seedFrom(value: string | undefined): number {
  if (value === undefined || value === "") return fixedSeed;
  if (value === "random") return Math.floor(Math.random() * 0x7fffffff);
  const seed = Number(value);
  if (!Number.isSafeInteger(seed)) throw new Error(`AGENTLOOP_FUZZ_SEED must be an integer or "random", not ${JSON.stringify(value)}`);
  return seed;
}

export const fuzzSeed = seedFrom(process.env.AGENTLOOP_FUZZ_SEED);

/** fast-check's options for `numRuns` cases from the seed, which `t`'s report prints. */
export function seeded(t: TestContext, numRuns: number): { numRuns: number; seed: number } {
  t.diagnostic(`fast-check seed ${fuzzSeed} (AGENTLOOP_FUZZ_SEED=${fuzzSeed} repeats this run)`);
  return { numRuns, seed: fuzzSeed };
}
