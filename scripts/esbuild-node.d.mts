import type { BuildOptions } from "esbuild";

/** esbuild options for running this repository's TypeScript as plain node (see esbuild-node.mjs). */
export declare const nodeBundleOptions: BuildOptions;
