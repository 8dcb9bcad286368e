import { describe, expect, it } from 'vitest';
import { decodeClaims, globMatch } from '../src/auth';
import { withQuery } from '../src/api';
import { href, parseHash } from '../src/router';
import { codeSearchUrl } from '../src/settings';

const b64url = (o: unknown) =>
  btoa(String.fromCharCode(...new TextEncoder().encode(JSON.stringify(o))))
    .replace(/\+/g, '-')
    .replace(/\//g, '_')
    .replace(/=+$/, '');

describe('token claims', () => {
  it('decodes the base64url payload of a JWT', () => {
    const token = `${b64url({ alg: 'HS256' })}.${b64url({ sub: 'ci-perf', role: 'profiler', services: ['checkout-*'], exp: 10 })}.sig`;
    expect(decodeClaims(token)).toEqual({ sub: 'ci-perf', role: 'profiler', services: ['checkout-*'], exp: 10 });
  });

  it('treats unknown roles as viewer and rejects non-JWTs', () => {
    expect(decodeClaims(`x.${b64url({ sub: 's', role: 'root' })}.y`)?.role).toBe('viewer');
    expect(decodeClaims('not-a-token')).toBeNull();
    expect(decodeClaims('a.!!!.c')).toBeNull();
  });

  it('matches service globs like the server', () => {
    expect(globMatch('checkout-*', 'checkout-api')).toBe(true);
    expect(globMatch('checkout-*', 'search')).toBe(false);
    expect(globMatch('se?rch', 'search')).toBe(true);
    expect(globMatch('a.b', 'axb')).toBe(false);
  });
});

describe('urls', () => {
  it('parses hash routes with their query', () => {
    const r = parseHash('#/profiles/abc?service=cpu-split&status=finished');
    expect(r.path).toEqual(['profiles', 'abc']);
    expect(r.query.get('service')).toBe('cpu-split');
    expect(parseHash('').path).toEqual([]);
  });

  it('builds hash links and API queries without empty parameters', () => {
    expect(href('compare', { baseline: 'a', target: undefined })).toBe('#/compare?baseline=a');
    expect(withQuery('/api/v1/profiles', { service: 'x y', host: '', limit: 5, cursor: null })).toBe(
      '/api/v1/profiles?service=x+y&limit=5',
    );
  });

  it('fills the code-search template with the encoded function name', () => {
    expect(codeSearchUrl('ns::f<int>', 'https://cs/?q={function}&f={function}')).toBe(
      'https://cs/?q=ns%3A%3Af%3Cint%3E&f=ns%3A%3Af%3Cint%3E',
    );
  });
});

describe('timeline bars', () => {
  it('compare windows sampled at different rates by time', async () => {
    const { timelineWeight } = await import('../src/profiles/panels');
    // 999 samples at 999 Hz and 19 samples at 19 Hz are both one second.
    expect(timelineWeight({ samples: 999, frequency_hz: 999 })).toBeCloseTo(1);
    expect(timelineWeight({ samples: 19, frequency_hz: 19 })).toBeCloseTo(1);
    // Without a frequency (allocation bytes) the count is the measure.
    expect(timelineWeight({ samples: 4096, frequency_hz: 0 })).toBe(4096);
  });
});
