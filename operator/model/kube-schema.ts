// What the Model's zod schema has to tell the API server that zod alone cannot say: CEL rules,
// int-or-string, map sizes, int64. Each is zod metadata, carried into the CRD's OpenAPI schema by
// model/crd/structural.ts, and wherever the local runtime can check the same thing, checked here
// too, so the API server and the local runtime refuse the same Models with the same message.
import { z } from 'zod';

const VALIDATIONS = 'x-kubernetes-validations';

interface Validation {
  rule: string;
  message: string;
}

/** Adds a CEL rule to the ones `schema` already carries (metadata is replaced, not merged, by zod). */
function withValidation<S extends z.ZodType>(schema: S, rule: { cel: string; message: string }): S {
  const before = (schema.meta()?.[VALIDATIONS] as Validation[] | undefined) ?? [];
  return schema.meta({ [VALIDATIONS]: [...before, { rule: rule.cel, message: rule.message }] });
}

/** One rule, run by both validators: `holds` in zod for the local runtime, `cel` in the API server. */
export function celRule<S extends z.ZodType>(
  schema: S,
  rule: { cel: string; message: string; holds: (value: z.output<S>) => boolean },
): S {
  return withValidation(schema.refine(rule.holds, rule.message), rule);
}

/**
 * A rule on a change (CEL's `oldSelf`): only the API server holds the stored object, so only it
 * can check one. The local runtime reads each file as new.
 */
export function transitionRule<S extends z.ZodType>(schema: S, rule: { cel: string; message: string }): S {
  return withValidation(schema, rule);
}

/**
 * An integer or a string, as a Kubernetes quantity or IntOrString takes it. A structural schema
 * allows only the bare `anyOf: [integer, string]` here, so any bound on either goes in a CEL rule.
 */
export const intOrString = () => z.union([z.int(), z.string()]).meta({ 'x-kubernetes-int-or-string': true });

/** A string-keyed map of at most `max` entries (the API server's CEL cost needs every map bounded). */
export function boundedRecord<V extends z.ZodType>(
  value: V,
  max: number,
  least?: { count: number; message: string },
) {
  const sized = z
    .record(z.string(), value)
    .refine((r) => Object.keys(r).length <= max, `at most ${max} entries`)
    .meta({ maxProperties: max });
  if (!least) return sized;
  return sized
    .refine((r) => Object.keys(r).length >= least.count, least.message)
    .meta({ minProperties: least.count, maxProperties: max });
}

/** An integer stored as int64 (a generation, toleration seconds): zod's number, Kubernetes' format. */
export const int64 = () => z.int().meta({ format: 'int64' });

/** A time the operator writes as RFC 3339 (status only: zod never parses status). */
export const dateTime = () => z.string().meta({ format: 'date-time' });
