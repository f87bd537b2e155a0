import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { api } from './api.js';

/**
 * The answer of a GET, fetched again when `path` or `epoch` (bumped when the token changes)
 * does, and every `everyMs` while the tab is visible. Keeps the last good answer on screen
 * while a refresh is in flight, so numbers do not flicker.
 */
export function useApi(path, { epoch = 0, everyMs = 0 } = {}) {
  const [state, setState] = useState({ data: null, error: null, loading: true });
  const seq = useRef(0);
  const load = useCallback(async () => {
    const mine = ++seq.current;
    try {
      const data = await api(path);
      if (mine === seq.current) setState({ data, error: null, loading: false });
    } catch (error) {
      if (mine === seq.current) setState((s) => ({ data: s.data, error, loading: false }));
    }
  }, [path, epoch]);
  useEffect(() => {
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
