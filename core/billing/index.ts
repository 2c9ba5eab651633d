export { LeaseMetering, type LeaseSettleRecord, type LeaseSettleResult } from './leases.ts';
export { Metering, type MeteringOptions, type ReserveResult, type UsageRecord } from './metering.ts';
export { imageCost, maxTokensCovered, textCost, textHold, videoCost } from './pricing.ts';
export * from './sweeper.ts';
