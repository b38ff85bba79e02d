/**
 * Every secret the configuration holds, as one list (issue 29): what the logger masks in every
 * line and what error messages are cleaned with. Built from the whole configuration, so a new
 * key of a known kind is covered without being named here:
 * - flat keys whose name says secret (`*_API_KEY`, `*_TOKEN`, `*_SECRET`, `*_PASSWORD`);
 * - the password (and a user that is not a plain name) of every URL in the flat keys and
 *   sections (REDIS_URL, endpoints), and URL query values named like keys (`?key=`, `?token=`);
 * - catalogue models' `api_key`, MCP servers' header values (and a bearer's token alone) and
 *   their environment values whose name says secret;
 * - every value read from `${VAR}` in the configuration file.
 */

const SECRET_NAME = /(KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASS|CREDENTIALS?|AUTH)$/i;
const SECRET_QUERY = /^(key|api[-_]?key|token|access[-_]?token|secret|password|sig|signature)$/i;

export interface SecretSources {
  flat: Readonly<Record<string, unknown>>;
  models?: { list: Readonly<Record<string, { api_key?: string | undefined; endpoint?: string | undefined }>> } | undefined;
  mcp?: { servers: Readonly<Record<string, { env?: Record<string, string> | undefined; headers?: Record<string, string> | undefined; url?: string | undefined }>> } | undefined;
  interpolated: readonly string[];
}

export function collectSecrets(sources: SecretSources): string[] {
  const found: string[] = [...sources.interpolated];
  for (const [name, value] of Object.entries(sources.flat)) {
    if (typeof value !== "string") continue;
    if (SECRET_NAME.test(name)) found.push(value);
    found.push(...urlSecrets(value));
  }
  for (const model of Object.values(sources.models?.list ?? {})) {
    if (model.api_key) found.push(model.api_key);
    if (model.endpoint) found.push(...urlSecrets(model.endpoint));
  }
  for (const server of Object.values(sources.mcp?.servers ?? {})) {
    for (const value of Object.values(server.headers ?? {})) {
      found.push(value);
      const bearer = /^(?:Bearer|Basic|Token)\s+(\S+)$/i.exec(value)?.[1];
      if (bearer) found.push(bearer);
    }
    for (const [name, value] of Object.entries(server.env ?? {})) if (SECRET_NAME.test(name)) found.push(value);
    if (server.url) found.push(...urlSecrets(server.url));
  }
  return [...new Set(found.filter((secret) => secret.length > 0))];
}

/** A URL's password (and user, unless it is a plain name like `default`), and its key-like query values, decoded and as written. */
function urlSecrets(value: string): string[] {
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(value)) return [];
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return [];
  }
  const found: string[] = [];
  const add = (raw: string) => {
    if (raw === "") return;
    found.push(raw);
    try {
      found.push(decodeURIComponent(raw));
    } catch {
      // Not percent-encoded text: the raw form is enough.
    }
  };
  add(url.password);
  if (url.username !== "" && !/^[a-z][a-z0-9_-]{0,31}$/i.test(url.username)) add(url.username);
  for (const [name, item] of url.searchParams) if (SECRET_QUERY.test(name)) found.push(item);
  return found;
}
