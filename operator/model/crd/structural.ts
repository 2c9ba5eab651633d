// A zod schema as a Kubernetes structural schema (the OpenAPI v3 subset a CRD may carry), by way
// of zod's own JSON Schema output: what zod says is kept, what Kubernetes forbids or spells
// otherwise is rewritten, and anything it cannot take fails here, when crds/ is generated, rather
// than when the API server refuses the CRD.
import { z } from 'zod';

export type Schema = Record<string, unknown>;

/**
 * What a structural schema may say (apiextensions' JSONSchemaProps, less what it forbids or we
 * never need: $ref, allOf/oneOf/not, anyOf beyond int-or-string, nullable).
 */
const ALLOWED = new Set([
  'type',
  'format',
  'description',
  'default',
  'enum',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'multipleOf',
  'minLength',
  'maxLength',
  'pattern',
  'minItems',
  'maxItems',
  'uniqueItems',
  'minProperties',
  'maxProperties',
  'required',
  'properties',
  'items',
  'additionalProperties',
  'x-kubernetes-validations',
  'x-kubernetes-list-type',
  'x-kubernetes-list-map-keys',
  'x-kubernetes-map-type',
  'x-kubernetes-preserve-unknown-fields',
]);
const INT_OR_STRING = 'x-kubernetes-int-or-string';

export function structuralSchema(schema: z.ZodType): Schema {
  const json = z.toJSONSchema(schema, {
    io: 'input', // what a Model's author writes: a field with a default is optional
    target: 'openapi-3.0',
    unrepresentable: 'throw',
    override: ({ zodSchema, jsonSchema }) => {
      // zod checks int32 but does not name the format; Kubernetes (and kubectl explain) does.
      if (zodSchema instanceof z.ZodNumber && zodSchema.format === 'int32') jsonSchema.format = 'int32';
    },
  }) as Schema;
  delete json.$schema;
  return structural(json, '');
}

function structural(node: Schema, path: string): Schema {
  const out: Schema = {};
  for (const [key, value] of Object.entries(node)) {
    if (key === 'propertyNames') continue; // a record's keys: always strings to Kubernetes
    // zod's strictObject: Kubernetes forbids `false` here and prunes unknown fields instead.
    if (key === 'additionalProperties' && value === false) continue;
    // zod's bounds of a JS number, or of int32, which the API server enforces from the format.
    if ((key === 'minimum' || key === 'maximum') && typeBound(value as number, node.format)) continue;
    if (key === INT_OR_STRING) {
      // A structural schema takes int-or-string only as this exact anyOf, with no type beside it.
      out[INT_OR_STRING] = true;
      out.anyOf = [{ type: 'integer' }, { type: 'string' }];
      continue;
    }
    if (key === 'anyOf' && node[INT_OR_STRING] === true) continue;
    if (key === 'type' && node[INT_OR_STRING] === true) continue;
    if (!ALLOWED.has(key)) throw new Error(`${path || '/'}: a CRD schema cannot hold ${key}`);
    if (key === 'pattern') out[key] = unescapeSlashes(value as string);
    else if (key === 'properties')
      out[key] = Object.fromEntries(
        Object.entries(value as Record<string, Schema>).map(([name, s]) => [
          name,
          structural(s, `${path}/${name}`),
        ]),
      );
    else if ((key === 'items' || key === 'additionalProperties') && typeof value === 'object')
      out[key] = structural(value as Schema, `${path}/${key === 'items' ? '[]' : '*'}`);
    else out[key] = value;
  }
  if (out.properties !== undefined && out.additionalProperties !== undefined)
    throw new Error(`${path || '/'}: a CRD schema cannot hold both properties and additionalProperties`);
  if (out.type === undefined && out[INT_OR_STRING] !== true)
    throw new Error(`${path || '/'}: a CRD schema needs a type at every level`);
  return leading(out);
}

/** Type, description and required ahead of the rest, so crds/model.yaml reads as a field's summary first. */
function leading(schema: Schema): Schema {
  const { type, description, required, ...rest } = schema;
  return Object.fromEntries(
    Object.entries({ type, description, required, ...rest }).filter(([, v]) => v !== undefined),
  );
}

const INT32 = [-(2 ** 31), 2 ** 31 - 1];
function typeBound(bound: number, format: unknown): boolean {
  return Math.abs(bound) === Number.MAX_SAFE_INTEGER || (format === 'int32' && INT32.includes(bound));
}

/** A RegExp's source escapes `/` (`\/`); it means `/` in RE2 too, and reads better without. */
function unescapeSlashes(pattern: string): string {
  return pattern.replace(/\\(.)/g, (escaped, c: string) => (c === '/' ? '/' : escaped));
}
