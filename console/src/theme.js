// Dark or light: the system's preference until the user picks one, which is remembered.

const KEY = 'regent.theme';

export function initialTheme() {
  const saved = globalThis.localStorage?.getItem(KEY);
  if (saved === 'dark' || saved === 'light') return saved;
  return globalThis.matchMedia?.('(prefers-color-scheme: light)').matches ? 'light' : 'dark';
}

export function applyTheme(theme) {
  document.documentElement.dataset.theme = theme;
  globalThis.localStorage?.setItem(KEY, theme);
}
