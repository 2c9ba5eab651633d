import { noExtraPositionals, positionals } from '../args.ts';
import { requireAccount } from '../context.ts';
import type { Command } from './types.ts';

export const modelCommands: Command[] = [
  {
    name: 'models list',
    writes: false,
    usage: 'models list',
    summary: 'list the catalogue as the operator wrote it',
    flags: {},
    prepare(p) {
      noExtraPositionals(p, 0);
      return async (ctx) => {
        const list = await ctx.catalogue.list();
        ctx.print(
          list
            .map(
              (m) =>
                `${m.id}  ${m.kind}  ${m.availability}  ${Object.keys(m.pricing).join(',')}  endpoints=${m.endpoints.length}`,
            )
            .join('\n') || '(empty catalogue)',
          list,
        );
      };
    },
  },
  {
    name: 'models grant',
    writes: true,
    usage: 'models grant <accountId> <modelId>',
    summary: 'give an account access to an invite-only model',
    flags: {},
    prepare(p) {
      const [accountId, modelId] = positionals(p, 'accountId', 'modelId');
      return async (ctx) => {
        await requireAccount(ctx, accountId);
        await ctx.accounts.grantModel(accountId, modelId);
        ctx.print(`granted ${modelId} to ${accountId}`, { accountId, modelId, granted: true });
      };
    },
  },
  {
    name: 'models revoke',
    writes: true,
    usage: 'models revoke <accountId> <modelId>',
    summary: 'take back access to an invite-only model',
    flags: {},
    prepare(p) {
      const [accountId, modelId] = positionals(p, 'accountId', 'modelId');
      return async (ctx) => {
        await requireAccount(ctx, accountId);
        await ctx.accounts.revokeModel(accountId, modelId);
        ctx.print(`revoked ${modelId} from ${accountId}`, { accountId, modelId, granted: false });
      };
    },
  },
];
