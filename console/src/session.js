// Who the console acts as: `GET /api/v1/whoami` answers the tenant and role of the token
// (or of the one a proxy in front of the broker adds), so pages can hide what the role
// may not do. Hiding is a courtesy: the broker refuses regardless.
import { createContext } from 'preact';
import { useContext } from 'preact/hooks';

/** The three roles, each allowed what the one before it is (spec §0.7). */
const LEVELS = ['read-only', 'read-write', 'admin'];

/** Whether a session may call routes of `level` (`read-only`, `read-write` or `admin`). */
export function can(session, level) {
  // Unknown (not asked yet, or the broker could not say): show everything and let the
  // broker's 403 speak.
  if (!session?.role) return true;
  const have = LEVELS.indexOf(session.role);
  return have >= 0 && have >= LEVELS.indexOf(level);
}

/** The session as the header shows it. */
export function describe(session) {
  if (!session) return null;
  if (!session.authEnabled) return 'no authentication';
  return `${session.tenant} · ${session.role ?? 'no role'}`;
}

/**
 * What the shell (`main.jsx`) shares with every page and part: the `session` whoami
 * answered, the token's `epoch` (bumped when it changes, so every GET asks again with the
 * new one, `hooks.js`), `onToken` for a token form to call once it has stored one, and the
 * `theme` the charts draw in.
 */
export const Session = createContext({ epoch: 0, session: null, onToken: () => {}, theme: 'dark' });

export function useSession() {
  return useContext(Session);
}
