// Team (issue "Console" item 6; SPEC "API key" rule 1): members and their roles, invitations by
// link (no mail server: the link is shown here to send), and removal with the option "Also revoke
// the API keys this member created" (KEY-7). Owners change the team; members see it.
import { useCallback, useEffect, useState } from 'react';
import { api, type Me, type Role, type TeamView } from '../api.ts';
import { CopyButton } from '../copy.tsx';
import { Dialog } from '../Dialog.tsx';
import { date } from '../format.ts';
import { ErrorLine, ScrollTable } from '../parts.tsx';
import { useTitle } from '../title.ts';

type Member = TeamView['members'][number];

export function Team({ me }: { me: Me }) {
  useTitle('Team');
  const owner = me.account.role === 'owner';
  const [team, setTeam] = useState<TeamView | null>(null);
  const [email, setEmail] = useState('');
  const [role, setRole] = useState<Role>('member');
  const [link, setLink] = useState<{ email: string; link: string } | null>(null);
  const [removing, setRemoving] = useState<Member | null>(null);
  const [error, setError] = useState('');
  const reload = useCallback(async () => setTeam(await api.team()), []);
  useEffect(() => {
    void reload();
  }, [reload]);
  // The last owner can neither leave nor become a member (the server refuses both): not offered.
  const owners = (team?.members ?? []).filter((m) => m.role === 'owner').length;
  const soleOwner = (m: Member) => m.role === 'owner' && owners === 1;
  const act = async (f: () => Promise<void>) => {
    setError('');
    try {
      await f();
      await reload();
    } catch (err) {
      setError((err as Error).message);
    }
  };

  return (
    <>
      <h1>Team</h1>
      <p className="muted small">
        API keys belong to the account, not to the member who created them: they keep working when that member
        leaves, unless you choose to revoke them.
      </p>
      <ErrorLine error={error} />
      <ScrollTable head={owner ? ['Member', 'Role', 'Actions'] : ['Member', 'Role']}>
        {(team?.members ?? []).map((m) => (
          <tr key={m.userId} data-user-id={m.userId}>
            <th scope="row">
              {m.email}
              {m.you && <span className="muted"> (you)</span>}
              {owner && soleOwner(m) && (
                <div className="muted small">
                  the only owner: make another member an owner before this one can leave or become a member
                </div>
              )}
            </th>
            <td>
              {owner ? (
                <label className="inline">
                  <span className="visually-hidden">Role of {m.email}</span>
                  <select
                    value={m.role}
                    disabled={soleOwner(m)}
                    onChange={(e) => act(() => api.setRole(m.userId, e.target.value as Role).then(() => {}))}
                  >
                    <option value="owner">owner</option>
                    <option value="member">member</option>
                  </select>
                </label>
              ) : (
                m.role
              )}
            </td>
            {owner && (
              <td>
                {!soleOwner(m) && (
                  <button type="button" onClick={() => setRemoving(m)}>
                    Remove
                  </button>
                )}
              </td>
            )}
          </tr>
        ))}
      </ScrollTable>

      {owner && (
        <section aria-labelledby="invite-heading">
          <h2 id="invite-heading">Invite a member</h2>
          <form
            className="row"
            onSubmit={(e) => {
              e.preventDefault();
              void act(async () => {
                const r = await api.invite(email, role);
                setLink({ email: r.invitation.email, link: r.link });
                setEmail('');
              });
            }}
          >
            <label className="inline">
              Email
              <input
                type="email"
                name="email"
                value={email}
                required
                onChange={(e) => setEmail(e.target.value)}
              />
            </label>
            <label className="inline">
              Role
              <select value={role} onChange={(e) => setRole(e.target.value as Role)}>
                <option value="member">member</option>
                <option value="owner">owner</option>
              </select>
            </label>
            <button type="submit" className="primary">
              Invite
            </button>
          </form>
          {link && (
            <div className="notice" role="status">
              <p>
                Send this link to <strong>{link.email}</strong> (it works once, for seven days):
              </p>
              <code data-testid="invitation-link" className="secret">
                {link.link}
              </code>
              <CopyButton text={link.link} label="Copy the invitation link" />
            </div>
          )}
        </section>
      )}

      {(team?.invitations.length ?? 0) > 0 && (
        <section aria-labelledby="pending-heading">
          <h2 id="pending-heading">Pending invitations</h2>
          <ul className="plain">
            {team!.invitations.map((i) => (
              <li key={i.id} className="row">
                <span>
                  {i.email} as {i.role}, until {date(i.expiresAt)}
                </span>
                {owner && (
                  <button type="button" onClick={() => act(() => api.withdraw(i.id).then(() => {}))}>
                    Withdraw
                  </button>
                )}
              </li>
            ))}
          </ul>
        </section>
      )}

      {removing && (
        <RemoveMember
          member={removing}
          onCancel={() => setRemoving(null)}
          onRemove={async (revokeKeys) => {
            // A refusal is said in the dialog, where the person is looking (not behind its backdrop).
            await api.removeMember(removing.userId, revokeKeys);
            setRemoving(null);
            await reload();
          }}
        />
      )}
    </>
  );
}

function RemoveMember(props: {
  member: Member;
  onCancel: () => void;
  onRemove: (revokeKeys: boolean) => Promise<void>;
}) {
  const [revoke, setRevoke] = useState(false);
  const [error, setError] = useState('');
  return (
    <Dialog title="Remove member?" onClose={props.onCancel}>
      <p>
        <strong>{props.member.email}</strong> loses access to this account at once.
      </p>
      <label className="check">
        <input type="checkbox" checked={revoke} onChange={(e) => setRevoke(e.target.checked)} />
        Also revoke the API keys this member created
      </label>
      <p className="small muted">
        {revoke
          ? 'Their keys stop working at once; their usage stays in reports.'
          : 'Their keys keep working: they belong to the account.'}
      </p>
      <ErrorLine error={error} />
      <div className="row">
        <button type="button" onClick={props.onCancel}>
          Cancel
        </button>
        <button
          type="button"
          className="danger"
          onClick={() => {
            setError('');
            props.onRemove(revoke).catch((err: Error) => setError(err.message));
          }}
        >
          Remove
        </button>
      </div>
    </Dialog>
  );
}
