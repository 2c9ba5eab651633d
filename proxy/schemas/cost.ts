// usage.cost and usage.currency (../billing/call-cost.ts), documented once for every response
// that carries them, so /openapi.json (and the schemathesis run against it) knows the fields.
import { z } from 'zod';

export const costFields = {
  cost: z
    .string()
    .regex(/^[0-9]+(\.[0-9]{1,9})?$/)
    .describe(
      'What the ledger charged for this call, a decimal string in the account currency (exact, up to 9 ' +
        'decimals); sent even while the settlement is in flight, as it is the same number',
    ),
  currency: z.string().describe("The account's billing currency (ISO 4217)"),
};

/** The fields where a response always has them (a finished call). */
export const callCost = z.object(costFields);

/** The fields on a usage object that has them only at the end (a stream's earlier events lack them). */
export const optionalCostFields = {
  cost: costFields.cost.optional(),
  currency: costFields.currency.optional(),
};

export const COST_HEADER_DOC = {
  'x-modelplane-cost': {
    description: 'What the call cost: the same decimal string as usage.cost (non-streamed responses)',
    schema: { type: 'string' },
  },
};
