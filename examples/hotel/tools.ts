import { defineTool, type Tool } from "agentloop";
import { HOLIDAYS, ROOMS } from "./data.js";

const ISO_DATE = /^\d{4}-\d{2}-\d{2}$/;

function addDays(iso: string, days: number): string {
  const date = new Date(`${iso}T00:00:00Z`);
  date.setUTCDate(date.getUTCDate() + days);
  return date.toISOString().slice(0, 10);
}

function weekday(iso: string): number {
  return new Date(`${iso}T00:00:00Z`).getUTCDay(); // 0 = Sunday
}

/** The nights of a stay: check-in up to the night before check-out. */
function nights(checkIn: string, checkOut: string): string[] {
  const list: string[] = [];
  for (let night = checkIn; night < checkOut; night = addDays(night, 1)) list.push(night);
  return list;
}

export const resolveHoliday = defineTool<{ holiday_name: string; year?: number; today: string }>({
  name: "calendar.resolve_holiday",
  description: "Resolve a holiday name (e.g. Hanukkah, Christmas) to its dates, for the next occurrence from today.",
  parameters: {
    type: "object",
    properties: {
      holiday_name: { type: "string", description: "The holiday, e.g. Hanukkah" },
      year: { type: "integer", description: "A specific year (optional)" },
      today: { type: "string", description: "Today's date, ISO" },
    },
    required: ["holiday_name", "today"],
    additionalProperties: false,
  },
  // Today's date comes from the run's inputs, never from the model.
  bindings: { today: "today" },
  execute({ holiday_name, year, today }) {
    const wanted = holiday_name.trim().toLowerCase();
    const holiday = HOLIDAYS.find((entry) => entry.name.toLowerCase() === wanted || entry.aliases.includes(wanted));
    if (!holiday) {
      return { content: `Unknown holiday "${holiday_name}". Known: ${HOLIDAYS.map((entry) => entry.name).join(", ")}`, isError: true };
    }
    const years = Object.keys(holiday.dates).map(Number).sort();
    const chosen = year ?? years.find((candidate) => holiday.dates[candidate].end >= today);
    const dates = chosen === undefined ? undefined : holiday.dates[chosen];
    if (!dates) return { content: `No dates for ${holiday.name} in ${year ?? "the coming years"}`, isError: true };
    return `${holiday.name} is from ${dates.start} to ${dates.end}`;
  },
});

export const resolveDateHint = defineTool<{ hint: string; today: string }>({
  name: "calendar.resolve_date_hint",
  description: 'Resolve a relative date hint ("tomorrow", "this weekend", "next weekend", "next week") to concrete dates.',
  parameters: {
    type: "object",
    properties: { hint: { type: "string" }, today: { type: "string" } },
    required: ["hint", "today"],
    additionalProperties: false,
  },
  bindings: { today: "today" },
  execute({ hint, today }) {
    if (!ISO_DATE.test(today)) return { content: `today must be an ISO date, got "${today}"`, isError: true };
    const text = hint.trim().toLowerCase();
    const daysToFriday = (5 - weekday(today) + 7) % 7;
    if (text === "tomorrow") return `Tomorrow is ${addDays(today, 1)}`;
    if (text === "this weekend") {
      const friday = addDays(today, daysToFriday);
      return `This weekend is ${friday} to ${addDays(friday, 2)}`;
    }
    if (text === "next weekend") {
      // The first Friday at least three days away, so "next" never means tomorrow.
      let friday = addDays(today, daysToFriday);
      if (daysToFriday < 3) friday = addDays(friday, 7);
      return `Next weekend is ${friday} to ${addDays(friday, 2)}`;
    }
    if (text === "next week") {
      const monday = addDays(today, ((1 - weekday(today) + 7) % 7) || 7);
      return `Next week is ${monday} to ${addDays(monday, 6)}`;
    }
    return { content: `Cannot resolve the date hint "${hint}". Try: tomorrow, this weekend, next weekend, next week`, isError: true };
  },
});

export const getAvailability = defineTool<{ check_in: string; check_out: string; guests?: number }>({
  name: "pms.get_availability",
  description: "List the rooms free for every night from check_in to check_out (ISO dates), with nightly rate and total.",
  parameters: {
    type: "object",
    properties: {
      check_in: { type: "string", pattern: "^\\d{4}-\\d{2}-\\d{2}$" },
      check_out: { type: "string", pattern: "^\\d{4}-\\d{2}-\\d{2}$" },
      guests: { type: "integer", minimum: 1, default: 2 },
    },
    required: ["check_in", "check_out"],
    additionalProperties: false,
  },
  execute({ check_in, check_out, guests = 2 }) {
    if (check_out <= check_in) return { content: `check_out (${check_out}) must be after check_in (${check_in})`, isError: true };
    const stay = nights(check_in, check_out);
    const free = ROOMS.filter((room) => room.sleeps >= guests && stay.every((night) => !room.booked.includes(night)));
    return {
      check_in,
      check_out,
      nights: stay.length,
      rooms: free.map((room) => ({ id: room.id, name: room.name, rate: room.rate, total: room.rate * stay.length })),
    };
  },
});

export const hotelTools: Tool<any>[] = [resolveHoliday, resolveDateHint, getAvailability];
