import { describe, expect, it } from 'vitest';
import { committedApiTypes, generateApiTypes } from '../scripts/gen-api.mjs';

// src/api.gen.ts is generated from openapi.json (the api-server's OpenAPI
// document) and checked in; this regenerates it in memory with the same
// function `npm run gen:api` uses and fails when the two differ.
describe('generated API types', () => {
  it('src/api.gen.ts is current with openapi.json', async () => {
    const generated = await generateApiTypes();
    expect(
      committedApiTypes(),
      'src/api.gen.ts is missing or out of date with openapi.json: run `npm run gen:api` in web/ and commit the result',
    ).toBe(generated);
  }, 60_000);
});
