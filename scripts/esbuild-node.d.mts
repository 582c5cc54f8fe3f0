import type { BuildOptions } from "esbuild";

/** esbuild options for running this repository's TypeScript as plain node (see esbuild-node.mjs). */
export declare const nodeBundleOptions: BuildOptions;

/** The tests' CLI bundle: `nodeBundleOptions` with the npm packages of the CLI's common paths bundled in (see esbuild-node.mjs). */
export declare function cliBundleOptions(): BuildOptions;

/** A source file's text with its `import.meta.url`, `.dirname` and `.filename` naming `path`. */
export declare function withSourceImportMeta(text: string, path: string): string;

/** A banner giving an ES module bundle a `require` of its own. */
export declare const requireBanner: { js: string };
