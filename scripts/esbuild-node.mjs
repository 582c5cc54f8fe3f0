// esbuild options for running this repository's TypeScript as plain node (the test runner's build,
// the tests' child processes): Node 20 ESM, npm packages external (resolved from node_modules, so
// the output goes below the repository), code splitting (a lazy import() stays lazy), and every
// module's import.meta.url/.dirname/.filename naming its source file, as under tsx.
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { pathToFileURL } from "node:url";

export const nodeBundleOptions = {
  bundle: true,
  splitting: true,
  platform: "node",
  format: "esm",
  target: "node20",
  packages: "external",
  outExtension: { ".js": ".mjs" },
  logLevel: "silent",
  plugins: [
    {
      name: "source-import-meta",
      setup(build) {
        build.onLoad({ filter: /\.[cm]?ts$/ }, (args) => ({ contents: withSourceImportMeta(readFileSync(args.path, "utf8"), args.path), loader: "ts" }));
      },
    },
  ],
};

/** A banner giving an ES module bundle a `require` of its own (for the CommonJS code bundled in, and `require` calls left in it). */
export const requireBanner = { js: 'import { createRequire as __agentloopCreateRequire } from "node:module"; const require = __agentloopCreateRequire(import.meta.url);' };

/** A source file's text with its `import.meta.url`, `.dirname` and `.filename` naming `path`, as in the source. */
export function withSourceImportMeta(text, path) {
  return text
    .replaceAll("import.meta.url", JSON.stringify(pathToFileURL(path).href))
    .replaceAll("import.meta.dirname", JSON.stringify(dirname(path)))
    .replaceAll("import.meta.filename", JSON.stringify(path));
}

/**
 * The esbuild options of the CLI the tests start as child processes (~150 per run): unlike the test
 * files' bundles, the npm packages the CLI loads on its common paths are bundled in too (commander,
 * yaml, zod, the MCP SDK, hono, OpenTelemetry's API…): one file read and compiled instead of the
 * hundreds of small modules node resolves one by one (an agent file's `yaml` alone is 72 CommonJS
 * modules, ~70 ms of CPU; the MCP SDK with zod ~250), which is most of a short-lived child's CPU.
 * The shipped package is not bundled. External (loaded from node_modules, as before) stay:
 * - ajv and ajv-formats: the sources `await import()` them and take named exports (`{ Ajv }`); with
 *   code splitting esbuild gives a dynamically imported CommonJS module a chunk with a default export
 *   only, so `Ajv` is undefined ("Ajv is not a constructor" in every tool-argument validation); the
 *   OpenTelemetry SDK packages and pg are imported the same way;
 * - libsql: a native addon; @dbos-inc/dbos-sdk: its optional imports (winston, OTLP exporters) are not
 *   installed, so it cannot be bundled; express and nunjucks go with it;
 * - the model providers' SDKs, the price table and the A2A SDK: megabytes that few children load,
 *   which would make the build at the start of every run slower than what they save.
 * `createRequire(import.meta.url)("<package>")` (how the sources load a package synchronously and
 * lazily: `yaml` with the first agent file, `@opentelemetry/api` once something is registered with
 * it) becomes `require("./vendor/<package>.cjs")`: the package bundled into a CommonJS file of its
 * own beside the chunks, read only by the child that requires it (bundled into the chunks instead,
 * yaml's 288 KB were read and pre-parsed by every child: +14–22 % of CPU for a `run` or a `chat`
 * without an agent file on Node 24); an external package stays `require("<package>")`. The banner
 * gives each chunk a `require` of its own.
 */
export function cliBundleOptions() {
  const external = ["ajv", "ajv-formats", "@opentelemetry/sdk-trace-node", "@opentelemetry/exporter-trace-otlp-http", "@opentelemetry/resources", "pg", "libsql", "@dbos-inc/*", "express", "nunjucks", "@anthropic-ai/sdk", "openai", "@pydantic/genai-prices", "@a2a-js/sdk"];
  const vendored = new Map(); // package → its file below the output's vendor/
  const lazyRequire = {
    name: "lazy-require",
    setup(build) {
      build.onLoad({ filter: /\.[cm]?ts$/ }, (args) => {
        const source = readFileSync(args.path, "utf8");
        if (!source.includes("createRequire(import.meta.url)(")) return undefined; // the source-import-meta plugin's
        const contents = source.replace(/createRequire\(import\.meta\.url\)\("([^"]+)"\)/g, (_, name) => {
          if (external.some((pattern) => pattern === name || name.startsWith(`${pattern.replace("*", "")}/`))) return `require(${JSON.stringify(name)})`;
          const file = `./vendor/${name.replace(/[^\w.-]/g, "_")}.cjs`;
          vendored.set(name, file);
          return `require(${JSON.stringify(file)})`;
        });
        return { contents: withSourceImportMeta(contents, args.path), loader: "ts" };
      });
      build.onResolve({ filter: /^\.\/vendor\// }, (args) => ({ path: args.path, external: true }));
      // Each such package in a CommonJS file of its own, read only by the child that requires it.
      build.onEnd(async (result) => {
        if (result.errors.length > 0) return;
        await Promise.all(
          [...vendored].map(([name, file]) =>
            build.esbuild.build({
              stdin: { contents: `module.exports = require(${JSON.stringify(name)});`, resolveDir: process.cwd(), loader: "js" },
              bundle: true,
              platform: "node",
              format: "cjs",
              target: "node20",
              outfile: join(build.initialOptions.outdir, file),
              logLevel: "silent",
            }),
          ),
        );
      });
    },
  };
  return {
    ...nodeBundleOptions,
    packages: undefined,
    external,
    plugins: [lazyRequire, ...nodeBundleOptions.plugins],
    banner: requireBanner,
  };
}
