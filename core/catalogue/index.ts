export * from './aliases.ts';
export * from './entry.ts';
export * from './fence.ts';
export * from './snapshot.ts';
export * from './store.ts';
export * from './visibility.ts';
