export function buildStudio(outdir: string, options?: { minify?: boolean; root?: string }): Promise<{ js: number; css: number }>;
