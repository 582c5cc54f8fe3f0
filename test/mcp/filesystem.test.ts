import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { connectMcp, type McpToolset } from "../../src/mcp/index.js";
import { filesystemServerPath } from "./helpers.js";

describe("filesystem server on a temporary folder", () => {
  let folder: string;
  let toolset: McpToolset;

  before(async () => {
    folder = realpathSync(mkdtempSync(join(tmpdir(), "agentloop-mcp-fs-")));
    writeFileSync(join(folder, "notes.txt"), "first line\nsecond line\n");
    toolset = await connectMcp({ name: "fs", command: process.execPath, args: [filesystemServerPath, folder] });
  });
  after(async () => {
    await toolset.close();
    rmSync(folder, { recursive: true, force: true });
  });

  test("reads a file, with the structured content kept", async () => {
    const tools = await toolset.tools();
    assert.ok(tools.some((tool) => tool.name === "fs.read_text_file"));
    const result = await toolset.callTool("read_text_file", { path: join(folder, "notes.txt") });
    assert.equal(result.isError, false);
    assert.equal(result.content, "first line\nsecond line\n");
    assert.deepEqual(result.structured, { content: "first line\nsecond line\n" });
  });

  test("writes a file the test can read from disk", async () => {
    const result = await toolset.callTool("write_file", { path: join(folder, "out.txt"), content: "written by MCP" });
    assert.equal(result.isError, false);
    assert.equal(readFileSync(join(folder, "out.txt"), "utf8"), "written by MCP");
  });

  test("a missing file and a path outside the folder are error results", async () => {
    const missing = await toolset.callTool("read_text_file", { path: join(folder, "missing.txt") });
    assert.equal(missing.isError, true);
    assert.match(missing.content as string, /ENOENT|no such file/i);
    const outside = await toolset.callTool("read_text_file", { path: "/etc/hostname" });
    assert.equal(outside.isError, true);
    assert.match(outside.content as string, /outside allowed directories|Access denied/i);
  });
});
