#!/usr/bin/env node
// The web UI's API types, generated from the api-server's OpenAPI document
// (openapi.json, kept equal to what /api/openapi.json serves by the
// api-server's tests) with openapi-typescript's Node API. `npm run gen:api`
// writes src/api.gen.ts; test/api-gen.test.ts calls `generateApiTypes` and
// fails when the committed file differs, so both go through this one
// function and cannot disagree.

import { readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import openapiTS, { astToString } from 'openapi-typescript';

/** The OpenAPI document the types come from. */
export const SPEC = new URL('../openapi.json', import.meta.url);
/** The generated file, checked in so type checks and tests run without generating. */
export const OUTPUT = new URL('../src/api.gen.ts', import.meta.url);

const HEADER = `// GENERATED FILE, do not edit: \`npm run gen:api\` (scripts/gen-api.mjs)
// writes it from openapi.json with openapi-typescript. The api-server's
// OpenAPI document is the source; test/api-gen.test.ts fails when this
// file is out of date. Use these types through src/api.ts (\`Schemas\`).

`;

/** openapi-typescript's options. `emptyObjectsUnknown`: a free-form object
 *  (`{"type": "object"}`, e.g. Profile.runtime, Rule.spec) becomes
 *  `Record<string, unknown>`, not the default `Record<string, never>` (an
 *  object with no keys). */
const OPTIONS = { emptyObjectsUnknown: true, silent: true };

/** The contents src/api.gen.ts should have for the current openapi.json. */
export async function generateApiTypes() {
  const ast = await openapiTS(JSON.parse(readFileSync(SPEC, 'utf8')), OPTIONS);
  return HEADER + astToString(ast);
}

/** The checked-in src/api.gen.ts, or null when there is none. */
export function committedApiTypes() {
  try {
    return readFileSync(OUTPUT, 'utf8');
  } catch {
    return null;
  }
}

// Run as a script (not imported by the test): write, or with --check only compare.
if (process.argv[1] && fileURLToPath(import.meta.url) === realpathSync(process.argv[1])) {
  const text = await generateApiTypes();
  if (process.argv.includes('--check')) {
    if (committedApiTypes() !== text) {
      console.error('src/api.gen.ts is out of date with openapi.json: run `npm run gen:api`');
      process.exit(1);
    }
  } else if (committedApiTypes() !== text) {
    writeFileSync(OUTPUT, text);
    console.log('wrote src/api.gen.ts from openapi.json');
  } else {
    console.log('src/api.gen.ts is up to date');
  }
}
