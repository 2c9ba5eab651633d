// The Model CRD's `spec.aliases` (docs/models.md#aliases); the rule it states is core/catalogue/aliases.ts.
import { ALIAS_PATTERN } from '../core/catalogue/aliases.ts';
import { type Schema, str } from './crd-schema.ts';

export const aliasesProperty: Schema = {
  type: 'array',
  maxItems: 32,
  items: str({ minLength: 1, maxLength: 256, pattern: ALIAS_PATTERN }),
  description:
    'Other names that resolve to this model (names clients hard-code): exact, or a prefix ending in "*". Case-insensitive; billed and answered as id. An alias another Model already holds, or equal to another id, is dropped (condition AliasConflict).',
};
