export { batchTokenPrice } from './batch-price.ts';
export {
  ACCOUNT_SPEND_KEY,
  BUDGET_WINDOWS,
  type BudgetWindow,
  budgetResetsAt,
  DEFAULT_BUDGET_WINDOW,
  isBudgetWindow,
  type KeySpend,
  keyMonthSpend,
  keyWindowSpend,
  spendMonth,
  spendPeriod,
  spendPeriods,
  spentField,
} from './key-spend.ts';
export { LeaseMetering, type LeaseSettleRecord, type LeaseSettleResult } from './leases.ts';
export {
  type ChargeResult,
  Metering,
  type MeteringOptions,
  type ReserveResult,
  type SettleResult,
  type Voided,
} from './metering.ts';
export {
  imageCost,
  maxTokensCovered,
  textCost,
  textCostSaturating,
  textHold,
  videoCost,
} from './pricing.ts';
export * from './rate-limits.ts';
export { nano, type UsageRecord, usageArgs } from './script-args.ts';
export {
  DEFAULT_SERVICE_PRODUCT,
  type ServiceCharge,
  ServiceLedger,
  type ServiceRefund,
  serviceChargeOp,
} from './service-ledger.ts';
export * from './sweeper.ts';
