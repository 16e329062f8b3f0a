// Build the dashboard into OUTDIR (default ../build/web): assets/app-HASH.js
// and assets/app-HASH.css (content-hashed names, so gantryd may let browsers
// cache them for a year) and index.html naming them (never cached) and
// preloading the chunks split off the entry. Offline:
// only esbuild from node_modules is used.
import { build } from "esbuild";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const outdir = resolve(process.argv[2] || join(here, "..", "build", "web"));
rmSync(join(outdir, "assets"), { recursive: true, force: true });
mkdirSync(join(outdir, "assets"), { recursive: true });

const result = await build({
  entryPoints: { app: join(here, "src", "main.ts") },
  bundle: true,
  minify: true,
  sourcemap: false,
  format: "esm",
  target: ["chrome110", "firefox110", "safari16"],
  outdir: join(outdir, "assets"),
  entryNames: "[name]-[hash]",
  chunkNames: "[name]-[hash]",
  splitting: true, // the YAML library loads only on the pages that need it
  metafile: true,
  logLevel: "warning",
});

const outputs = Object.entries(result.metafile.outputs);
const js = outputs.find(([, o]) => o.entryPoint)?.[0];
const css = outputs.find(([p]) => p.endsWith(".css"))?.[0];
if (!js || !css) {
  throw new Error(`esbuild gave no ${js ? "CSS" : "JavaScript"} output`);
}
// the other chunks (the YAML library's) are fetched at once but run only
// when a page imports them: at hand even after the replica that served
// the page has gone (docs/ha.md)
const chunks = outputs
  .filter(([p]) => p.endsWith(".js") && p !== js)
  .map(([p]) => `<link rel="modulepreload" href="/assets/${basename(p)}">\n`)
  .join("");
writeFileSync(
  join(outdir, "index.html"),
  `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>gantry</title>
<link rel="stylesheet" href="/assets/${basename(css)}">
<script type="module" src="/assets/${basename(js)}"></script>
${chunks}</head>
<body><div id="app"></div></body>
</html>
`,
);
