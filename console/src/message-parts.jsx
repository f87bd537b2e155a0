// The pieces the message and trace pages share: a status badge, and a JSON block with a
// copy button.
import { useRef, useState } from 'preact/hooks';
import { pretty } from './messages.js';
import './messages.css';

export function StatusBadge({ status }) {
  if (!status) return <span class="muted">—</span>;
  return (
    <span class={`status status-${status}`} data-status={status}>
      {status.replace('_', ' ')}
    </span>
  );
}

/** A JSON value, indented in a `<pre>`, with a button that copies exactly that text. */
export function JsonBlock({ value, id, label = 'Copy' }) {
  const text = pretty(value);
  const pre = useRef(null);
  const [said, setSaid] = useState('');
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(text);
      setSaid('Copied');
    } catch {
      // No clipboard (an insecure origin, a denied permission): select the text instead,
      // so Ctrl+C copies it.
      const range = document.createRange();
      range.selectNodeContents(pre.current);
      const sel = getSelection();
      sel.removeAllRanges();
      sel.addRange(range);
      setSaid('Selected: press Ctrl+C');
    }
    setTimeout(() => setSaid(''), 2000);
  };
  return (
    <div class="json-block">
      <button
        type="button"
        class="secondary json-copy"
        onClick={copy}
        data-testid={id ? `${id}-copy` : undefined}
      >
        {said || label}
      </button>
      <pre ref={pre} data-testid={id}>
        {text}
      </pre>
    </div>
  );
}
