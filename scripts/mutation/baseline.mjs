// The committed incremental baseline: one Stryker incremental file per measured folder, made from the
// JSON reports of earlier runs, so that `npm run mutation -- src/<folder> --incremental` in a fresh clone
// reuses every result whose code and tests did not change and runs only the rest (Stryker's own
// incremental mode: https://stryker-mutator.io/docs/stryker-js/incremental/).
//
//   node scripts/mutation/baseline.mjs <report.json or folder ...> [--out <folder>]
//   npm run mutation -- --baseline <report.json or folder ...>        (writes scripts/mutation/baseline/)
//
// A Stryker JSON report is already an incremental file (the mutation-testing-report-schema with its
// `testFiles`); what this adds is the merge of several runs, each of some files of a folder:
// - a source file is taken from its latest run, whole (as `--report` counts it: scores.mjs; what an
//   incremental run only carried over of the files it did not mutate counts only if no run measured it);
// - test ids are per run ("0", "1", ...): they are renumbered into one space, a test named by its file
//   and name;
// - a test file's source is the one of the latest run that ran it. Our runner reports no test locations,
//   so Stryker judges a test file as a whole: a result of an earlier run that rests on a test file whose
//   source has changed since would be reused against the newer file as if it had been made with it. Such a
//   result is left out (Stryker runs that mutant again), by Stryker's own rule of reuse: a killed mutant
//   rests on its killing test only, any other result on every test that covered it.
// Written gzipped (`src-<folder>.incremental.json.gz`): mutation.mjs unpacks it when it is the last run.
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";
import { carriedOver, folderOf, reportFiles } from "./scores.mjs";
import { partsHash } from "./test-parts.mjs";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

function load(file) {
  let report;
  try {
    report = JSON.parse(readFileSync(file, "utf8"));
  } catch (error) {
    throw new Error(`${file}: not a JSON report (${error.message})`);
  }
  if (typeof report?.files !== "object" || report.files === null) throw new Error(`${file}: not a Stryker report (no "files" map)`);
  if (typeof report.testFiles !== "object" || report.testFiles === null) throw new Error(`${file}: a report without "testFiles" (a run with coverageAnalysis "perTest" has them): it cannot be reused`);
  return report;
}

/**
 * Merges reports (oldest first) into one incremental report per folder.
 * @returns {{ folders: Map<string, object>, kept: number, dropped: Array<{ file: string, mutant: string, testFile: string }> }}
 */
export function buildBaselines(files) {
  const reports = files.map((file) => ({ file, report: load(file) }));
  // The latest source of each test file, and of each mutated file with its report.
  const testSources = new Map();
  const sources = new Map();
  const carried = new Map();
  for (const { file, report } of reports) {
    for (const [path, testFile] of Object.entries(report.testFiles)) testSources.set(path, { source: testFile.source, file });
    for (const [path, entry] of Object.entries(report.files)) {
      if (!Array.isArray(entry?.mutants)) throw new Error(`${file}: ${path} has no "mutants" list`);
      // A file an incremental run only carried over is older than its report (scores.mjs, carriedOver).
      (carriedOver(entry) ? carried : sources).set(path, { entry, report });
    }
  }
  for (const [path, entry] of carried) if (!sources.has(path)) sources.set(path, entry);
  const folders = new Map();
  const dropped = [];
  let kept = 0;
  for (const [path, { entry, report }] of [...sources].sort(([a], [b]) => a.localeCompare(b))) {
    // This run's tests: id → { testFile, name }, and whether the test file is still the latest source.
    const tests = new Map();
    for (const [testPath, testFile] of Object.entries(report.testFiles)) {
      const current = testSources.get(testPath).source === testFile.source;
      for (const test of testFile.tests) tests.set(test.id, { testPath, name: test.name, current });
    }
    const folder = folderOf(path);
    if (!folders.has(folder)) folders.set(folder, { ids: new Map(), testFiles: {}, files: {}, schemaVersion: report.schemaVersion, thresholds: report.thresholds });
    const out = folders.get(folder);
    const idOf = ({ testPath, name }) => {
      const key = `${testPath}\n${name}`;
      if (!out.ids.has(key)) {
        out.ids.set(key, String(out.ids.size));
        out.testFiles[testPath] ??= { source: testSources.get(testPath).source, tests: [] };
        out.testFiles[testPath].tests.push({ id: out.ids.get(key), name });
      }
      return out.ids.get(key);
    };
    const mutants = [];
    for (const mutant of entry.mutants) {
      // What a result rests on, as Stryker's incremental mode reuses it: a killed mutant its killing test (a
      // covering test changed since does not undo the kill); any other its every covering test.
      const killed = mutant.status === "Killed" && mutant.killedBy?.length > 0;
      const restsOn = killed ? mutant.killedBy : [...(mutant.coveredBy ?? []), ...(mutant.killedBy ?? [])];
      const stale = restsOn.map((id) => tests.get(id)).find((test) => test !== undefined && !test.current);
      if (stale) {
        dropped.push({ file: path, mutant: `${mutant.mutatorName} ${mutant.location.start.line}:${mutant.location.start.column}`, testFile: stale.testPath });
        continue;
      }
      // A kept kill's covering tests in a since-changed file are no longer these tests: not carried over.
      const remap = (ids) =>
        ids
          ?.map((id) => tests.get(id))
          .filter((test) => test?.current)
          .map(idOf);
      mutants.push({ ...mutant, coveredBy: remap(mutant.coveredBy), killedBy: remap(mutant.killedBy) });
      kept++;
    }
    out.files[path] = { ...entry, mutants };
  }
  for (const out of folders.values()) delete out.ids;
  return { folders, kept, dropped };
}

/** The command: writes one baseline per folder; exits 2 naming the problem on bad input. */
export function main(argv) {
  const at = argv.indexOf("--out");
  const out = at === -1 ? join(ROOT, "scripts/mutation/baseline") : argv[at + 1];
  const paths = argv.filter((arg, index) => !arg.startsWith("-") && !(at !== -1 && index === at + 1));
  try {
    const unknown = argv.find((arg) => arg.startsWith("-") && arg !== "--out" && arg !== "--baseline");
    if (unknown) throw new Error(`unknown option ${unknown} (usage: baseline.mjs <report.json or folder ...> [--out <folder>])`);
    if (at !== -1 && !out) throw new Error("--out needs a folder");
    if (paths.length === 0) throw new Error("name the Stryker JSON reports to merge, or a folder of them");
    const files = reportFiles(paths);
    if (files.length === 0) throw new Error(`no Stryker JSON report in ${paths.join(", ")}`);
    const { folders, kept, dropped } = buildBaselines(files);
    mkdirSync(out, { recursive: true });
    for (const [folder, report] of folders) {
      const target = join(out, `${folder.replaceAll("/", "-")}.incremental.json.gz`);
      writeFileSync(target, gzipSync(JSON.stringify(report)));
      // Each test file's imported parts as they are now (test-parts.mjs): the next incremental run from this
      // baseline runs again what rests on a test whose parts change after today.
      const parts = Object.fromEntries(Object.keys(report.testFiles).map((testFile) => [testFile, partsHash(ROOT, testFile)]));
      writeFileSync(join(out, `${folder.replaceAll("/", "-")}.test-parts.json`), `${JSON.stringify(parts, null, 1)}\n`);
      const count = Object.values(report.files).reduce((sum, file) => sum + file.mutants.length, 0);
      console.log(`${target}: ${Object.keys(report.files).length} files, ${count} mutant results`);
    }
    console.log(`# ${kept} results kept from ${files.length} report(s); ${dropped.length} left out (a covering test file changed since: run again)`);
    const byFile = new Map();
    for (const { file, testFile } of dropped) byFile.set(`${file} ← ${testFile}`, (byFile.get(`${file} ← ${testFile}`) ?? 0) + 1);
    for (const [pair, count] of byFile) console.log(`  ${count}\t${pair}`);
    return 0;
  } catch (error) {
    console.error(`mutation baseline: ${error.message}`);
    return 2;
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) process.exitCode = main(process.argv.slice(2));
