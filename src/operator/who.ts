import { userInfo } from "node:os";

/** The operator of a command-line action: the login that ran it. */
export function cliOperator(): string {
  let login: string;
  try {
    login = userInfo().username;
  } catch {
    login = process.env.USER ?? "unknown";
  }
  return `cli:${login}`;
}
