// Builds dist/code_editor.js: src/index.js and the CodeMirror packages it imports, as one
// minified ES module whose default export Streamlit's custom components v2 calls.
//
// The bundle's first line records a SHA-256 of the sources (this file, package.json,
// package-lock.json, src/**); tests/test_editor.py recomputes it without npm, so a source edit
// committed without a rebuild fails a test. The licences of the bundled packages go to
// dist/THIRD_PARTY_LICENSES.txt.
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { dirname, join, relative, sep } from "node:path";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";

const root = dirname(fileURLToPath(import.meta.url));

function files(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    return entry.isDirectory() ? files(path) : [path];
  });
}

// The same recipe as tests/test_editor.py: for each file, sorted by its path relative to this
// folder (with "/"), the path, a NUL byte, the file's bytes with CRLF read as LF (a checkout
// that converts line endings hashes the same), a NUL byte.
export function sourcesHash() {
  const paths = ["build.mjs", "package.json", "package-lock.json"]
    .map((name) => join(root, name))
    .concat(files(join(root, "src")));
  const rel = paths.map((p) => relative(root, p).split(sep).join("/")).sort();
  const hash = createHash("sha256");
  for (const name of rel) {
    hash.update(name + "\0");
    hash.update(readFileSync(join(root, name), "latin1").replaceAll("\r\n", "\n"), "latin1");
    hash.update("\0");
  }
  return hash.digest("hex");
}

const result = await esbuild.build({
  entryPoints: [join(root, "src", "index.js")],
  bundle: true,
  format: "esm",
  minify: true,
  target: "es2020",
  legalComments: "none",
  metafile: true,
  write: false,
  logLevel: "warning",
});

// The npm packages with code in the bundle, with their versions and licences.
const packages = new Map();
const [output] = Object.values(result.metafile.outputs);
for (const [input, { bytesInOutput }] of Object.entries(output.inputs)) {
  if (!bytesInOutput) continue;
  const match = input.match(/node_modules\/((?:@[^/]+\/)?[^/]+)\//);
  if (!match || packages.has(match[1])) continue;
  const dir = join(root, "node_modules", match[1]);
  const meta = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
  const licenceFile = readdirSync(dir).find((name) => /^licen[cs]e/i.test(name));
  packages.set(match[1], {
    version: meta.version,
    license: meta.license,
    text: licenceFile ? readFileSync(join(dir, licenceFile), "utf8").trim() : "",
  });
}
const names = [...packages.keys()].sort();

const header =
  `/*! jaxplay code editor, built by frontend/code_editor/build.mjs; ` +
  `sources-sha256: ${sourcesHash()}; bundles ` +
  names.map((n) => `${n}@${packages.get(n).version} (${packages.get(n).license})`).join(", ") +
  `; licences in THIRD_PARTY_LICENSES.txt */\n`;

const dist = join(root, "dist");
if (!existsSync(dist)) mkdirSync(dist);
writeFileSync(join(dist, "code_editor.js"), header + result.outputFiles[0].text);
writeFileSync(
  join(dist, "THIRD_PARTY_LICENSES.txt"),
  names
    .map((n) => `${n}@${packages.get(n).version}\n\n${packages.get(n).text}\n`)
    .join("\n" + "-".repeat(72) + "\n\n"),
);
console.log(`dist/code_editor.js: ${(header.length + result.outputFiles[0].text.length) / 1000} kB`);
