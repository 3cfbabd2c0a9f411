// The property pane's checks: what a Function App URL and an application ID
// URI must look like before the web part tries them. '' means valid (the
// property pane's convention).

/** An absolute https URL of the app's root (http only for localhost, for a local handler). */
export function checkFunctionAppUrl(value: string): string {
  const v = value.trim();
  if (v === '') return 'Required.';
  let url: URL;
  try {
    url = new URL(v);
  } catch {
    return 'Not a URL; write it as https://<app>.azurewebsites.net.';
  }
  const local = url.hostname === 'localhost' || url.hostname === '127.0.0.1';
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && local)) return 'Use https (http only for localhost).';
  if (url.search || url.hash) return 'No query or fragment: only the app URL.';
  if (/\/api\/?$/.test(url.pathname)) return 'Leave out /api: the web part adds the routes.';
  return '';
}

/** An application ID URI (api://..., https://...) or the app registration's client ID (a GUID). */
export function checkAppIdUri(value: string): string {
  const v = value.trim();
  if (v === '') return 'Required.';
  if (/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(v)) return '';
  if (/^api:\/\/\S+$/.test(v) || /^https:\/\/\S+$/.test(v)) return '';
  return 'Use the application ID URI (api://...) or the client ID of the Function App’s app registration.';
}
