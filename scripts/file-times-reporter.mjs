// A node:test reporter that writes, per test file, the sum of its top-level tests' durations
// (seconds, slowest first). scripts/run-tests.mjs adds it when AGENTLOOP_TEST_TIMES names a file.
export default async function* fileTimes(source) {
  const perFile = new Map();
  for await (const event of source) {
    if ((event.type === "test:pass" || event.type === "test:fail") && event.data.nesting === 0) {
      const file = event.data.file ?? "?";
      perFile.set(file, (perFile.get(file) ?? 0) + (event.data.details?.duration_ms ?? 0));
    }
  }
  for (const [file, ms] of [...perFile].sort((a, b) => b[1] - a[1])) yield `${(ms / 1000).toFixed(1)}\t${file}\n`;
}
