// The text fields of a multipart form (image edits, videos), as the upload reader takes them.
import { invalidRequest } from '../../core/errors.ts';

/** Field name → value; no prototype, so a field named `__proto__` or `constructor` is just a field. */
export type FormFields = Record<string, string>;

export const formFields = (): FormFields => Object.create(null) as FormFields;

/** Records a field, refusing one sent twice: which of its values was meant cannot be known. */
export function takeField(fields: FormFields, name: string, value: unknown): void {
  if (name in fields) throw invalidRequest(`The form field '${name}' was sent twice; send it once.`, name);
  fields[name] = String(value);
}
