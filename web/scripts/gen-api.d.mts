// Types of gen-api.mjs for the TypeScript that imports it (test/api-gen.test.ts).

/** The OpenAPI document the types come from (web/openapi.json). */
export declare const SPEC: URL;
/** The generated file (web/src/api.gen.ts). */
export declare const OUTPUT: URL;
/** The contents src/api.gen.ts should have for the current openapi.json. */
export declare function generateApiTypes(): Promise<string>;
/** The checked-in src/api.gen.ts, or null when there is none. */
export declare function committedApiTypes(): string | null;
