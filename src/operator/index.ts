export { approvePairing, denyPairing, dropDeadLetter, retryDeadLetter, type Operator, type PairingDeps, type DeadLetterDeps } from "./actions.js";
export { cliOperator } from "./who.js";
