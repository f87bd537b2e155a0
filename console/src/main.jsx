// The console's shell: the navigation, the theme switch, the token, and the page of the
// current hash route, under the session every page reads (`session.js`).
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { getToken } from './api.js';
import { TokenForm } from './components.jsx';
import { useApi } from './hooks.js';
import { DeadLetters } from './pages/DeadLetters.jsx';
import { Group } from './pages/Group.jsx';
import { Groups } from './pages/Groups.jsx';
import { KeyValue } from './pages/KeyValue.jsx';
import { Message } from './pages/Message.jsx';
import { Messages } from './pages/Messages.jsx';
import { Overview } from './pages/Overview.jsx';
import { Queue } from './pages/Queue.jsx';
import { Queues } from './pages/Queues.jsx';
import { Stream } from './pages/Stream.jsx';
import { StreamState } from './pages/StreamState.jsx';
import { Streams } from './pages/Streams.jsx';
import { System } from './pages/System.jsx';
import { Timers } from './pages/Timers.jsx';
import { Traces } from './pages/Traces.jsx';
import { parse } from './route.js';
import { can, describe, Session } from './session.js';
import { applyTheme, initialTheme } from './theme.js';
import './style.css';

// A page's `path` is its hash route; `nav: false` pages (one queue, one message) are
// reached from a list and are not tabs; `tab` names the tab they belong under; a tab with
// a `level` is shown only to roles that have it.
const PAGES = [
  { path: '/', label: 'Overview', view: Overview },
  { path: '/queues', label: 'Queues', view: Queues },
  { path: '/queue', label: 'Queue', view: Queue, nav: false, tab: '/queues' },
  { path: '/messages', label: 'Messages', view: Messages },
  { path: '/message', label: 'Message', view: Message, nav: false, tab: '/messages' },
  { path: '/traces', label: 'Traces', view: Traces },
  { path: '/dlq', label: 'Dead letters', view: DeadLetters },
  { path: '/groups', label: 'Consumer groups', view: Groups },
  { path: '/group', nav: false, tab: '/groups', view: Group },
  { path: '/streams', label: 'Streams', view: Streams },
  { path: '/stream', nav: false, tab: '/streams', view: Stream },
  { path: '/stream-state', nav: false, tab: '/streams', view: StreamState },
  // `POST /api/v1/kv` carries writes too: the broker refuses it, reads included, to read-only.
  { path: '/kv', label: 'Key/value', view: KeyValue, level: 'read-write' },
  // The queues with pending timers, and a queue's timers (`?queue=`): read-only routes; the
  // page hides Cancel from read-only tokens.
  { path: '/timers', label: 'Timers', view: Timers },
  { path: '/system', label: 'System', view: System, level: 'admin' },
];

function App() {
  const [route, setRoute] = useState(parse(location.hash));
  const [theme, setTheme] = useState(initialTheme());
  // Bumped when the token changes, so every page asks again with the new one.
  const [epoch, setEpoch] = useState(0);
  const [tokenOpen, setTokenOpen] = useState(false);

  useEffect(() => {
    const onHash = () => setRoute(parse(location.hash));
    addEventListener('hashchange', onHash);
    return () => removeEventListener('hashchange', onHash);
  }, []);
  useEffect(() => applyTheme(theme), [theme]);
  // Who the token is; pages hide what its role may not do (`session.js`).
  const whoami = useApi('/api/v1/whoami', { epoch });
  const session = whoami.data;

  const page = PAGES.find((p) => p.path === route.path) || PAGES[0];
  const View = page.view;
  const onToken = () => {
    setTokenOpen(false);
    setEpoch((n) => n + 1);
  };

  return (
    <Session.Provider value={{ epoch, session, onToken, theme }}>
      <div class="shell">
        <header class="top">
          <a class="brand" href="#/">
            <span class="logo" aria-hidden="true" />
            Regent
          </a>
          <nav class="tabs" aria-label="Pages">
            {PAGES.filter((p) => p.nav !== false && can(session, p.level || 'read-only')).map(
              (p) => (
                <a
                  key={p.path}
                  href={`#${p.path}`}
                  aria-current={p === page || p.path === page.tab ? 'page' : undefined}
                >
                  {p.label}
                </a>
              ),
            )}
          </nav>
          <div class="tools">
            {session && (
              <span
                class="badge"
                data-testid="session"
                data-tenant={session.tenant}
                data-role={session.role}
              >
                {describe(session)}
              </span>
            )}
            <button
              type="button"
              class="secondary"
              onClick={() => setTokenOpen(!tokenOpen)}
              aria-expanded={tokenOpen}
            >
              {getToken() ? 'Token set' : 'Token'}
            </button>
            <button
              type="button"
              class="secondary"
              data-testid="theme"
              onClick={() => setTheme(theme === 'dark' ? 'light' : 'dark')}
              aria-label={`Switch to the ${theme === 'dark' ? 'light' : 'dark'} theme`}
            >
              {theme === 'dark' ? '☀' : '☾'}
            </button>
          </div>
        </header>
        {tokenOpen && (
          <div class="token-bar">
            <TokenForm compact />
          </div>
        )}
        <main>
          {/* Not before the broker says who the token is: a page drawn for an unknown session
            shows everything, and would call routes the role may not (a read-only token's
            first look at the system page fetched the fleet's admin figures). */}
          {whoami.loading && !whoami.data && !whoami.error ? (
            <p class="muted">Loading…</p>
          ) : (
            <View key={page.path} query={route.query} />
          )}
        </main>
      </div>
    </Session.Provider>
  );
}

render(<App />, document.getElementById('app'));
