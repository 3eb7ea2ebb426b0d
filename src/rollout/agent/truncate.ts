/**
 * Cuts a tool's reply to `max` characters as verl does (`tool_response_truncate_side`):
 * `left` keeps the start (+ "...(truncated)"), `right` keeps the end ("(truncated)..." + it),
 * `middle` keeps max/2 characters of each end around "...(truncated)...".
 */
export const TRUNCATE_SIDES = ["left", "middle", "right"] as const;
export type TruncateSide = typeof TRUNCATE_SIDES[number];

export function truncateToolResponse(text: string, max: number, side: TruncateSide): string {
  if (text.length <= max) return text;
  switch (side) {
    case "left":
      return `${text.slice(0, max)}...(truncated)`;
    case "right":
      return `(truncated)...${text.slice(text.length - max)}`;
    case "middle": {
      const half = Math.floor(max / 2);
      return `${text.slice(0, half)}...(truncated)...${half ? text.slice(-half) : ""}`;
    }
  }
}
