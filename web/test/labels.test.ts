import { describe, expect, it } from 'vitest';
import { formatLabels, labelFilter, parseLabels } from '../src/labels';

describe('labels text', () => {
  it('parses k=v pairs, trimming spaces and skipping blanks', () => {
    expect(parseLabels('env=prod, team = checkout ,')).toEqual({ env: 'prod', team: 'checkout' });
    expect(parseLabels('')).toEqual({});
    expect(parseLabels('  ,  ')).toEqual({});
  });

  it('takes the value after the first separator, = or :', () => {
    expect(parseLabels('url=http://x:8080/a=b')).toEqual({ url: 'http://x:8080/a=b' });
    expect(parseLabels('env:prod,ver:1.2=rc')).toEqual({ env: 'prod', ver: '1.2=rc' });
    expect(parseLabels('empty=')).toEqual({ empty: '' });
  });

  it('refuses pairs without a key or separator and repeated keys', () => {
    expect(() => parseLabels('env')).toThrow(/not key=value/);
    expect(() => parseLabels('=prod')).toThrow(/no key/);
    expect(() => parseLabels('env=a, env=b')).toThrow(/twice/);
  });

  it('formats labels sorted by key, and round-trips', () => {
    const labels = { team: 'x', env: 'prod' };
    expect(formatLabels(labels)).toBe('env=prod, team=x');
    expect(parseLabels(formatLabels(labels))).toEqual(labels);
    expect(formatLabels(undefined)).toBe('');
  });

  it("builds the list filter in the API's key:value syntax", () => {
    expect(labelFilter('env=prod, team:x')).toBe('env:prod,team:x');
    expect(labelFilter(' ')).toBeUndefined();
    expect(() => labelFilter('prod')).toThrow();
  });
});
