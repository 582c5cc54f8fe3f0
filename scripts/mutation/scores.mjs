// Scores per folder and per file from several Stryker runs: merges Stryker's JSON reports (the
// mutation-testing-report-schema: a `files` map, path → { mutants: [{ status, ... }] }) and prints,
// for each measured folder (src/<folder>) and each file in it: mutants, killed, timed out, survived,
// no coverage, score; what README's table is made from.
//
//   node scripts/mutation/scores.mjs <report.json or folder ...> [--markdown] [--survivors]
//   npm run mutation -- --report [<report.json or folder ...>] [--markdown] [--survivors]   (default: reports/mutation)
//
// --survivors also prints each mutant left undetected (survived, no coverage) with its place and the
// lines as they were and as mutated: what to write into the source to check it by hand. (Several
// mutants of a line can start at the same column with the same replacement, `true`, and differ only
// in how much they replace: `a && b && c` made `true`, or only `a && b`.)
//
// A folder stands for the *.json reports in it (Stryker's *.incremental.json beside them are left out:
// the same run again). A file measured by several reports is taken from the most recently modified
// report (a later run of a file replaces an earlier one, whole); ties go to the later argument. The
// earlier results an `--incremental` run carries over for the files it did not mutate count only for a
// file no report measured (`carriedOver`).
// Score = (killed + timed out) / (killed + timed out + survived + no coverage), Stryker's mutation score:
// mutants that did not compile, errors and ignored ones are counted apart and left out of it.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { isAbsolute, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const COLUMNS = ["mutants", "killed", "timeout", "survived", "noCoverage", "other"];
const STATUS = { Killed: "killed", Timeout: "timeout", Survived: "survived", NoCoverage: "noCoverage" };

/** The report files the arguments name (a folder: its *.json reports), oldest first. */
export function reportFiles(paths) {
  const found = [];
  for (const [order, path] of paths.entries()) {
    let stat;
    try {
      stat = statSync(path);
    } catch {
      throw new Error(`${path}: no such file or folder`);
    }
    if (stat.isDirectory()) {
      for (const name of readdirSync(path).sort()) {
        if (name.endsWith(".json") && !name.endsWith(".incremental.json")) found.push({ file: join(path, name), mtime: statSync(join(path, name)).mtimeMs, order });
      }
    } else found.push({ file: path, mtime: stat.mtimeMs, order });
  }
  return found.sort((a, b) => a.mtime - b.mtime || a.order - b.order).map((entry) => entry.file);
}

/**
 * Whether a report's entry for a file is only carried over: an `--incremental` run writes into its report
 * the earlier results of the files it did not mutate, each mutant's id then Stryker's identifying key
 * (`<file>@<line>:<column>-…\n<mutator>: <replacement>`) where a mutant of the run has a number. Such an
 * entry is older than its report: it never replaces a run of the file, and counts only if none exists.
 */
export function carriedOver(entry) {
  return entry.mutants.length > 0 && entry.mutants.every((mutant) => typeof mutant.id === "string" && mutant.id.includes("\n"));
}

/** Merges reports (oldest first): source file → { report, mutants }, each file from its latest run. */
export function merge(files) {
  const merged = new Map();
  const carried = new Map();
  for (const file of files) {
    let report;
    try {
      report = JSON.parse(readFileSync(file, "utf8"));
    } catch (error) {
      throw new Error(`${file}: not a JSON report (${error.message})`);
    }
    if (typeof report !== "object" || report === null || typeof report.files !== "object" || report.files === null) throw new Error(`${file}: not a Stryker report (no "files" map)`);
    for (const [path, entry] of Object.entries(report.files)) {
      if (!Array.isArray(entry?.mutants)) throw new Error(`${file}: ${path} has no "mutants" list`);
      const source = isAbsolute(path) && report.projectRoot ? relative(report.projectRoot, path) : path;
      (carriedOver(entry) ? carried : merged).set(source.replaceAll("\\", "/"), { report: file, mutants: entry.mutants, source: entry.source });
    }
  }
  for (const [source, entry] of carried) if (!merged.has(source)) merged.set(source, entry);
  return merged;
}

function emptyCounts() {
  return Object.fromEntries(COLUMNS.map((column) => [column, 0]));
}
function add(into, counts) {
  for (const column of COLUMNS) into[column] += counts[column];
}
export function scoreOf(counts) {
  const detected = counts.killed + counts.timeout;
  const total = detected + counts.survived + counts.noCoverage;
  return total === 0 ? undefined : (100 * detected) / total;
}

/** The measured folder of a source file: src/<folder> (src/server/routes/x.ts → src/server). */
export function folderOf(path) {
  const parts = path.split("/");
  return parts[0] === "src" && parts.length > 2 ? parts.slice(0, 2).join("/") : parts.slice(0, -1).join("/") || ".";
}

/** { folders: [{ folder, counts, score, files: [{ file, report, counts, score }] }], total } */
export function tally(merged) {
  const folders = new Map();
  const total = emptyCounts();
  for (const [file, { report, mutants }] of [...merged].sort(([a], [b]) => a.localeCompare(b))) {
    const counts = emptyCounts();
    for (const mutant of mutants) {
      counts.mutants++;
      counts[STATUS[mutant.status] ?? "other"]++;
    }
    const folder = folderOf(file);
    if (!folders.has(folder)) folders.set(folder, { folder, counts: emptyCounts(), files: [] });
    const entry = folders.get(folder);
    entry.files.push({ file, report, counts, score: scoreOf(counts) });
    add(entry.counts, counts);
    add(total, counts);
  }
  const list = [...folders.values()].map((entry) => ({ ...entry, score: scoreOf(entry.counts) }));
  return { folders: list, total: { counts: total, score: scoreOf(total) } };
}

const percent = (score) => (score === undefined ? "–" : `${score.toFixed(1)} %`);

export function format({ folders, total }, { markdown = false } = {}) {
  const header = ["", "mutants", "killed", "timed out", "survived", "no coverage", "other", "score"];
  const row = (name, counts, score) => [name, ...COLUMNS.map((column) => String(counts[column])), percent(score)];
  const rows = [];
  for (const { folder, counts, score, files } of folders) {
    rows.push(row(markdown ? `**${folder}**` : folder, counts, score));
    for (const file of files) rows.push(row(markdown ? `\`${file.file.slice(folder.length + 1)}\`` : `  ${file.file.slice(folder.length + 1)}`, file.counts, file.score));
  }
  rows.push(row(markdown ? "**all**" : "all", total.counts, total.score));
  if (markdown) return [header, header.map(() => "---"), ...rows].map((cells) => `| ${cells.join(" | ")} |`).join("\n");
  const widths = header.map((_, column) => Math.max(...[header, ...rows].map((cells) => cells[column].length)));
  return [header, ...rows].map((cells) => cells.map((cell, column) => (column === 0 ? cell.padEnd(widths[column]) : cell.padStart(widths[column]))).join("  ").trimEnd()).join("\n");
}

/** A mutant's lines as they were and as mutated (Stryker's locations: lines and columns from 1, the end exclusive). */
export function mutatedLines(source, { location, replacement }) {
  const lines = source.split("\n");
  const { start, end } = location;
  const before = lines.slice(start.line - 1, end.line);
  const first = before[0] ?? "";
  const last = before.at(-1) ?? "";
  const after = `${first.slice(0, start.column - 1)}${replacement ?? ""}${last.slice(end.column - 1)}`.split("\n");
  return { before, after };
}

/** The mutants no test detected, file by file: their place, mutator, status and lines. */
export function survivors(merged) {
  const out = [];
  for (const [file, { mutants, source }] of [...merged].sort(([a], [b]) => a.localeCompare(b))) {
    const undetected = mutants.filter((mutant) => mutant.status === "Survived" || mutant.status === "NoCoverage");
    undetected.sort((a, b) => a.location.start.line - b.location.start.line || a.location.start.column - b.location.start.column);
    for (const mutant of undetected) {
      const { start, end } = mutant.location;
      out.push(`${file}:${start.line}:${start.column}-${end.line}:${end.column} ${mutant.mutatorName} (${mutant.status}, id ${mutant.id})`);
      if (typeof source !== "string") continue;
      const { before, after } = mutatedLines(source, mutant);
      out.push(...before.map((line) => `  - ${line.trim()}`), ...after.map((line) => `  + ${line.trim()}`));
    }
  }
  return out.join("\n");
}

/** The command: prints the table; exits 2 naming the problem on bad input. */
export function main(argv) {
  const OPTIONS = ["--markdown", "--survivors"];
  const markdown = argv.includes("--markdown");
  const unknown = argv.find((arg) => arg.startsWith("-") && !OPTIONS.includes(arg));
  const paths = argv.filter((arg) => !arg.startsWith("-"));
  try {
    if (unknown) throw new Error(`unknown option ${unknown} (usage: scores.mjs <report.json or folder ...> [--markdown] [--survivors])`);
    if (paths.length === 0) throw new Error("name the Stryker JSON reports to merge, or a folder of them");
    const files = reportFiles(paths);
    if (files.length === 0) throw new Error(`no Stryker JSON report in ${paths.join(", ")}`);
    const merged = merge(files);
    console.log(`# mutation score per folder and file, from ${files.length} report(s) (a file's latest run counts)\n${format(tally(merged), { markdown })}`);
    if (argv.includes("--survivors")) console.log(`\n# mutants no test detected (file:line:column-line:column, the lines as they were and as mutated)\n${survivors(merged)}`);
    return 0;
  } catch (error) {
    console.error(`mutation scores: ${error.message}`);
    return 2;
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) process.exitCode = main(process.argv.slice(2));
