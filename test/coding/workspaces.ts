// Temp workspaces for the coding tests: one folder per test file (removed after it), a fresh root per test.
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after } from "node:test";

/** A `freshRoot(files)` that makes a new workspace root under one temp folder (named `prefix`) with `files` written in it. */
export function workspaces(prefix: string): { freshRoot(files?: Record<string, string | Buffer>): string } {
  const folder = realpathSync(mkdtempSync(join(tmpdir(), prefix)));
  after(() => rmSync(folder, { recursive: true, force: true }));
  let counter = 0;
  return {
    freshRoot(files = {}) {
      const root = join(folder, `ws${++counter}`);
      mkdirSync(root, { recursive: true });
      for (const [name, content] of Object.entries(files)) {
        mkdirSync(join(root, name, ".."), { recursive: true });
        writeFileSync(join(root, name), content);
      }
      return root;
    },
  };
}
