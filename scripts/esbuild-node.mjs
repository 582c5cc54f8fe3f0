// esbuild options for running this repository's TypeScript as plain node (the test runner's build,
// the tests' child processes): Node 20 ESM, npm packages external (resolved from node_modules, so
// the output goes below the repository), code splitting (a lazy import() stays lazy), and every
// module's import.meta.url/.dirname/.filename naming its source file, as under tsx.
import { readFileSync } from "node:fs";
import { dirname } from "node:path";
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

/** A source file's text with its `import.meta.url`, `.dirname` and `.filename` naming `path`, as in the source. */
export function withSourceImportMeta(text, path) {
  return text
    .replaceAll("import.meta.url", JSON.stringify(pathToFileURL(path).href))
    .replaceAll("import.meta.dirname", JSON.stringify(dirname(path)))
    .replaceAll("import.meta.filename", JSON.stringify(path));
}
