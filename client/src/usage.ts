/** One window of a quota, as `GET /api/usage` reads it. */
export interface UsageWindow {
  /** Tokens settled in the window. */
  used: number;
  /** Tokens held by requests under way. */
  reserved: number;
  /** The window's limit, in tokens. */
  limit: number;
  /** When the window ends (ISO 8601, UTC). */
  resetsAt: string;
}

/**
 * `GET /api/usage`: the calling user's day and the tenant's month. A window
 * is missing when its limit is not set; with no quotas the object is empty.
 */
export interface Usage {
  user?: { day?: UsageWindow };
  tenant?: { month?: UsageWindow };
}

const grouped = new Intl.NumberFormat('en-US');

/**
 * The line a page shows under the answer: "12,340 of 200,000 tokens used
 * today" (the user's day), else the tenant's month ("... used this month");
 * undefined when no limit is set. Tokens held by answers under way are said
 * apart, since a question can be refused for them before the limit is used:
 * "501 of 2,000 tokens used today, 1,499 held by answers under way".
 */
export function usageLine(usage: Usage): string | undefined {
  const day = usage.user?.day;
  if (day) return `${grouped.format(day.used)} of ${grouped.format(day.limit)} tokens used today${held(day)}`;
  const month = usage.tenant?.month;
  if (month) return `${grouped.format(month.used)} of ${grouped.format(month.limit)} tokens used this month${held(month)}`;
  return undefined;
}

function held(w: UsageWindow): string {
  return w.reserved > 0 ? `, ${grouped.format(w.reserved)} held by answers under way` : '';
}
