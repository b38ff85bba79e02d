/** Budgets (issue #17): the meter (Redis counters, reserve → settle), the turn's scope, the metered client. */
export {
  BudgetMeter, exhaustedNotice, periodEnd, periodId, resetText, warningText, PERIODS,
  type BudgetAccounts, type Cost, type Limit, type Limits, type Period, type Reservation, type SlotStatus,
} from "./meter.js";
export {
  costOfUsage, currentBudgetScope, estimateCost, meteredCall, meteredClient, payFrom, runInBudgetScope, takeBudgetWarnings, transcriptionCost,
  transcriptionEstimate, type BudgetScope,
} from "./scope.js";
