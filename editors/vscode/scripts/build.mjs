// Bundles the extension with esbuild (dist/extension.js: node_modules need not ship in the .vsix).
// `--tests` bundles the unit tests instead (out/unit/*.test.js, run by `node --test out/unit/`).
import { build } from "esbuild";
import { readdirSync, rmSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const tests = process.argv.includes("--tests");
const common = { bundle: true, platform: "node", format: "cjs", target: "node20", sourcemap: true, logLevel: "warning" };

if (tests) {
  const dir = join(root, "test", "unit");
  const entries = readdirSync(dir).filter((f) => f.endsWith(".test.ts")).map((f) => join(dir, f));
  rmSync(join(root, "out", "unit"), { recursive: true, force: true });
  // The pure modules must not need vscode: leaving it unresolvable makes a stray import fail loudly.
  await build({ ...common, entryPoints: entries, outdir: join(root, "out", "unit"), external: [] });
} else {
  rmSync(join(root, "dist"), { recursive: true, force: true });
  await build({
    ...common,
    entryPoints: [join(root, "src", "extension.ts")],
    outfile: join(root, "dist", "extension.js"),
    external: ["vscode"],
    minify: true,
    sourcesContent: false,
  });
}
console.log(`build: ${tests ? "unit tests -> out/unit/" : "extension -> dist/extension.js"}`);
