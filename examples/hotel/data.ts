/** The small data set behind the hotel example: holidays and the rooms of one hotel. */

export interface Holiday {
  name: string;
  aliases: string[];
  /** Inclusive start and end per year, ISO dates. */
  dates: Record<number, { start: string; end: string }>;
}

export const HOLIDAYS: Holiday[] = [
  {
    name: "Hanukkah",
    aliases: ["hanukkah", "chanukah", "hanukah"],
    dates: { 2025: { start: "2025-12-14", end: "2025-12-22" }, 2026: { start: "2026-12-04", end: "2026-12-11" } },
  },
  {
    name: "Christmas",
    aliases: ["christmas", "xmas"],
    dates: { 2025: { start: "2025-12-24", end: "2025-12-26" }, 2026: { start: "2026-12-24", end: "2026-12-26" } },
  },
  {
    name: "New Year",
    aliases: ["new year", "new years", "new year's eve"],
    dates: { 2026: { start: "2026-12-31", end: "2027-01-01" }, 2027: { start: "2027-12-31", end: "2028-01-01" } },
  },
];

export interface Room {
  id: string;
  name: string;
  sleeps: number;
  /** Nightly rate in euros. */
  rate: number;
  /** Nights (ISO dates) on which the room is already booked. */
  booked: string[];
}

export const ROOMS: Room[] = [
  { id: "std-101", name: "Standard Double", sleeps: 2, rate: 120, booked: ["2026-12-04", "2026-11-28"] },
  { id: "std-102", name: "Standard Twin", sleeps: 2, rate: 115, booked: [] },
  { id: "dlx-201", name: "Deluxe King", sleeps: 2, rate: 185, booked: ["2026-11-27"] },
  { id: "fam-301", name: "Family Suite", sleeps: 4, rate: 260, booked: ["2026-12-05"] },
];
