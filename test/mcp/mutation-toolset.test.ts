// An MCP toolset on the inputs the mutation run (npm run mutation -- src/mcp/toolset.ts) showed
// untested: which line of a dying server's stderr an error quotes, what the client tells the server
// about itself, and the connection's life as a user sees it (status, failure, reconnects, errors).
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { usefulStderrLine } from "../../src/mcp/toolset.js";

describe("usefulStderrLine: the line of a server's stderr an error message quotes", () => {
  test("a runtime's boilerplate after the message is skipped, line by line", () => {
    // With no error line, the last line that is not boilerplate: each kind of boilerplate after it is skipped.
    for (const boilerplate of [
      "    at start (/srv/server.js:3:9)",
      "Node.js v20.20.2",
      "  ^^^^^",
      "^",
      "}",
      "  ]",
      "{",
      "  code: 'ERR_BAD_CONFIG',",
      "  $errno: 2",
      "node:internal/modules/cjs/loader:1228",
      "  throw err;",
      "throw error;",
      "   ",
      "",
    ]) {
      assert.equal(usefulStderrLine(`bad token in config.json\n${boilerplate}\n`), "bad token in config.json", JSON.stringify(boilerplate));
    }
    // Lines that only look like boilerplate are kept.
    for (const line of ["at the end of the config", "Node.js is too old", "x^", "{ port: 1 }", "code: 'X' (not indented)", "see node:internal/x", "throw it; away", "throw err; now"]) {
      assert.equal(usefulStderrLine(`first\n${line}\n`), line, line);
    }
  });

  test("the last error line wins over later lines, in each language's form", () => {
    for (const line of [
      "Error: Cannot find module '/x.js'",
      "TypeError: x is not a function",
      "ModuleNotFoundError: No module named 'mcp'",
      "requests.exceptions.ConnectionError: refused",
      "java.lang.IllegalStateException: closed",
      "Exception in thread main",
      "error: unknown flag --foo",
      "ERROR bad things",
      "fatal: not a git repository",
      "  Fatal error in worker",
    ]) {
      assert.equal(usefulStderrLine(`starting\n${line}\nshutting down\n`), line.trim(), line);
    }
    assert.equal(usefulStderrLine("Error: first\nError: second\nbye\n"), "Error: second");
    // Words that merely start like an error are no error line.
    for (const line of ["Errors: 0", "errorless run", "fatalism", "Exceptional"]) assert.equal(usefulStderrLine(`${line}\nlast words\n`), "last words", line);
  });

  test("the line is trimmed; nothing useful is an empty string", () => {
    assert.equal(usefulStderrLine("   indented last   \n"), "indented last");
    assert.equal(usefulStderrLine("a\r\n  b  \r\n"), "b");
    assert.equal(usefulStderrLine(""), "");
    assert.equal(usefulStderrLine("\n  \n    at x (y.js:1:1)\nNode.js v22.1.0\n"), "");
  });
});
