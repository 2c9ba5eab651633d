import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { celRule, int64, intOrString, transitionRule } from '../kube-schema.ts';
import { structuralSchema } from './structural.ts';

describe('structuralSchema (zod → a CRD schema)', () => {
  it.each([
    {
      name: 'a strict object prunes instead of refusing (no additionalProperties: false); required stays',
      zod: z.strictObject({ a: z.string(), b: z.string().optional() }),
      crd: { type: 'object', required: ['a'], properties: { a: { type: 'string' }, b: { type: 'string' } } },
    },
    {
      name: "a record's keys are strings without saying so (no propertyNames)",
      zod: z.record(z.string(), z.boolean()),
      crd: { type: 'object', additionalProperties: { type: 'boolean' } },
    },
    {
      name: 'int32 names its format, and its range is the format’s',
      zod: z.int32().min(1),
      crd: { type: 'integer', minimum: 1, format: 'int32' },
    },
    {
      name: 'int64 keeps no JS-number bounds',
      zod: int64(),
      crd: { type: 'integer', format: 'int64' },
    },
    {
      name: 'int-or-string is the bare anyOf, its bounds in CEL',
      zod: celRule(intOrString(), { cel: 'type(self) == int', message: 'an int', holds: () => true }),
      crd: {
        'x-kubernetes-int-or-string': true,
        anyOf: [{ type: 'integer' }, { type: 'string' }],
        'x-kubernetes-validations': [{ rule: 'type(self) == int', message: 'an int' }],
      },
    },
    {
      name: 'rules add up, the description leads',
      zod: transitionRule(
        celRule(z.strictObject({ a: z.string().optional() }).describe('A thing.'), {
          cel: 'has(self.a)',
          message: 'needs a',
          holds: (v) => v.a !== undefined,
        }),
        { cel: 'self == oldSelf', message: 'immutable' },
      ),
      crd: {
        type: 'object',
        description: 'A thing.',
        properties: { a: { type: 'string' } },
        'x-kubernetes-validations': [
          { rule: 'has(self.a)', message: 'needs a' },
          { rule: 'self == oldSelf', message: 'immutable' },
        ],
      },
    },
    {
      name: "a RegExp's escaped slash reads as a slash; other escapes stay",
      zod: z.string().regex(/^https?:\/\/[a-z]\.\\$/),
      crd: { type: 'string', pattern: '^https?://[a-z]\\.\\\\$' },
    },
    {
      name: 'a literal is a one-value enum',
      zod: z.literal('x'),
      crd: { type: 'string', enum: ['x'] },
    },
    {
      name: 'a default written as metadata reaches the API server',
      zod: z.enum(['a', 'b']).meta({ default: 'a' }).optional(),
      crd: { type: 'string', enum: ['a', 'b'], default: 'a' },
    },
  ])('$name', ({ zod, crd }) => {
    expect(structuralSchema(zod)).toEqual(crd);
  });

  it.each([
    {
      name: 'a union other than int-or-string',
      zod: z.object({ u: z.union([z.string(), z.boolean()]) }),
      says: '/u: a CRD schema cannot hold anyOf',
    },
    {
      name: 'named fields beside a catch-all',
      zod: z.object({ k: z.string() }).catchall(z.number()),
      says: '/: a CRD schema cannot hold both properties and additionalProperties',
    },
    {
      name: 'two patterns (allOf)',
      zod: z.string().regex(/a/).regex(/b/),
      says: '/: a CRD schema cannot hold allOf',
    },
    { name: 'null', zod: z.object({ n: z.string().nullable() }), says: '/n: a CRD schema cannot hold' },
    {
      name: 'a value zod cannot describe',
      zod: z.object({ d: z.date() }),
      says: 'Date cannot be represented',
    },
  ])('refuses $name, naming where', ({ zod, says }) => {
    expect(() => structuralSchema(zod)).toThrow(says);
  });
});
