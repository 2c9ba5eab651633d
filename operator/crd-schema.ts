// The small builders of the Model CRD's OpenAPI schema, shared by operator/crd.ts and its parts.
export type Schema = Record<string, unknown>;
export const str = (extra: Schema = {}): Schema => ({ type: 'string', ...extra });
export const int = (extra: Schema = {}): Schema => ({ type: 'integer', format: 'int32', ...extra });
