// `npm run mutation -- --confirm <report.json> [--out <path>] [--mutant <id> ...] [<source file> ...]`: re-checks the Survived
// mutants of an existing Stryker JSON report in new processes, and writes the report with the corrected
// verdicts (in place, or to --out). For reports made before the warm runner confirmed its survivors
// (docs/mutation.md, "How a verdict is reached"): a warm test worker that had cached a value in module
// state never took a mutant's branch, and the mutant was called Survived.
//
// Each survivor is written into a copy of the repository (the report's own sources of its mutated files
// and test files written in: the code the report measured; the rest as it is here) exactly as Stryker
// mutated it (the replacement parenthesized, as Stryker's syntax tree keeps it), and its covering test
// files run in new processes with the runner's rule for new processes (stryker-runner.mjs's decideFresh:
// a failure counts if the selection passes without the mutant, else the whole file decides). A test file
// that does not load, or tests that fail without any mutant in the copy, are left out (said so).
import { execFileSync } from "node:child_process";
import { copyFileSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";

/** The statusReason prefix of a verdict this pass gave (a second pass skips them). */
export const CONFIRMED = "confirmed in new processes (--confirm)";

/** The source with a mutant written in (Stryker's locations: line and column from 1, the end excluded). */
export function withMutant(source, location, replacement, mutatorName) {
  const lines = source.split("\n");
  const offset = ({ line, column }) => lines.slice(0, line - 1).reduce((sum, text) => sum + text.length + 1, 0) + column - 1;
  // An expression keeps its place in the tree: `a && b && c` with `a && b` made `a || b` is `(a || b) && c`.
  const statement = mutatorName === "BlockStatement" || /^(case\b|default\b)/.test(replacement);
  return `${source.slice(0, offset(location.start))}${statement ? replacement : `(${replacement})`}${source.slice(offset(location.end))}`;
}

function usage(message) {
  console.error(`npm run mutation -- --confirm: ${message}\nusage: npm run mutation -- --confirm <report.json> [--out <path>] [--mutant <id> ...] [<source file> ...]`);
  return 2;
}

export async function main(argv) {
  const args = argv.filter((arg) => arg !== "--confirm");
  let out;
  const rest = [];
  const ids = [];
  for (let index = 0; index < args.length; index++) {
    if (args[index] === "--out") {
      out = args[++index];
      if (!out) return usage("--out needs a path");
    } else if (args[index] === "--mutant") {
      const id = args[++index];
      if (!id) return usage("--mutant needs a mutant id of the report");
      ids.push(id);
    } else if (args[index].startsWith("-")) return usage(`unknown option ${args[index]}`);
    else rest.push(args[index]);
  }
  const [reportPath, ...only] = rest;
  if (!reportPath) return usage("name the report to confirm");
  const root = resolve(".");
  let report;
  try {
    report = JSON.parse(readFileSync(reportPath, "utf8"));
  } catch (error) {
    return usage(`${reportPath} is not a readable JSON report: ${error.message}`);
  }
  if (!report.files || !report.testFiles) return usage(`${reportPath} is not a Stryker JSON report (no files or testFiles)`);
  out = resolve(out ?? reportPath);
  const tests = new Map(); // report test id → { file, name }
  const idOf = new Map(); // "<file>: <name>" → report test id
  for (const [file, { tests: list }] of Object.entries(report.testFiles)) {
    for (const test of list) {
      tests.set(test.id, { file, name: test.name.startsWith(`${file}: `) ? test.name.slice(file.length + 2) : test.name });
      idOf.set(test.name, test.id);
    }
  }
  const survivors = [];
  for (const [fileName, file] of Object.entries(report.files)) {
    if (only.length > 0 && !only.includes(fileName)) continue;
    for (const mutant of file.mutants) if (mutant.status === "Survived" && !mutant.statusReason?.startsWith(CONFIRMED) && (ids.length === 0 || ids.includes(mutant.id))) survivors.push({ fileName, mutant });
  }
  const needed = [...new Set(survivors.flatMap(({ mutant }) => (mutant.coveredBy ?? []).map((id) => tests.get(id)?.file).filter(Boolean)))].sort();
  console.log(`# ${survivors.length} survivor(s) to confirm in new processes, ${needed.length} test file(s)`);
  const started = Date.now();
  const sandbox = join(root, "node_modules/.cache/agentloop-mutation/confirm", `sandbox-${process.pid}`);
  const counts = { killed: 0, timeout: 0, survived: 0, unconfirmed: 0 };
  try {
    if (survivors.length > 0) {
      // The repository as it is here (tracked and untracked files), the report's own sources written over it.
      const files = execFileSync("git", ["ls-files", "--cached", "--others", "--exclude-standard", "-z"], { cwd: root, encoding: "utf8", maxBuffer: 64 << 20 }).split("\0").filter(Boolean);
      for (const file of files) {
        mkdirSync(dirname(join(sandbox, file)), { recursive: true });
        try {
          copyFileSync(join(root, file), join(sandbox, file));
        } catch {} // listed but deleted
      }
      symlinkSync(join(root, "node_modules"), join(sandbox, "node_modules"));
      for (const [fileName, file] of Object.entries(report.files)) writeFileSync(join(sandbox, fileName), file.source);
      for (const [fileName, file] of Object.entries(report.testFiles)) if (typeof file.source === "string") writeFileSync(join(sandbox, fileName), file.source);
      process.chdir(sandbox);
      await confirmAll({ sandbox, report, survivors, needed, tests, idOf, counts });
    }
  } finally {
    process.chdir(root);
    rmSync(sandbox, { recursive: true, force: true });
  }
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, JSON.stringify(report));
  console.log(`# ${counts.killed} killed, ${counts.timeout} timed out, ${counts.survived} survived, ${counts.unconfirmed} left unconfirmed, in ${((Date.now() - started) / 60_000).toFixed(1)} min: ${out}`);
  return 0;
}

async function confirmAll({ sandbox, report, survivors, needed, tests, idOf, counts }) {
  const { AgentloopTestRunner, Worker, bundled, harnessPlugin } = await import("./stryker-runner.mjs");
  let current; // { target, original, mutated, dir }
  class ConfirmRunner extends AgentloopTestRunner {
    async workerFor(file, mutant) {
      if (mutant === undefined) {
        writeFileSync(current.target, current.original);
        return new Worker(file, await this.bundleOf(file), this.env);
      }
      writeFileSync(current.target, current.mutated);
      const bundle = await bundled(join(sandbox, file), `${current.dir}/harness/${file.replaceAll("/", "__").replace(/\.ts$/, "")}`, [harnessPlugin]);
      const cli = await bundled(join(sandbox, "src/cli/main.ts"), `${current.dir}/cli`);
      return new Worker(file, bundle, { ...this.env, AGENTLOOP_TEST_CLI: cli });
    }
  }
  const runner = new ConfirmRunner({ agentloop: { testFiles: needed, timeoutMS: 8_000 }, timeoutFactor: 1.5, concurrency: 1 }, { info: (message) => console.log(`# ${message}`) });
  await runner.init();
  const failing = new Map(); // test file → names failing without a mutant here (undefined: the file is unusable)
  for (const file of needed) {
    const dry = await runner.dryRun({ testFiles: [file] });
    if (dry.status !== "complete") {
      console.log(`# ${file} left out: ${dry.errorMessage?.slice(0, 300)}`);
      continue;
    }
    const names = dry.tests.filter((test) => test.status === 1).map((test) => test.id.slice(file.length + 2));
    if (names.length > 0) console.log(`# ${file}: ${names.length} test(s) fail without a mutant here, left out: ${names.join("; ").slice(0, 300)}`);
    failing.set(file, new Set(names));
  }
  for (const [index, { fileName, mutant }] of survivors.entries()) {
    const original = report.files[fileName].source;
    current = { target: join(sandbox, fileName), original, mutated: withMutant(original, mutant.location, mutant.replacement, mutant.mutatorName), dir: `mutant-${index}` };
    const byFile = new Map();
    for (const id of mutant.coveredBy ?? []) {
      const test = tests.get(id);
      if (!test || !failing.has(test.file) || failing.get(test.file).has(test.name)) continue;
      byFile.set(test.file, [...(byFile.get(test.file) ?? []), test.name]);
    }
    let verdict = { status: "survived" };
    try {
      for (const [file, names] of byFile) {
        const units = runner.record(file).units.filter((name) => !failing.get(file).has(name));
        const selection = names.length >= units.length && failing.get(file).size === 0 ? undefined : units.filter((name) => names.includes(name));
        runner.way = [];
        runner.trace = [];
        verdict = await runner.decideFresh(file, selection, mutant.id);
        if (verdict.status !== "survived") break;
      }
    } catch (error) {
      verdict = { status: "error", errorMessage: String(error?.message ?? error) };
    } finally {
      writeFileSync(current.target, original);
      rmSync(join(sandbox, ".mutation-build", current.dir), { recursive: true, force: true });
    }
    const place = `${fileName}:${mutant.location.start.line}:${mutant.location.start.column} ${mutant.mutatorName} ${JSON.stringify(mutant.replacement)}`;
    if (byFile.size === 0 || verdict.status === "error") {
      counts.unconfirmed++;
      console.log(`unconfirmed\t${mutant.id}\t${place}${verdict.errorMessage ? `\t${verdict.errorMessage.slice(0, 200)}` : ": no covering test runs here"}`);
      continue;
    }
    counts[verdict.status]++;
    console.log(`${verdict.status}\t${mutant.id}\t${place}`);
    if (verdict.status === "survived") {
      mutant.statusReason = `${CONFIRMED}: survived`;
      continue;
    }
    mutant.status = verdict.status === "killed" ? "Killed" : "Timeout";
    mutant.killedBy = (verdict.killedBy ?? []).map((name) => idOf.get(name)).filter(Boolean);
    if (mutant.killedBy.length === 0) mutant.killedBy = [mutant.coveredBy[0]];
    mutant.statusReason = `${CONFIRMED}: ${verdict.failureMessage ?? verdict.reason ?? verdict.status}`.slice(0, 2_000);
  }
  await runner.dispose();
}
