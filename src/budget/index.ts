/** Budgets (issue #17): the meter (Redis counters, reserve → settle), the turn's scope (handed down with each call), the metered client. */
export {
  BudgetMeter, exhaustedNotice, unlimited, periodEnd, periodId, resetText, warningText, PERIODS,
  type BudgetAccounts, type BudgetMeterOptions, type Cost, type Limit, type Limits, type Period, type Reservation, type SlotStatus,
} from "./meter.js";
export { deleteLimits, LimitsCache, type LimitsCacheOptions } from "./limits-cache.js";
export { BudgetScope, costOfUsage, estimateCost, meteredClient, speechCost, transcriptionCost, transcriptionEstimate } from "./scope.js";
export { budgetAccounts } from "./accounts.js";
