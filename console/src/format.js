// Numbers as an operator reads them: grouped, rates with sensible precision, ages short.

const grouped = new Intl.NumberFormat('en-US');

export function count(n) {
  return n === null || n === undefined ? '—' : grouped.format(n);
}

export function rate(perSecond) {
  if (perSecond === null || perSecond === undefined) return '—';
  if (perSecond === 0) return '0/s';
  // A few messages over the 5-minute window: not nothing, which `0.00/s` would say.
  if (perSecond < 0.01) return '<0.01/s';
  if (perSecond < 10) return `${perSecond.toFixed(2)}/s`;
  return `${grouped.format(Math.round(perSecond))}/s`;
}

/** Seconds as `42 s`, `5 min`, `3 h 20 min`, `2 d 4 h`. */
export function duration(secs) {
  if (secs === null || secs === undefined || Number.isNaN(secs)) return '—';
  const s = Math.max(0, Math.round(secs));
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min`;
  const h = Math.floor(m / 60);
  if (h < 24) return m % 60 ? `${h} h ${m % 60} min` : `${h} h`;
  const d = Math.floor(h / 24);
  return h % 24 ? `${d} d ${h % 24} h` : `${d} d`;
}

/** The snapshot's age as the overview says it (`statsAge` is -1 before the first round). */
export function statsAge(age) {
  if (age === null || age === undefined || age < 0) return 'not counted yet';
  return `counted ${duration(age)} ago`;
}

export function date(iso) {
  if (!iso) return '—';
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? '—' : d.toISOString().slice(0, 16).replace('T', ' ');
}

/** Bytes as `812 B`, `28.4 MB`, `1.2 GB` (powers of 1024, as PostgreSQL's sizes). */
export function bytes(n) {
  if (n === null || n === undefined || Number.isNaN(n)) return '—';
  const units = ['B', 'KB', 'MB', 'GB', 'TB'];
  let v = n;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return u === 0 ? `${v} B` : `${v.toFixed(v < 10 ? 1 : 0)} ${units[u]}`;
}

/** A percentage as the broker sends it (already × 100). */
export function percent(p) {
  return p === null || p === undefined ? '—' : `${p.toFixed(p < 10 ? 1 : 0)} %`;
}
