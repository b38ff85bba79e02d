/**
 * Well-formed Unicode at every boundary (SPEC §12 "Nothing blocks a session for good"). A lone
 * UTF-16 surrogate — half an emoji, from a stream cut mid-character, a client that split a
 * paste badly, a tool's byte soup — is legal in a JavaScript string but not in UTF-8 or in
 * Redis's cjson, which refused it with `invalid unicode escape` in every delivery script and so
 * blocked the session's outbox for good. Each lone surrogate becomes U+FFFD.
 */

/** `text` with every lone surrogate replaced by U+FFFD (the same string when there is none). */
export const wellFormed = (text: string): string => (text.isWellFormed() ? text : text.toWellFormed());

/**
 * `value` with every string in it well-formed (keys included). Plain data only (what JSON
 * holds); returns `value` itself when nothing needed fixing, so the common case allocates nothing.
 */
export function wellFormedDeep<T>(value: T): T {
  if (typeof value === "string") return wellFormed(value) as T;
  if (typeof value !== "object" || value === null) return value;
  if (Array.isArray(value)) {
    let copy: unknown[] | undefined;
    value.forEach((item, index) => {
      const fixed = wellFormedDeep(item);
      if (fixed !== item) (copy ??= [...value])[index] = fixed;
    });
    return (copy ?? value) as T;
  }
  let copy: Record<string, unknown> | undefined;
  for (const [key, item] of Object.entries(value)) {
    const fixedKey = wellFormed(key);
    const fixed = wellFormedDeep(item);
    if (fixed !== item || fixedKey !== key) {
      copy ??= { ...(value as Record<string, unknown>) };
      if (fixedKey !== key) delete copy[key];
      copy[fixedKey] = fixed;
    }
  }
  return (copy ?? value) as T;
}

/**
 * JSON of `value` that every JSON parser accepts, Redis's cjson included: `JSON.stringify`
 * writes a lone surrogate as a `\udXXX` escape, which cjson refuses. The check is one scan of
 * the finished JSON; only a string that holds an escaped surrogate is serialized again.
 */
export function wellFormedJson(value: unknown): string {
  const json = JSON.stringify(value);
  return /\\ud[89a-f]/i.test(json) ? JSON.stringify(wellFormedDeep(value)) : json;
}
