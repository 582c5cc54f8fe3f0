// Creating an embedded database runs initdb (seconds); tests copy one made once per machine.
import { cpSync, existsSync, mkdtempSync, readFileSync, renameSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openEmbeddedStore } from "../../src/memory/embedded.js";

// The package's exports do not include its package.json: find it next to the resolved entry.
const require = createRequire(import.meta.url);
const entry = require.resolve("@electric-sql/pglite");
const packageJson = join(entry.slice(0, entry.lastIndexOf("node_modules") + "node_modules".length), "@electric-sql", "pglite", "package.json");
const version = JSON.parse(readFileSync(packageJson, "utf8")).version as string;
const template = join(tmpdir(), `agentloop-pglite-template-${version}`);

/** Fills `target` with an initialized, empty embedded store directory. */
export async function freshEmbeddedDirectory(target: string): Promise<string> {
  if (!existsSync(join(template, "PG_VERSION"))) {
    const building = mkdtempSync(join(tmpdir(), "agentloop-pglite-building-"));
    const store = await openEmbeddedStore({ path: building });
    await store.close();
    try {
      renameSync(building, template); // atomic: a concurrent test file either wins or finds it made
    } catch {
      rmSync(building, { recursive: true, force: true });
    }
  }
  cpSync(template, target, { recursive: true });
  return target;
}
