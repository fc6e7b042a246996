import { FormatRegistry } from "@sinclair/typebox";

/**
 * The string formats the schemas use. TypeBox refuses a format it has no check for, so without
 * this every `expires` and `since` sent would be invalid. "date-time" is RFC 3339: answers never
 * carry a fraction, requests may (what JavaScript's toISOString() writes); the domain reads both.
 */
FormatRegistry.Set("date-time", (v) => /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})$/.test(v) && onTheCalendar(v));

/**
 * Whether the date and time a string names exist: JavaScript's Date.parse moves 2027-02-29 to March
 * and 24:00 to the next day, so a licence sold to a day that is not one would run longer than sold.
 */
function onTheCalendar(v: string): boolean {
  const [year, month, day, hour, minute, second] = [v.slice(0, 4), v.slice(5, 7), v.slice(8, 10), v.slice(11, 13), v.slice(14, 16), v.slice(17, 19)].map(
    Number,
  ) as [number, number, number, number, number, number];
  const days = new Date(Date.UTC(year, month, 0)).getUTCDate();
  return month >= 1 && month <= 12 && day >= 1 && day <= days && hour <= 23 && minute <= 59 && second <= 59 && !Number.isNaN(Date.parse(v));
}
