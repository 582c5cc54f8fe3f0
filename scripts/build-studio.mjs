// Builds the studio page (studio/src, React) with esbuild into a folder: index.html and
// assets/studio.js + assets/studio.css. No inline script, no CDN: the server's
// Content-Security-Policy allows only these files. Used by `npm run build` (into dist/studio) and
// by scripts/run-tests.mjs (a fresh build per test run, AGENTLOOP_STUDIO_ASSETS).
// Usage: node scripts/build-studio.mjs [outdir]   (default dist/studio)
import { copyFileSync, mkdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { gzipSync } from "node:zlib";

/** Builds the page into `outdir`; resolves with the sizes of its script and stylesheet (bytes, gzipped). */
export async function buildStudio(outdir, { minify = true, root = resolve(import.meta.dirname, "..") } = {}) {
  const { build } = await import("esbuild");
  mkdirSync(join(outdir, "assets"), { recursive: true });
  await build({
    entryPoints: { studio: join(root, "studio/src/main.tsx") },
    outdir: join(outdir, "assets"),
    bundle: true,
    format: "esm",
    platform: "browser",
    target: ["chrome111", "firefox115", "safari16"],
    jsx: "automatic",
    minify,
    legalComments: "none",
    define: { "process.env.NODE_ENV": '"production"' },
    logLevel: "silent",
    absWorkingDir: root,
  });
  copyFileSync(join(root, "studio/index.html"), join(outdir, "index.html"));
  const gz = (name) => gzipSync(readFileSync(join(outdir, "assets", name))).length;
  return { js: gz("studio.js"), css: gz("studio.css") };
}

// Run as a script (not when imported, nor when bundled into another entry point).
if (process.argv[1]?.endsWith("build-studio.mjs") && import.meta.url === `file://${process.argv[1]}`) {
  const outdir = resolve(process.argv[2] ?? "dist/studio");
  const sizes = await buildStudio(outdir);
  console.log(`studio built into ${outdir}: studio.js ${(sizes.js / 1024).toFixed(1)} KB gzipped, studio.css ${(sizes.css / 1024).toFixed(1)} KB gzipped`);
}
