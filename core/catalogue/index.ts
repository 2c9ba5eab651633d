export * from './entry.ts';
export * from './snapshot.ts';
export * from './store.ts';
export * from './visibility.ts';
