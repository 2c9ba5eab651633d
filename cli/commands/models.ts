import { NameIndex } from '../../core/catalogue/aliases.ts';
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
        // Access is checked against the model a call resolves to, so an alias is granted as its
        // model's id; a name nothing answers to yet (a model still to be published) as written.
        const entry = new NameIndex(await ctx.catalogue.list()).resolve(modelId);
        const granted = entry?.id ?? modelId;
        await ctx.accounts.grantModel(accountId, granted);
        const how =
          entry === undefined
            ? ' (no catalogued model answers to this name yet; granted as written)'
            : granted.toLowerCase() !== modelId.toLowerCase()
              ? ` (${modelId} is an alias of it)`
              : '';
        ctx.print(`granted ${granted} to ${accountId}${how}`, {
          accountId,
          modelId: granted,
          ...(granted !== modelId ? { asked: modelId } : {}),
          catalogued: entry !== undefined,
          granted: true,
        });
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
        const revoked = new NameIndex(await ctx.catalogue.list()).resolve(modelId)?.id ?? modelId;
        await ctx.accounts.revokeModel(accountId, revoked);
        ctx.print(`revoked ${revoked} from ${accountId}`, { accountId, modelId: revoked, granted: false });
      };
    },
  },
];
