// The runnable examples of docs/{mcp,tracing,agents,prompty,text-tools,control,context-and-output,coding}.md, run as they are written
// (imports of `agentloop/...` pointed at the sources) in child processes. A `console.log(...)`
// followed by a `// text` comment must print that text.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { tsChild, tsChildren } from "../ts-child.js";

const root = fileURLToPath(new URL("../../", import.meta.url));
const folder = mkdtempSync(join(tmpdir(), "agentloop-docs-"));
after(() => rmSync(folder, { recursive: true, force: true }));
// The examples import the packages a user would install (OpenTelemetry, tsx...) and run MCP servers with npx.
symlinkSync(join(root, "node_modules"), join(folder, "node_modules"), "dir");

/** Examples that need a service this test does not run, by a string they contain. */
const needsOutsideService: Record<string, string> = {
  "clock.example": "a remote A2A agent",
  "127.0.0.1:11434": "an Ollama server",
  "mcp-server:8000": "a remote MCP server",
};

/** Where `agentloop/<subpath>` lives in the sources. */
function sourceOf(subpath: string): string {
  const folders: Record<string, string> = { openai: "providers/openai", anthropic: "providers/anthropic" };
  return join(root, "src", subpath === "" ? "index.ts" : `${folders[subpath] ?? subpath}/index.ts`);
}

/** The fenced blocks of a language in a markdown file (fences at the start of a line). */
function blocks(markdown: string, language: string): string[] {
  return [...markdown.matchAll(new RegExp(`^\`\`\`${language}\\n([\\s\\S]*?)^\`\`\`$`, "gm"))].map((match) => match[1]);
}

async function runExample(file: string): Promise<{ stdout: string; stderr: string }> {
  const args = await tsChild(file);
  const env: NodeJS.ProcessEnv = { ...process.env, OPENAI_API_KEY: "sk-docs-example" };
  delete env.DEBUG_MOCK_RESPONSES;
  delete env.TOOL_CALL_MODE;
  return new Promise((resolve, reject) => {
    execFile(process.execPath, args, { cwd: folder, env, timeout: 60_000 }, (error, stdout, stderr) =>
      error ? reject(new Error(`${file} failed: ${stderr || error.message}`)) : resolve({ stdout, stderr }),
    );
  });
}

// The prompty example runs the file the doc shows, with a child next to it.
const promptyDoc = readFileSync(join(root, "docs/prompty.md"), "utf8");
mkdirSync(join(folder, "trip/children"), { recursive: true });
writeFileSync(join(folder, "trip/planner.prompty"), blocks(promptyDoc, "markdown")[0]);
writeFileSync(join(folder, "trip/children/summarizer.prompty"), "---\nname: summarizer\ninputs:\n  text:\n    required: true\n---\nuser:\nSummarize: {{ text }}\n");

// Every example written as a file, and all bundled in one build (they share its reading of the sources).
const examples = ["mcp", "tracing", "agents", "prompty", "text-tools", "control", "context-and-output", "coding"].flatMap((doc) =>
  blocks(readFileSync(join(root, `docs/${doc}.md`), "utf8"), "ts")
    .filter((code) => code.startsWith("import "))
    .map((code, index) => {
      const outside = Object.keys(needsOutsideService).find((marker) => code.includes(marker));
      const file = join(folder, `${doc}-${index + 1}.mts`);
      const source = code.replace(/from "agentloop(?:\/([a-z0-9-]+))?"/g, (_match, subpath: string | undefined) => `from ${JSON.stringify(sourceOf(subpath ?? ""))}`);
      if (!outside) writeFileSync(file, `${source}\nexport {};\n`);
      return { doc, index, code, outside, file };
    }),
);
let bundled: Promise<unknown> | undefined;

// Each example is its own child process: they run side by side.
describe("docs examples", { concurrency: 4 }, () => {
  for (const { doc, index, code, outside, file } of examples) {
    const name = `docs/${doc}.md example ${index + 1} runs${outside ? ` (skipped: needs ${needsOutsideService[outside]})` : ""}`;
    it(name, { skip: outside !== undefined }, async () => {
      bundled ??= tsChildren(examples.filter((example) => !example.outside).map((example) => example.file));
      await bundled;
      const { stdout } = await runExample(file);
      for (const [, expected] of code.matchAll(/console\.log\(.*\);\s*\/\/ (.+)$/gm)) {
        assert.ok(stdout.includes(expected.trim()), `expected "${expected.trim()}" in the output:\n${stdout}`);
      }
    });
  }
});
