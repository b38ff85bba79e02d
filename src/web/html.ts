/** HTML building for the console's pages: escaping, the page frame, small formatters. No template engine. */

/** Escapes text for HTML content and attribute values. */
export function escapeHtml(value: unknown): string {
  return String(value).replace(/[&<>"']/g, (character) => `&#${character.charCodeAt(0)};`);
}

/** A tagged template whose interpolations are escaped, unless they are `Html` already. */
export class Html {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text;
  }
}

export function html(strings: TemplateStringsArray, ...values: unknown[]): Html {
  let out = strings[0] ?? "";
  values.forEach((value, index) => {
    out += render(value) + (strings[index + 1] ?? "");
  });
  return new Html(out);
}

function render(value: unknown): string {
  if (value instanceof Html) return value.text;
  if (Array.isArray(value)) return value.map(render).join("");
  if (value === undefined || value === null || value === false) return "";
  return escapeHtml(value);
}

/** JSON for a `<script type="application/json">` block: `<` escaped, so no text can close the element. */
export function jsonBlock(id: string, data: unknown): Html {
  return new Html(`<script type="application/json" id="${escapeHtml(id)}">${JSON.stringify(data).replace(/</g, "\\u003c")}</script>`);
}

export type Section = "sessions" | "usage" | "operations";

export function page(options: { title: string; section?: Section; csrf?: string; body: Html; scripts?: readonly string[]; stylesheets?: readonly string[] }): string {
  const nav = options.csrf === undefined ? html`` : html`<nav aria-label="Console">
  <ul>
    ${(["sessions", "usage", "operations"] as const).map((section) => html`<li><a href="/console/${section}"${new Html(options.section === section ? ' aria-current="page"' : "")}>${section[0]!.toUpperCase() + section.slice(1)}</a></li>`)}
  </ul>
  <form method="post" action="/console/logout">${csrfField(options.csrf)}<button type="submit">Log out</button></form>
</nav>`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(options.title)} · longhaul console</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/console/assets/console.css">
${(options.stylesheets ?? []).map((href) => `<link rel="stylesheet" href="${escapeHtml(href)}">`).join("\n")}
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<header><span class="brand">longhaul console</span>${nav.text}</header>
<main id="main" tabindex="-1">
<h1>${escapeHtml(options.title)}</h1>
${options.body.text}
</main>
${(options.scripts ?? []).map((src) => `<script src="${escapeHtml(src)}" defer></script>`).join("\n")}
</body>
</html>
`;
}

export const csrfField = (csrf: string | undefined) => html`<input type="hidden" name="csrf" value="${csrf ?? ""}">`;

export function formatTokens(count: number): string {
  if (count >= 1_000_000) return `${(count / 1_000_000).toFixed(1)}M`;
  if (count >= 1_000) return `${(count / 1_000).toFixed(1)}K`;
  return String(Math.round(count));
}

export function formatUsd(usd: number): string {
  return usd >= 1 ? `$${usd.toFixed(2)}` : `$${usd.toFixed(4)}`;
}

export function formatAgo(ms: number): string {
  const minutes = Math.max(0, Math.floor(ms / 60_000));
  if (minutes < 1) return "just now";
  if (minutes < 60) return `${minutes} min ago`;
  if (minutes < 2_880) return `${Math.floor(minutes / 60)} h ago`;
  return `${Math.floor(minutes / 1_440)} d ago`;
}

export const isoMinute = (at: number) => new Date(at).toISOString().slice(0, 16).replace("T", " ") + " UTC";
