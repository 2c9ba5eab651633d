import { catalogueKey, NameIndex } from '../../core/catalogue/index.ts';
import { noExtraPositionals, positionals } from '../args.ts';
import { type Context, requireAccount } from '../context.ts';
import type { Command } from './types.ts';

/**
 * The model id a grant names: access is kept by id, so an alias (docs/models.md#aliases) is
 * resolved to the model it names, as the proxy resolves it. A name the catalogue does not know is
 * kept as given, so that a model can be granted before it is applied; the note says so, since an
 * alias granted before its model exists would be kept under a name no call is checked against.
 */
async function grantedModel(ctx: Context, name: string): Promise<{ modelId: string; note: string }> {
  const entry = new NameIndex(await ctx.catalogue.list()).resolve(name);
  if (entry === undefined) return { modelId: name, note: ' (not in the catalogue: kept as that id)' };
  if (catalogueKey(entry.id) === catalogueKey(name)) return { modelId: entry.id, note: '' };
  return { modelId: entry.id, note: ` (the model the alias ${name} names)` };
}

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
    usage: 'models grant <accountId> <modelId|alias>',
    summary: 'give an account access to an invite-only model (an alias grants the model it names)',
    flags: {},
    prepare(p) {
      const [accountId, name] = positionals(p, 'accountId', 'modelId');
      return async (ctx) => {
        await requireAccount(ctx, accountId);
        const { modelId, note } = await grantedModel(ctx, name);
        await ctx.accounts.grantModel(accountId, modelId);
        ctx.print(`granted ${modelId} to ${accountId}${note}`, { accountId, modelId, granted: true });
      };
    },
  },
  {
    name: 'models revoke',
    writes: true,
    usage: 'models revoke <accountId> <modelId|alias>',
    summary: 'take back access to an invite-only model (an alias names its model)',
    flags: {},
    prepare(p) {
      const [accountId, name] = positionals(p, 'accountId', 'modelId');
      return async (ctx) => {
        await requireAccount(ctx, accountId);
        const { modelId, note } = await grantedModel(ctx, name);
        await ctx.accounts.revokeModel(accountId, modelId);
        ctx.print(`revoked ${modelId} from ${accountId}${note}`, { accountId, modelId, granted: false });
      };
    },
  },
];
