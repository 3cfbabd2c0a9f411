import { checkAppIdUri, checkFunctionAppUrl } from '../settings';

describe('the Function App URL', () => {
  it.each(['https://contoso-timebox.azurewebsites.net', 'https://contoso-timebox.azurewebsites.net/', 'http://localhost:7071', 'http://127.0.0.1:7071'])(
    'accepts %s',
    (url) => expect(checkFunctionAppUrl(url)).toBe(''),
  );

  it.each([
    ['', 'Required.'],
    ['contoso-timebox.azurewebsites.net', 'Not a URL'],
    ['http://contoso-timebox.azurewebsites.net', 'Use https'],
    ['https://contoso-timebox.azurewebsites.net/api', 'Leave out /api'],
    ['https://contoso-timebox.azurewebsites.net/?code=abc', 'No query'],
  ])('refuses %j', (url, why) => expect(checkFunctionAppUrl(url)).toContain(why));
});

describe('the application ID URI', () => {
  it.each(['api://contoso-timebox', 'api://9b1c1e58-0b8e-4b8e-9a55-0f4f5c0f3d2a', 'https://contoso.onmicrosoft.com/timebox', '9b1c1e58-0b8e-4b8e-9a55-0f4f5c0f3d2a'])(
    'accepts %s',
    (v) => expect(checkAppIdUri(v)).toBe(''),
  );

  it.each(['', 'timebox', 'api:// spaced', 'http://contoso/timebox'])('refuses %j', (v) => expect(checkAppIdUri(v)).not.toBe(''));
});
