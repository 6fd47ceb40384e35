// Loads packages from the AI SDK test install (tests/aisdk/package.json, installed by
// scripts/setup-test.sh into .tools/aisdk, or into $LMCHATKIT_AISDK_DIR). Both `ai` versions sit
// side by side under npm aliases (`ai-6.0.0`, `ai-6.0.326`, `ai-7.0.185`), so nothing here imports a bare `ai`:
// every import goes through an absolute path, whatever the working directory.
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** The install folder: $LMCHATKIT_AISDK_DIR, or <repo>/.tools/aisdk. */
export const aisdkDir = resolve(process.env.LMCHATKIT_AISDK_DIR ?? join(repo, '.tools', 'aisdk'));

/** Imports the ESM entry of an installed package (`exports["."].import`, else `module`/`main`). */
export async function importPackage(name) {
  const root = join(aisdkDir, 'node_modules', name);
  let pkg;
  try {
    pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
  } catch (e) {
    throw new Error(`${name} is not installed in ${aisdkDir} (run ./scripts/setup-test.sh): ${e.message}`);
  }
  const dot = pkg.exports?.['.'];
  const entry = (typeof dot === 'string' ? dot : dot?.import ?? dot?.default) ?? pkg.module ?? pkg.main;
  return import(pathToFileURL(join(root, entry)).href);
}

/** Imports `ai` in one of the pinned versions ("6.0.0", "6.0.326" or "7.0.185"). */
export async function importAi(version) {
  if (!/^\d+\.\d+\.\d+$/.test(version ?? '')) {
    throw new Error(`usage: an ai version such as 6.0.0, got ${JSON.stringify(version)}`);
  }
  const ai = await importPackage(`ai-${version}`);
  return ai;
}
