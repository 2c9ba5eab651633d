export {
  type ApiKeyRecord,
  type AuthenticatedKey,
  MAX_KEY_NAME_LENGTH,
  validateKeyName,
  validateSpendLimit,
} from './records.ts';
export {
  currentKeyPattern,
  generateSecret,
  hashSecret,
  isWellFormedSecret,
  MAX_SECRET_LENGTH,
  MIN_SECRET_LENGTH,
  maskSecret,
} from './secret.ts';
export { ApiKeys, type ApiKeysOptions, DEFAULT_KEY_NAME } from './store.ts';
