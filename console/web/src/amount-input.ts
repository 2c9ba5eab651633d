// What a person types in an amount field, checked before it is sent (issue 48 item 10): a bad one
// is said in words that name the field as the form labels it, never as the API's parameter
// (`spendLimit 'abc' is not an amount…`), and nothing is sent.

/** A plain decimal, as the server parses amounts: digits, optionally a point and up to 9 more. */
const AMOUNT = /^\d+(\.\d{1,9})?$/;

/** A field's complaint, shown as it is. */
export class FieldError extends Error {}

/** A required amount: the trimmed text, or a FieldError naming `label`. */
export function requiredAmount(label: string, text: string): string {
  const t = text.trim();
  if (!AMOUNT.test(t)) throw new FieldError(`${label}: write an amount like 25 or 7.50.`);
  return t;
}

/** An amount that may be left blank for none: the trimmed text, null when blank, or a FieldError. */
export function optionalAmount(label: string, text: string): string | null {
  const t = text.trim();
  if (t === '') return null;
  if (!AMOUNT.test(t))
    throw new FieldError(`${label}: write an amount like 25 or 7.50, or leave it blank for none.`);
  return t;
}
