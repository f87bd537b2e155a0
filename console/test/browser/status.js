// The HTTP status an API call answers, for checks that a role is refused (403) where
// `call` would only throw.

export async function status(b, method, path, body, token) {
  const headers = { 'content-type': 'application/json' };
  if (token) headers.authorization = `Bearer ${token}`;
  const res = await fetch(`${b.url}${path}`, {
    method,
    headers,
    body: body && JSON.stringify(body),
  });
  await res.arrayBuffer();
  return res.status;
}
