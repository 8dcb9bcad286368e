import { defineConfig } from 'vitest/config';

// Served by the api-server from web/dist at the site root; the UI routes by
// URL hash, so asset paths are absolute from "/". `npm run dev` proxies
// /api to ODP_API_URL (e.g. the quick start's, with its self-signed cert).
export default defineConfig({
  base: '/',
  build: { outDir: 'dist', emptyOutDir: true },
  server: process.env.ODP_API_URL
    ? { proxy: { '/api': { target: process.env.ODP_API_URL, changeOrigin: true, secure: false } } }
    : {},
  test: { include: ['test/**/*.test.ts'], environment: 'node' },
});
