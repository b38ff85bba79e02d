/** The text under one `## heading` of a summary, up to the next `## ` heading ("" when absent). */
export const summarySection = (summary: string, heading: string): string => {
  const start = summary.indexOf(`${heading}\n`);
  if (start < 0) return "";
  const rest = summary.slice(start + heading.length + 1);
  const next = rest.search(/^## /m);
  return next < 0 ? rest : rest.slice(0, next);
};
