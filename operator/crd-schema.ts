// The small builders of the Model CRD's OpenAPI schema, shared by operator/crd.ts and its parts.
export type Schema = Record<string, unknown>;
export const str = (extra: Schema = {}): Schema => ({ type: 'string', ...extra });
export const int = (extra: Schema = {}): Schema => ({ type: 'integer', format: 'int32', ...extra });
/** A key of a Secret or ConfigMap (env valueFrom). */
export const ref = (what: string): Schema => ({
  type: 'object',
  required: ['name', 'key'],
  description: `A key of a ${what} in the Model's namespace.`,
  properties: {
    name: str({ minLength: 1, maxLength: 253 }),
    key: str({ minLength: 1, maxLength: 253 }),
    optional: { type: 'boolean' },
  },
});
/** A whole Secret or ConfigMap (envFrom). */
export const named = (what: string): Schema => ({
  type: 'object',
  required: ['name'],
  description: `Every key of a ${what} in the Model's namespace.`,
  properties: { name: str({ minLength: 1, maxLength: 253 }), optional: { type: 'boolean' } },
});
