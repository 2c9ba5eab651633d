// Validates bodies and stream events against OpenAI's published schemas (./schemas.json, fetched by
// ./fetch.ts with its commit named): what a strict client's decoder would accept.
import { readFileSync } from 'node:fs';
import { Ajv2020 } from 'ajv/dist/2020.js';

const fixture = JSON.parse(readFileSync(new URL('./schemas.json', import.meta.url), 'utf8')) as {
  source: { repository: string; path: string; commit: string };
  schemas: Record<string, unknown>;
};

export const openapiSource = fixture.source;

/** OpenAPI's component references as JSON Schema's own ($defs of one document). */
function localRefs(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(localRefs);
  if (node === null || typeof node !== 'object') return node;
  const o = node as Record<string, unknown>;
  // OpenAPI 3.0's nullable, left in a few schemas: JSON Schema says it as "or null".
  if (o.nullable === true) {
    const { nullable: _n, ...rest } = o;
    return { anyOf: [localRefs(rest), { type: 'null' }] };
  }
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(node)) {
    // CompoundFilter nests itself by draft 2019's recursive reference: by its name here.
    if (k === '$recursiveAnchor') continue;
    if (k === '$recursiveRef') out.$ref = '#/$defs/CompoundFilter';
    else
      out[k] =
        k === '$ref' && typeof v === 'string' ? v.replace('#/components/schemas/', '#/$defs/') : localRefs(v);
  }
  return out;
}

// OpenAPI's own keywords (discriminator, x-oaiMeta, example…) are not JSON Schema's: ignored.
const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
ajv.addSchema({ $id: 'openai', $defs: localRefs(fixture.schemas) as Record<string, unknown> });

/** The errors of `value` against the named component schema ([] when it is valid). */
export function schemaErrors(name: string, value: unknown): string[] {
  const validate = ajv.getSchema(`openai#/$defs/${name}`);
  if (validate === undefined) throw new Error(`the fixture has no schema ${name}`);
  if (validate(value)) return [];
  return (validate.errors ?? [])
    .slice(0, 12)
    .map(
      (e: { instancePath: string; message?: string; params: unknown }) =>
        `${e.instancePath || '/'} ${e.message} ${JSON.stringify(e.params)}`,
    );
}

/**
 * The errors of a Responses stream event against the ResponseStreamEvent variant its type names
 * (the union's own errors list every variant's).
 */
export function eventErrors(event: { type?: unknown }): string[] {
  const union = fixture.schemas.ResponseStreamEvent as {
    anyOf?: { $ref: string }[];
    oneOf?: { $ref: string }[];
  };
  for (const v of union.anyOf ?? union.oneOf ?? []) {
    const name = v.$ref.replace('#/components/schemas/', '');
    const type = (fixture.schemas[name] as { properties?: { type?: { enum?: unknown[]; const?: unknown } } })
      .properties?.type;
    if (type?.const === event.type || type?.enum?.includes(event.type)) return schemaErrors(name, event);
  }
  return [`no ResponseStreamEvent variant has type ${JSON.stringify(event.type)}`];
}
