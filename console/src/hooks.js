import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { api } from './api.js';
import { useSession } from './session.js';

/**
 * The answer of a GET, fetched again when `path` or the session's `epoch` (bumped when the
 * token changes) does, and every `everyMs` while the tab is visible. Keeps the last good
 * answer on screen while a refresh is in flight, so numbers do not flicker. `epoch` is given
 * only by the shell, which provides the session rather than reads it. A `body` makes it a
 * POST of that JSON, for the reads the API takes as one (`/streams/v1/state/get`), asked
 * again when the body's JSON changes. A null `path` asks nothing (a page that lacks what it
 * would ask with), and keeps whatever it held.
 */
export function useApi(path, { everyMs = 0, epoch: own, body } = {}) {
  const shared = useSession().epoch;
  const epoch = own ?? shared;
  const [state, setState] = useState({ data: null, error: null, loading: true });
  const seq = useRef(0);
  const sent = body === undefined ? undefined : JSON.stringify(body);
  const load = useCallback(async () => {
    if (!path) return;
    const mine = ++seq.current;
    try {
      const data = await api(
        path,
        sent === undefined ? {} : { method: 'POST', body: JSON.parse(sent) },
      );
      if (mine === seq.current) setState({ data, error: null, loading: false });
    } catch (error) {
      if (mine === seq.current) setState((s) => ({ data: s.data, error, loading: false }));
    }
  }, [path, sent, epoch]);
  useEffect(() => {
    if (!path) return undefined;
    setState((s) => ({ ...s, loading: true }));
    load();
    if (!everyMs) return undefined;
    const timer = setInterval(() => {
      if (!document.hidden) load();
    }, everyMs);
    return () => clearInterval(timer);
  }, [load, everyMs]);
  return { ...state, reload: load };
}

/**
 * A call that changes something (POST, DELETE): `run(path, options)` answers the JSON or
 * null on failure, keeping `busy`, the last `error` and the last `result` for the page.
 */
export function useAction() {
  const [state, setState] = useState({ busy: false, error: null, result: null });
  const run = useCallback(async (path, options = {}) => {
    setState({ busy: true, error: null, result: null });
    try {
      const result = await api(path, options);
      setState({ busy: false, error: null, result });
      return result;
    } catch (error) {
      setState({ busy: false, error, result: null });
      return null;
    }
  }, []);
  const clear = useCallback(() => setState({ busy: false, error: null, result: null }), []);
  return { ...state, run, clear };
}

/**
 * An action asked before it is done, one way on every page that confirms one (the `Confirm`
 * dialog): `ask(p)` opens the question about `p` (`pending`), forgetting the last outcome
 * and error; `back()` closes it; `act(path, options, said)` does it, and on success closes
 * the question and keeps `said(answer)` as `result` (what the page says it did), answering
 * the answer (null on failure, the question then staying open with the error). `confirm` is
 * what `Confirm` takes of it. The outcome is forgotten when one of `forgetOn` changes (the
 * rows it was said about are no longer shown).
 */
export function useAsked(forgetOn = []) {
  const action = useAction();
  const [pending, setPending] = useState(null);
  const [result, setResult] = useState(null);
  useEffect(() => setResult(null), forgetOn);
  const start = () => {
    setResult(null);
    action.clear();
  };
  const back = () => {
    setPending(null);
    action.clear();
  };
  return {
    action,
    pending,
    setPending,
    result,
    setResult,
    start,
    ask: (p) => {
      start();
      setPending(p);
    },
    back,
    act: async (path, options, said) => {
      const out = await action.run(path, options);
      if (!out) return null;
      setPending(null);
      setResult(said(out));
      return out;
    },
    confirm: { busy: action.busy, error: action.error, onCancel: back },
  };
}
