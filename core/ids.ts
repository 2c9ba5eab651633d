import { randomBytes } from 'node:crypto';

/** `req_` + 24 lowercase hex (SPEC "Errors" 1). */
export const newRequestId = () => `req_${randomBytes(12).toString('hex')}`;
export const REQUEST_ID_PATTERN = /^req_[0-9a-f]{24}$/;

/** `<prefix>_` + 16 lowercase hex: account, key, user, hold, video ids. */
export const newId = (prefix: string) => `${prefix}_${randomBytes(8).toString('hex')}`;
