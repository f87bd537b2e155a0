// Instants between a `datetime-local` input (the user's wall clock, to the second: the
// inputs carry `step="1"`) and the API's ISO-8601 UTC strings. The URL keeps the ISO form,
// so a link means the same instant in every time zone.

function pad(n) {
  return String(n).padStart(2, '0');
}

/** An ISO instant as a `datetime-local` value in this browser's zone; '' if there is none. */
export function toLocalInput(iso) {
  if (!iso) return '';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return '';
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

/** A `datetime-local` value (local wall clock) as an ISO UTC instant; undefined if empty or invalid. */
export function fromLocalInput(value) {
  if (!value) return undefined;
  // Without a zone, `Date` reads "YYYY-MM-DDTHH:mm[:ss]" as local time, which is what the input means.
  const d = new Date(value);
  return Number.isNaN(d.getTime()) ? undefined : d.toISOString();
}
