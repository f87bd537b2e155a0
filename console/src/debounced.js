import { useEffect, useState } from 'preact/hooks';

/** `value` once it has stayed the same for `ms`: typing asks the broker once, not per key. */
export function useDebounced(value, ms = 250) {
  const [settled, setSettled] = useState(value);
  useEffect(() => {
    const t = setTimeout(() => setSettled(value), ms);
    return () => clearTimeout(t);
  }, [value, ms]);
  return settled;
}
