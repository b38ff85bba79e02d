/**
 * How setup asks: in a terminal, @inquirer/prompts (a key or token is typed without an echo);
 * with `--yes`, every question takes its default, and one without a default is an error naming
 * the flag that answers it. The dialogue (dialogue.ts) is the same for both.
 */
import { confirm, input, password, select } from "@inquirer/prompts";

export interface Choice<T extends string> {
  value: T;
  name: string;
}

export interface Asker {
  readonly interactive: boolean;
  select<T extends string>(message: string, choices: ReadonlyArray<Choice<T>>, fallback: T | undefined, flag: string): Promise<T>;
  input(message: string, fallback: string | undefined, flag: string, validate?: (value: string) => string | true): Promise<string>;
  /** A secret, never echoed; "" when the person just pressed Enter. */
  secret(message: string): Promise<string>;
  confirm(message: string, fallback: boolean): Promise<boolean>;
  /** Runs `work` until it resolves or the person presses Enter (→ undefined). */
  waitFor<T>(message: string, work: (signal: AbortSignal) => Promise<T>): Promise<T | undefined>;
  say(line: string): void;
}

/** A question `--yes` cannot answer: the flag it needs is named. */
export class MissingAnswerError extends Error {
  override readonly name = "MissingAnswerError";
}

export function terminalAsker(output: NodeJS.WritableStream = process.stdout): Asker {
  return {
    interactive: true,
    select: (message, choices, fallback) => select({ message, choices: [...choices], ...(fallback === undefined ? {} : { default: fallback }), pageSize: 12 }),
    input: (message, fallback, _flag, validate) => input({ message, ...(fallback === undefined ? {} : { default: fallback }), ...(validate ? { validate } : {}) }),
    // No mask and no ctrl+t reveal: neither the key nor its length ever shows on the screen.
    secret: (message) => password({ message, toggleMask: false }),
    confirm: (message, fallback) => confirm({ message, default: fallback }),
    async waitFor(message, work) {
      const stop = new AbortController();
      const prompt = new AbortController();
      const pressed = input({ message }, { signal: prompt.signal, clearPromptOnDone: true }).then(() => undefined, () => undefined);
      try {
        return await Promise.race([work(stop.signal), pressed]);
      } finally {
        stop.abort(new Error("skipped"));
        prompt.abort();
        await pressed;
      }
    },
    say: (line) => void output.write(`${line}\n`),
  };
}

export function defaultsAsker(output: NodeJS.WritableStream = process.stdout): Asker {
  const missing = (message: string, flag: string) => new MissingAnswerError(`${message.replace(/[?:]\s*$/, "")}: no default; pass ${flag}`);
  return {
    interactive: false,
    select: async (message, _choices, fallback, flag) => {
      if (fallback === undefined) throw missing(message, flag);
      return fallback;
    },
    input: async (message, fallback, flag, validate) => {
      if (fallback === undefined) throw missing(message, flag);
      const verdict = validate?.(fallback) ?? true;
      if (verdict !== true) throw new MissingAnswerError(`${flag}: ${verdict}`);
      return fallback;
    },
    secret: async () => "",
    confirm: async (_message, fallback) => fallback,
    waitFor: async () => undefined,
    say: (line) => void output.write(`${line}\n`),
  };
}
