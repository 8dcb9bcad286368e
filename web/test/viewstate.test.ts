import { describe, expect, it } from 'vitest';
import { decodeZoom, encodeZoom, flameStateQuery, readFlameState } from '../src/flame/viewstate';
import { hashWith, parseHash } from '../src/router';

describe('flame view state in the address', () => {
  it('encodes the zoom path as the server focus does, escaping separators', () => {
    expect(encodeZoom(['main', 'demo_hot'])).toBe('main;demo_hot');
    expect(encodeZoom([])).toBe('');
    const odd = ['ns::f<a;b>', 'back\\slash', 'plain'];
    expect(encodeZoom(odd)).toBe('ns::f<a\\;b>;back\\\\slash;plain');
    expect(decodeZoom(encodeZoom(odd))).toEqual(odd);
    expect(decodeZoom('')).toEqual([]);
    expect(decodeZoom('a;;b')).toEqual(['a', '', 'b']);
  });

  it('reads and writes zoom, search, highlight and sandwich through the hash query', () => {
    const hash = hashWith(
      '#/profiles/abc?include=demo',
      flameStateQuery({ zoom: ['main', 'demo_warm'], search: 'demo_(hot|warm)', select: 'demo_hot', sandwich: '' }),
    );
    const route = parseHash(hash);
    expect(route.path).toEqual(['profiles', 'abc']);
    expect(route.query.get('include')).toBe('demo');
    expect(readFlameState(route.query)).toEqual({
      zoom: ['main', 'demo_warm'],
      search: 'demo_(hot|warm)',
      select: 'demo_hot',
      sandwich: '',
    });
    expect(route.query.has('sandwich')).toBe(false);
    // Clearing a key removes it and keeps the rest.
    const cleared = hashWith(hash, flameStateQuery({ zoom: [], search: '' }));
    expect(cleared).toBe('#/profiles/abc?include=demo&select=demo_hot');
    expect(readFlameState(new URLSearchParams())).toEqual({ zoom: [], search: '', select: '', sandwich: '' });
  });

  it('leaves keys it is not given alone and handles hashes without a query', () => {
    expect(flameStateQuery({ select: 'f' })).toEqual({ select: 'f' });
    expect(hashWith('#/aggregate', { service: 'x' })).toBe('#/aggregate?service=x');
    expect(hashWith('', { a: undefined })).toBe('#/');
    expect(hashWith('#/compare?x=1', { x: '' })).toBe('#/compare');
  });
});
